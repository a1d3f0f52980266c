"""How a pool's one-thread worker processes start: forked from a server that has imported torch once, else spawned.

A spawned worker is a fresh interpreter: before its first task it imports torch (~1.4 CPU-s here) and, at its first
`torch.optim` step, `torch._dynamo` (~1.2 CPU-s more: `Optimizer.step` imports it), and at the end it tears the
interpreter down (~1 s on the critical path of the pool's join). On a 2-core machine a pool of two pays that
several times a seed (issue 43, "the front door in 20 minutes").

Here the workers are forked from multiprocessing's *forkserver*: one process, started once per caller with the
one-thread environment (`threads.single_thread_env`), that imports `PRELOAD` (and the first pool's task module),
computes nothing, and forks a worker per request. A worker is then what a spawned one is -- an interpreter whose
torch and BLAS were loaded with one thread and have never computed -- minus the imports; it leaves through
`os._exit` after the pool's shutdown (no teardown). The caller's environment at the pool's start is copied into
each worker by its initializer (`init_worker`: a forked worker would otherwise see the server's), and
`prepare` (multiprocessing's) gives it the caller's working directory and `sys.path`, as spawn does.

The runner starts the server at its kernel's first cell (`warm`), so the imports overlap the first notebook. Where
forkserver does not exist (Windows) or `REPRO_WORKER_START=spawn`, workers are spawned as before. The server
is stopped (and waited for) at the caller's end (`common.lifetime`), so the workers' CPU time counts in the
caller's (the runner's `cores_used` reads the CPU time of ended children).
"""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
from multiprocessing import forkserver

from .lifetime import at_end
from .threads import THREAD_VARS, limit_threads, single_thread_env

ENV = "REPRO_WORKER_START"   # "spawn": every worker a fresh interpreter, as before
PRELOAD = ("numpy", "torch", "torch._dynamo")   # what nearly every paper's worker imports first

_server = forkserver._forkserver if hasattr(forkserver, "_forkserver") else None   # multiprocessing's one server


def method() -> str:
    """'forkserver' where it exists and is not turned off by `REPRO_WORKER_START=spawn`, else 'spawn'."""
    if os.environ.get(ENV, "").strip().lower() == "spawn":
        return "spawn"
    return "forkserver" if "forkserver" in mp.get_all_start_methods() and _server is not None else "spawn"


def server_pid() -> int | None:
    """The running server's process id, or None (none started, or spawn)."""
    return getattr(_server, "_forkserver_pid", None)


def context(task_module: str | None = None):
    """The multiprocessing context a pool's workers start from. The first call that chooses forkserver starts the
    server under the one-thread environment, preloading `PRELOAD` and `task_module` (a module-level task's module,
    not `__main__`); later calls reuse it."""
    if method() == "spawn":
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    if server_pid() is None:
        names = [*PRELOAD, *([task_module] if task_module and task_module != "__main__" else [])]
        ctx.set_forkserver_preload(list(dict.fromkeys(names)))   # the server skips a name that does not import
        with single_thread_env():
            forkserver.ensure_running()
        at_end(stop)
    return ctx


def warm() -> None:
    """Start the server now (`PRELOAD` only), so that its imports run beside the caller's work instead of in front
    of its first pool: the runner's first cell of a kernel calls it (`common.runner.kernel.fresh`). A caller whose
    first pool starts the server waits for its imports (torch's ~2.6 CPU-s) even when its workers would need none."""
    context()


def init_worker(environ: dict) -> None:
    """A worker's first step: the caller's environment at the pool's start (a forked worker has the server's), then
    one BLAS thread for good (`threads.limit_threads`)."""
    if os.environ != environ:
        os.environ.clear()
        os.environ.update(environ)
    limit_threads()


def pool_args(task_module: str | None = None) -> dict:
    """`mp_context`, `initializer` and `initargs` for a `ProcessPoolExecutor` of one-thread workers: each worker
    gets the caller's environment with the BLAS thread variables at 1, as a spawned worker started under
    `threads.single_thread_env()` (which `spawned.spawned` and `parallel.pmap` hold around the pool's start) has
    them, also where a caller starts its pool without it."""
    environ = {**os.environ, **{k: "1" for k in THREAD_VARS}}
    return {"mp_context": context(task_module), "initializer": init_worker, "initargs": (environ,)}


def stop() -> None:
    """End the server and wait for it (its workers' CPU time then counts in this process's children). It holds no
    state worth a clean exit (it only imported and forked), so it is killed rather than torn down (~0.8 s)."""
    pid = server_pid()
    if pid is None:
        return
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        _server._stop()   # closes its pipe, reaps it, removes its socket file; a later pool starts a new one
    except (ChildProcessError, OSError):
        _server._forkserver_pid = None
