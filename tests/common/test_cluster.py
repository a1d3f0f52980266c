"""The Dask executor (`--cluster` / REPRO_CLUSTER) on a loopback LocalCluster of 2 worker processes.

Everything addresses 127.0.0.1 only. One cluster serves the whole file (about 5 s to start).
"""
import math
import os
import signal
import socket
import threading
import time

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from common import cluster, paths, reproduce  # noqa: E402
from common.runner import execute  # noqa: E402
from common.io import read_json  # noqa: E402
from common.parallel import pmap  # noqa: E402


@pytest.fixture(scope="module")
def local_cluster():
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0", worker_dashboard_address="127.0.0.1:0") as lc:
        yield lc
    cluster.close_all()


@pytest.fixture
def on_cluster(local_cluster, monkeypatch):
    monkeypatch.setenv("REPRO_CLUSTER", local_cluster.scheduler_address)
    return local_cluster.scheduler_address


def same(a, b) -> bool:
    """Bitwise equality of nested results (NaN equals NaN at the same place)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return type(a) is type(b) and a == b


def netrecon_tasks(N=100, t_average=5.0, n=4):
    from common.seed import Streams

    return [dict(N=N, g=g, streams=Streams(0).child("net", s), n_traj=1, t_transient=5.0, t_average=t_average,
                 t_align=2.0, dt=0.01) for g in (0.5, 2.0) for s in range(n // 2)]


def test_pmap_on_the_cluster_equals_the_local_pool_bitwise(on_cluster, monkeypatch, capsys):
    from papers.acl import synthetic_replicates as acl
    from papers.acl.config import get_config
    from papers.netrecon import tasks as netrecon

    from common.seed import Streams

    cfg = vars(get_config("smoke"))
    acl_tasks = [dict(cfg_dict=cfg, mix="ring", r=0, streams=Streams(0), model=m) for m in ("gan", "ae")]
    net_tasks = netrecon_tasks()
    remote_net = pmap(netrecon.lyapunov_task, net_tasks, desc="lyapunov")
    remote_acl = pmap(acl.synthetic_task, acl_tasks, desc="synthetic")
    err = capsys.readouterr().err
    assert "lyapunov: 100% (4/4, 0 failed, 0 retried" in err
    monkeypatch.delenv("REPRO_CLUSTER")
    assert same(pmap(netrecon.lyapunov_task, net_tasks, workers=2), remote_net)
    assert same(pmap(acl.synthetic_task, acl_tasks, workers=2), remote_acl)


def test_a_worker_killed_mid_sweep_is_rerun_and_changes_nothing(on_cluster, local_cluster, capsys):
    from papers.netrecon import tasks as netrecon

    client = cluster.current()
    client.wait_for_workers(2, timeout=60)
    tasks = netrecon_tasks(N=600, t_average=60.0, n=4)
    undisturbed = pmap(netrecon.lyapunov_task, tasks, desc="sweep")
    out: dict = {}
    sweep = threading.Thread(target=lambda: out.setdefault("res", pmap(netrecon.lyapunov_task, tasks, desc="sweep")))
    sweep.start()
    victim = None
    deadline = time.monotonic() + 30
    while victim is None and time.monotonic() < deadline:
        busy = [w for w, keys in client.processing().items() if keys]
        if busy:
            time.sleep(0.3)  # inside the task
            victim = client.run(os.getpid, workers=[busy[0]])[busy[0]]
            os.kill(victim, signal.SIGKILL)
        time.sleep(0.05)
    assert victim is not None, "no task was ever processing"
    sweep.join(120)
    assert not sweep.is_alive()
    assert same(out["res"], undisturbed)
    err = capsys.readouterr().err
    assert "rerun after its worker died (attempt 2)" in err
    assert "sweep: 100% (4/4, 0 failed, 1 retried" in err or "sweep: 100% (4/4, 0 failed, 2 retried" in err


def test_seeds_fan_out_gives_the_claims_tables_of_a_local_run(toy_repo, local_cluster, monkeypatch, in_process_executor):
    monkeypatch.delenv("REPRO_CLUSTER", raising=False)
    monkeypatch.setenv("PATH", os.environ["PATH"])  # the runner prepends the interpreter's folder
    monkeypatch.setenv("REPRO_PROFILE", os.environ.get("REPRO_PROFILE", "quick"))
    cmd = ["toy", "--profile", "smoke", "--seeds", "0", "1", "--quiet"]
    with monkeypatch.context() as m:   # the local reference in this process; the cluster's runs in real kernels
        m.setattr(execute, "run_notebook", in_process_executor([]))
        assert reproduce.main([*cmd, "--results", str(toy_repo / "local")]) == 0
    assert reproduce.main([*cmd, "--results", str(toy_repo / "dask"), "--cluster", local_cluster.scheduler_address]) == 0
    local, dask = toy_repo / "local" / "toy" / "smoke", toy_repo / "dask" / "toy" / "smoke"
    for rel in ("claims.csv", "seed-0/claims.csv", "seed-1/claims.csv", "seed-0/metrics.json", "seed-1/metrics.json"):
        assert (dask / rel).read_bytes() == (local / rel).read_bytes(), rel
    man = read_json(dask / "seed-1" / "manifest.json")
    assert man["status"] == "ok" and man["run_dir"] == str(dask / "seed-1") and ".attempt-" not in str(man["run_dir"])
    assert sorted(p.name for p in dask.parent.iterdir()) == [".smoke.lock", "smoke"]  # no staging, no attempt folders
    assert not list(dask.glob(".seed-*"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_scheduler_is_one_line_and_writes_nothing(toy_repo, monkeypatch, capsys):
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 1.0)
    monkeypatch.delenv("REPRO_CLUSTER", raising=False)
    addr = f"tcp://127.0.0.1:{_free_port()}"
    with pytest.raises(SystemExit) as exc:
        reproduce.main(["toy", "--profile", "smoke", "--seeds", "0", "1", "--cluster", addr])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and addr in err[0] and err[0].startswith("error: cannot reach the Dask scheduler")
    assert not (toy_repo / "results").exists()
    monkeypatch.setenv("REPRO_CLUSTER", addr)  # the same through the environment
    with pytest.raises(SystemExit) as exc:
        reproduce.main(["toy", "--profile", "smoke"])
    assert exc.value.code == 2 and addr in capsys.readouterr().err
    assert not (toy_repo / "results").exists()


def test_an_absent_device_from_the_environment_writes_nothing(toy_repo, in_process, monkeypatch, capsys):
    """REPRO_DEVICE=cuda on a machine without one: one line, exit 2, not even a lock file."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    monkeypatch.setenv("REPRO_DEVICE", "cuda")
    with pytest.raises(SystemExit) as exc:
        reproduce.main(["toy", "--profile", "smoke"])
    assert exc.value.code == 2 and len(capsys.readouterr().err.strip().splitlines()) == 1
    assert not (toy_repo / "results").exists()


def test_a_user_error_raised_by_a_notebook_leaves_no_lock(toy_repo, in_process, monkeypatch):
    monkeypatch.setenv("PATH", os.environ["PATH"])
    monkeypatch.setenv("REPRO_PROFILE", os.environ.get("REPRO_PROFILE", "quick"))
    with pytest.raises(SystemExit) as exc:
        reproduce.main(["toy", "--profile", "smoke", "-p", "x=-1"])
    assert exc.value.code == 2
    assert not (paths.results_root() / "toy").exists()


def test_ctrl_c_cancels_the_fan_out_and_keeps_partial_runs_as_failed(toy_repo, local_cluster, monkeypatch, capsys):
    from conftest import PARAMS, make_notebook

    make_notebook(paths.NOTEBOOKS / "toy" / "01-toy.ipynb", PARAMS,
                  "import time\nfrom common.runs import Run\nRun.open('toy', profile, run_dir=run_dir, seed=seed)\ntime.sleep(20)")
    monkeypatch.delenv("REPRO_CLUSTER", raising=False)
    monkeypatch.setenv("PATH", os.environ["PATH"])
    monkeypatch.setenv("REPRO_PROFILE", os.environ.get("REPRO_PROFILE", "quick"))
    parent = paths.results_root() / "toy"

    def interrupt_once_started():  # Ctrl-C as soon as both seeds run on the workers (each sleeps 20 s, so that a
        # slow second start on a loaded machine still finds the first one running)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if len(list(parent.glob(".smoke.staging-*/.seed-*.attempt-*/manifest.json"))) == 2:
                break
            time.sleep(0.1)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_once_started, daemon=True).start()
    with pytest.raises(SystemExit) as exc:
        reproduce.main(["toy", "--profile", "smoke", "--seeds", "0", "1", "--cluster", local_cluster.scheduler_address])
    assert exc.value.code == 130
    assert "partial run kept in" in capsys.readouterr().err
    failed = parent / "smoke-failed"
    assert {read_json(failed / f"seed-{k}" / "manifest.json")["status"] for k in (0, 1)} == {"interrupted"}
    assert not (parent / "smoke").exists() and not list(parent.glob(".smoke.staging-*"))
