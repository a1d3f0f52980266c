"""What nbval executed in this test process, so that a paper's runner check can judge those executions instead of
running every notebook a second time (`make test` ran each paper's smoke computations twice before).

nbval runs each notebook as a user's "Run all" does: a fresh kernel, the default parameters, so the notebooks of a
paper write into `<results>/<paper>/<profile>-interactive`. `make test` hands a paper's notebooks and its runner check
(tests/common/test_repository.py) to one process as one unit, the check last (`tests/conftest.py`, `work_unit`).
`Replay` then stands in for the runner's `run_notebook`: when nbval ran every notebook of the paper to its end in this
process, into a folder that held nothing before, and the runner asks for exactly that execution (the same profile,
every other parameter but `run_dir` at the notebook's default), it copies what those executions wrote into the
runner's `run_dir`; otherwise it executes the notebook in this process (`conftest.exec_in_process`), as before. Either way the runner's
own logic (parameters, staging, the manifest, the claims judged, the swap-in) runs on a real smoke run's output.
"""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class NotebookRun:
    """One notebook nbval executed in this process: where it wrote, at which profile, and how its cells ended."""

    folder: Path          # <results>/<paper>/<profile>-interactive, as Run.open(run_dir=None) names it
    profile: str
    fresh: bool           # the folder held nothing when the paper's first notebook started in this process
    cells: int            # the notebook's code cells (nbval's items)
    passed: set = field(default_factory=set)
    failed: bool = False

    @property
    def complete(self) -> bool:
        return self.fresh and not self.failed and len(self.passed) == self.cells


RUNS: dict[Path, NotebookRun] = {}   # notebook (absolute path) -> its nbval execution in this process


def notebook_of(item) -> Path | None:
    """The notebook an nbval item (one code cell) belongs to; None for any other item."""
    path = Path(str(item.path))
    return path.resolve() if path.suffix == ".ipynb" and item.nodeid.partition("::")[2].startswith("Cell ") else None


def code_cell_count(nb: Path) -> int:
    return sum(1 for c in json.loads(nb.read_text())["cells"] if c.get("cell_type") == "code")


def start(item) -> None:
    """Before a cell's setup (its notebook's kernel starts with the first): the notebook's record, once."""
    nb = notebook_of(item)
    if nb is None or nb in RUNS:
        return
    from common import paths

    profile = os.environ.get("REPRO_PROFILE", "quick")     # what the parameters cell reads
    folder = paths.results_root() / nb.parent.name / f"{profile}-interactive"
    earlier = [r for r in RUNS.values() if r.folder == folder]
    fresh = all(r.fresh for r in earlier) if earlier else not (folder.exists() and any(folder.iterdir()))
    RUNS[nb] = NotebookRun(folder, profile, fresh, code_cell_count(nb))


def record(item, report) -> None:
    """A cell's report: its call passed, or any phase failed or was skipped."""
    nb = notebook_of(item)
    run = RUNS.get(nb) if nb is not None else None
    if run is None:
        return
    if report.passed and report.when == "call":
        run.passed.add(item.nodeid)
    elif report.failed or report.skipped:
        run.failed = True


def paper_run(notebooks: list[Path]) -> NotebookRun | None:
    """The record of the paper whose notebooks are `notebooks`, when nbval ran each of them to its end in this process
    into one fresh folder; else None."""
    runs = [RUNS.get(Path(nb).resolve()) for nb in notebooks]
    if not runs or any(r is None or not r.complete for r in runs) or len({r.folder for r in runs}) != 1:
        return None
    return runs[0]


class Replay:
    """A stand-in for `common.runner.execute.run_notebook`: the nbval executions' output when they are the execution
    the runner asks for (`paper_run`, `same_execution`), else `fallback` (exec in process).
    `calls` gets (notebook name, parameters, "nbval" or "in process") for each notebook."""

    def __init__(self, calls: list, fallback):
        self.calls, self.fallback_execute, self.run = calls, fallback([]), None

    def same_execution(self, nb, parameters: dict) -> bool:
        """Whether the runner asks for what nbval ran: its profile, and every other parameter but `run_dir` at the
        notebook's default (the runner injects `overrides={}` into a notebook that has them)."""
        from common.runner import params

        defaults = params.notebook_defaults(nb)
        asked = {k: v for k, v in parameters.items() if k not in ("run_dir", "profile")}
        return parameters.get("profile") == self.run.profile and all(k in defaults and defaults[k] == v for k, v in asked.items())

    def __call__(self, nb, out, parameters, timeout, quiet, kernel=None, final=True, later=()):
        from common.runner.registry import notebooks

        if not self.calls:      # the paper's first notebook: are its nbval executions there?
            self.run = paper_run(notebooks(Path(nb).parent.name))
        if self.run is None or not self.same_execution(nb, parameters):
            self.calls.append((nb.name, dict(parameters), "in process"))
            return self.fallback_execute(nb, out, parameters, timeout, quiet, kernel)
        self.calls.append((nb.name, dict(parameters), "nbval"))
        shutil.copytree(self.run.folder, parameters["run_dir"], dirs_exist_ok=True)   # every notebook's output: idempotent
        shutil.copyfile(nb, out)
        return 0.0
