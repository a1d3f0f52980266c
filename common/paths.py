"""Every path the toolkit uses, in one place (as showyourwork's `paths.py`)."""
from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAPERS = REPO / "papers"
NOTEBOOKS = REPO / "notebooks"
DATA = REPO / "data"


def results_root() -> Path:
    """`$REPRO_RESULTS`, else `<repo>/results`."""
    return Path(os.environ.get("REPRO_RESULTS") or REPO / "results")


def development_root() -> Path:
    """`<results>/development`: development runs of whole papers (seeds >= 100), apart from the reported runs."""
    root = results_root()
    return root if root.name == "development" else root / "development"


def run_dir(paper: str, profile: str) -> Path:
    return results_root() / paper / profile
