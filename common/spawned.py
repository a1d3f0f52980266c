"""Spawned worker processes with one thread each, beside a notebook kernel: the pool that a paper's studies use
when a section leaves a core idle, or when a model's bits must not depend on the caller's thread count.

A computation's bits can depend on torch's and the BLAS's thread counts, and `torch.set_num_threads(1)` in a
process that has already computed with two threads gives other bits than a process that started with one. So
the workers here are never forked from the caller: each is a fresh interpreter started while the environment says one
thread (`threads.single_thread_env`, held for the pool's life: an executor starts its processes lazily, at the first
submits), forked from a server that has only imported torch under that environment (`workerstart`: the imports and
the interpreter's teardown paid once per caller, not per worker), or spawned where that server is not available;
they limit the BLAS pools once more at start (`threads.limit_threads`). torch reads OMP_NUM_THREADS at import, so a
worker's torch has one thread from its first operation, whatever the caller has.
A task that draws only from its own keyed streams (`common.seed.Streams`) therefore gives the same numbers in a
worker, in the caller, on one worker or two, in any order; `record_drawn` copies the stream keys a worker drew
back into the caller's streams, so that the run's manifest lists them as if drawn there.

Unlike `parallel.pmap`, a pool here always starts workers, even for one task (a caller that has computed with two
threads cannot give a task one-thread bits in process), and never goes to a Dask cluster (its tasks read files
of the local run). A notebook kernel whose namespace was reset (`%reset -f`, as the runner's shared kernel does
between notebooks) has lost `__main__.__spec__`, which spawn reads; it is put back as None (what a script run
by path has) before a pool starts (spawn and forkserver both read it).
"""
from __future__ import annotations

import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager

from .progress import progress
from .threads import single_thread_env
from .workerstart import pool_args


def restore_main_spec() -> None:
    """Give `__main__` the `__spec__` attribute spawn reads (None) if a namespace reset removed it."""
    main = sys.modules.get("__main__")
    if main is not None and not hasattr(main, "__spec__"):
        main.__spec__ = None


def executor(n: int, task_module: str | None = None) -> ProcessPoolExecutor:
    """An executor of n one-thread workers (`workerstart`; `task_module`, the tasks' module, is preloaded if this
    pool starts the server). Create it under `threads.single_thread_env()` (`spawned` does): its processes start
    at the first submits and take the environment of the executor's creation."""
    restore_main_spec()
    return ProcessPoolExecutor(n, **pool_args(task_module))


@contextmanager
def spawned(n: int, task_module: str | None = None):
    """n one-thread worker processes (a `concurrent.futures` executor), or None when n < 1. The workers are joined
    at the end; tasks not started by then are cancelled."""
    if n < 1:
        yield None
        return
    with single_thread_env():
        pool = executor(n, task_module)
        try:
            yield pool
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def run_tasks(fn, tasks: list[dict], workers: int, desc: str | None = None) -> list:
    """[fn(**task) for task in tasks] in `workers` one-thread worker processes, results in task order, one
    progress bar. `fn` is a module-level function (the workers import it by name)."""
    tasks = list(tasks)
    if not tasks:
        return []
    out = [None] * len(tasks)
    with spawned(max(1, min(workers, len(tasks))), getattr(fn, "__module__", None)) as pool:
        futures = {pool.submit(fn, **task): i for i, task in enumerate(tasks)}
        for fut in progress(as_completed(futures), total=len(futures), desc=desc):
            out[futures[fut]] = fut.result()
    return out


def record_drawn(streams, drawn: list[str]) -> None:
    """Record in `streams` (a `common.seed.Streams`) the keys a worker drew from its copy (`Streams.drawn()`: `a/b`
    for a stream, `a/b/*` for a child), so that the run's manifest lists them as if drawn here."""
    for key in drawn:
        if key.endswith("/*"):
            streams.child(*key[:-2].split("/"))
        else:
            streams.seed_for(*key.split("/"))
