"""Run independent tasks in worker processes with one BLAS thread each.

For memory-bound matrix-vector work (simulations over a grid of parameters and seeds). On a 2-core machine two processes with
one BLAS thread each are about ten times faster than two processes whose BLAS pools compete, so
workers are started with OMP/OPENBLAS/MKL_NUM_THREADS=1 (spawned, so the limit holds from their
first import) and every task gets its own seeded generator.

With a Dask cluster configured (`$REPRO_CLUSTER`, which the runner's `--cluster ADDRESS` sets)
the same tasks go to its workers instead (`common.cluster`), run there the same way, so the results
are bitwise those of the local pool; without one nothing of Dask is imported.
"""
from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
import multiprocessing as mp

from .progress import progress

_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@contextmanager
def single_thread_env():
    """Temporarily set the BLAS thread variables to 1 (inherited by spawned workers)."""
    old = {k: os.environ.get(k) for k in _THREAD_VARS}
    os.environ.update({k: "1" for k in _THREAD_VARS})
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _limit_threads():
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except ImportError:  # pragma: no cover
        pass


@contextmanager
def one_thread():
    """Run the enclosed code with one BLAS thread (and one torch thread), then restore.

    On a shared 2-core machine a second BLAS thread mostly waits for the core the other process
    holds; one thread is several times faster for these memory-bound products.
    """
    import sys

    try:
        from threadpoolctl import threadpool_limits
        limits = threadpool_limits(1)
    except ImportError:  # pragma: no cover
        limits = None
    torch = sys.modules.get("torch")
    old = torch.get_num_threads() if torch is not None else None
    if torch is not None:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if limits is not None:
            limits.restore_original_limits()
        if torch is not None and old is not None:
            torch.set_num_threads(old)


def single_threaded(fn):
    """Decorator form of `one_thread`."""
    import functools

    @functools.wraps(fn)
    def wrapper(*a, **k):
        with one_thread():
            return fn(*a, **k)
    return wrapper


def n_workers(n_tasks: int, workers: int | None = None) -> int:
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
    with single_thread_env(), ProcessPoolExecutor(w, mp_context=mp.get_context("spawn"),
                                                  initializer=_limit_threads) as pool:
        futures = {pool.submit(fn, **t): i for i, t in enumerate(tasks)}
        for fut in progress(as_completed(futures), total=len(futures), desc=desc):
            results[futures[fut]] = fut.result()
    return results
