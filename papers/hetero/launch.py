"""Spawn a run's processes on this machine (the notebooks' and tests' stand-in for torchrun).

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007

`launch(job, world)` starts `world` processes of `python -m papers.hetero.train` with the same
environment torchrun gives (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT), one BLAS thread
each, each in its own process group. Like torchrun, when one rank fails the others get a grace
period (the process-group timeout) to fail on their own, then everything left is killed; a run
that exceeds `deadline_s` is killed too. No process outlives the call.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path

from common import paths
from common.errors import UserError

from .job import Job, validate


class RunFailed(RuntimeError):
    """A rank exited non-zero (or the run passed its deadline); the message names who and why."""

    def __init__(self, message: str, returncodes: dict, pids: list[int], elapsed: float):
        super().__init__(message)
        self.returncodes, self.pids, self.elapsed = returncodes, pids, elapsed


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _kill(procs):
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


def _last_error(path: Path) -> str:
    lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()] if path.exists() else []
    errs = [ln for ln in lines if ln.startswith("error:")]
    return (errs or lines or [""])[-1][:400]


def launch(job: Job, world: int, workdir=None, deadline_s: float = 300.0, per_rank: dict | None = None,
           grace_s: float | None = None, env: dict | None = None) -> list[dict]:
    """Run `job` on `world` local processes; returns each rank's result dict (rank order).

    `per_rank={rank: {field: value}}` changes the job of single ranks (to test start-up checks).
    A user error in the job raises `UserError` before anything starts."""
    validate(job, world)
    work = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="hetero-run-"))
    work.mkdir(parents=True, exist_ok=True)
    job = replace(job, out=str(work))
    port = free_port()
    procs, logs = [], []
    base_env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(world),
                    LOCAL_WORLD_SIZE=str(world), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
                    PYTHONPATH=str(paths.REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    base_env.pop("HETERO_VENDORS", None)
    base_env.update(env or {})
    grace = job.timeout_s + 10 if grace_s is None else grace_s
    t0 = time.monotonic()
    try:
        for r in range(world):
            jr = replace(job, **(per_rank or {}).get(r, {}))
            jf = work / f"job-rank{r}.json"
            jf.write_text(json.dumps(asdict(jr)))
            log = work / f"rank{r}.log"
            logs.append(log)
            with open(log, "wb") as fh:
                procs.append(subprocess.Popen(
                    [sys.executable, "-m", "papers.hetero.train", "--job", str(jf)], cwd=str(paths.REPO),
                    env=dict(base_env, RANK=str(r), LOCAL_RANK=str(r)), stdout=fh, stderr=subprocess.STDOUT,
                    start_new_session=True))
        first_fail = None
        while True:
            codes = [p.poll() for p in procs]
            now = time.monotonic()
            if all(c is not None for c in codes):
                break
            if first_fail is None and any(c not in (None, 0) for c in codes):
                first_fail = now
            if (first_fail is not None and now - first_fail > grace) or now - t0 > deadline_s:
                break
            time.sleep(0.05)
    finally:
        _kill(procs)
    elapsed = time.monotonic() - t0
    codes = {r: p.returncode for r, p in enumerate(procs)}
    if any(codes.values()):
        if any(c == 2 for c in codes.values()):  # a user error found by the ranks (e.g. they disagree)
            raise UserError(next(_last_error(logs[r]) for r, c in codes.items() if c == 2).removeprefix("error: "))
        parts = []
        for r, c in codes.items():
            why = "killed by signal %d" % -c if c < 0 else f"exit {c}"
            parts.append(f"rank {r}: {why}" + (f": {_last_error(logs[r])}" if c > 0 else ""))
        timed_out = elapsed > deadline_s
        head = f"run {'passed its deadline of %ds' % deadline_s if timed_out else 'failed'} after {elapsed:.1f}s"
        raise RunFailed(head + "; " + "; ".join(parts), codes, [p.pid for p in procs], elapsed)
    return [json.loads((work / f"rank{r}.json").read_text()) for r in range(world)]
