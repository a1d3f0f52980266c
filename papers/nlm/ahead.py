"""Work of a later notebook started ahead, on the core the notebooks before it leave idle.

Paper: Yu, Huang & Huang, arXiv:2506.23546 (no equation: how the studies use a 2-core machine). The runner executes
a seed's notebooks one after the other in one shared kernel, and some of them keep only one core busy (notebook
02 trains its stack on one thread; notebook 03's longest run outlasts the other two). `start(key, fn, tasks)` runs
[fn(**task) for task in tasks] one task at a time in one spawned worker process (one thread, `common.spawned`) at
the lowest CPU priority (nice 19): it takes the cycles the kernel and its pools leave, and next to nothing from
them. A later notebook of the same kernel calls `stop(key)` (no task is started after it; which ones ran or run),
does the rest itself, then `collect(key)` (their results). Each task owns its generators (a keyed stream of the
run), so its numbers are those it gives in any other process; the priority changes when it runs, never what.
"""
from __future__ import annotations

import os
import threading

from common.lifetime import at_end
from common.parallel import n_workers
from common.spawned import executor
from common.threads import single_thread_env

LOWEST = 19   # the niceness of the worker


def lowly(fn, task: dict):
    """fn(**task) at the lowest CPU priority (the worker process keeps it)."""
    if hasattr(os, "setpriority"):
        os.setpriority(os.PRIO_PROCESS, 0, LOWEST)
    return fn(**task)


class Ahead:
    """`fn`'s tasks run one after the other in one spawned low-priority worker, until `stop`."""

    def __init__(self, fn, tasks: list[dict]):
        self.fn, self.tasks = fn, list(tasks)
        self.results: dict[int, object] = {}
        self.error: BaseException | None = None
        self.started = 0                     # tasks submitted so far (task i < started ran or runs)
        self.stopped = False
        self.lock = threading.Lock()
        with single_thread_env():            # the worker starts at this first submit, with one thread
            self.pool = executor(1)
            first = self.pool.submit(lowly, self.fn, self.tasks[0])
        self.started = 1
        self.driver = threading.Thread(target=self.drive, args=(first,), daemon=True)
        self.driver.start()

    def drive(self, future) -> None:
        """Wait for each task and submit the next, unless stopped (the kernel's thread stays free)."""
        i = 0
        while True:
            try:
                self.results[i] = future.result()
            except BaseException as err:     # noqa: BLE001 - raised again by `collect`
                self.error = err
                return
            with self.lock:
                i += 1
                if self.stopped or i >= len(self.tasks):
                    return
                future = self.pool.submit(lowly, self.fn, self.tasks[i])
                self.started = i + 1

    def stop(self) -> set[int]:
        """No task starts after this; the indices of those that ran or run."""
        with self.lock:
            self.stopped = True
            return set(range(self.started))

    def collect(self) -> dict[int, object]:
        """{index: result} of the tasks that ran (waiting for the one that runs); the worker is joined (its CPU time
        then counts in the kernel's, as the runner's `cores_used` reads it)."""
        self.stop()
        self.driver.join()
        self.pool.shutdown(wait=True)
        if self.error is not None:
            raise self.error
        return dict(self.results)


_STARTED: dict[str, Ahead] = {}


def start(key: str, fn, tasks: list[dict]) -> bool:
    """Start `fn`'s tasks ahead under `key` (`Ahead`); False (nothing started) with no task or one CPU
    ($REPRO_THREADS), a Dask cluster configured, or work already started under `key`."""
    if not tasks or key in _STARTED or n_workers(2) < 2 or os.environ.get("REPRO_CLUSTER", "").strip():
        return False
    _STARTED[key] = Ahead(fn, tasks)
    return True


def stop(key: str) -> set[int]:
    """The indices of `key`'s tasks that ran or run, none starting after this (empty where nothing was started in
    this process: a notebook run in its own kernel)."""
    return _STARTED[key].stop() if key in _STARTED else set()


def finished(key: str) -> bool:
    """Whether `key`'s worker has nothing left to run (every task ran, or it was stopped and its last one ended);
    True where nothing was started."""
    return key not in _STARTED or not _STARTED[key].driver.is_alive()


def collect(key: str) -> dict[int, object]:
    """{index: result} of `key`'s tasks that ran (`Ahead.collect`), and `key` forgotten; {} where none started."""
    ahead = _STARTED.pop(key, None)
    return {} if ahead is None else ahead.collect()


@at_end
def _shutdown() -> None:
    """At exit every worker is stopped and joined (its running task finishes)."""
    for key in list(_STARTED):
        try:
            collect(key)
        except BaseException:                # noqa: BLE001 - nothing waits for these results any more
            pass
