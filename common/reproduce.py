"""Run a paper's notebooks headlessly and judge its claims.

    python -m common.reproduce <id|all> --profile smoke|quick|full [-p key=value ...] [--device ...]

Each notebook in `notebooks/<id>/` runs in name order under papermill (kernel python3, a per-cell
timeout, injected parameters) into a staging directory. Only when all succeed does the staging
directory replace `results/<id>/<profile>/`; a failed or interrupted run (Ctrl-C, SIGTERM) is kept
as `<profile>-failed/` and the last complete run is untouched. A lock lets one run of a paper and
profile at a time (a second refuses with one line), and each run first sweeps staging folders left
by a killed one. Parameter values are checked against the notebooks' defaults and the paper's
profiles before anything runs. The exit status is non-zero only when something failed to run:
a claim that does not reproduce is reported, not a crash.
"""
from __future__ import annotations

import sys
import types

from common.runner import execute as _execute
from common.runner.cli import main
# TRANSITIONAL (issue #37): the names report.py, readme.py and some tests still import from here; they
# now live in common.runner.registry (papers, notebooks) and common.runner.params. Delete once nothing
# imports them from common.reproduce.
from common.runner.params import notebook_parameters, param_text
from common.runner.registry import notebooks, papers as registered_papers

__all__ = ["main", "notebook_parameters", "notebooks", "param_text", "registered_papers"]

# TRANSITIONAL (issue #37): the root conftest's `in_process` fixture (and test_readme_stamp) patch
# `reproduce.execute` / `reproduce._execute_notebooks`; those names are forwarded, reads and writes, to
# where the functions now live (common.runner.execute.run_notebook / run_notebooks). Delete once they
# patch common.runner.execute directly.
def _forwarded(name: str) -> property:
    return property(lambda module: getattr(_execute, name), lambda module, value: setattr(_execute, name, value))


class _Forwarding(types.ModuleType):
    execute = _forwarded("run_notebook")
    _execute_notebooks = _forwarded("run_notebooks")
    NotebookFailed = _forwarded("NotebookFailed")


sys.modules[__name__].__class__ = _Forwarding

if __name__ == "__main__":
    sys.exit(main())
