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

from common.parallel import pmap

#: bump when a task's meaning changes, so stale cache entries are ignored
VERSION = "netrecon-4"


def _key(fn, task: dict) -> str:
    text = repr((VERSION, fn.__module__, fn.__name__, sorted((k, repr(v)) for k, v in task.items())))
    return f"{fn.__name__}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def cached_pmap(fn, tasks: list[dict], cache_dir=None, workers: int | None = None, desc: str | None = None) -> list:
    """`parallel.pmap(fn, tasks)`, reading and writing results under `cache_dir` (None: no cache)."""
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
