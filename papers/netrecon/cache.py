"""A small on-disk cache of task results inside a run directory.

Z. Yu and H. Huang, "Network reconstruction may not mean dynamics prediction",
https://arxiv.org/abs/2409.04240

Notebooks 04 and 05 both need the N = 1000 simulations, and 01 and 05 the lambda(g) grid. A task
result is stored under `<run_dir>/cache/<function>-<hash>.pkl`, keyed by the function's name, its
keyword arguments and a version tag of this package, so a later notebook of the same run reuses it
and a changed task is recomputed. Only results this package wrote are ever read back. The key holds the
task's module and name (`papers.netrecon.tasks.lyapunov_task`, `...tasks.dispatch`): moving or renaming a
task gives new file names, so an older cache is recomputed, never misread (the values are the same).
"""
from __future__ import annotations

import hashlib
import pickle
from pathlib import Path

from common.io import atomic_write_bytes

from .pool import pmap   # `common.parallel.pmap`, in the study's kept pool when one is open

#: bump when a task's meaning changes, so stale cache entries are ignored
VERSION = "netrecon-5"


def _key(fn, task: dict) -> str:
    text = repr((VERSION, fn.__module__, fn.__name__, sorted((k, repr(v)) for k, v in task.items())))
    return f"{fn.__name__}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def _apply(module: str, name: str, kw: dict):
    """Call `module.name(**kw)` (lets one pool run tasks of several functions)."""
    import importlib

    return getattr(importlib.import_module(module), name)(**kw)


def prefetch(calls: list[tuple], cache_dir=None, workers: int | None = None, desc: str | None = None) -> None:
    """Compute the missing results of (fn, task) pairs of several functions in one pool, into `cache_dir`.

    Each result is stored under the key `cached_pmap(fn, [task])` reads, so a study that fans out
    its kinds of work one after another (each pool's tail idle while its last task runs) pays for
    one pool; give the longest tasks first. A no-op without a cache directory (the studies' own
    `cached_pmap` calls then compute everything)."""
    if cache_dir is None:
        return
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    todo = [(fn, t, _key(fn, t)) for fn, t in calls]
    todo = [c for c in todo if not (cache_dir / f"{c[2]}.pkl").exists()]
    if not todo:
        return
    fresh = pmap(_apply, [dict(module=fn.__module__, name=fn.__name__, kw=t) for fn, t, _ in todo],
                 workers=workers, desc=desc)
    for (_, _, k), res in zip(todo, fresh):
        atomic_write_bytes(cache_dir / f"{k}.pkl", pickle.dumps(res))


def cached_pmap(fn, tasks: list[dict], cache_dir=None, workers: int | None = None, desc: str | None = None) -> list:
    """`parallel.pmap(fn, tasks)` (`pool.pmap`: in the kept pool when one is open), reading and writing results
    under `cache_dir` (None: no cache)."""
    tasks = list(tasks)
    if cache_dir is None:
        return pmap(fn, tasks, workers=workers, desc=desc)
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    keys = [_key(fn, t) for t in tasks]
    out: list = [None] * len(tasks)
    todo = []
    for i, k in enumerate(keys):
        path = cache_dir / f"{k}.pkl"
        if path.exists():
            with open(path, "rb") as fh:
                out[i] = pickle.load(fh)
        else:
            todo.append(i)
    if todo:
        fresh = pmap(fn, [tasks[i] for i in todo], workers=workers, desc=desc)
        for i, res in zip(todo, fresh):
            atomic_write_bytes(cache_dir / f"{keys[i]}.pkl", pickle.dumps(res))
            out[i] = res
    return out
