"""How pool workers start (`common.workerstart`): forked from one pre-imported server, with the caller's environment
and one thread, the same numbers as spawned workers, and their CPU time the caller's once the server is stopped."""
import multiprocessing as mp
import os
import resource
import sys
import time

import pytest

from common import spawned, workerstart

pytestmark = pytest.mark.skipif("forkserver" not in mp.get_all_start_methods(), reason="no forkserver on this platform")


def probe(name: str) -> dict:
    """What a worker sees (this module imports no torch: the server's preload is what puts it there)."""
    return {"env": os.environ.get(name), "ppid": os.getppid(), "pid": os.getpid(),
            "preloaded": "torch._dynamo" in sys.modules, "cwd": os.getcwd()}


def train(seed: int) -> list[float]:
    """A few Adam steps of a small network (the kind of work the papers' workers do), its final weights as floats."""
    import torch

    g = torch.Generator().manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(8, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3)
    opt = torch.optim.Adam(net.parameters(), 1e-2)
    x = torch.randn(256, 8, generator=g)
    y = x.sum(1, keepdim=True).sin()
    for _ in range(30):
        loss = (net(x) - y).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return torch.cat([p.detach().reshape(-1) for p in net.parameters()]).tolist() + [float(torch.get_num_threads())]


def burn(seconds: float) -> float:
    """Busy CPU for about `seconds` of this worker's CPU time."""
    t0 = time.process_time()
    x = 0
    while time.process_time() - t0 < seconds:
        x += 1
    return time.process_time() - t0


def test_workers_are_forked_from_one_preloaded_server_with_the_callers_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(workerstart.ENV, raising=False)
    spawned.run_tasks(probe, [dict(name="X")], 1)          # the server is running from here on
    server = workerstart.server_pid()
    assert server is not None
    monkeypatch.setenv("REPRO_PROBE", "after-the-server-started")
    monkeypatch.chdir(tmp_path)
    out = spawned.run_tasks(probe, [dict(name="REPRO_PROBE"), dict(name="OMP_NUM_THREADS")], 2)
    assert [o["ppid"] for o in out] == [server, server]     # forked by the server, not by this process
    assert out[0]["env"] == "after-the-server-started"      # the caller's environment at the pool's start
    assert out[1]["env"] == "1"                             # and its one-thread limit
    assert all(o["preloaded"] for o in out)                 # torch._dynamo imported once, in the server
    assert all(o["cwd"] == str(tmp_path) for o in out)      # the caller's working directory, as spawn gives


def test_a_pool_started_without_the_one_thread_environment_still_gives_its_workers_one_thread(monkeypatch):
    from concurrent.futures import ProcessPoolExecutor

    monkeypatch.delenv(workerstart.ENV, raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "7")              # a caller that set its own, outside single_thread_env
    with ProcessPoolExecutor(1, **workerstart.pool_args()) as ex:
        out = ex.submit(probe, "OMP_NUM_THREADS").result()
    assert out["env"] == "1"
    assert os.environ["OMP_NUM_THREADS"] == "7"             # the caller's own is left as it was


def test_forked_workers_give_the_numbers_of_spawned_ones(monkeypatch):
    tasks = [dict(seed=s) for s in (1, 2, 3)]
    monkeypatch.delenv(workerstart.ENV, raising=False)
    forked = spawned.run_tasks(train, tasks, 2)
    monkeypatch.setenv(workerstart.ENV, "spawn")
    assert workerstart.method() == "spawn"
    fresh = spawned.run_tasks(train, tasks, 2)
    assert forked == fresh                                  # bit for bit, one thread each
    assert all(r[-1] == 1.0 for r in forked)


def test_stopping_the_server_brings_its_workers_cpu_time_home(monkeypatch):
    monkeypatch.delenv(workerstart.ENV, raising=False)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = spawned.run_tasks(burn, [dict(seconds=0.6), dict(seconds=0.6)], 2)
    assert workerstart.server_pid() is not None
    workerstart.stop()
    assert workerstart.server_pid() is None
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    gained = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    assert gained >= 0.9 * sum(used)                        # the workers' 1.2 CPU-s, through the reaped server
    workerstart.stop()                                      # a second stop does nothing
    assert spawned.run_tasks(probe, [dict(name="X")], 1)[0]["ppid"] == workerstart.server_pid()   # a new server


def test_the_runner_stops_the_server_in_its_kernels_last_notebook_only(tmp_path, monkeypatch):
    pytest.importorskip("nbformat")
    import nbformat

    from common.runner.execute import with_runner_cells

    nb = tmp_path / "01-x.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]), str(nb))
    last = {final: with_runner_cells(nb, str(tmp_path), final).cells[-1].source for final in (False, True)}
    assert "common.costs" in last[False] and "lifetime" not in last[False]
    assert "common.costs" in last[True] and '"common.lifetime", fromlist=["end"]).end()' in last[True]
    # what that cell runs ends the server the pools started
    monkeypatch.delenv(workerstart.ENV, raising=False)
    workerstart.warm()
    assert workerstart.server_pid() is not None
    from common import lifetime

    lifetime.end()
    assert workerstart.server_pid() is None


def test_warm_starts_the_server_before_any_pool(monkeypatch):
    monkeypatch.delenv(workerstart.ENV, raising=False)
    workerstart.stop()
    assert workerstart.server_pid() is None
    workerstart.warm()
    server = workerstart.server_pid()
    assert server is not None
    assert spawned.run_tasks(probe, [dict(name="X")], 1)[0]["ppid"] == server   # the first pool uses it
    monkeypatch.setenv(workerstart.ENV, "spawn")
    workerstart.stop()
    workerstart.warm()                                      # spawn chosen: nothing to start
    assert workerstart.server_pid() is None
