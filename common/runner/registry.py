"""The papers, as every part of the toolkit sees them: the one place that lists them.

A paper is a folder `papers/<id>/` holding `claims.yaml` and `config.py`, with notebooks
`notebooks/<id>/NN-topic.ipynb` (run in name order). Its `config.py` is the paper's whole contract
with the runner (common/README.md, "A paper, as the runner sees it"):

    PROFILES: dict[str, dict]                       # smoke, quick, full: small configs of plain values
    BOUNDS: dict[str, dict]                         # optional: {key: {"min"|"max"|"above"|"below"|"choices": ...}}
    preflight(cfg) -> None                          # missing data etc. as a UserError, before anything runs
    TUNED: dict                                     # settings chosen on development seeds ({} when none)

and each notebook `NN-topic.ipynb` drives one study module `papers/<id>/studies/topic.py` (hyphens
become underscores). The runner, the report and the README generator list papers here; adding a
paper is adding its folders, nothing in `common/`.
"""
from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

from .. import paths
from ..errors import UserError
from ..profiles import PROFILE_NAMES, configure

CONTRACT = ("PROFILES", "preflight", "TUNED")   # and optionally BOUNDS (common.profiles.check_bounds)


def papers() -> list[str]:
    """Paper ids: a folder of `papers/` with a `claims.yaml` and at least one notebook."""
    return [d.name for d in sorted(paths.PAPERS.iterdir())
            if (d / "claims.yaml").exists() and notebooks(d.name)]


def notebooks(paper: str) -> list[Path]:
    """A paper's notebooks in the order they run (`NN-topic.ipynb`)."""
    return sorted((paths.NOTEBOOKS / paper).glob("[0-9]*.ipynb"))


def study_name(notebook: Path) -> str:
    """The study module a notebook drives: `NN-some-topic.ipynb` -> `some_topic`."""
    stem = Path(notebook).stem
    return stem.split("-", 1)[1].replace("-", "_") if "-" in stem else stem


def config(paper: str) -> ModuleType:
    """The paper's `config` module (`papers/<id>/config.py`); a paper without one is a UserError."""
    try:
        return importlib.import_module(f"papers.{paper}.config")
    except ModuleNotFoundError as err:
        if err.name in ("papers", f"papers.{paper}", f"papers.{paper}.config"):
            raise UserError(f"papers/{paper}/config.py is missing: every paper defines PROFILES, preflight and TUNED "
                            "there (common/README.md)") from None
        raise


def profile_keys(paper: str) -> set[str]:
    """Every key of the paper's profiles (what a template notebook's `overrides` may set)."""
    return set().union(*map(set, config(paper).PROFILES.values()))


def profile_params(paper: str, profile: str, params: dict) -> dict:
    """The run parameters that are keys of the paper's profile (what `get_config` takes)."""
    keys = config(paper).PROFILES.get(profile, {})
    return {k: v for k, v in params.items() if k in keys}


def resolved(paper: str, profile: str, params: dict):
    """The configuration a run will use: the profile with the profile's keys among `params` applied and checked
    (`common.profiles.configure`: types and the paper's declared `BOUNDS`), as `common.study.open_run` resolves it."""
    return configure(config(paper), profile, **profile_params(paper, profile, params))


def contract_problems(paper: str) -> list[str]:
    """What the paper lacks of the contract (empty when it keeps it)."""
    try:
        cfg = config(paper)
    except UserError as err:
        return [str(err)]
    out = [f"config.py does not define {name}" for name in CONTRACT if not hasattr(cfg, name)]
    profiles = getattr(cfg, "PROFILES", None)
    if not isinstance(profiles, dict) or set(profiles) != set(PROFILE_NAMES):
        out.append(f"config.PROFILES must be a dict with exactly the profiles {', '.join(PROFILE_NAMES)}")
    keys = set().union(*map(set, profiles.values())) if isinstance(profiles, dict) else set()
    stray = sorted(set(getattr(cfg, "BOUNDS", {})) - keys)
    if stray:
        out.append(f"config.BOUNDS names {', '.join(stray)}, which no profile holds")
    studies = paths.PAPERS / paper / "studies"
    for nb in notebooks(paper):
        if not (studies / f"{study_name(nb)}.py").exists():
            out.append(f"notebook {nb.name} has no study module papers/{paper}/studies/{study_name(nb)}.py")
    return out
