"""A second process for the sections that leave a core idle (issue 43: the quick run kept 1.22 of 2 cores busy).

`spawned(n)` starts n worker processes (spawned, one BLAS and one torch thread each, as `common.parallel`'s
pool) beside the caller, which keeps working meanwhile: the Franz-Parisi potential hands them a share of its q
values, in whole tiles (`franz_parisi.worker_pool`), notebook 05 the sections that do not need the trained network
(`studies.high_dimension.measure`). Each task computes exactly what the caller would have, from the same keyed
streams, so the numbers do not depend on where it ran; `record_drawn` copies a worker's stream keys into the
run's manifest.
"""
from __future__ import annotations

import os
from contextlib import contextmanager


def cpu_shares() -> int:
    """Processes the run may keep busy: $REPRO_THREADS, else the CPU count."""
    return max(1, int(os.environ.get("REPRO_THREADS", os.cpu_count() or 1)))


@contextmanager
def spawned(n: int):
    """n spawned worker processes (a `concurrent.futures` executor), or None when n < 1."""
    if n < 1:
        yield None
        return
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    from common.threads import limit_threads, single_thread_env

    # The executor starts its processes at the first submits, not here: the one-thread environment is held
    # for the pool's life, so that every worker inherits it (as `common.parallel.pmap`'s do).
    with single_thread_env():
        pool = ProcessPoolExecutor(n, mp_context=mp.get_context("spawn"), initializer=limit_threads)
        try:
            yield pool
        finally:
            pool.shutdown(cancel_futures=True)


def record_drawn(streams, drawn: list[str]) -> None:
    """Record in `streams` the keys a worker drew from its copy (`Streams.drawn()`: `a/b` for a stream,
    `a/b/*` for a child), so that the run's manifest lists them as if drawn here."""
    for key in drawn:
        if key.endswith("/*"):
            streams.child(*key[:-2].split("/"))
        else:
            streams.seed_for(*key.split("/"))
