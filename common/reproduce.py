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

The work is done by the package `common.runner` (one job per module; common/README.md, "The runner").
"""
from __future__ import annotations

import sys

from common.runner.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
