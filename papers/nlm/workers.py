"""Independent runs of a study on the machine's cores, callable from a notebook kernel: `common.parallel.pmap`'s
contract (one BLAS thread per worker, results in task order, a Dask cluster where one is configured) with the
worker processes kept alive between calls.

Paper: Yu, Huang & Huang, arXiv:2506.23546 (no equation: how the studies use a 2-core machine). Each task owns its
generators (a keyed stream of the run), so its numbers do not depend on the process that runs it.

Why the pool is kept: the runner executes a paper's notebooks of one seed in one shared kernel, and notebooks 01,
03, 04 and 06 each spread their runs over the cores. A fresh spawned pool costs every call about 4.5 s of wall time
(two workers importing torch and compiling the sampler's kernels: 2.3-2.5 s of imports and 0.6 s for the first
Langevin call each, measured on the 2-core Xeon under load). Kept in the module, the second and third calls of
a seed reuse the workers: the same numbers, two start-ups fewer. Notebook 06, the last, joins them (`release`).
"""
from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor

from common.lifetime import at_end
from common.parallel import n_workers, pmap
from common.progress import progress
from common.spawned import executor, restore_main_spec
from common.threads import single_thread_env

_POOLS: dict[int, ProcessPoolExecutor] = {}


def release() -> None:
    """Join the kept workers (wait for them to end), so that their CPU time counts in the kernel's (the runner's
    `cores_used` reads the CPU time of ended children, and it ends its kernel with a kill): the last notebook of a
    seed that uses them (06) calls it, and so does the kernel's exit. A later `spread` starts new ones."""
    for ex in _POOLS.values():
        ex.shutdown(wait=True, cancel_futures=True)
    _POOLS.clear()


at_end(release)


def pool(workers: int) -> ProcessPoolExecutor:
    """The module's pool of `workers` spawned one-thread processes (`common.spawned.executor`), made once."""
    if workers not in _POOLS:
        _POOLS[workers] = executor(workers)
    return _POOLS[workers]


def spread(fn, tasks: list, desc: str | None = None, keep: bool = True) -> list:
    """[fn(**task) for task in tasks] on the machine's cores, results in task order, the numbers `pmap`'s (each task
    owns its generators). With one worker, or a Dask cluster configured (`$REPRO_CLUSTER`), it is `pmap` itself;
    otherwise the tasks go to the module's kept pool (`pool`). A kernel whose namespace was reset (`%reset -f`, as
    the runner's shared kernel does between notebooks) has lost `__main__.__spec__`, which multiprocessing's spawn
    reads: it is put back (`common.spawned.restore_main_spec`), so the workers start. `keep=False` joins the workers
    after its tasks (as `release` does): the runner ends its kernel with a kill, which would leave kept workers
    unwaited and their CPU time out of the run's `cores_used`."""
    restore_main_spec()
    tasks = list(tasks)
    w = n_workers(len(tasks))
    if w == 1 or os.environ.get("REPRO_CLUSTER", "").strip():
        return pmap(fn, tasks, desc=desc)
    size = n_workers(os.cpu_count() or 1)
    ex = pool(size)
    with single_thread_env():                      # the workers start (lazily, at a submit) with one BLAS thread
        futures = [ex.submit(fn, **t) for t in tasks]
    try:
        return [f.result() for f in progress(futures, total=len(futures), desc=desc)]
    finally:
        if not keep:
            _POOLS.pop(size).shutdown(wait=True)
