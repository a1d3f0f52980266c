"""The rank zygote: ranks forked from one pre-imported parent compute bit for bit what command-line ranks compute,
fail and are killed the same way, and the zygote is reused, replaced and ended as documented."""
import json
import os
import subprocess
import sys
import time
from dataclasses import replace

import pytest

from papers.hetero.job import Job
from papers.hetero.launch import RunFailed, close_zygote, current_zygote, launch, warm_zygote

JOB = Job(vendors="nv,amd", links=["direct", "cpu_forward:2", "device_direct"], steps=3, corpus_tokens=20_000,
          timeout_s=20.0, clip=0.1, partition=[4, 2], save_params=True, audit_control=True)


def _gone(pid):
    """No such process, or only its zombie (/proc/<pid>/stat state Z)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _numbers(ranks):
    """Every number a rank reports but its timings (wall seconds, the copy engine's seconds)."""
    def counted(counters):
        return [{k: v for k, v in c.items() if k != "engine_s"} for c in counters]

    return [{k: (v["losses"], v["grad_norms"], v["local_norms"], v["digest"], counted(v["counters"]))
             for k, v in r["variants"].items()} for r in ranks]


@pytest.fixture
def zygote_on(monkeypatch):
    monkeypatch.setenv("HETERO_ZYGOTE", "1")
    close_zygote()
    yield
    close_zygote()


def test_forked_ranks_equal_command_line_ranks_bitwise(zygote_on, tmp_path, monkeypatch):
    forked = launch(JOB, 2, workdir=tmp_path / "forked", deadline_s=120)
    zyg = current_zygote()
    assert zyg.proc.poll() is None  # kept for the next launch
    again = launch(replace(JOB, steps=2), 2, workdir=tmp_path / "again", deadline_s=120)
    assert current_zygote() is zyg  # the same environment: the same zygote
    monkeypatch.setenv("HETERO_ZYGOTE", "0")
    spawned = launch(JOB, 2, workdir=tmp_path / "spawned", deadline_s=120)
    assert _numbers(forked) == _numbers(spawned)
    assert [v["losses"][:2] for v in again[1]["variants"].values()] == [v["losses"][:2] for v in forked[1]["variants"].values()]
    for a, b in zip(sorted((tmp_path / "forked").glob("params-*.pt")), sorted((tmp_path / "spawned").glob("params-*.pt"))):
        assert a.name == b.name and a.read_bytes() == b.read_bytes()


def test_zygote_is_replaced_when_the_environment_changes_and_ended(zygote_on, tmp_path):
    launch(replace(JOB, links=["direct"], steps=1), 2, workdir=tmp_path / "a", deadline_s=120)
    first = current_zygote()
    launch(replace(JOB, links=["direct"], steps=1), 2, workdir=tmp_path / "b", deadline_s=120, env={"HETERO_TEST_KEY": "x"})
    second = current_zygote()
    assert second is not first and first.proc.poll() is not None and second.proc.poll() is None
    close_zygote()
    assert second.proc.poll() is not None and current_zygote() is None


def test_killed_forked_rank_is_named_and_nothing_is_left(zygote_on, tmp_path):
    job = replace(JOB, links=["device_direct"], save_params=False, steps=4, fail_rank=1, fail_step=1, timeout_s=5.0)
    with pytest.raises(RunFailed) as err:
        launch(job, 2, workdir=tmp_path, deadline_s=120)
    msg = str(err.value)
    assert "rank 1: killed by signal 9" in msg and "rank 0 (stage 0, nv): a peer failed or timed out" in msg
    assert all(_gone(p) for p in err.value.pids)
    assert current_zygote() is not None  # the zygote itself survives a failed run
    hung = replace(job, fail_mode="stop")  # a stopped rank: only the deadline ends it, and it is killed
    with pytest.raises(RunFailed) as err:
        launch(hung, 2, workdir=tmp_path / "hung", deadline_s=12, grace_s=1.0)
    assert all(_gone(p) for p in err.value.pids)


def test_a_warmed_zygote_is_the_one_the_next_launch_forks_from(zygote_on, tmp_path):
    warm_zygote()
    t_end = time.monotonic() + 120
    while current_zygote() is None and time.monotonic() < t_end:   # ready in the background
        time.sleep(0.05)
    zyg = current_zygote()
    assert zyg is not None and zyg.proc.poll() is None
    launch(replace(JOB, links=["direct"], steps=1), 2, workdir=tmp_path, deadline_s=120)
    assert current_zygote() is zyg   # the launch's ranks' environment is the one it was warmed with


def _join_warm_threads():
    import threading

    for t in threading.enumerate():
        if t.name == "hetero-zygote-warm":
            t.join(120)


def test_a_launch_started_while_the_zygote_warms_waits_for_that_zygote(zygote_on, tmp_path, monkeypatch):
    """`warm_zygote` and a launch at once: one zygote is started (the launch waits for the warm one under the lock
    instead of starting a second, which would leak the first), and the launch forks from it."""
    from papers.hetero import zygote as zygote_mod

    started = []
    init = zygote_mod.Zygote.__init__

    def counted(self, *a, **k):
        started.append(self)
        init(self, *a, **k)

    monkeypatch.setattr(zygote_mod.Zygote, "__init__", counted)
    warm_zygote()
    launch(replace(JOB, links=["direct"], steps=1), 2, workdir=tmp_path, deadline_s=120)
    _join_warm_threads()
    assert len(started) == 1 and current_zygote() is started[0] and started[0].proc.poll() is None


def test_the_warm_up_never_replaces_a_live_zygote(zygote_on, tmp_path):
    """A launch in another thread may be forking from the live zygote: warming for another environment keeps it (the
    launch that needs the other environment replaces it itself)."""
    launch(replace(JOB, links=["direct"], steps=1), 2, workdir=tmp_path / "a", deadline_s=120, env={"HETERO_TEST_KEY": "x"})
    live = current_zygote()
    warm_zygote()                       # the default environment: another key
    _join_warm_threads()
    assert current_zygote() is live and live.proc.poll() is None
    launch(replace(JOB, links=["direct"], steps=1), 2, workdir=tmp_path / "b", deadline_s=120)
    assert current_zygote() is not live and live.proc.poll() is not None   # the launch replaced it


def test_a_released_port_can_be_handed_out_again_and_a_held_one_cannot(monkeypatch):
    """Ports held by running launches are never handed out twice; a launch's port goes back when it ends."""
    from papers.hetero import launch as launch_mod

    offered = iter([41001, 41001, 41002, 41001])

    class FakeSocket:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def bind(self, addr):
            self.port = next(offered)

        def getsockname(self):
            return ("127.0.0.1", self.port)

    monkeypatch.setattr(launch_mod.socket, "socket", FakeSocket)
    assert launch_mod.free_port() == 41001
    assert launch_mod.free_port() == 41002      # 41001 is held: the OS's next offer is taken
    launch_mod.release_port(41001)
    launch_mod.release_port(41002)
    assert launch_mod.free_port() == 41001      # released: handed out again
    launch_mod.release_port(41001)


def test_forked_rank_output_goes_to_its_log(zygote_on, tmp_path):
    launch(replace(JOB, links=["direct"], steps=1), 2, workdir=tmp_path, deadline_s=120)
    logs = [tmp_path / f"rank{r}.log" for r in range(2)]
    assert all(p.exists() for p in logs)   # each child opened its own log (the zygote's `_child`)
    assert not any("Traceback" in p.read_text() for p in logs)


def test_launches_in_two_threads_share_one_zygote_and_compute_what_they_compute_alone(zygote_on, tmp_path, monkeypatch):
    """Notebook 01 runs its two launches at once, in threads: one zygote serves both (a torch._dynamo import in the
    launching process, which sets TORCHINDUCTOR_CACHE_DIR, does not replace it), and each launch's numbers are those
    it computes alone."""
    from concurrent.futures import ThreadPoolExecutor

    a, b = replace(JOB, links=["direct", "device_direct"], steps=2), replace(JOB, links=["cpu_forward:2"], steps=2, seed=7)
    alone = [launch(a, 2, workdir=tmp_path / "a", deadline_s=120)]
    zyg = current_zygote()
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))   # what the first optimizer step sets here
    alone.append(launch(b, 2, workdir=tmp_path / "b", deadline_s=120))
    assert current_zygote() is zyg
    with ThreadPoolExecutor(2) as bg:
        both = [bg.submit(launch, job, 2, workdir=tmp_path / f"both{i}", deadline_s=120) for i, job in enumerate((a, b))]
        both = [f.result() for f in both]
    assert current_zygote() is zyg and zyg.proc.poll() is None
    assert [_numbers(r) for r in both] == [_numbers(r) for r in alone]


def test_notebook_01_leaves_its_zygote_to_02_which_ends_it_before_the_calibration(monkeypatch, tmp_path):
    """01 keeps the zygote for 02's launch (the runner's last cell, `common.lifetime.end`, ends it if nobody did: the
    kernel then reaps it and its ranks' CPU time counts in the run's cores_used); 02 ends it after its launch, before the
    calibration times the CPU, and warms the next one (04's) after the calibration."""
    from types import SimpleNamespace

    from papers.hetero import launch as launch_mod
    from papers.hetero.studies import correctness, throughput

    order = []

    def started(name, metrics):
        def start(*a, **k):
            order.append(f"launch {name}")
            return {"kernel": lambda: order.append(f"kernel {name}"), "metrics": metrics}
        return start

    monkeypatch.setattr(launch_mod, "close_zygote", lambda: order.append("close"))   # whatever 01 would call
    monkeypatch.setattr(throughput, "close_zygote", lambda: order.append("close"))
    monkeypatch.setattr(correctness, "correctness_start", started("correctness", {"a": 1}))
    monkeypatch.setattr(correctness, "stability_start", started("stability", {"b": 2}))
    monkeypatch.setattr(correctness, "correctness_finish", lambda cfg, s, ref: {"metrics": s["metrics"]})
    monkeypatch.setattr(correctness, "stability_finish", lambda cfg, s, nulls: {"metrics": s["metrics"]})
    monkeypatch.setattr(throughput, "links_benchmark", lambda *a, **k: order.append("launch") or
                        {"metrics": {}, "throughput": {}, "p2p": {"fit": None}})
    monkeypatch.setattr(throughput, "calibrate_cpu", lambda *a, **k: order.append("calibrate") or {})
    monkeypatch.setattr(throughput, "calibration_metrics", lambda *a, **k: {})
    monkeypatch.setattr(throughput, "warm_zygote", lambda: order.append("warm"))
    streams = SimpleNamespace(seed_for=lambda *k: 0, child=lambda *k: None)
    run = SimpleNamespace(streams=streams, dir=tmp_path)
    assert correctness.measure(SimpleNamespace(), run)["metrics"] == {"a": 1, "b": 2}
    # both launches start before the kernel computes their single-process runs; the zygote stays for 02
    assert order == ["launch correctness", "launch stability", "kernel correctness", "kernel stability"]
    assert not hasattr(correctness, "close_zygote")
    order.clear()
    import inspect

    from common import paths
    from common.runner import kernel
    # the notebook 02 asks runs_later about is hetero's cluster notebook (renamed, the warm would silently stop)
    assert 'runs_later("04-cluster")' in inspect.getsource(throughput.measure)
    assert (paths.REPO / "notebooks" / "hetero" / "04-cluster.ipynb").is_file()
    monkeypatch.setattr(throughput.netcluster, "available", lambda: (True, ""))
    kernel.announce(["03-audit.ipynb", "04-cluster.ipynb"])   # the runner runs 04 later in this kernel
    try:
        throughput.measure(SimpleNamespace(), run)
        assert order == ["launch", "close", "calibrate", "warm"]   # the next zygote starts after the CPU is timed
        order.clear()
        monkeypatch.setattr(throughput.netcluster, "available", lambda: (False, "no root"))
        throughput.measure(SimpleNamespace(), run)                 # 04 will build no cluster (and launch nothing)
        assert order == ["launch", "close", "calibrate"]
        order.clear()
    finally:
        kernel.announce(None)
    monkeypatch.setattr(throughput.netcluster, "available", lambda: (True, ""))
    throughput.measure(SimpleNamespace(), run)                 # 02 alone (JupyterLab, or no 04 to come): no zygote warmed
    assert order == ["launch", "close", "calibrate"]


# ---- the emulated cluster: forked ranks enter their node's network namespace (skipped where none can be made) ------
def _netcluster():
    from common import netcluster

    ok, why = netcluster.available()
    if not ok:
        pytest.skip(f"no emulated cluster here: {why}")
    return netcluster


_PROBE = ("import json, os, socket; print(json.dumps([os.readlink('/proc/self/ns/net'), sorted(os.listdir('/sys/class/net')), "
          "sorted(n for _, n in socket.if_nameindex()), os.getcwd(), dict(os.environ)]))")


def test_enter_netns_puts_a_process_where_ip_netns_exec_puts_it(tmp_path):
    """The same network namespace, the same interfaces seen through the kernel and through /sys (a sysfs of the node's
    network, as `ip netns exec` mounts it), the same working directory and environment; and the host's /sys is untouched."""
    from common import paths

    netcluster = _netcluster()
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "PYTHONPATH": str(paths.REPO), "HETERO_PROBE": "1"}
    host_net = sorted(os.listdir("/sys/class/net"))
    with netcluster.Cluster(nodes=1, nics_per_node=2, rate="1gbit", delay="0") as c:
        ns = c.namespace(0)
        run = dict(capture_output=True, text=True, env=env, cwd=str(paths.REPO), timeout=60, check=True)
        by_ip = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", _PROBE], **run).stdout
        forked = subprocess.run([sys.executable, "-c", f"from papers.hetero.zygote import enter_netns; enter_netns({ns!r}); "
                                 + _PROBE], **run).stdout
        # where / is a shared mount (systemd's default) only enter_netns's rslave step keeps the child's /sys changes
        # off its parent's mounts: run it in a scratch mount namespace of shared propagation, then look at /sys there
        scratch = subprocess.run(["unshare", "-m", "--propagation", "shared", "sh", "-c", '"$0" -c "$1" && ls /sys/class/net',
                                  sys.executable, f"from papers.hetero.zygote import enter_netns; enter_netns({ns!r})"],
                                 **run).stdout.split()
    assert forked == by_ip
    net = json.loads(forked)
    assert {"nic0", "nic1", "lo"} <= set(net[1]) and net[1] == net[2]
    assert sorted(os.listdir("/sys/class/net")) == host_net
    assert sorted(scratch) == host_net          # the parent's /sys still describes the parent's network


def test_forked_cluster_ranks_equal_command_line_ranks_bitwise_and_nothing_is_left(zygote_on, tmp_path, monkeypatch):
    """On the emulated cluster (2 nodes x 2 NICs, CPU-forwarding's channels on both NICs) ranks forked from the zygote
    compute bit for bit what `ip netns exec <node> python -m papers.hetero.train` ranks compute, their bytes go over the
    nodes' NICs, and no namespace or rank is left; a rank whose namespace is gone fails in its log, the zygote stays."""
    netcluster = _netcluster()
    job = replace(JOB, links=["direct", "cpu_forward:2"], steps=2, audit_control=False)
    shape = {"rate": "1gbit", "delay": "0"}
    forked = launch(job, 2, workdir=tmp_path / "forked", deadline_s=120, cluster=shape)
    zyg = current_zygote()
    assert zyg is not None and zyg.proc.poll() is None   # the ranks were forked (and the zygote is kept)
    monkeypatch.setenv("HETERO_ZYGOTE", "0")
    spawned = launch(job, 2, workdir=tmp_path / "spawned", deadline_s=120, cluster=shape)
    assert [r["netcluster_node"] for r in forked] == [r["netcluster_node"] for r in spawned] == ["0", "1"]
    assert _numbers(forked) == _numbers(spawned)
    for a, b in zip(sorted((tmp_path / "forked").glob("params-*.pt")), sorted((tmp_path / "spawned").glob("params-*.pt"))):
        assert a.name == b.name and a.read_bytes() == b.read_bytes()
    tx = [n["tx_bytes"] for n in json.loads((tmp_path / "forked" / "netcluster.json").read_text())["nic_counters"][0]]
    assert len(tx) == 2 and all(x > 0 for x in tx)   # node 0 sent on both NICs: the channels were bound inside the node
    assert not [n for n in netcluster.network_namespaces() if n.startswith(f"{netcluster.PREFIX}-{os.getpid()}-")]
    log = tmp_path / "gone.log"
    pid = zyg.spawn(["--job", str(tmp_path / "none.json")], dict(os.environ), str(tmp_path), str(log),
                    netns=f"{netcluster.PREFIX}-0-0-0-n0")
    t_end = time.monotonic() + 30
    while pid not in zyg.poll() and time.monotonic() < t_end:
        time.sleep(0.02)
    assert zyg.poll().get(pid) == 1 and f"/var/run/netns/{netcluster.PREFIX}-0-0-0-n0" in log.read_text()  # the netns step
    assert zyg.proc.poll() is None
