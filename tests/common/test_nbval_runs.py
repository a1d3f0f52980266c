"""A paper's runner check judges what nbval ran (tests/nbval_runs.py) only when that is the execution the runner asks
for, and runs the notebooks in process otherwise. nbval is played here by its hooks' calls on the toy notebook, whose
"Run all" (defaults, `run_dir=None`) is executed in process into the folder a kernel would write."""
from types import SimpleNamespace

import pytest

from common.claims import read_claims_table
from common.io import read_json
from common.reproduce import main
from tests import nbval_runs


def _nbval(nb, execute, fail_cell=None, cells=2):
    """What `make test`'s hooks see of nbval running `nb` (its code cells one item each), with the notebook's
    defaults executed (`execute`: in process) where a kernel would write them: `<results>/toy/smoke-interactive`."""
    items = [SimpleNamespace(path=nb, nodeid=f"notebooks/toy/{nb.name}::Cell {i}") for i in range(cells)]
    nbval_runs.start(items[0])
    execute([])(nb, nb.with_name("executed.ipynb"), {}, 60, True)
    for i, item in enumerate(items):
        nbval_runs.record(item, SimpleNamespace(when="call", passed=i != fail_cell, failed=i == fail_cell, skipped=False))


@pytest.fixture
def nbval_session(toy_repo, monkeypatch):
    monkeypatch.setenv("REPRO_PROFILE", "smoke")
    monkeypatch.setattr(nbval_runs, "RUNS", {})
    return toy_repo / "notebooks" / "toy" / "01-toy.ipynb"


@pytest.mark.parametrize("args", [[], ["-p", "x=2.0"]], ids=["no parameter", "a parameter at its default"])
def test_the_runner_judges_what_nbval_ran(nbval_session, toy_repo, after_nbval, in_process_executor, args):
    _nbval(nbval_session, in_process_executor)
    ran = toy_repo / "results" / "toy" / "smoke-interactive"
    assert main(["toy", "--profile", "smoke", "--quiet", *args]) == 0
    assert [(name, how) for name, _, how in after_nbval] == [("01-toy.ipynb", "nbval")]
    out = toy_repo / "results" / "toy" / "smoke"
    assert read_json(out / "metrics.json") == read_json(ran / "metrics.json") == {"x": 2.0, "s": 0}
    assert (out / "figures" / "line.png").read_bytes() == (ran / "figures" / "line.png").read_bytes()
    man = read_json(out / "manifest.json")
    assert man["status"] == "ok" and man["run_dir"] == str(out) and [n["notebook"] for n in man["notebooks"]] == ["01-toy.ipynb"]
    verdicts = dict(zip(*read_claims_table(out / "claims.csv")[["id", "verdict"]].values.T))
    assert verdicts["c-pass"] == "reproduced" and verdicts["c-fail"] == "not reproduced"     # judged from nbval's x = 2


@pytest.mark.parametrize("case", ["a cell failed", "a cell never ran", "the folder held an earlier run", "other parameters"])
def test_anything_else_runs_the_notebooks_in_process(nbval_session, toy_repo, after_nbval, in_process_executor, case):
    ran = toy_repo / "results" / "toy" / "smoke-interactive"
    if case == "the folder held an earlier run":
        ran.mkdir(parents=True)
        (ran / "metrics.json").write_text('{"x": 7.0}')
    _nbval(nbval_session, in_process_executor, fail_cell=1 if case == "a cell failed" else None,
           cells=1 if case == "a cell never ran" else 2)      # the toy notebook has two code cells
    args = ["-p", "x=3"] if case == "other parameters" else []
    main(["toy", "--profile", "smoke", "--quiet", *args])
    assert [how for *_, how in after_nbval] == ["in process"], case
    assert read_json(toy_repo / "results" / "toy" / "smoke" / "metrics.json")["x"] == (3.0 if args else 2.0)
