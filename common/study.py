"""The study interface: how a notebook, a test and the device check reach a paper's studies.

Every notebook `notebooks/<id>/NN-topic.ipynb` is the same template (common/README.md):

    cfg, run = open_run("<id>", profile, seed=seed, device=device, run_dir=run_dir, overrides=overrides)
    out = study.measure(cfg, run)          # papers/<id>/studies/topic.py
    run.log_metrics(out["metrics"])

and every study is `measure(cfg, run) -> dict` with `out["metrics"]` the dict the notebook logs. `cfg` is the
paper's resolved profile (`get_config`), `run` the `common.runs.Run` the notebook opened: its seed, device, folder
(`run.dir`) and keyed random streams (`run.rng(...)`, `run.streams`). Tests and the device check call the same
studies through `measure` and `run_all`, so the three callers cannot wire a study three ways.
"""
from __future__ import annotations

import importlib
from types import ModuleType, SimpleNamespace

from .profiles import configure
from .runs import Run


def paper_config(paper: str) -> ModuleType:
    """The paper's `config` module (`papers/<id>/config.py`)."""
    return importlib.import_module(f"papers.{paper}.config")


def get_config(paper: str, profile: str, **overrides) -> SimpleNamespace:
    """The paper's profile with the non-None `overrides` applied; every value check happens here
    (`common.profiles.configure`: unknown keys, types, the paper's declared `BOUNDS`)."""
    return configure(paper_config(paper), profile, **overrides)


def open_run(paper: str, profile: str, *, seed: int = 0, device=None, run_dir=None,
             overrides: dict | None = None) -> tuple[SimpleNamespace, Run]:
    """`(cfg, run)` for one notebook: the checked configuration, the paper's `preflight(cfg)` (missing data and
    the like, one line naming the fix), then the run folder opened (`Run.open`: seeded, device chosen, the
    configuration recorded in the manifest)."""
    config = paper_config(paper)
    cfg = get_config(paper, profile, **(overrides or {}))
    config.preflight(cfg)
    run = Run.open(paper, profile, run_dir=run_dir, params=vars(cfg), seed=seed, device=device)
    return cfg, run


def study_module(paper: str, study: str) -> ModuleType:
    """`papers/<paper>/studies/<study>.py`."""
    return importlib.import_module(f"papers.{paper}.studies.{study}")


def measure(paper: str, study: str, cfg, run: Run) -> dict:
    """One study's `measure(cfg, run)`: what its notebook computes, without the figures."""
    return study_module(paper, study).measure(cfg, run)


def run_all(paper: str, profile: str, run_dir, *, seed: int = 0, device=None, overrides: dict | None = None,
            studies: list[str] | None = None, done: list | None = None) -> dict[str, dict]:
    """Every study of the paper in its notebooks' order (or only `studies`), each as its notebook runs it
    (`open_run`, `measure`, `run.log_metrics`) into `run_dir`: {study: its output}; each finished study's name is
    appended to `done` as it ends. The tests' end-to-end runs and the device check use this; the runner executes
    the notebooks themselves (the same calls, plus the figures)."""
    from .runner.registry import notebooks, study_name

    order = [study_name(nb) for nb in notebooks(paper)]
    outs = {}
    for name in order if studies is None else [s for s in order if s in studies]:
        cfg, run = open_run(paper, profile, seed=seed, device=device, run_dir=run_dir, overrides=overrides)
        outs[name] = measure(paper, name, cfg, run)
        run.log_metrics(outs[name]["metrics"])
        if done is not None:
            done.append(name)
    return outs
