"""Run independent tasks in worker processes with one BLAS thread each.

For memory-bound matrix-vector work (simulations over a grid of parameters and seeds). On a 2-core machine two processes with
one BLAS thread each are about ten times faster than two processes whose BLAS pools compete, so
workers are started with OMP/OPENBLAS/MKL_NUM_THREADS=1 (fresh interpreters, forked from a server that imported
torch under that limit or spawned: `common.workerstart`, so the limit holds from their first import) and every task gets its own seeded generator.

With a Dask cluster configured (`$REPRO_CLUSTER`, which the runner's `--cluster ADDRESS` sets)
the same tasks go to its workers instead (`common.cluster`), run there the same way, so the results
are bitwise those of the local pool; without one nothing of Dask is imported.
"""
from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor, as_completed

from .progress import progress
from .threads import one_thread, single_thread_env, single_threaded
from .workerstart import pool_args

# The thread limits live in `common.threads` (the cluster's workers apply them too); the papers import
# them from here, where they have always been.
__all__ = ["n_workers", "one_thread", "pmap", "single_thread_env", "single_threaded"]


def n_workers(n_tasks: int, workers: int | None = None) -> int:
    """Processes for `n_tasks` tasks: `workers`, else $REPRO_THREADS, else the CPU count; never more than the tasks."""
    cpus = int(os.environ.get("REPRO_THREADS", os.cpu_count() or 1))
    return max(1, min(n_tasks, workers or cpus))


def pmap(fn, tasks: list, workers: int | None = None, desc: str | None = None) -> list:
    """[fn(**task) for task in tasks], in parallel processes; results in task order.

    `fn` must be importable (a module-level function). With one worker everything runs here,
    under a one-thread BLAS limit. With `$REPRO_CLUSTER` set the tasks run on that Dask cluster
    (`workers`, the size of the local pool, is then the cluster's business).
    """
    tasks = list(tasks)
    if tasks and os.environ.get("REPRO_CLUSTER", "").strip():
        from . import cluster

        return cluster.map_tasks(cluster.current(), fn, tasks, desc=desc)
    w = n_workers(len(tasks), workers)
    if w == 1:
        with one_thread():
            return [fn(**t) for t in progress(tasks, desc=desc)]
    results = [None] * len(tasks)
    with single_thread_env(), ProcessPoolExecutor(w, **pool_args(getattr(fn, "__module__", None))) as pool:
        futures = {pool.submit(fn, **t): i for i, t in enumerate(tasks)}
        for fut in progress(as_completed(futures), total=len(futures), desc=desc):
            results[futures[fut]] = fut.result()
    return results
