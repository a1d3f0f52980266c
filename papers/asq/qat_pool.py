"""QAT models trained in spawned worker processes with one torch thread each (issue 43: on a 2-core machine two
one-thread processes train the small QAT models of quick about twice as fast as one process with two threads).

Paper: "Precision Neural Network Quantization via Learnable Adaptive Modules",
arXiv:2504.17263, https://arxiv.org/abs/2504.17263 (no equation: how the grid uses the machine's cores).

A QAT model's bits depend on the torch thread count, and `torch.set_num_threads(1)` in a process that has already
computed with two threads gives other bits than a process that started with one. So on the CPU (without torchrun)
`QATGrid` trains every QAT model here, in a fresh spawned process whose thread limits (OMP/MKL/OPENBLAS = 1,
torch 1) hold from its first import, whatever the machine's core count; the float models it starts from are
trained (or loaded) in the calling process first, as before. Each model draws only from its replicate's keyed
streams, so its numbers do not depend on which worker trains it, in which order, or how many workers there are
(tests/asq/test_asq_qat_pool.py: one worker and two give the same bits). A worker's records (accuracy, the
frozen-beta diagnostic) and the stream keys it drew come back to the caller, which writes them
(`qat_grid.train_task`, `record_drawn`).
"""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager


def n_workers(n_tasks: int) -> int:
    """Worker processes for `n_tasks` models: $REPRO_THREADS, else the CPU count; at least 1, at most the tasks."""
    cpus = int(os.environ.get("REPRO_THREADS", os.cpu_count() or 1))
    return max(1, min(n_tasks, cpus))


def init_worker() -> None:
    """A worker's start: one BLAS thread and one torch thread for good (the environment already said so)."""
    from common.threads import limit_threads

    limit_threads()
    import torch

    torch.set_num_threads(1)


@contextmanager
def spawned(n: int):
    """n spawned worker processes (a `concurrent.futures` executor) with one thread each; joined at the end, so
    that their CPU time counts in the caller's (the runner's `cores_used` reads ended children's). The one-thread
    environment is held for the pool's life: the executor starts its processes at the first submits. A kernel whose
    namespace was reset (`%reset -f`, as the runner's shared kernel does between notebooks) has lost
    `__main__.__spec__`, which spawn reads: it is put back as None (what a script run by path has)."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    from common.threads import single_thread_env

    main = sys.modules.get("__main__")
    if main is not None and not hasattr(main, "__spec__"):
        main.__spec__ = None
    with single_thread_env():
        pool = ProcessPoolExecutor(n, mp_context=mp.get_context("spawn"), initializer=init_worker)
        try:
            yield pool
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def run_tasks(fn, tasks: list[dict], workers: int | None = None, desc: str = "QAT models") -> list:
    """[fn(**task) for task in tasks] in `workers` spawned one-thread processes (default `n_workers`), results in
    task order; `fn` is module-level (the workers import it by name; `QATGrid.train_missing` passes
    `qat_grid.train_task`)."""
    from concurrent.futures import as_completed

    from common.progress import progress

    if not tasks:
        return []
    out = [None] * len(tasks)
    with spawned(workers or n_workers(len(tasks))) as pool:
        futures = {pool.submit(fn, **task): i for i, task in enumerate(tasks)}
        for fut in progress(as_completed(futures), total=len(futures), desc=desc):
            out[futures[fut]] = fut.result()
    return out


def record_drawn(streams, drawn: list[str]) -> None:
    """Record in `streams` the keys a worker drew from its copy (`Streams.drawn()`: `a/b` for a stream, `a/b/*` for
    a child), so that the run's manifest lists them as if drawn here."""
    for key in drawn:
        if key.endswith("/*"):
            streams.child(*key[:-2].split("/"))
        else:
            streams.seed_for(*key.split("/"))
