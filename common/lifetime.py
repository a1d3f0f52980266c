"""What a process holds until it ends -- a pool workers' server, kept worker pools, a zygote of ranks -- and its release.

Each holder registers its release here (`at_end`) instead of with `atexit` alone. Releases run at the process's
exit (through `atexit`) and, in a notebook kernel of the runner, in the last cell of the kernel's last notebook
(`end`, added by `common.runner.execute`): the runner ends its kernels with a kill, so `atexit` never runs there,
and a child process is counted in the run's `cores_used` only once its kernel has waited for it (the CPU time of
ended children). A release must be idempotent: it may run at both.
"""
from __future__ import annotations

import atexit
from typing import Callable

_RELEASES: list[Callable[[], None]] = []


def at_end(release: Callable[[], None]) -> Callable[[], None]:
    """Run `release` at `end` and at exit (once each, however often registered); usable as a decorator."""
    if release not in _RELEASES:
        _RELEASES.append(release)
        atexit.register(release)
    return release


def end() -> None:
    """Every registered release now, the last registered first (a holder may use what was registered before it)."""
    for release in reversed(list(_RELEASES)):
        release()
