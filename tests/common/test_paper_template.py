"""The seventh paper (issue 44): `make new-paper ID=<id>` copies `templates/paper/` (a working toy paper) into
papers/<id>/, notebooks/<id>/, tests/<id>/ and benchmarks/, and the copy is a paper as the repository's own tests
see one, with nothing changed in `common/`.

The template is materialised into a temporary copy of the parts of the repository it needs (`common/` holds the
repository's root as its parent folder, `common.paths.REPO`, so the copy sees the temporary `papers/` only); there
the repository's contract tests run on it, and `python -m common.reproduce <id> --profile smoke` judges its claims.
The real papers/ is never written."""
import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

from common import paths
from common.claims import NOT_REPRODUCED, REPRODUCED, load_claims, read_claims_table
from common.io import read_json

NEW_PAPER = paths.REPO / "templates" / "new_paper.py"
PAPER = "seventh"
# the repository's tests that check every paper's contract, run on the copy (the others need the six papers)
CONTRACT_TESTS = ["test_architecture.py", "test_study_contract.py", "test_readme_config.py", "test_repository.py"]


def new_paper_module():
    """`templates/new_paper.py` (templates/ is not a package)."""
    spec = importlib.util.spec_from_file_location("new_paper", NEW_PAPER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def child_env(root, results) -> dict:
    """The environment of a process run in the copy: its `common` and `papers` first, no pytest state inherited."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    return env | {"PYTHONPATH": str(root), "REPRO_RESULTS": str(results), "REPRO_PROFILE": "smoke"}


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    """A repository holding `common/`, the contract tests and the template materialised as PAPER."""
    root = tmp_path_factory.mktemp("repo")
    shutil.copytree(paths.REPO / "common", root / "common", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "papers").mkdir()
    for name in ("papers/__init__.py", "conftest.py", "pyproject.toml", "README.md", "tests/common/conftest.py",
                 *(f"tests/common/{t}" for t in CONTRACT_TESTS)):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(paths.REPO / name, root / name)
    assert new_paper_module().main([PAPER, "--repo", str(root)]) == 0
    return root


def test_the_copy_has_no_placeholder_left_and_names_the_paper(copy):
    written = [p for p in copy.rglob("*") if p.is_file() and PAPER in str(p.relative_to(copy))]
    assert {p.relative_to(copy).parts[0] for p in written} == {"papers", "notebooks", "tests", "benchmarks"}
    assert [str(p) for p in written if "paperid" in p.read_text() or "paperid" in str(p)] == []
    assert (copy / "benchmarks" / f"bench_{PAPER}.py").exists() and (copy / "notebooks" / PAPER / "01-estimate.ipynb").exists()


def test_the_repository_contract_tests_pass_on_the_new_paper(copy, tmp_path):
    """Contract (registry.contract_problems), study interface, keyed streams, thin template notebook, README blocks
    current, layout, and the paper's own tests: the tests the repository runs on every paper."""
    tests = [f"tests/common/{t}" for t in CONTRACT_TESTS] + [f"tests/{PAPER}"]
    # no notebook is collected here (the notebook runs below): without nbval, the process skips nbformat's imports
    out = subprocess.run([sys.executable, "-m", "pytest", "-v", "-n", "0", "-p", "no:cacheprovider", "-p", "no:nbval", *tests,
                          "-k", "not smoke_run and not requirements"],
                         cwd=copy, env=child_env(copy, tmp_path), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    for test in ("test_every_paper_keeps_the_contract", "test_every_study_is_measure_cfg_run",
                 "test_no_paper_module_seeds_by_hand", "test_every_notebook_follows_the_template",
                 "test_readme_blocks_of_declarations_are_current", "test_paper_layout"):
        assert f"{test}[{PAPER}] PASSED" in out.stdout, test


def test_the_new_paper_runs_at_smoke_and_reproduces_its_claims(copy, tmp_path):
    """`python -m common.reproduce <id> --profile smoke` in the copy (its notebook through papermill): exit 0, every
    claim judged, both of the toy's claims reproduced and both controls not."""
    out = subprocess.run([sys.executable, "-m", "common.reproduce", PAPER, "--profile", "smoke", "--quiet"],
                         cwd=copy, env=child_env(copy, tmp_path), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    run = tmp_path / PAPER / "smoke"
    claims = load_claims(copy / "papers" / PAPER / "claims.yaml")
    table = read_claims_table(run / "claims.csv")
    assert list(table["id"]) == [c.id for c in claims]
    assert list(table["verdict"]) == [REPRODUCED] * len(claims), table[["id", "verdict", "note"]].to_string()
    assert list(table["control_verdict"]) == [NOT_REPRODUCED] * len(claims)
    assert read_json(run / "manifest.json")["status"] == "ok" and list((run / "figures").glob("*.png"))


@pytest.mark.parametrize("paper,needle", [
    ("", "give the new paper's id"), ("Bad", "bad ID 'Bad'"), ("9lives", "bad ID"), ("a-b", "bad ID"), ("x", "bad ID"),
    ("class", "bad ID"), ("all", "a name the repository already uses"), ("paperid", "already uses"),
    ("diffusion", "paper 'diffusion' exists"),
])
def test_a_bad_or_taken_id_is_one_line_and_writes_nothing(paper, needle, tmp_path, capsys):
    (tmp_path / "papers" / "diffusion").mkdir(parents=True)
    before = sorted(tmp_path.rglob("*"))
    assert new_paper_module().main([paper, "--repo", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0], err
    assert sorted(tmp_path.rglob("*")) == before


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_make_new_paper_checks_before_it_writes():
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    for paper, needle in (("Bad", "bad ID 'Bad'"), ("diffusion", "paper 'diffusion' exists")):
        out = subprocess.run(["make", "--no-print-directory", "new-paper", f"ID={paper}"], cwd=paths.REPO, env=env,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and out.stdout == "" and len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert needle in out.stderr
    dry = subprocess.run(["make", "--no-print-directory", "-n", "new-paper", "ID=an_unused_id"], cwd=paths.REPO, env=env,
                         capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0 and "templates/new_paper.py 'an_unused_id'" in dry.stdout, dry.stderr
    assert not (paths.PAPERS / "an_unused_id").exists()
