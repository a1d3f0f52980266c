"""One kept pool of worker processes for a study's task fan-outs (`cache.cached_pmap`, `cache.prefetch`,
notebook 02's `reconstruction.pooled`), instead of a new pool for each.

Z. Yu and H. Huang, "Network reconstruction may not mean dynamics prediction",
https://arxiv.org/abs/2409.04240

Each study's `measure` holds `kept(workers)`; a caller that runs several studies in one process (the
full-profile test) may hold one around them all, and the studies then use it (an inner `kept` reuses the outer
pool). `pmap` takes exactly the route `common.parallel.pmap` takes (a Dask cluster when one is configured, the
calling process under a one-thread limit when one worker is enough) except that where `parallel.pmap` would start
a pool it submits to the kept one. Its workers are the same kind (`common.spawned.executor`: spawned, one BLAS
and torch thread each, started while the thread variables say one: `submit` holds them, as the processes start
at the first submits), so every task runs where and how it ran before; a worker runs the tasks of several
calls one after another, as it already ran several tasks of one call, and each task draws only from its own
keyed streams, so no number depends on which worker took it. The workers are joined when the outermost `kept`
ends, so that their CPU time counts in the caller's (the runner's `cores_used`).
"""
from __future__ import annotations

import os
import sys
from concurrent.futures import as_completed
from contextlib import contextmanager

from common import parallel, spawned
from common.progress import progress
from common.threads import single_thread_env

#: the kept pool: its size, its executor (None until the first submit), how many `kept` blocks hold it
STATE = {"size": 0, "executor": None, "depth": 0}


@contextmanager
def kept(workers: int | None):
    """Keep one pool of `workers` processes (None: $REPRO_THREADS, else one per core) for the enclosed fan-outs;
    inside an outer `kept`, use that one. The processes start only when a task is submitted."""
    if STATE["depth"] == 0:
        STATE["size"] = parallel.n_workers(sys.maxsize, workers)
    STATE["depth"] += 1
    try:
        yield
    finally:
        STATE["depth"] -= 1
        if STATE["depth"] == 0:
            ex, STATE["executor"] = STATE["executor"], None
            if ex is not None:
                ex.shutdown(wait=True, cancel_futures=True)


def active() -> bool:
    """Whether a `kept` block is open (and a task submitted now goes to its pool)."""
    return STATE["depth"] > 0


def submit(fn, /, *args, **kwargs):
    """`fn(*args, **kwargs)` in the kept pool (a `concurrent.futures.Future`); `fn` is module-level (positional
    only: `tasks.dispatch` takes a keyword `fn` of its own)."""
    if not active():
        raise RuntimeError("no kept pool: submit inside `pool.kept`")
    with single_thread_env():               # a worker started by this submit inherits one thread
        if STATE["executor"] is None:
            STATE["executor"] = spawned.executor(STATE["size"])
        return STATE["executor"].submit(fn, *args, **kwargs)


def pmap(fn, tasks: list, workers: int | None = None, desc: str | None = None) -> list:
    """`common.parallel.pmap(fn, tasks, workers, desc)`, its pool the kept one when a `kept` block is open."""
    tasks = list(tasks)
    cluster = tasks and os.environ.get("REPRO_CLUSTER", "").strip()
    if cluster or not active() or parallel.n_workers(len(tasks), workers) == 1:
        return parallel.pmap(fn, tasks, workers=workers, desc=desc)
    futures = {submit(fn, **t): i for i, t in enumerate(tasks)}
    results = [None] * len(tasks)
    for fut in progress(as_completed(futures), total=len(futures), desc=desc):
        results[futures[fut]] = fut.result()
    return results
