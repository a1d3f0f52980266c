"""One run of a paper at a profile at a time: the lock, and the sweep of what killed runs left behind.

The lock is `results/<id>/.<profile>.lock` (an `flock`, released when its holder exits, however it
exits); it holds the holder's pid, which a second run names when it refuses. Under the lock, staging
and swap folders (`.<profile>.staging-*`, `.<profile>.old-*`) can only be a killed run's, and go.
"""
from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from .. import paths
from ..errors import UserError


def lock_path(paper: str, profile: str) -> Path:
    """The lock file of `paper` at `profile`."""
    return paths.run_dir(paper, profile).with_name(f".{profile}.lock")


@contextlib.contextmanager
def run_lock(paper: str, profile: str):
    """One run of a paper at a profile at a time: a second one refuses with one line."""
    import fcntl

    path = lock_path(paper, profile)
    path.parent.mkdir(parents=True, exist_ok=True)
    fh = open(path, "a+")
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "?"
            raise UserError(f"another run of {paper} at profile {profile} is in progress (pid {holder}); "
                            f"wait for it to finish, or use another --results DIR") from None
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        yield
    finally:
        fh.close()  # releases the lock


def sweep_stale(paper: str, profile: str) -> list[Path]:
    """Remove staging and swap leftovers of runs that were killed (call under `run_lock`)."""
    parent = paths.run_dir(paper, profile).parent
    stale = sorted(parent.glob(f".{profile}.staging-*")) + sorted(parent.glob(f".{profile}.old-*"))
    for d in stale:
        shutil.rmtree(d, ignore_errors=True)
    return stale
