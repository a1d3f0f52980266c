"""Spawn a run's processes on this machine (the notebooks' and tests' stand-in for torchrun).

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007

`launch(job, world)` starts `world` processes of `python -m papers.hetero.train` with the same
environment torchrun gives (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT), one BLAS thread
each, each in its own process group. With `job.device` "cpu" (the default, the CPU emulation) the
ranks see no GPU (CUDA_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES empty); with "cuda" rank r takes GPU r,
and more ranks than GPUs is a one-line `UserError` before any process starts. Like torchrun, when one rank fails the others get a grace
period (the process-group timeout) to fail on their own, then everything left is killed; a run
that exceeds `deadline_s` is killed too. No rank outlives the call.

The CPU emulation forks its ranks from a zygote (`zygote`: one process that imported torch and the rank's
code once, kept for the next launch with the same environment, ended at exit or by `close_zygote`) instead of
starting `python -m papers.hetero.train` per rank: each rank saves about 2.5 s of CPU (torch and torch._dynamo
imports), 12 ranks a quick seed. On the emulated cluster the forked rank enters its node's network namespace
first, as `ip netns exec` does (`zygote.enter_netns`). The ranks run the same code on the same inputs, so every
number is the same (`tests/hetero/test_hetero_zygote.py`). $HETERO_ZYGOTE=0 starts them as the command line
(`ip netns exec <node> python -m papers.hetero.train ...` on the cluster); GPU ranks always are.

`cluster=True` (or a dict of `common.netcluster.Cluster` settings, e.g. `{"rate": "1gbit", "delay":
"100us"}`) runs the ranks inside an emulated cluster of network namespaces: one node per vendor
group (a run of ranks of one vendor, stage-major), `job.nics` (default `k_max`) NICs per node, the store and every gloo
group on NIC 0 except CPU-forwarding channel c, which is bound to NIC c mod k (`GLOO_SOCKET_IFNAME`,
set by the rank per group, see `groups.Groups`). The namespaces are the run's own and are removed
when the call returns, however it ends. Where `netcluster.available()` is false, one line on stderr
says why and the loopback emulation runs. Each NIC's byte counters go to `<workdir>/netcluster.json`.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, replace
from pathlib import Path

from common import paths
from common.errors import UserError
from common.lifetime import at_end

from .job import Job, rank_device, validate


def emulation_device(requested: str | None = None) -> str:
    """The device the notebooks' runs compute on, as the run's manifest must record it: always "cpu".
    The notebooks emulate the cluster with every rank on the CPU (`Job.device` "cpu", the ranks see no
    GPU); a GPU asked for (`--device cuda` or $REPRO_DEVICE) is not used, and one line says so and
    where the real-device path is (`torchrun -m papers.hetero.train --device cuda`, README)."""
    req = str(requested or os.environ.get("REPRO_DEVICE") or "auto").strip().lower()
    if req not in ("cpu", "auto"):
        print(f"notice: device {req} not used: the hetero notebooks emulate the cluster on the CPU; the GPU path "
              "is `torchrun -m papers.hetero.train --device cuda`, one rank per GPU (papers/hetero/README.md)", flush=True)
    return "cpu"


def run_deadline(steps: int, variants: int = 1) -> float:
    """Seconds a notebook gives a launch of `steps` optimizer steps for each of `variants` models."""
    return 120.0 + 3.0 * steps * variants


class RunFailed(RuntimeError):
    """A rank exited non-zero (or the run passed its deadline); the message names who and why."""

    def __init__(self, message: str, returncodes: dict, pids: list[int], elapsed: float):
        super().__init__(message)
        self.returncodes, self.pids, self.elapsed = returncodes, pids, elapsed


_PORTS: set = set()   # ports of this process's running launches: two launches at once (threads) never get the same one


def free_port() -> int:
    """A free TCP port on 127.0.0.1 that no running launch of this process holds (`release_port` when it ends)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        with _LOCK:
            if port not in _PORTS:
                _PORTS.add(port)
                return port


def release_port(port: int) -> None:
    """Hand `port` back (its launch ended): a later launch may get it again."""
    with _LOCK:
        _PORTS.discard(port)


def _kill(procs):
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:  # a forked rank not yet in its own session
                try:
                    os.kill(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


class _Forked:
    """A rank forked by the zygote, with the part of `subprocess.Popen`'s interface `launch` uses."""

    def __init__(self, zyg, pid: int):
        self.zygote, self.pid, self.returncode = zyg, pid, None

    def poll(self):
        if self.returncode is None:
            self.returncode = self.zygote.poll().get(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None):
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() > end:
                raise subprocess.TimeoutExpired(f"rank {self.pid}", timeout)
            time.sleep(0.01)
        return self.returncode


# the variables a rank's environment sets per launch (or per rank): a zygote serves launches that differ only in these
PER_LAUNCH = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "RANK", "LOCAL_RANK")
# set in this process by its first torch._dynamo import (its first optimizer step, e.g. a single-process reference run)
# and in the zygote by its own: it changes nothing the zygote imported (each rank gets the launch's whole environment),
# so it must not replace the zygote (it did between notebook 01's two launches: a second torch import, ~3 s on one core)
NOT_KEYED = PER_LAUNCH + ("TORCHINDUCTOR_CACHE_DIR",)
_ZYGOTE: dict = {}  # the zygote of this process (`zygote.Zygote`), reused while the ranks' environment is the same
_LOCK = threading.RLock()  # launches may run at once in threads of one process (notebook 01): one zygote for them all


def zygote_enabled() -> bool:
    """Whether ranks fork from a zygote here: a platform with fork, and $HETERO_ZYGOTE not 0."""
    return os.environ.get("HETERO_ZYGOTE", "1") != "0" and hasattr(os, "fork")


def _zygote(env: dict, replace_live: bool = True):
    """The zygote for ranks of environment `env` (one kept per process; a different environment replaces it), or
    None where it cannot start (then the ranks start as the command line). $HETERO_ZYGOTE=0 turns it off.

    `replace_live=False` (the warm-up) keeps a live zygote whatever its environment: a launch in another thread may be
    forking from it, and the launch that needs another environment replaces it itself, under the lock."""
    if not zygote_enabled():
        return None
    from .zygote import Zygote

    key = json.dumps({k: v for k, v in sorted(env.items()) if k not in NOT_KEYED})
    with _LOCK:
        old = _ZYGOTE.get("zygote")
        if old is not None and old.proc.poll() is None and (_ZYGOTE.get("key") == key or not replace_live):
            return old
        close_zygote()
        try:
            _ZYGOTE.update(zygote=Zygote(env, str(paths.REPO)), key=key)
        except (OSError, RuntimeError) as err:
            print(f"notice: no rank zygote ({err}); the ranks start as python -m papers.hetero.train", file=sys.stderr, flush=True)
            return None
        return _ZYGOTE["zygote"]


def current_zygote():
    """This process's zygote (`zygote.Zygote`, its `proc` the process), or None."""
    return _ZYGOTE.get("zygote")


def close_zygote() -> None:
    """End this process's zygote, if any (also at exit)."""
    with _LOCK:
        z = _ZYGOTE.pop("zygote", None)
        _ZYGOTE.pop("key", None)
    if z is not None:
        z.close()


at_end(close_zygote)


def _last_error(path: Path) -> str:
    lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()] if path.exists() else []
    errs = [ln for ln in lines if ln.startswith("error:")]
    return (errs or lines or [""])[-1][:400]


def vendor_nodes(vendors) -> list[int]:
    """Node of each rank: one node per run of equal vendors ('nv,nv,amd,amd' -> [0, 0, 1, 1])."""
    nodes = []
    for i, v in enumerate(vendors):
        nodes.append(0 if i == 0 else nodes[-1] + (v != vendors[i - 1]))
    return nodes


def _cluster(cluster, n_nodes: int, k: int):
    """The `netcluster.Cluster` for `cluster` (None when not asked for, or not available here)."""
    if not cluster:
        return None
    from common import netcluster

    ok, why = netcluster.available()
    if not ok:
        print(f"notice: no emulated cluster ({why}); the ranks run on loopback", file=sys.stderr, flush=True)
        return None
    return netcluster.Cluster(nodes=n_nodes, nics_per_node=k, **(cluster if isinstance(cluster, dict) else {}))


def ranks_env(device: str, port: int, world: int, env: dict | None = None) -> dict:
    """The environment every rank of a launch gets (before its RANK and LOCAL_RANK): this process's, torchrun's
    variables, one BLAS thread, the repository on the path, no GPU for the CPU emulation, then `env`."""
    base = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(world),
                LOCAL_WORLD_SIZE=str(world), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
                PYTHONPATH=str(paths.REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    base.pop("HETERO_VENDORS", None)
    if device == "cpu":  # the CPU emulation: no rank sees a GPU, whatever this machine has
        base.update(CUDA_VISIBLE_DEVICES="", HIP_VISIBLE_DEVICES="")
    base.update(env or {})
    return base


def warm_zygote(env: dict | None = None) -> None:
    """Start the zygote of the next CPU-emulation launch (with `env`, as `launch(..., env=env)`) now, in a background
    thread, so that its imports (~2.6 CPU-s) run beside this process's other work instead of in front of that launch.
    The launch forks from it, or waits for it to be ready; one whose ranks' environment differs replaces it. A live
    zygote is kept as it is (a launch may be forking from it)."""
    if not zygote_enabled():
        return
    threading.Thread(target=_zygote, args=(ranks_env("cpu", 0, 1, env), False), name="hetero-zygote-warm",
                     daemon=True).start()


def launch(job: Job, world: int, workdir=None, deadline_s: float = 300.0, per_rank: dict | None = None,
           grace_s: float | None = None, env: dict | None = None, cluster=None) -> list[dict]:
    """Run `job` on `world` local processes; returns each rank's result dict (rank order).

    `per_rank={rank: {field: value}}` changes the job of single ranks (to test start-up checks).
    A user error in the job raises `UserError` before anything starts."""
    vendors, _ = validate(job, world)
    rank_device(job.device, world - 1, world)  # more ranks than local GPUs: one line, before anything starts
    nodes = vendor_nodes(vendors)
    work = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="hetero-run-"))
    work.mkdir(parents=True, exist_ok=True)
    job = replace(job, out=str(work))
    port = free_port()
    procs, logs = [], []
    base_env = ranks_env(job.device, port, world, env)
    grace = job.timeout_s + 10 if grace_s is None else grace_s
    cl = _cluster(cluster, nodes[-1] + 1, job.nics or job.k_max)
    t0 = time.monotonic()
    try:
        if cl is not None:
            cl.start()
        # the CPU emulation forks its ranks from a zygote that imported torch once (`zygote`); on the cluster each
        # child enters its node's network namespace before it runs the rank
        zyg = _zygote(base_env) if job.device == "cpu" else None
        for r in range(world):
            jr = replace(job, **(per_rank or {}).get(r, {}))
            jf = work / f"job-rank{r}.json"
            jf.write_text(json.dumps(asdict(jr)))
            log = work / f"rank{r}.log"
            logs.append(log)
            rank_args = ["--job", str(jf)]
            argv = [sys.executable, "-m", "papers.hetero.train", *rank_args]
            renv = dict(base_env, RANK=str(r), LOCAL_RANK=str(r))
            if cl is not None:  # inside the node of its vendor group; store and world group on NIC 0
                argv = cl.argv(nodes[r], argv)
                renv = cl.env(nodes[r], nics=[0], master_port=29500, base=dict(renv, HETERO_NICS=str(cl.nics)))
            if zyg is not None:
                netns = cl.namespace(nodes[r]) if cl is not None else None
                procs.append(_Forked(zyg, zyg.spawn(rank_args, renv, str(paths.REPO), str(log), netns=netns)))
                continue
            with open(log, "wb") as fh:
                procs.append(subprocess.Popen(argv, cwd=str(paths.REPO), env=renv, stdout=fh,
                                              stderr=subprocess.STDOUT, start_new_session=True))
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
        release_port(port)
        if cl is not None:
            try:  # what each NIC carried, a measurement (`<workdir>/netcluster.json`)
                (work / "netcluster.json").write_text(json.dumps({
                    "nodes": nodes, "shaping": cl.shaping,
                    "nic_counters": [[cl.nic_counters(n, j) for j in range(cl.nics)] for n in range(cl.nodes)]}))
            finally:
                cl.close()
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
