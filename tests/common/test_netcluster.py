"""common.netcluster: set-up and tear-down on every exit path, sweep after kill -9, isolation, shaping
measured (1 NIC, 2 NICs, 2 streams on 1 NIC), gloo over the veth addresses. The namespace tests skip
with the reason where the privileges or tools are missing."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from common import netcluster as nc
from common import paths
from common.errors import UserError

OK, WHY = nc.available()
needs_netns = pytest.mark.skipif(not OK, reason=WHY)
PREFIX = f"nctest{os.getpid()}"  # this test process only: parallel test processes never meet
RATE = 100_000_000  # bits/s per NIC: 2.5 MB take 0.2 s


def _ours() -> list[str]:
    return sorted(n for n in nc.network_namespaces() if n.startswith(PREFIX + "-"))


def _host_state():
    """What the caller's namespace holds: namespaces, interfaces, routes, qdiscs."""
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    names = sorted(ln.split(":")[1].strip() for ln in links.splitlines())
    routes = subprocess.run(["ip", "route"], capture_output=True, text=True).stdout
    qdiscs = subprocess.run(["tc", "qdisc", "show"], capture_output=True, text=True).stdout
    return {"ours": _ours(), "links": names, "routes": routes, "qdiscs": qdiscs}


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait_gone(pid: int, timeout: float = 10.0) -> bool:
    t_end = time.monotonic() + timeout
    while _alive(pid) and time.monotonic() < t_end:
        time.sleep(0.05)
    return not _alive(pid)


# ---- everywhere (no privileges needed) ---------------------------------------------------------
def test_parse_and_addresses():
    assert nc.parse_rate("100mbit") == 10**8 and nc.parse_rate("1gbit") == 10**9 and nc.parse_rate(5e7) == 5 * 10**7
    assert nc.parse_delay("100us") == pytest.approx(1e-4) and nc.parse_delay("2ms") == pytest.approx(2e-3)
    assert nc.parse_delay(None) == 0.0
    for bad in ("100mbps", "fast", "-1mbit"):
        with pytest.raises(UserError):
            nc.parse_rate(bad)
    c = nc.Cluster(nodes=3, nics_per_node=2, prefix=PREFIX)  # not started: names and addresses only
    assert [c.addr(n, j) for n in range(3) for j in range(2)] == [
        "198.18.0.1", "198.18.1.1", "198.18.0.2", "198.18.1.2", "198.18.0.3", "198.18.1.3"]
    assert c.ifname(1) == "nic1" and len(set(c.namespaces + [c.hub])) == 4
    assert all(ns.startswith(f"{PREFIX}-{os.getpid()}-") for ns in c.namespaces)
    env = c.env(2, nics=[0, 1], master_port=29500, base={"X": "1"})
    assert env == {"X": "1", "GLOO_SOCKET_IFNAME": "nic0,nic1", "MASTER_ADDR": "198.18.0.1", "MASTER_PORT": "29500",
                   "NETCLUSTER_NODE": "2", "NETCLUSTER_ADDRS": "198.18.0.3,198.18.1.3"}
    assert c.env(1, nics=1, base={})["MASTER_ADDR"] == "198.18.1.1"
    for bad in (lambda: c.addr(3), lambda: c.ifname(2), lambda: nc.Cluster(nodes=0), lambda: nc.Cluster(prefix="a b")):
        with pytest.raises(UserError):
            bad()
    with pytest.raises(RuntimeError, match="not started"):
        c.argv(0, ["true"])
    assert nc.Cluster(nodes=2, prefix=PREFIX).namespaces != c.namespaces  # a second cluster of one process


def test_unavailable_says_why_in_one_line(monkeypatch):
    try:
        monkeypatch.setattr(nc.os, "geteuid", lambda: 1000)
        monkeypatch.setattr(nc, "_caps", lambda: 0)
        ok, why = nc.available(refresh=True)
        assert not ok and "root or CAP_NET_ADMIN" in why and "\n" not in why
        with pytest.raises(nc.ClusterUnavailable, match="CAP_NET_ADMIN"):
            nc.Cluster(prefix=PREFIX).start()
        monkeypatch.setattr(nc.shutil, "which", lambda t: None)
        ok, why = nc.available(refresh=True)
        assert not ok and "needs ip and tc" in why
    finally:
        monkeypatch.undo()
        assert nc.available(refresh=True) == (OK, WHY)


# ---- in namespaces ----------------------------------------------------------------------------
@needs_netns
def test_setup_and_teardown_leave_nothing():
    before = _host_state()
    with nc.Cluster(nodes=2, nics_per_node=2, rate="100mbit", prefix=PREFIX) as c:
        assert _ours() == sorted(c.namespaces + [c.hub])
        for n in range(2):
            addrs = json.loads(c.run(n, ["ip", "-j", "addr"], capture_output=True, text=True, check=True).stdout)
            by_name = {a["ifname"]: a for a in addrs}
            assert set(by_name) == {"lo", "nic0", "nic1"}
            assert "UP" in by_name["lo"]["flags"]
            for j in range(2):
                assert [i["local"] for i in by_name[f"nic{j}"]["addr_info"] if i["family"] == "inet"] == [c.addr(n, j)]
            routes = c.run(n, ["ip", "route"], capture_output=True, text=True).stdout
            assert "default" not in routes and routes.count("\n") == 2
            qd = c.run(n, ["tc", "qdisc", "show", "dev", "nic1"], capture_output=True, text=True).stdout
            assert "tbf" in qd and "100Mbit" in qd
        hub = subprocess.run(["ip", "-n", c.hub, "-o", "link"], capture_output=True, text=True).stdout
        assert "rail0" in hub and "rail1" in hub and hub.count("master rail1") == 2
        sleeper = c.popen(1, ["sleep", "60"])
        assert _host_state()["links"] == before["links"]  # nothing was ever created out here
    assert _host_state() == before
    assert sleeper.poll() is not None and not _alive(sleeper.pid)
    c.close()  # idempotent


@needs_netns
def test_exception_inside_with_cleans_up():
    before, handler = _host_state(), signal.getsignal(signal.SIGTERM)
    with pytest.raises(ZeroDivisionError):
        with nc.Cluster(nodes=3, nics_per_node=1, rate="50mbit", prefix=PREFIX) as c:
            p = c.popen(2, ["sleep", "60"])
            with nc.Cluster(nodes=1, prefix=PREFIX) as inner:  # nested: the outer keeps its SIGTERM handler
                pass
            assert inner.namespace(0) not in _ours() and c.namespace(0) in _ours()
            if handler == signal.SIG_DFL:
                assert signal.getsignal(signal.SIGTERM) is nc.exit_on_signal
            1 / 0
    assert _host_state() == before and not _alive(p.pid)
    assert signal.getsignal(signal.SIGTERM) == handler


CHILD = textwrap.dedent("""
    import json, sys, time
    from common import netcluster as nc
    with nc.Cluster(nodes=2, nics_per_node=2, rate="100mbit", prefix=sys.argv[1]) as c:
        p = c.popen(1, ["sleep", "60"])
        print(json.dumps({"ns": c.namespaces + [c.hub], "sleeper": p.pid}), flush=True)
        time.sleep(60)
""")


def _child():
    proc = subprocess.Popen([sys.executable, "-c", CHILD, PREFIX], cwd=str(paths.REPO), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(paths.REPO)))
    line = proc.stdout.readline()
    assert line, proc.stderr.read()
    info = json.loads(line)
    assert set(info["ns"]) <= set(_ours()) and _alive(info["sleeper"])
    return proc, info


@needs_netns
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_to_owner_cleans_up(sig):
    before = _host_state()
    proc, info = _child()
    proc.send_signal(sig)
    rc = proc.wait(timeout=120)
    # SIGTERM: SystemExit(143); SIGINT: KeyboardInterrupt, after which Python re-raises the signal (-2)
    assert rc in ((143,) if sig == signal.SIGTERM else (1, -signal.SIGINT)), proc.stderr.read()
    assert not set(info["ns"]) & set(_ours())
    assert _wait_gone(info["sleeper"])
    assert _host_state() == before


@needs_netns
def test_sweep_after_sigkill():
    before = _host_state()
    with nc.Cluster(nodes=2, prefix=PREFIX) as live:  # a live run of the same prefix is left alone
        proc, info = _child()
        proc.kill()
        proc.wait(timeout=10)
        assert set(info["ns"]) <= set(_ours()) and _alive(info["sleeper"])  # kill -9 leaves them
        removed = nc.sweep(PREFIX)
        assert sorted(removed) == sorted(info["ns"])
        assert _ours() == sorted(live.namespaces + [live.hub])
        assert _wait_gone(info["sleeper"])
        assert nc.sweep(PREFIX) == []  # idempotent
        proc, info = _child()  # and the next run's start sweeps by itself
        proc.kill()
        proc.wait(timeout=10)
        with nc.Cluster(nodes=1, prefix=PREFIX) as nxt:
            assert not set(info["ns"]) & set(_ours()) and set(nxt.namespaces) <= set(_ours())
        assert _wait_gone(info["sleeper"])
    assert _host_state() == before


PROBE = textwrap.dedent("""
    import errno, json, socket, sys
    out = {}
    for a, port in json.loads(sys.argv[1]):
        s = socket.socket(); s.settimeout(3)
        try:
            s.connect((a, port)); out[a] = s.recv(16).decode()
        except OSError as e:
            out[a] = errno.errorcode.get(e.errno, str(e))
        s.close()
    print(json.dumps(out))
""")

SERVE = textwrap.dedent("""
    import socket, sys
    socks = []
    for a in sys.argv[1:]:
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((a, 7000)); s.listen(4)
        socks.append(s)
    print("ready", flush=True)
    for s in socks:
        c, _ = s.accept(); c.sendall(b"node1"); c.close()
""")


def _host_addresses() -> list[str]:
    info = json.loads(subprocess.run(["ip", "-j", "addr"], capture_output=True, text=True).stdout)
    return [a["local"] for i in info for a in i.get("addr_info", []) if a["family"] == "inet" and i["ifname"] != "lo"]


@needs_netns
def test_node_reaches_nodes_not_host():
    import socket

    host = socket.socket()
    host.bind(("127.0.0.1", 0))  # a listener of the caller: a node must not reach it
    host.listen(1)
    try:
        with nc.Cluster(nodes=2, nics_per_node=2, rate="100mbit", prefix=PREFIX) as c:
            srv = c.popen(1, [sys.executable, "-I", "-c", SERVE] + c.addrs(1), stdout=subprocess.PIPE, text=True)
            assert srv.stdout.readline().strip() == "ready"
            targets = [(a, 7000) for a in c.addrs(1)] + [("127.0.0.1", host.getsockname()[1])]
            targets += [(a, host.getsockname()[1]) for a in _host_addresses()]
            out = json.loads(c.run(0, [sys.executable, "-I", "-c", PROBE, json.dumps(targets)], capture_output=True,
                                   text=True, timeout=30).stdout)
            assert out[c.addr(1, 0)] == out[c.addr(1, 1)] == "node1"
            assert out["127.0.0.1"] == "ECONNREFUSED"  # the node's own loopback, not the caller's
            for a in _host_addresses():
                assert out[a] == "ENETUNREACH"  # no route: no packet leaves toward the host
            srv.wait(timeout=10)
    finally:
        host.close()


def _measure(c, nics, tries=3):
    """The best of up to `tries` transfers (a busy CPU only slows one down; the shaper caps them all)."""
    best = None
    for _ in range(tries):
        t = nc.measure_throughput(c, 0, 1, nics=nics, nbytes=2_500_000, timeout_s=20)
        assert t.complete, t
        best = t if best is None or t.bits_per_s > best.bits_per_s else best
        if 0.85 * RATE * len(set(nics)) <= best.bits_per_s:
            break
    return best


@needs_netns
def test_shaping_measured():
    with nc.Cluster(nodes=2, nics_per_node=2, rate=RATE, prefix=PREFIX) as c:
        before = c.nic_counters(0, 1)["tx_bytes"]
        one = _measure(c, [0])
        assert c.nic_counters(0, 1)["tx_bytes"] - before < 10_000  # one stream on NIC 0 leaves NIC 1 idle
        two = _measure(c, [0, 1])
        assert c.nic_counters(0, 1)["tx_bytes"] - before >= 2_500_000  # the second stream went over NIC 1
        same = _measure(c, [0, 0])
    r1, r2, rs = (t.bits_per_s for t in (one, two, same))
    print(f"\n1 NIC {r1 / 1e6:.1f} Mbit/s, 2 NICs {r2 / 1e6:.1f}, 2 streams on 1 NIC {rs / 1e6:.1f} (rate {RATE / 1e6:.0f})")
    assert 0.6 * RATE <= r1 <= 1.2 * RATE
    assert r2 >= 1.5 * r1
    assert rs < 1.3 * r1


PINGPONG = textwrap.dedent("""
    import json, socket, sys, time
    s = socket.create_connection((sys.argv[1], 7001), timeout=10); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    rtts = []
    for _ in range(30):
        t = time.monotonic(); s.sendall(b"x"); s.recv(1); rtts.append(time.monotonic() - t)
    print(json.dumps(sorted(rtts)[len(rtts) // 2]))
""")
ECHO = ("import socket; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
        "s.bind(('0.0.0.0', 7001)); s.listen(1); print('ready', flush=True); c, _ = s.accept()\n"
        "while (b := c.recv(1)): c.sendall(b)")


@needs_netns
def test_delay_applied_where_netem_exists():
    with nc.Cluster(nodes=2, rate="100mbit", delay="2ms", prefix=PREFIX) as c:
        if "netem available" not in WHY:
            assert c.shaping["delay_s"] is None and "latency not added" in c.shaping["note"]
            pytest.skip("no netem in this kernel: the cluster adds no latency (said in cluster.shaping)")
        assert c.shaping["delay_s"] == pytest.approx(2e-3)
        srv = c.popen(1, [sys.executable, "-I", "-c", ECHO], stdout=subprocess.PIPE, text=True)
        assert srv.stdout.readline().strip() == "ready"
        rtt = json.loads(c.run(0, [sys.executable, "-I", "-c", PINGPONG, c.addr(1)], capture_output=True, text=True,
                               timeout=60).stdout)
        assert rtt >= 0.9 * 2 * 2e-3  # the delay once each way


GLOO_RANK = textwrap.dedent("""
    import os, sys, json
    from datetime import timedelta
    import torch, torch.distributed as dist
    torch.set_num_threads(1)
    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo", rank=rank, world_size=2, timeout=timedelta(seconds=60))
    x = torch.full((4,), float(rank + 1))
    dist.all_reduce(x)
    os.environ["GLOO_SOCKET_IFNAME"] = "nic1"  # a second group bound to NIC 1
    g = dist.new_group([0, 1], backend="gloo")
    y = torch.ones(1_000_000)  # 4 MB
    dist.all_reduce(y, group=g)
    print(json.dumps({"x": x.tolist(), "y": float(y[0])}), flush=True)
    dist.destroy_process_group()
""")


@needs_netns
def test_gloo_all_reduce_across_namespaces():
    pytest.importorskip("torch")
    with nc.Cluster(nodes=2, nics_per_node=2, rate="1gbit", prefix=PREFIX) as c:
        nic1 = c.nic_counters(0, 1)["tx_bytes"]
        env = {r: c.env(r, nics=[0], master_port=29500,
                        base=dict(os.environ, RANK=str(r), WORLD_SIZE="2", OMP_NUM_THREADS="1")) for r in range(2)}
        procs = [c.popen(r, [sys.executable, "-c", GLOO_RANK], env=env[r], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True) for r in range(2)]
        outs = [p.communicate(timeout=120) for p in procs]
        for p, (out, err) in zip(procs, outs):
            assert p.returncode == 0, err[-2000:]
            assert json.loads(out) == {"x": [3.0] * 4, "y": 2.0}
        assert c.nic_counters(0, 1)["tx_bytes"] - nic1 >= 2_000_000  # the group on NIC 1 used NIC 1
