"""The second executor of `common.parallel.pmap` and of the runner's fan-out: a Dask `distributed` cluster.

Chosen by `--cluster ADDRESS` (runner) or `$REPRO_CLUSTER` (e.g. `tcp://scheduler:8786`); without
either nothing here is imported and everything runs on the local process pool, as before.

- `connect(address)`: a client, checked with a short connect timeout; an unreachable scheduler is a
  one-line `UserError` naming the address (the runner calls it before it writes anything).
- `map_tasks(client, fn, tasks, desc)`: `fn(**task)` for every task on the cluster, results in task
  order, one progress bar (done/total, failures, retries). Tasks are pure functions of their
  arguments and seeds, and a worker runs them as the local pool does (one BLAS/torch thread, one task
  at a time per process), so a result is bitwise the same wherever and however often it ran.
  A worker lost mid-task makes the scheduler rerun the task elsewhere (`distributed.scheduler.allowed-failures`,
  default 3 losses per task); each rerun is logged. Ctrl-C cancels the futures.

Workers need the same code, virtual environment, data and (for the runner's fan-out) results
folder as the machine that submits: a shared file system. See README "On a cluster".
"""
from __future__ import annotations

import logging
import os
import sys
import threading
import time
import uuid
from contextlib import contextmanager

from .errors import UserError
from .threads import one_thread, single_thread_env

ENV = "REPRO_CLUSTER"
CONNECT_TIMEOUT_S = 5.0
_clients: dict = {}
task_lock = threading.Lock()  # one task at a time in a worker process (torch and numpy keep global state)
_warned: set = set()


def address(explicit: str | None = None) -> str | None:
    """The scheduler address to use: `explicit`, else `$REPRO_CLUSTER`, else None (the local pool)."""
    addr = (explicit or os.environ.get(ENV) or "").strip()
    if not addr:
        return None
    return addr if "://" in addr else f"tcp://{addr}"


@contextmanager
def _quiet_logs():
    """distributed logs every failed connection attempt; the user gets one line instead."""
    loggers = [logging.getLogger(n) for n in ("distributed", "distributed.client", "distributed.comm",
                                              "distributed.core", "tornado")]
    old = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for lg, lv in zip(loggers, old):
            lg.setLevel(lv)


def connect(addr: str, timeout: float | None = None):
    """A client of the scheduler at `addr` (one per process and address); a `UserError` when it is unreachable."""
    timeout = timeout or CONNECT_TIMEOUT_S
    if addr in _clients and _clients[addr].status == "running":
        return _clients[addr]
    try:
        from distributed import Client
    except ImportError:  # pragma: no cover
        raise UserError(f"--cluster / {ENV} needs the 'distributed' package; run `make setup` "
                        f"(or pip install -r requirements.txt)") from None
    with _quiet_logs():
        try:
            client = Client(addr, timeout=timeout, set_as_default=False)
        except Exception as err:  # OSError / TimeoutError / ValueError (bad address)
            why = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise UserError(f"cannot reach the Dask scheduler at {addr} within {timeout:g}s ({why[:120]}); start it "
                            f"(`dask scheduler`, README 'On a cluster') or drop --cluster / {ENV}") from None
    _clients[addr] = client
    return client


def current():
    """The client of `$REPRO_CLUSTER`, or None when no cluster is configured."""
    addr = address()
    return None if addr is None else connect(addr)


def close_all() -> None:
    """Close this process's clients (the runner, at exit)."""
    for addr in list(_clients):
        try:
            _clients.pop(addr).close()
        except Exception:  # pragma: no cover
            pass


# --------------------------------------------------------------------------------------------
# on the worker
# --------------------------------------------------------------------------------------------
def call_task(fn, kwargs: dict):
    """`fn(**kwargs)` on a worker as the local pool runs it: one BLAS thread (and one torch thread,
    also for a torch imported by the task), one task at a time in this process."""
    with task_lock, single_thread_env(), one_thread():
        return fn(**kwargs)


def _scheduler_state(dask_scheduler=None, keys=()):
    """On the scheduler: how often each key's worker died under it, and the workers now connected."""
    tasks = dask_scheduler.tasks
    return {"suspicious": {k: tasks[k].suspicious for k in keys if k in tasks},
            "workers": sorted(dask_scheduler.workers)}


# --------------------------------------------------------------------------------------------
# progress: one bar per fan-out
# --------------------------------------------------------------------------------------------
class FanoutProgress:
    """done/total, failures, retries: tqdm on a terminal; elsewhere (logs) a line every 10 % and one per retry or failure."""

    def __init__(self, total: int, desc: str | None = None):
        from .progress import interactive

        self.total, self.desc = total, desc or "cluster"
        self.done = self.failed = self.retried = 0
        self.start, self.next_mark = time.perf_counter(), 0.1
        self.bar = None
        if interactive():
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc=self.desc, leave=False)

    def _postfix(self) -> str:
        return f"{self.failed} failed, {self.retried} retried"

    def note(self, line: str) -> None:
        """A line of its own (a retry, a lost worker): kept in logs and above a terminal bar."""
        if self.bar is not None:
            self.bar.write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr, flush=True)

    def update(self, done: int = 0, failed: int = 0, retried: int = 0) -> None:
        self.done += done
        self.failed += failed
        self.retried += retried
        if self.bar is not None:
            self.bar.update(done)
            self.bar.set_postfix_str(self._postfix())
            return
        if self.total and (self.done / self.total >= self.next_mark - 1e-12 or failed):
            print(f"{self.desc}: {int(round(100 * self.done / self.total)):3d}% ({self.done}/{self.total}, "
                  f"{self._postfix()}, {time.perf_counter() - self.start:.1f}s)", file=sys.stderr, flush=True)
            while self.next_mark <= self.done / self.total + 1e-12:
                self.next_mark += 0.1

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


# --------------------------------------------------------------------------------------------
# submitting
# --------------------------------------------------------------------------------------------
def check_workers(client) -> None:
    """A worker with several threads would run tasks side by side in one process: warn once (tasks then queue)."""
    try:
        threads = client.nthreads()
    except Exception:  # pragma: no cover
        return
    if not threads and "none" not in _warned:
        _warned.add("none")
        print(f"cluster: no worker is connected to {client.scheduler.address} yet; tasks wait for one", file=sys.stderr)
    multi = sorted(a for a, n in threads.items() if n > 1)
    if multi and "threads" not in _warned:
        _warned.add("threads")
        print(f"cluster: {len(multi)} worker(s) have several threads; tasks run one at a time per worker process "
              f"(start workers with --nthreads 1 and one process per core)", file=sys.stderr)


def submit_all(client, fn, tasks: list[dict], desc: str | None = None, wrap: bool = True) -> list:
    """One future per task (unique keys: a task that appears twice runs twice)."""
    tag = f"{desc or getattr(fn, '__name__', 'task')}".replace(" ", "_")[:40]
    token = uuid.uuid4().hex[:8]
    if wrap:
        return [client.submit(call_task, fn, t, key=f"{tag}-{token}-{i}", pure=False) for i, t in enumerate(tasks)]
    return [client.submit(fn, key=f"{tag}-{token}-{i}", pure=False, **t) for i, t in enumerate(tasks)]


def gather(client, futures: list, desc: str | None = None, on_result=None, fail_fast: bool = True,
           poll_s: float = 1.0) -> list:
    """Wait for `futures` with one progress bar; results in order.

    `on_result(i, value, error)` is called as each completes (error: the exception or None). With
    `fail_fast` the first error cancels the rest and is raised; otherwise the error stands in the list.
    Ctrl-C (or SIGTERM turned into KeyboardInterrupt) cancels what is left and re-raises.
    """
    from distributed import wait

    bar = FanoutProgress(len(futures), desc)
    index = {f.key: i for i, f in enumerate(futures)}
    pending = set(futures)
    results: list = [None] * len(futures)
    seen: dict = {}
    workers: set | None = None
    state_ok = True
    try:
        while pending:
            try:
                with client.as_current():
                    done, _ = wait(list(pending), timeout=poll_s, return_when="FIRST_COMPLETED")
            except TimeoutError:  # nothing finished within poll_s: look for lost workers, then wait again
                done = set()
            if state_ok:  # retries: the scheduler's count of workers lost under each task
                try:
                    st = client.run_on_scheduler(_scheduler_state, keys=[f.key for f in pending])
                    now_workers = set(st["workers"])
                    if workers is not None:
                        for w in sorted(workers - now_workers):
                            bar.note(f"cluster: worker {w} lost; its tasks are rerun elsewhere")
                    workers = now_workers
                    for key, n in st["suspicious"].items():
                        if n > seen.get(key, 0):
                            bar.note(f"cluster: {bar.desc} task {index[key]} rerun after its worker died "
                                     f"(attempt {n + 1})")
                            bar.update(retried=n - seen.get(key, 0))
                            seen[key] = n
                except Exception:
                    state_ok = False
            for fut in sorted(done, key=lambda f: index[f.key]):
                pending.discard(fut)
                i = index[fut.key]
                if fut.status == "finished":
                    results[i] = fut.result()
                    bar.update(done=1)
                    if on_result is not None:
                        on_result(i, results[i], None)
                else:
                    err = fut.exception() if fut.status == "error" else RuntimeError(f"task {i} was {fut.status}")
                    bar.update(done=1, failed=1)
                    if on_result is not None:
                        on_result(i, None, err)
                    if fail_fast:
                        raise err
                    results[i] = err
                fut.release()
    except BaseException:
        if pending:
            client.cancel(list(pending))
        raise
    finally:
        bar.close()
    return results


def map_tasks(client, fn, tasks: list[dict], desc: str | None = None) -> list:
    """[fn(**t) for t in tasks] on the cluster, in task order (the first error cancels the rest and is raised)."""
    tasks = list(tasks)
    if not tasks:
        return []
    check_workers(client)
    futures = submit_all(client, fn, tasks, desc)
    try:
        return gather(client, futures, desc)
    except Exception:
        client.cancel(futures)
        raise
