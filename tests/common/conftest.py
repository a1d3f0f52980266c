import sys
import types
from pathlib import Path

import pytest

from common import paths, workerstart
from common.errors import UserError
from common.profiles import resolve

TOY_CLAIMS = """
paper: {title: "Toy paper", url: "https://example.org/toy"}
claims:
  - {id: c-pass, kind: exact, statement: "x is at least 1", paper_value: "1", source: "Eq. 1", metric: x, compare: at_least, value: 1, profiles: [smoke, quick]}
  - {id: c-fail, kind: exact, statement: "x is at most 0", paper_value: "0", source: "Eq. 2", metric: x, compare: at_most, value: 0, profiles: [smoke]}
  - {id: c-missing, kind: exact, statement: "never measured", paper_value: "3", source: "Tab. 1", metric: nope, compare: within, value: 3, tolerance: 1, profiles: [smoke]}
  - {id: c-scale, kind: exact, statement: "only at full", paper_value: "2", source: "Fig. 1", metric: x, compare: at_least, value: 0, profiles: [full]}
  - {id: c-seed, kind: exact, statement: "the seed is at least 1", paper_value: "1", source: "Eq. 3", metric: s, compare: at_least, value: 1, profiles: [smoke]}
"""

PARAMS = '''import os
profile = os.environ.get("REPRO_PROFILE", "quick")
seed = 0
device = None
run_dir = None
x = 2.0
fail = False'''

BODY = '''from common.runs import Run
from common.errors import UserError
run = Run.open("toy", profile, run_dir=run_dir, params={"x": x}, seed=seed, device=device)
if x < 0:
    raise UserError("x must be >= 0; pass -p x=1")
assert not fail, "asked to fail"
import matplotlib.pyplot as plt
fig, ax = plt.subplots(); ax.plot([0, 1], [0, x])
run.save_figure(fig, "line", caption="The line from (0, 0) to (1, x).", claims=["c-pass", "c-fail"]); plt.close(fig)
run.log_metrics({"x": x, "s": seed})'''


def make_notebook(path: Path, params: str = PARAMS, body: str = BODY) -> None:
    """A valid nbformat 4.5 notebook (markdown title, tagged parameters cell, body), written as the JSON it is:
    no nbformat needed, so the toy runs also where the notebook stack is missing (a bare GPU image)."""
    import json

    def code(i, source, tags=()):
        return {"id": f"cell-{i}", "cell_type": "code", "metadata": {"tags": list(tags)} if tags else {},
                "execution_count": None, "source": source, "outputs": []}

    nb = {"nbformat": 4, "nbformat_minor": 5,
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
          "cells": [{"id": "cell-0", "cell_type": "markdown", "metadata": {}, "source": "# toy"},
                    code(1, params, ["parameters"]), code(2, body)]}
    Path(path).write_text(json.dumps(nb, indent=1) + "\n")


def toy_config() -> types.ModuleType:
    """The toy paper's `config` module, keeping the contract: PROFILES, get_config, preflight (which refuses
    x above 100, as a paper refuses a run whose data is missing)."""
    config = types.ModuleType("papers.toy.config")
    config.PROFILES = {"smoke": {"x": 2.0}, "quick": {"x": 2.0}, "full": {"x": 2.0}}
    config.get_config = lambda profile, **params: resolve(config.PROFILES, profile, **params)

    def preflight(cfg):
        if cfg.x > 100:
            raise UserError(f"x = {cfg.x:g} needs the toy's large data; run `make data DATASETS=toy`")

    config.preflight = preflight
    return config


@pytest.fixture
def toy_repo(tmp_path, monkeypatch):
    """A repository holding one toy paper, with results in tmp_path/results."""
    papers, notebooks = tmp_path / "papers", tmp_path / "notebooks"
    (papers / "toy").mkdir(parents=True)
    (notebooks / "toy").mkdir(parents=True)
    (papers / "toy" / "claims.yaml").write_text(TOY_CLAIMS)
    make_notebook(notebooks / "toy" / "01-toy.ipynb")
    monkeypatch.setattr(paths, "PAPERS", papers)
    monkeypatch.setattr(paths, "NOTEBOOKS", notebooks)
    monkeypatch.setenv("REPRO_RESULTS", str(tmp_path / "results"))
    monkeypatch.setitem(sys.modules, "papers.toy.config", toy_config())
    # The toy starts no worker pool, so its runner kernels (here, and on a cluster's workers: REPRO_* is forwarded)
    # do not warm the pool workers' server, whose preload of numpy, torch and torch._dynamo cost ~2-2.4 CPU-s a kernel
    # for nothing (about 18 CPU-s of `make test`). The server's start in a runner kernel and its end in the last
    # notebook are tested where a pool can use it: test_runner_robustness's shared kernel, test_workerstart.py and
    # `make reproduce-<id>` in test_makefile.py.
    monkeypatch.setenv(workerstart.ENV, "spawn")
    return tmp_path


def _finite_metric(x) -> bool:
    import math

    if isinstance(x, (list, tuple)):
        return bool(x) and all(_finite_metric(v) for v in x)
    return isinstance(x, (int, float)) and math.isfinite(x)


@pytest.fixture
def check_smoke_run():
    """Asserts that `out` holds a complete smoke run of `paper`: metrics, every claim judged, every notebook, figures."""
    from common.claims import load_claims, read_claims_table
    from common.io import read_json
    from common.runner.registry import notebooks

    def check(paper: str, out: Path, seed: int | None = None) -> None:
        metrics = read_json(out / "metrics.json")
        assert metrics, "no metrics written"
        claims = load_claims(paths.PAPERS / paper / "claims.yaml")
        table = read_claims_table(out / "claims.csv")
        assert list(table["id"]) == [c.id for c in claims]
        man = read_json(out / "manifest.json")
        assert man["status"] == "ok" and len(man["notebooks"]) == len(notebooks(paper))
        assert man["run_dir"] == str(out) and ".staging-" not in str(man)
        if seed is not None:
            assert man["runner"]["parameters"]["seed"] == seed
        pngs = sorted((out / "figures").glob("*.png"))
        assert pngs, "no figures"
        captions = read_json(out / "figures.json", default={}) or {}
        ids = {c.id for c in claims}
        for png in pngs:                                   # what the report prints under each figure
            assert captions.get(png.stem, {}).get("caption", "").strip(), f"{png.name} has no caption"
            assert set(captions[png.stem].get("claims", [])) <= ids, f"{png.name} names claims {paper} does not have"
        assert not list(out.parent.glob(f".{out.name}.staging-*"))
        # every control that the smoke profile lists is logged (a finite number, or a list of them)
        unlogged = [f"{c.id}: {c.control}" for c in claims
                    if c.controlled and "smoke" in c.profiles and not _finite_metric(metrics.get(c.control))]
        assert not unlogged, f"controls listed at smoke but not logged: {unlogged}"

    return check
