"""Standing rules of the repository: notebooks, pins, layout, and every paper's smoke run."""
import json
import re

import pytest
import yaml

from common import paths
from common.runner.params import notebook_parameters
from common.runner.registry import papers as registered_papers

NOTEBOOKS = sorted(paths.NOTEBOOKS.glob("*/*.ipynb"))
PAPERS = registered_papers()


def test_requirements_pinned_and_environment_in_sync():
    reqs = [l.strip() for l in (paths.REPO / "requirements.txt").read_text().splitlines() if l.strip() and not l.startswith("#")]
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.+-]*", r) for r in reqs), reqs
    names = {r.split("==")[0].lower() for r in reqs}
    assert {"torch", "jupyterlab", "papermill", "numpy", "pandas", "seaborn", "pytest", "nbval"} <= names
    assert "torch==2.13.0" in reqs
    env = yaml.safe_load((paths.REPO / "environment.yml").read_text())
    deps = env["dependencies"]
    assert "python=3.11" in deps and "pip" in deps
    pip_part = next(d["pip"] for d in deps if isinstance(d, dict))
    assert pip_part == ["-r requirements.txt", "-e ."]


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_notebook_is_clean_and_parameterised(nb_path):
    nb = json.loads(nb_path.read_text())
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code), "commit notebooks without outputs"
    tagged = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, "exactly one cell tagged parameters"
    params = notebook_parameters(nb_path)
    assert {"profile", "seed", "device", "run_dir"} <= set(params)
    assert 'os.environ.get("REPRO_PROFILE", "quick")' in "".join(tagged[0]["source"])
    assert re.fullmatch(r"\d\d-[a-z0-9-]+\.ipynb", nb_path.name)
    assert _run_opening_problems(nb_path, set(params)) == []


def _run_opening_problems(nb_path, params: set) -> list[str]:
    """What keeps a notebook from writing where the runner says: it must open its run once (`open_run` or `Run.open`)
    with its own `profile`, `seed` and `run_dir` parameters (and `overrides` where it has them). The runner injects
    them; nbval runs the notebooks on their defaults, so this is where a notebook that ignores them is caught."""
    import ast

    from common.stamp import code_cells

    calls = [n for src in code_cells(nb_path) for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Call)
             and (getattr(n.func, "id", None) == "open_run"
                  or (getattr(n.func, "attr", None) == "open" and getattr(n.func, "value", None) is not None
                      and getattr(n.func.value, "id", None) == "Run"))]
    if len(calls) != 1:
        return [f"{len(calls)} calls open a run (one expected)"]
    call = calls[0]
    given = {k.arg: k.value for k in call.keywords}
    if len(call.args) > 1:
        given.setdefault("profile", call.args[1])
    wanted = ["profile", "seed", "run_dir"] + (["overrides"] if "overrides" in params else [])
    return [f"{name} is not passed as {name}={name}" for name in wanted
            if not (isinstance(given.get(name), ast.Name) and given[name].id == name)]


def test_the_run_opening_check_finds_a_notebook_that_ignores_the_runner(tmp_path):
    cells = ["x = 1", "cfg, run = open_run('toy', 'smoke', seed=seed, run_dir=None, overrides=overrides)"]
    (tmp_path / "01-x.ipynb").write_text(json.dumps({"cells": [{"cell_type": "code", "source": c} for c in cells]}))
    assert _run_opening_problems(tmp_path / "01-x.ipynb", {"profile", "seed", "run_dir", "overrides"}) == [
        "profile is not passed as profile=profile", "run_dir is not passed as run_dir=run_dir"]
    (tmp_path / "02-x.ipynb").write_text(json.dumps({"cells": [{"cell_type": "code", "source": "run = 1"}]}))
    assert _run_opening_problems(tmp_path / "02-x.ipynb", set()) == ["0 calls open a run (one expected)"]


@pytest.mark.parametrize("paper", PAPERS)
def test_paper_layout(paper):
    d = paths.PAPERS / paper
    assert (d / "__init__.py").exists() and (d / "README.md").exists() and (d / "claims.yaml").exists()
    assert "arxiv.org" in (d / "__init__.py").read_text()
    assert (paths.REPO / "benchmarks" / f"bench_{paper}.py").exists()


def test_common_knows_no_paper():
    for f in (paths.REPO / "common").rglob("*.py"):
        assert not re.search(r"^\s*(from|import)\s+papers\.", f.read_text(), re.M), f


@pytest.mark.parametrize("paper", PAPERS)
def test_papers_do_not_import_each_other(paper):
    others = [p for p in PAPERS if p != paper]
    for f in (paths.PAPERS / paper).rglob("*.py"):
        text = f.read_text()
        for other in others:
            assert not re.search(rf"\bpapers\.{other}\b|from \.\.{other}\b", text), (f, other)


# One paper's smoke run goes through `make reproduce-<id> PROFILE=smoke` in test_makefile.py.
MAKE_PAPER = "diffusion" if "diffusion" in PAPERS else (PAPERS[0] if PAPERS else None)


@pytest.mark.parametrize("paper", [p for p in PAPERS if p != MAKE_PAPER])
def test_smoke_run_produces_metrics_and_claims(paper, tmp_path, monkeypatch, after_nbval, check_smoke_run, capsys):
    """`python -m common.reproduce <paper> --profile smoke` runs every notebook and judges every claim.

    In `make test` the paper's notebooks have just run under nbval in this process, each in a fresh kernel with
    its default parameters, and their execution is the one the runner asks for (smoke, seed 0, no parameter
    but `run_dir`): the runner gets what they wrote (`after_nbval`, tests/nbval_runs.py) instead of running them
    a second time. Run alone, the notebooks run in this process (`in_process`: the runner's logic, no kernel
    start-up). The notebooks' use of the runner's `run_dir` is checked in test_notebook_is_clean_and_parameterised,
    and the whole papermill path end to end by `make reproduce-<id>` in test_makefile.py."""
    from common.reproduce import main
    from common.runner.registry import notebooks

    monkeypatch.setenv("REPRO_RESULTS", str(tmp_path))
    assert main([paper, "--profile", "smoke", "--quiet"]) == 0, capsys.readouterr().err[-3000:]
    assert [name for name, *_ in after_nbval] == [nb.name for nb in notebooks(paper)]
    assert len({how for *_, how in after_nbval}) == 1, after_nbval     # the nbval executions, or none of them
    check_smoke_run(paper, tmp_path / paper / "smoke")


def _save_figure_calls(nb_path):
    """The `run.save_figure(...)` calls of a notebook's code cells (shell and magic lines dropped)."""
    import ast

    from common.stamp import code_cells

    return [n for src in code_cells(nb_path) for n in ast.walk(ast.parse(src))
            if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "save_figure"]


def _caption_problems(nb_path, claim_ids) -> list[str]:
    """What is wrong with the captions and claim lists of a notebook's figures: a caption missing, None or
    empty (a string or an f-string with no text), an unknown claim id in a literal list. A caption or claims
    list computed by the paper's code (an expression, or `**kw` from a figures function) cannot be read
    here: the smoke run checks what it wrote to figures.json (`check_smoke_run`, every paper)."""
    import ast

    out = []
    for call in _save_figure_calls(nb_path):
        where = f"{nb_path.name}: {ast.unparse(call)[:60]}"
        kw = {k.arg: k.value for k in call.keywords}
        if None in kw:                                    # **kw: the figures module's caption and claims
            continue
        cap = kw.get("caption")
        if cap is None:
            out.append(f"{where}: no caption")
        elif isinstance(cap, ast.Constant) and not (isinstance(cap.value, str) and cap.value.strip()):
            out.append(f"{where}: empty caption")
        elif isinstance(cap, ast.JoinedStr) and not any(isinstance(v, ast.Constant) and str(v.value).strip() for v in cap.values):
            out.append(f"{where}: caption without text")
        if isinstance(kw.get("claims"), (ast.List, ast.Tuple)):
            out += [f"{where}: unknown claim {e.value!r}" for e in kw["claims"].elts
                    if isinstance(e, ast.Constant) and e.value not in claim_ids]
    return out


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_figure_has_a_caption_and_names_real_claims(nb_path):
    """The report prints a figure's caption under it and links the claims it supports: every figure a
    notebook saves says what it shows, and the claim ids it names are its paper's."""
    from common.claims import load_claims

    ids = {c.id for c in load_claims(paths.PAPERS / nb_path.parent.name / "claims.yaml")}
    assert _caption_problems(nb_path, ids) == []


def test_the_caption_check_finds_each_kind_of_problem(tmp_path):
    cells = ["%matplotlib inline", "run.save_figure(fig, 'a')", "run.save_figure(fig, 'b', caption=None)",
             "run.save_figure(fig, 'c', caption='  ')", "run.save_figure(fig, 'd', caption=f'{x}')",
             "run.save_figure(fig, 'e', caption='E', claims=ids)", "run.save_figure(fig, 'f', caption=f'F {x}', claims=['x', 'y'])",
             "run.save_figure(fig, 'g', caption='G', claims=['x'])", "run.save_figure(fig, 'h', **kw)"]
    nb = {"cells": [{"cell_type": "code", "source": [c + "\n" for c in cells]}]}
    (tmp_path / "01-x.ipynb").write_text(json.dumps(nb))
    got = [p.split(": ")[-1] for p in _caption_problems(tmp_path / "01-x.ipynb", {"x"})]
    assert got == ["no caption", "empty caption", "empty caption", "caption without text", "unknown claim 'y'"]
