"""The Dask path: with a cluster, every (paper, profile, seed) run is one task on its workers.

The submitting runner holds each paper's lock and staging folder (`staging.StagedRun`, as a local
run does); a task runs one seed's notebooks on a worker into a folder of its own attempt
(`.seed-<k>.attempt-<id>`, so a rerun after a lost worker never shares files), in the environment a
local kernel would get (`forwarded_env`). As each task comes back its folder is moved into place and
judged; each paper is concluded (swapped in or kept as failed) and printed when its last seed is back.
Workers need the same code, environment and results folder (a shared file system).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from pathlib import Path

from .. import cluster
from ..errors import UserError
from ..runs import now
from ..threads import THREAD_VARS
from . import execute
from .execute import NotebookFailed
from .judge import print_table
from .params import check_values, preflight
from .staging import StagedRun, locked


def forwarded_env() -> dict:
    """The environment a local kernel would get, as far as results can depend on it: REPRO_* (less the
    cluster: a run's own tasks use its worker's local pool) and the BLAS thread variables, None = unset."""
    keys = {k for k in os.environ if k.startswith("REPRO_")} | set(THREAD_VARS)
    return {k: os.environ.get(k) for k in sorted(keys - {"REPRO_CLUSTER"})}


def run_notebooks_task(paper: str, profile: str, params: dict, declared: dict, device: str | None, timeout: int,
                       attempt_prefix: str, label: str, env: dict, forget: list | None = None) -> dict:
    """On a worker: one run's notebooks into a folder of this attempt's own (`<attempt_prefix>.attempt-<id>`).

    A worker that dies mid-run leaves its folder behind and the rerun writes a fresh one, so two
    attempts never share files. The environment is the submitting runner's (`env`, `forwarded_env`).
    Returns {'dir', 'executed', 'failure': None | [notebook, ename, evalue], 'started', 'wall_s'}.
    """
    import uuid

    attempt = Path(f"{attempt_prefix}.attempt-{uuid.uuid4().hex[:8]}")
    with cluster.task_lock:
        old = dict(os.environ)
        try:
            for k in list(forget or []) + ["REPRO_CLUSTER"]:
                os.environ.pop(k, None)
            for k, v in env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + old.get("PATH", "")
            started, t0 = now(), time.perf_counter()
            executed, failure = execute.run_notebooks(paper, profile, params, declared, device, timeout, True, attempt, label)
        finally:
            os.environ.clear()
            os.environ.update(old)
    return {"dir": str(attempt), "executed": executed, "started": started, "wall_s": time.perf_counter() - t0,
            "failure": None if failure is None else [failure.notebook.name, failure.ename, failure.evalue]}


class FannedOutRun(StagedRun):
    """A staged run whose seeds are cluster tasks: each comes back as a folder to move into place and judge."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.user_error: str | None = None   # the first user error a task's notebook raised

    def prefix(self, seed) -> Path:
        """The name the attempts' folders of `seed` start with."""
        return self.staging if seed is None else self.staging / f".seed-{seed}"

    def task(self, seed) -> dict:
        """The keyword arguments of `run_notebooks_task` for `seed`."""
        return dict(paper=self.paper, profile=self.profile, params=self.run_params(seed), declared=self.declared,
                    device=self.device, timeout=self.timeout, attempt_prefix=str(self.prefix(seed)), label=self.label(seed),
                    env=forwarded_env())

    def place(self, seed, attempt: Path | None) -> Path:
        """Move an attempt's folder to `seed`'s place in the staging folder (an empty one when there is none)."""
        out = self.out(seed)
        if attempt is not None and attempt.exists():
            if out.exists():
                shutil.rmtree(out) if any(out.iterdir()) else out.rmdir()
            os.replace(attempt, out)
        out.mkdir(parents=True, exist_ok=True)
        return out

    def finish(self, seed, value: dict | None, error: BaseException | None) -> None:
        """A task came back: move its folder into place and judge it; after the last seed, conclude."""
        self.waiting.remove(seed)
        if error is not None or value is None:
            out = self.place(seed, None)
            executed, started, wall = [], now(), 0.0
            self.failure = self.failure or NotebookFailed(Path("(cluster task)"), type(error).__name__, str(error).strip()[:300])
            status = "failed"
        else:
            out = self.place(seed, Path(value["dir"]))
            executed, started, wall = value["executed"], value["started"], value["wall_s"]
            status = "ok"
            if value["failure"] is not None:
                name, ename, evalue = value["failure"]
                status = "failed"
                if ename == "UserError":
                    self.user_error = self.user_error or evalue
                self.failure = self.failure or NotebookFailed(Path(name), ename, evalue)
        self.record(seed, out, executed, started, wall, status)
        if not self.waiting:
            self.close()

    def strays(self) -> list[Path]:
        """Attempt folders left by workers that died."""
        return sorted(self.staging.glob(".seed-*.attempt-*")) + sorted(self.staging.parent.glob(f"{self.staging.name}.attempt-*"))

    def close(self) -> None:
        """Every seed is back: remove stray attempts, then conclude (or drop the run on a user error)."""
        for d in self.strays():
            shutil.rmtree(d, ignore_errors=True)
        if self.user_error is not None:
            self.result = self.drop(self.user_error)
            return
        self.result = self.conclude()

    def interrupt(self) -> None:
        """Ctrl-C: what ran of the unfinished seeds is judged as interrupted and the run kept as `<profile>-failed`."""
        if self.result is not None or not self.staging.exists():
            return
        for seed in list(self.waiting):
            attempts = sorted(self.staging.parent.glob(f"{self.staging.name}.attempt-*") if seed is None
                              else self.staging.glob(f".seed-{seed}.attempt-*"), key=lambda d: d.stat().st_mtime)
            if not attempts:
                continue  # never started: nothing to keep
            out = self.place(seed, attempts[-1])
            self.record(seed, out, [], now(), time.perf_counter() - self.t_all, "interrupted")
        for d in self.strays():
            shutil.rmtree(d, ignore_errors=True)
        self.keep_interrupted()


def run_fanout(client, chosen: list[str], args, params: dict, declared: dict) -> int:
    """With a cluster: every (paper, profile, seed) run is a task; each paper is judged, swapped in and printed
    when its last seed is back. Locks, staging and the interrupted-run rules are those of a local run."""
    ok = True
    runs: list[FannedOutRun] = []
    with contextlib.ExitStack() as locks:
        for paper in chosen:
            try:
                if len(chosen) > 1:
                    check_values(paper, args.profile, params, declared[paper])
                    preflight(paper, args.profile, params)
                locks.enter_context(locked(paper, args.profile))
            except UserError as err:
                if len(chosen) == 1:
                    raise
                print(f"error: {paper}: {err}", file=sys.stderr)
                ok = False
                continue
            runs.append(FannedOutRun(paper, args.profile, params, declared[paper], args.device, args.timeout, args.seeds))
        owners = [(run, seed) for run in runs for seed in list(run.waiting)]
        if not owners:
            return 0 if ok else 1
        cluster.check_workers(client)
        print(f"cluster: {len(owners)} runs of {', '.join(r.paper for r in runs)} at {args.profile} "
              f"submitted to {client.scheduler.address}", file=sys.stderr)
        futures = cluster.submit_all(client, run_notebooks_task, [r.task(s) for r, s in owners], desc="runs", wrap=False)
        state = {"ok": ok}

        def on_result(i, value, error):
            run, seed = owners[i]
            run.finish(seed, value, error)
            if run.result is None:
                return
            if isinstance(run.result, UserError):
                if len(chosen) == 1:
                    raise run.result
                print(f"error: {run.paper}: {run.result}", file=sys.stderr)
                state["ok"] = False
                return
            print_table(run.result)
            state["ok"] = state["ok"] and run.result["ok"]

        try:
            cluster.gather(client, futures, desc=f"{len(owners)} runs", on_result=on_result, fail_fast=False)
        except UserError:
            for run in runs:
                if run.result is None and run.staging.exists():
                    shutil.rmtree(run.staging, ignore_errors=True)
            raise
        except BaseException:  # Ctrl-C, SIGTERM: the futures are cancelled; partial runs are kept as failed
            for run in runs:
                run.interrupt()
            raise
    return 0 if state["ok"] else 1
