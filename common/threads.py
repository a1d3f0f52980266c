"""One BLAS (and torch) thread per task: the thread limits that the local process pool
(`common.parallel`) and the Dask workers (`common.cluster`) both apply, so that a task gives the
same result bitwise wherever it runs.

On a shared 2-core machine a second BLAS thread mostly waits for the core another process holds;
one thread per process is several times faster for the memory-bound products the papers run.
"""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@contextmanager
def single_thread_env():
    """Temporarily set the BLAS thread variables to 1 (inherited by spawned workers)."""
    old = {k: os.environ.get(k) for k in THREAD_VARS}
    os.environ.update({k: "1" for k in THREAD_VARS})
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def limit_threads():
    """One BLAS thread in this process for good (the initializer of a pool's worker processes)."""
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except ImportError:  # pragma: no cover
        pass


@contextmanager
def one_thread():
    """Run the enclosed code with one BLAS thread (and one torch thread), then restore."""
    torch = sys.modules.get("torch")
    old = torch.get_num_threads() if torch is not None else None   # before threadpoolctl, which limits torch's pool too
    try:
        from threadpoolctl import threadpool_limits
        limits = threadpool_limits(1)
    except ImportError:  # pragma: no cover
        limits = None
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
