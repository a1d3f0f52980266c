"""Staging folders: a run is written aside and replaces the last complete run only when it all succeeded.

`StagedRun` is one paper at one profile, set up the same way for the local path (`runner.local`) and
the Dask path (`runner.fanout`): a staging folder `.<profile>.staging-<pid>` next to the final one, a
sub-folder `seed-<k>` per seed of a `--seeds` run, each judged as it completes; then the staging
folder is swapped in as `<profile>/` (renames only), or kept as `<profile>-failed/` when a notebook
failed or the run was interrupted, and removed when a notebook raised a user error (which writes
nothing). `locked` holds the paper's lock around it, sweeps what killed runs left, and removes the
lock file and paper folder that a run stopped by a user error had created.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from pathlib import Path

from .. import paths
from ..claims import summary
from ..errors import UserError
from .execute import DEFAULT_CELL_TIMEOUT
from .judge import Judge
from .lock import lock_path, run_lock, sweep_stale


def check_writable(root: Path) -> None:
    """One line, not a traceback, when the results folder cannot be written."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        with __import__("tempfile").NamedTemporaryFile(dir=root, prefix=".write-test-"):
            pass
    except OSError as err:
        raise UserError(f"cannot write results to {root} ({err.strerror or err}); fix its permissions or choose "
                        f"another folder with --results DIR (or REPRO_RESULTS)") from None


@contextlib.contextmanager
def locked(paper: str, profile: str):
    """The paper's lock at `profile`, with the leftovers of killed runs swept; a `UserError` that ends the run
    takes with it the lock file and the (empty) paper folder this run created, so that it writes nothing."""
    parent = paths.run_dir(paper, profile).parent
    fresh = not parent.exists()
    try:
        with run_lock(paper, profile):
            sweep_stale(paper, profile)
            yield
    except UserError:
        if fresh:
            with contextlib.suppress(OSError):
                lock_path(paper, profile).unlink()
            with contextlib.suppress(OSError):
                parent.rmdir()  # only when empty
        raise


def swap_in(staging: Path, final: Path) -> None:
    """Replace `final` by `staging` with renames only; the old run survives until the new is in place."""
    old = final.with_name(f".{final.name}.old-{os.getpid()}")
    if final.exists():
        os.replace(final, old)
    os.replace(staging, final)
    shutil.rmtree(old, ignore_errors=True)


def keep_failed(staging: Path, failed: Path) -> None:
    """Keep `staging` as `failed` (replacing an earlier failed attempt)."""
    shutil.rmtree(failed, ignore_errors=True)
    os.replace(staging, failed)


class StagedRun:
    """One paper at one profile under its lock: its staging folder, the seeds it waits for, their judged tables."""

    def __init__(self, paper: str, profile: str, params: dict, declared: dict[Path, dict], device: str | None,
                 timeout: int | None, seeds: list[int] | None):
        self.paper, self.profile, self.params, self.declared, self.device, self.seeds = paper, profile, params, declared, device, seeds
        self.final = paths.run_dir(paper, profile)
        self.failed = self.final.with_name(f"{profile}-failed")
        self.staging = self.final.with_name(f".{profile}.staging-{os.getpid()}")
        self.staging.mkdir(parents=True)
        self.judge = Judge.load(paper, profile, params, device, seeds)
        self.timeout = timeout or DEFAULT_CELL_TIMEOUT[profile]
        self.t_all = time.perf_counter()
        self.waiting = list(seeds) if seeds else [None]
        self.tables: dict = {}
        self.failure = None   # the first NotebookFailed
        self.result = None    # conclude()'s dict, or the UserError that ended the run

    def out(self, seed) -> Path:
        """Where `seed`'s run is written (the staging folder itself without --seeds)."""
        return self.staging if seed is None else self.staging / f"seed-{seed}"

    def run_params(self, seed) -> dict:
        """The parameters of `seed`'s run: the run's, with `seed` set under --seeds."""
        return dict(self.params) if seed is None else dict(self.params, seed=seed)

    @staticmethod
    def label(seed) -> str:
        """How progress lines name `seed`'s run."""
        return "" if seed is None else f" seed {seed}"

    def record(self, seed, out: Path, executed: list[dict], started: str, wall: float, status: str,
               usage: dict | None = None):
        """Judge `seed`'s folder `out` (status ok, failed or interrupted; `usage`: its CPU and the machine's where
        known, `local.Usage.now`); its table is kept for `conclude`."""
        dest = self.final if status == "ok" else self.failed
        self.tables[seed] = self.judge.run(out, self.run_params(seed), executed, started, wall, status,
                                           dest / out.relative_to(self.staging), usage)
        return self.tables[seed]

    def drop(self, message: str) -> UserError:
        """A notebook raised a user error: the staging folder goes (a user error writes nothing); the error to raise."""
        shutil.rmtree(self.staging, ignore_errors=True)
        return UserError(message)

    def conclude(self) -> dict:
        """The judged seeds (with the seed table under --seeds), swapped in, or kept as failed; returns
        {'paper', 'ok', 'summary', 'wall_s', 'dir', 'table'}."""
        wall = time.perf_counter() - self.t_all
        ok = self.failure is None
        if self.seeds:
            table = self.judge.seeds(self.staging, self.tables, self.params, wall, ok, self.final if ok else self.failed)
        else:
            table = self.tables[None]
        if ok:
            swap_in(self.staging, self.final)
            out_dir = self.final
        else:
            keep_failed(self.staging, self.failed)
            out_dir = self.failed
            print(f"error: {self.paper} failed in {self.failure}; executed notebook kept in {self.failed}; "
                  f"the last complete run in {self.final} is untouched", file=sys.stderr)
        return {"paper": self.paper, "ok": ok, "summary": summary(table), "wall_s": wall, "dir": out_dir, "table": table}

    def keep_interrupted(self) -> None:
        """Ctrl-C, SIGTERM or anything unexpected: what ran is kept as `<profile>-failed`, no staging is left."""
        if self.staging.exists():
            keep_failed(self.staging, self.failed)
            print(f"error: {self.paper} interrupted; partial run kept in {self.failed}; the last complete run in "
                  f"{self.final} is untouched", file=sys.stderr)
