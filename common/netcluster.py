"""An emulated cluster on one Linux machine: nodes as network namespaces, NICs as shaped veth pairs.

Paper-agnostic. Needs Linux, `ip` and `tc` (iproute2), and root or CAP_NET_ADMIN + CAP_SYS_ADMIN;
`available() -> (ok, reason)` says in one line what is missing, and the caller then falls back to
its loopback emulation.

Topology (rail-optimised, as multi-NIC clusters are cabled):

- one network namespace per node, `<prefix>-<pid>-<start>-<seq>-n<n>`, plus one hub namespace
  (`...-h`); the pid and the process start time of the owner make names unique across parallel
  processes and let `sweep` tell a live run from a killed one;
- NIC j of every node is a veth pair, `nic<j>` inside the node and `n<n>x<j>` in the hub, where it is
  a port of the bridge `rail<j>`: rail j joins NIC j of all nodes, and nothing else;
- NIC j of node n has the address `198.18.<j>.<n+1>/24` (`addr(n, j)`; j >= 256 continues in 198.19), from 198.18.0.0/15, the
  range reserved for network benchmarks (RFC 2544). Each rail is its own /24, so a socket bound to
  NIC j's address leaves through NIC j (one route per rail, no policy routing needed). No default
  route and no other address exist in a node: a node reaches the other nodes and nothing else. The
  hub has no address at all. Nothing is ever created in, or changed on, the caller's namespace
  (interfaces, routes, firewall): every link is created inside its namespace (`ip -n`);
- shaping: `tbf` at `rate` on both ends of every veth (the node's transmit and its receive), so a
  NIC is a full-duplex link of `rate` each way; `delay` is added once per direction with a `netem`
  child on the node's transmit side when the kernel has netem. Without netem the latency is not
  applied and `cluster.shaping["delay"]` is None with the reason in `cluster.shaping["note"]`;
- loopback is up in every node; IPv6 is disabled in every namespace (no autoconfiguration chatter
  on the counters).

API::

    from common import netcluster
    ok, why = netcluster.available()
    with netcluster.Cluster(nodes=2, nics_per_node=2, rate="100mbit", delay="100us") as c:
        c.addr(1, 0)                    # '198.18.0.2': NIC 0 of node 1
        c.ifname(1)                     # 'nic1': the same name in every node
        c.run(0, ["ip", "-br", "addr"], capture_output=True, text=True)   # CompletedProcess
        p = c.popen(1, argv, env=c.env(1, nics=[0, 1], master_port=29500))
        c.argv(0, argv)                 # ['ip', 'netns', 'exec', <ns of node 0>, *argv] for own Popen
        c.nic_counters(0, 1)            # {'tx_bytes': ..., 'rx_bytes': ...} of nic1 in node 0
        measure_throughput(c, 0, 1, nics=[0, 1], nbytes=3_000_000)  # 2 streams on 2 NICs -> Throughput
    netcluster.sweep()                  # leftovers of killed runs (also done by every Cluster start)

Clean-up. `close()` (the `with` exit) kills the processes started by `popen` (SIGTERM, then
SIGKILL) and any other process still inside the run's namespaces, then deletes the namespaces;
with them go their veths, bridges and qdiscs. It runs on a normal exit, on an exception, on Ctrl-C
(KeyboardInterrupt) and on SIGTERM/SIGHUP (turned into `SystemExit(128 + signo)` while a cluster is
open in the main thread; earlier handlers are restored), with SIGINT/SIGTERM blocked during the
tear-down itself, and from `atexit` for a cluster never closed. After `kill -9` of the owner the
namespaces remain (nothing else can: there is nothing outside them); `sweep(prefix)` removes those
whose owner is dead, killing what still runs in them, and `Cluster` calls it on start. Idempotent.

Integration (a launcher of torch.distributed ranks, e.g. hetero's)::

    with Cluster(nodes=2, nics_per_node=k, rate="1gbit", delay="100us") as c:
        for r in range(world):
            n = node_of_rank[r]
            env = c.env(n, nics=list(range(k)), master_port=29500,
                        base=dict(base_env, RANK=str(r), LOCAL_RANK=str(local_rank[r])))
            procs.append(subprocess.Popen(c.argv(n, cmd), env=env, start_new_session=True, ...))
        ...                              # wait and kill as today; close() sweeps whatever is left

- `MASTER_ADDR` = `addr(master_node, nics[0])` (node 0, NIC 0 by default); every namespace has its
  own port space, so a fixed `MASTER_PORT` is free in a fresh cluster.
- `GLOO_SOCKET_IFNAME` = `nic<j>[,nic<j'>...]`, identical on every node since NIC j has the same
  name everywhere. torch reads it each time a gloo process group is created, so a rank can bind
  group c to NIC c: `os.environ["GLOO_SOCKET_IFNAME"] = c.ifname(ch % k)` before
  `dist.new_group(backend="gloo")` (the value is a name, no cluster object needed in the rank);
  one group listing several names spreads its operations over those NICs.
- Ranks of one node share its NICs (as on a real node); `nic_counters` shows which NIC carried the
  bytes, a measurement, not an assumption.
- Where `available()` is false, run the loopback emulation and report that one line.

`python -m common.netcluster [check|sweep [--all] [--prefix P]|demo]`: the availability line,
the clean-up of leftovers, or a 2-node shaping demo.
"""
from __future__ import annotations

import atexit
import ipaddress
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from .errors import UserError

PREFIX = "repro-nc"
SUBNET = ipaddress.ip_network("198.18.0.0/15")  # RFC 2544 benchmarking range, used only inside the namespaces
MAX_NODES, MAX_NICS = 253, 512
CAP_NET_ADMIN, CAP_SYS_ADMIN = 12, 21
_UNITS = {"bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9, "tbit": 10**12}
_TIME_UNITS = {"us": 1e-6, "usec": 1e-6, "ms": 1e-3, "msec": 1e-3, "s": 1.0, "sec": 1.0}
_seq = itertools.count()
_open: set = set()
_signal_users: list = []  # open clusters that installed the SIGTERM/SIGHUP handler
_saved_handlers: dict = {}
_available: tuple | None = None


class ClusterUnavailable(UserError):
    """The emulated cluster cannot be built here (privileges, tools, kernel); one line says why."""


def parse_rate(rate) -> int:
    """'100mbit', '1gbit', '500kbit', '2e8bit' or a number of bits/s -> bits/s (tc's decimal units)."""
    if isinstance(rate, (int, float)) and rate > 0:
        return int(rate)
    m = re.fullmatch(r"\s*([0-9.]+(?:e[0-9]+)?)\s*([a-z]*)\s*", str(rate).lower())
    if not m or m.group(2) not in _UNITS or float(m.group(1)) <= 0:
        raise UserError(f"rate {rate!r}: give bits per second like '100mbit' or '1gbit' (units: {', '.join(_UNITS)})")
    return int(float(m.group(1)) * _UNITS[m.group(2)])


def parse_delay(delay) -> float:
    """'100us', '1ms', '0', None or seconds as a number -> seconds."""
    if delay is None:
        return 0.0
    if isinstance(delay, (int, float)) and delay >= 0:
        return float(delay)
    m = re.fullmatch(r"\s*([0-9.]+)\s*([a-z]*)\s*", str(delay).lower())
    if not m or (m.group(2) or "s") not in _TIME_UNITS:
        raise UserError(f"delay {delay!r}: give a time like '100us' or '1ms'")
    return float(m.group(1)) * _TIME_UNITS[m.group(2) or "s"]


def _start_time(pid: int) -> str | None:
    """The start time of process `pid` in clock ticks since boot (field 22 of /proc/pid/stat), or None."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _ip(*args, ns: str | None = None, batch: list[str] | None = None, tool: str = "ip", check: bool = True,
        timeout: float = 30.0) -> subprocess.CompletedProcess:
    argv = [tool] + (["-n", ns] if ns else []) + (["-batch", "-"] if batch is not None else []) + list(args)
    proc = subprocess.run(argv, input="\n".join(batch) + "\n" if batch is not None else None,
                          capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        what = " ".join(argv) + (f" <<{'; '.join(batch)}>>" if batch else "")
        raise RuntimeError(f"{what}: {(proc.stderr or proc.stdout).strip()[:400]}")
    return proc


def network_namespaces() -> list[str]:
    """The names of the network namespaces present on this machine (`ip netns list`); empty where `ip` cannot tell."""
    try:
        out = _ip("netns", "list", check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [ln.split()[0] for ln in out.splitlines() if ln.strip()]


def _kill_inside(ns: str) -> None:
    """SIGKILL every process still inside namespace `ns` (only a run of this module puts any there)."""
    out = _ip("netns", "pids", ns, check=False).stdout
    for pid in (int(p) for p in out.split() if p.isdigit()):
        if pid != os.getpid():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _delete_namespaces(names: list[str]) -> list[str]:
    """Kill what runs in them, delete them; returns those still present afterwards."""
    for ns in names:
        _kill_inside(ns)
    for ns in names:
        _ip("netns", "del", ns, check=False)
    present = set(network_namespaces())
    return [ns for ns in names if ns in present]


def _owner(name: str, prefix: str):
    m = re.fullmatch(re.escape(prefix) + r"-(\d+)-(\d+)-(\d+)-(h|n\d+|probe)", name)
    return (int(m.group(1)), m.group(2)) if m else None


def sweep(prefix: str = PREFIX, all_runs: bool = False) -> list[str]:
    """Remove the namespaces (with their veths, bridges, qdiscs and processes) of runs of `prefix`
    whose owner process is gone (a `kill -9`); `all_runs=True` also those of live owners.
    Returns the namespaces removed. Idempotent; a no-op without privileges."""
    doomed = []
    for name in network_namespaces():
        owner = _owner(name, prefix)
        if owner is None:
            continue
        pid, start = owner
        if all_runs or _start_time(pid) != start:
            doomed.append(name)
    if doomed:
        _delete_namespaces(doomed)
    return doomed


def _caps() -> int:
    try:
        with open("/proc/self/status") as fh:
            for ln in fh:
                if ln.startswith("CapEff:"):
                    return int(ln.split()[1], 16)
    except OSError:
        pass
    return 0


def available(refresh: bool = False) -> tuple[bool, str]:
    """(True, what shaping is possible) or (False, one line saying what is missing). Probes once per
    process: a throw-away namespace with a bridge, a veth and a tbf qdisc (and netem, if present)."""
    global _available
    if _available is not None and not refresh:
        return _available
    _available = _probe()
    return _available


def _probe() -> tuple[bool, str]:
    if not sys.platform.startswith("linux"):
        return False, f"emulated cluster needs Linux network namespaces (this is {sys.platform}); using loopback"
    missing = [t for t in ("ip", "tc") if shutil.which(t) is None]
    if missing:
        return False, f"emulated cluster needs {' and '.join(missing)} (iproute2) on PATH; using loopback"
    caps = _caps()
    if os.geteuid() != 0 and not (caps >> CAP_NET_ADMIN & 1 and caps >> CAP_SYS_ADMIN & 1):
        return False, "emulated cluster needs root or CAP_NET_ADMIN + CAP_SYS_ADMIN (network namespaces); using loopback"
    ns = f"{PREFIX}-{os.getpid()}-{_start_time(os.getpid())}-{next(_seq)}-probe"
    try:
        step = "ip netns add"
        _ip("netns", "add", ns)
        step = "veth and bridge"
        _ip(ns=ns, batch=["link add probe0 type veth peer name probe1", "link add probebr type bridge",
                          "link set probe1 master probebr",
                          "link set probe0 up", "link set probe1 up", "link set probebr up"])
        step = "tc tbf"
        _ip(ns=ns, tool="tc", batch=["qdisc add dev probe0 root handle 1: tbf rate 100mbit burst 16kb latency 50ms"])
        netem = _ip("qdisc", "add", "dev", "probe0", "parent", "1:1", "handle", "10:", "netem", "delay", "100us",
                    ns=ns, tool="tc", check=False).returncode == 0
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as err:
        return False, f"emulated cluster unavailable ({step} failed: {str(err).splitlines()[0][-200:]}); using loopback"
    finally:
        _delete_namespaces([ns]) if ns in network_namespaces() else None
    return True, ("network namespaces, veth, bridge, tbf and netem available" if netem else
                  "network namespaces, veth, bridge and tbf available; no netem in this kernel, so no added latency")


@dataclass
class Throughput:
    """A bounded TCP transfer from one node to another, one stream per entry of `nics`."""
    bits_per_s: float            # all streams: bytes received / (last byte - first byte)
    per_stream_bits_per_s: list  # each stream on its own
    seconds: float
    nbytes: int                  # received, all streams
    nics: list
    complete: bool               # every stream delivered its bytes before the time limit


# The sender and receiver of `measure_throughput`: stdlib only, run with `python -I -c` inside a node.
_TOOL = r'''
import json, socket, sys, threading, time
mode, spec = sys.argv[1], json.loads(sys.argv[2])
n, limit = spec["nbytes"], spec["timeout_s"]
deadline = time.monotonic() + limit
if mode == "recv":
    lsocks = {}
    for a in dict.fromkeys(spec["addrs"]):
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((a, 0)); s.listen(16)
        s.settimeout(limit); lsocks[a] = s
    print(json.dumps({a: s.getsockname()[1] for a, s in lsocks.items()}), flush=True)
    res = [None] * len(spec["addrs"])
    def serve(i, a):
        conn, _ = lsocks[a].accept()
        conn.settimeout(max(0.1, deadline - time.monotonic()))
        head = b""
        while len(head) < 4:
            part = conn.recv(4 - len(head))
            if not part:
                conn.close(); return
            head += part
        buf, got, t0, t1 = bytearray(1 << 18), 0, None, None
        try:
            while got < n and time.monotonic() < deadline:
                k = conn.recv_into(buf)
                if not k:
                    break
                t1 = time.monotonic(); t0 = t0 or t1; got += k
        except OSError:
            pass
        res[int.from_bytes(head[:4], "big")] = {"bytes": got, "t0": t0, "t1": t1}
        conn.close()
    ts = [threading.Thread(target=serve, args=(i, a), daemon=True) for i, a in enumerate(spec["addrs"])]
    [t.start() for t in ts]; [t.join(max(0.1, deadline - time.monotonic()) + 1) for t in ts]
    print(json.dumps(res), flush=True)
else:
    socks = []
    for i, (src, dst, port) in enumerate(spec["pairs"]):
        s = socket.socket(); s.settimeout(limit); s.bind((src, 0)); s.connect((dst, port)); socks.append(s)
    go = threading.Barrier(len(socks))
    def send(i, s):
        chunk = b"\0" * (1 << 18); left = n
        s.sendall(i.to_bytes(4, "big")); go.wait()
        try:
            while left > 0 and time.monotonic() < deadline:
                s.sendall(chunk[:min(left, len(chunk))]); left -= min(left, len(chunk))
            s.shutdown(socket.SHUT_WR); s.recv(1)
        except OSError:
            pass
        s.close()
    ts = [threading.Thread(target=send, args=(i, s), daemon=True) for i, s in enumerate(socks)]
    [t.start() for t in ts]; [t.join(limit + 1) for t in ts]
'''


def measure_throughput(cluster: "Cluster", src: int = 0, dst: int = 1, nics=(0,), nbytes: int = 2_000_000,
                       timeout_s: float = 20.0) -> Throughput:
    """TCP from node `src` to node `dst`: one stream per entry of `nics` (NIC j of `src` to NIC j of
    `dst`; `nics=[0, 0]` is two streams on one NIC), `nbytes` per stream, at most `timeout_s`."""
    nics = list(nics)
    spec = {"nbytes": int(nbytes), "timeout_s": float(timeout_s), "addrs": [cluster.addr(dst, j) for j in nics]}
    py = [sys.executable, "-I", "-c", _TOOL]
    recv = cluster.popen(dst, py + ["recv", json.dumps(spec)], stdout=subprocess.PIPE, text=True)
    try:
        ports = json.loads(recv.stdout.readline() or "{}")
        if not ports:
            raise RuntimeError("throughput receiver did not start")
        pairs = [(cluster.addr(src, j), cluster.addr(dst, j), ports[cluster.addr(dst, j)]) for j in nics]
        send = cluster.run(src, py + ["send", json.dumps(dict(spec, pairs=pairs))], capture_output=True, text=True,
                           timeout=timeout_s + 10)
        out, _ = recv.communicate(timeout=timeout_s + 10)
    finally:
        if recv.poll() is None:
            recv.kill()
            recv.wait()
    if send.returncode != 0:
        raise RuntimeError(f"throughput sender failed: {send.stderr.strip()[-400:]}")
    res = json.loads(out.strip().splitlines()[-1])
    done = [r for r in res if r and r["t0"] is not None]
    got = sum(r["bytes"] for r in done)
    span = (max(r["t1"] for r in done) - min(r["t0"] for r in done)) if done else 0.0
    per = [8 * r["bytes"] / (r["t1"] - r["t0"]) if r and r["t0"] and r["t1"] > r["t0"] else 0.0 for r in res]
    return Throughput(bits_per_s=8 * got / span if span > 0 else 0.0, per_stream_bits_per_s=per, seconds=span,
                      nbytes=got, nics=nics,
                      complete=len(done) == len(nics) and all(r["bytes"] >= nbytes for r in done))


class Cluster:
    """`nodes` network namespaces with `nics_per_node` shaped NICs each; see the module docstring."""

    def __init__(self, nodes: int = 2, nics_per_node: int = 1, rate="1gbit", delay="100us", prefix: str = PREFIX,
                 burst: int | None = None, queue_latency: str = "50ms", mtu: int | None = None):
        if not 1 <= int(nodes) <= MAX_NODES:
            raise UserError(f"nodes={nodes}: give 1 to {MAX_NODES}")
        if not 1 <= int(nics_per_node) <= MAX_NICS:
            raise UserError(f"nics_per_node={nics_per_node}: give 1 to {MAX_NICS}")
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_.]*(-[A-Za-z0-9_.]+)*", prefix) or len(prefix) > 64:
            raise UserError(f"prefix {prefix!r}: letters, digits, '_', '.', '-' (at most 64)")
        self.nodes, self.nics = int(nodes), int(nics_per_node)
        self.rate_bps, self.delay_s = parse_rate(rate), parse_delay(delay)
        self.prefix, self.queue_latency, self.mtu = prefix, queue_latency, mtu
        # a burst of at least 16 KiB and about 1 ms of traffic: the bucket of tbf, and the size above
        # which tbf splits GSO super-packets
        self.burst = int(burst or max(16384, self.rate_bps // 8 // 1000))
        pid = os.getpid()
        self.run_id = f"{prefix}-{pid}-{_start_time(pid)}-{next(_seq)}"
        self.hub = f"{self.run_id}-h"
        self.namespaces = [f"{self.run_id}-n{n}" for n in range(self.nodes)]
        self.shaping: dict = {}
        self._procs: list = []
        self._owner_pid = pid
        self._open = False
        self._handlers = False

    # ---- addresses and names -------------------------------------------------------------------
    def namespace(self, node: int) -> str:
        return self.namespaces[self._node(node)]

    def addr(self, node: int, nic: int = 0) -> str:
        """The IPv4 address of NIC `nic` of `node`: 198.18.<nic>.<node + 1> (rail `nic` is a /24)."""
        return str(self._rail(nic).network_address + self._node(node) + 1)

    def ifname(self, nic: int = 0) -> str:
        """The interface name of NIC `nic`, the same in every node."""
        self._rail(nic)
        return f"nic{nic}"

    def addrs(self, node: int) -> list[str]:
        return [self.addr(node, j) for j in range(self.nics)]

    def env(self, node: int, nics=None, master_port: int | None = None, master_node: int = 0,
            base: dict | None = None) -> dict:
        """`base` (default os.environ) plus GLOO_SOCKET_IFNAME (the names of `nics`, default all),
        MASTER_ADDR (`addr(master_node, nics[0])`), MASTER_PORT (when given), NETCLUSTER_NODE and
        NETCLUSTER_ADDRS (this node's addresses of `nics`, comma-separated)."""
        nics = list(range(self.nics)) if nics is None else [nics] if isinstance(nics, int) else list(nics)
        if not nics:
            raise UserError("env: give at least one NIC")
        env = dict(os.environ if base is None else base)
        env.update(GLOO_SOCKET_IFNAME=",".join(self.ifname(j) for j in nics), MASTER_ADDR=self.addr(master_node, nics[0]),
                   NETCLUSTER_NODE=str(self._node(node)), NETCLUSTER_ADDRS=",".join(self.addr(node, j) for j in nics))
        if master_port is not None:
            env["MASTER_PORT"] = str(int(master_port))
        return env

    def _node(self, node: int) -> int:
        if not 0 <= int(node) < self.nodes:
            raise UserError(f"node {node}: this cluster has nodes 0..{self.nodes - 1}")
        return int(node)

    def _rail(self, nic: int):
        if not 0 <= int(nic) < self.nics:
            raise UserError(f"nic {nic}: this cluster has NICs 0..{self.nics - 1} per node")
        return ipaddress.ip_network(f"{SUBNET.network_address + 256 * int(nic)}/24")

    # ---- processes -----------------------------------------------------------------------------
    def argv(self, node: int, argv: list) -> list:
        """`argv` run inside `node`'s namespace (`ip netns exec` execs it: the pid is the program's)."""
        self._require_open()
        return ["ip", "netns", "exec", self.namespace(node)] + [str(a) for a in argv]

    def run(self, node: int, argv: list, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
        """subprocess.run of `argv` inside `node` (keywords as subprocess.run: timeout, capture_output...)."""
        return subprocess.run(self.argv(node, argv), env=env, **kw)

    def popen(self, node: int, argv: list, env: dict | None = None, **kw) -> subprocess.Popen:
        """subprocess.Popen of `argv` inside `node`, in its own session; `close()` kills it if still running."""
        kw.setdefault("start_new_session", True)
        proc = subprocess.Popen(self.argv(node, argv), env=env, **kw)
        self._procs.append(proc)
        return proc

    def nic_counters(self, node: int, nic: int = 0) -> dict:
        """Bytes and packets sent and received so far by NIC `nic` of `node` (kernel counters)."""
        out = _ip("-s", "-j", "link", "show", "dev", self.ifname(nic), ns=self.namespace(node)).stdout
        st = json.loads(out)[0]["stats64"]
        return {"tx_bytes": st["tx"]["bytes"], "rx_bytes": st["rx"]["bytes"],
                "tx_packets": st["tx"]["packets"], "rx_packets": st["rx"]["packets"]}

    # ---- life cycle ----------------------------------------------------------------------------
    def __enter__(self) -> "Cluster":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> "Cluster":
        if self._open:
            return self
        ok, why = available()
        if not ok:
            raise ClusterUnavailable(why)
        sweep(self.prefix)
        self._install_handlers()
        self._open = True
        _open.add(self)
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def _build(self) -> None:
        hub, mtu = self.hub, [f"mtu {self.mtu}"] if self.mtu else []
        for ns in [hub] + self.namespaces:
            _ip("netns", "add", ns)
        for ns in [hub] + self.namespaces:  # no IPv6 autoconfiguration traffic on the counters
            subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1",
                            "net.ipv6.conf.default.disable_ipv6=1"], capture_output=True, timeout=30)
        _ip(ns=hub, batch=["link set lo up"] + [f"link add rail{j} type bridge" for j in range(self.nics)]
            + [f"link set rail{j} up" for j in range(self.nics)])
        for n, ns in enumerate(self.namespaces):
            lines = ["link set lo up"]
            for j in range(self.nics):
                peer = f"n{n}x{j}"
                lines += [" ".join([f"link add nic{j}"] + mtu + [f"type veth peer name {peer} netns {hub}"] + mtu),
                          f"addr add {self.addr(n, j)}/24 dev nic{j}", f"link set nic{j} up"]
            _ip(ns=ns, batch=lines)
        _ip(ns=hub, batch=[ln for n in range(self.nodes) for j in range(self.nics)
                           for ln in (f"link set n{n}x{j} master rail{j}", f"link set n{n}x{j} up")])
        tbf = f"tbf rate {self.rate_bps}bit burst {self.burst} latency {self.queue_latency}"
        delay_us = int(round(self.delay_s * 1e6))
        netem = delay_us > 0 and "netem available" in available()[1]
        for n, ns in enumerate(self.namespaces):
            lines = []
            for j in range(self.nics):
                lines.append(f"qdisc add dev nic{j} root handle 1: {tbf}")
                if netem:
                    lines.append(f"qdisc add dev nic{j} parent 1:1 handle 10: netem delay {delay_us}us")
            _ip(ns=ns, tool="tc", batch=lines)
        _ip(ns=hub, tool="tc", batch=[f"qdisc add dev n{n}x{j} root handle 1: {tbf}"
                                      for n in range(self.nodes) for j in range(self.nics)])
        self.shaping = {"rate_bps": self.rate_bps, "burst_bytes": self.burst, "qdisc": "tbf both ends of every veth",
                        "delay_s": self.delay_s if netem else None, "delay_requested_s": round(self.delay_s, 9),
                        "note": ("netem delay once per direction, on the sender's NIC" if netem else
                                 "no netem in this kernel: latency not added" if delay_us else "no added latency")}

    def close(self) -> None:
        """Tear everything down (processes, namespaces and with them veths, bridges, qdiscs). Idempotent."""
        if not self._open or os.getpid() != self._owner_pid:
            return
        blocked = threading.current_thread() is threading.main_thread()
        if blocked:
            old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
        try:
            for p in self._procs:
                if p.poll() is None:
                    try:
                        os.killpg(p.pid, signal.SIGTERM) if _own_group(p) else p.terminate()
                    except ProcessLookupError:
                        pass
            t_end = time.monotonic() + 2.0
            for p in self._procs:
                try:
                    p.wait(timeout=max(0.01, t_end - time.monotonic()))
                except subprocess.TimeoutExpired:
                    try:
                        os.killpg(p.pid, signal.SIGKILL) if _own_group(p) else p.kill()
                    except ProcessLookupError:
                        pass
                    p.wait()
            left = _delete_namespaces([ns for ns in self.namespaces + [self.hub] if ns in set(network_namespaces())])
            if left:  # a process entering as we killed: once more
                time.sleep(0.2)
                left = _delete_namespaces(left)
            self._open = False
            _open.discard(self)
            self._restore_handlers()
            if left:
                raise RuntimeError(f"netcluster: could not remove {left}; run `python -m common.netcluster sweep --all`")
        finally:
            if blocked:
                signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)

    def _require_open(self):
        if not self._open:
            raise RuntimeError("netcluster: the cluster is not started (use `with Cluster(...) as c:`)")

    def _install_handlers(self):
        """SIGTERM/SIGHUP -> SystemExit while any cluster of the main thread is open (default handlers only)."""
        if threading.current_thread() is not threading.main_thread():
            return
        self._handlers = True
        _signal_users.append(self)
        if len(_signal_users) == 1:
            for sig in (signal.SIGTERM, signal.SIGHUP):
                if signal.getsignal(sig) == signal.SIG_DFL:
                    _saved_handlers[sig] = signal.signal(sig, exit_on_signal)

    def _restore_handlers(self):
        if not self._handlers or threading.current_thread() is not threading.main_thread():
            return
        self._handlers = False
        _signal_users.remove(self)
        if not _signal_users:
            for sig, old in list(_saved_handlers.items()):
                if signal.getsignal(sig) is exit_on_signal:
                    signal.signal(sig, old)
                del _saved_handlers[sig]


def _own_group(p: subprocess.Popen) -> bool:
    try:
        return os.getpgid(p.pid) == p.pid
    except ProcessLookupError:
        return False


def exit_on_signal(signo, frame):
    raise SystemExit(128 + signo)


@atexit.register
def _close_all():
    for c in list(_open):
        try:
            c.close()
        except Exception as err:  # at exit: report, never hide the rest
            print(f"netcluster: {err}", file=sys.stderr)


def _main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m common.netcluster", description="emulated cluster in network namespaces")
    sub = ap.add_subparsers(dest="cmd")
    sub.add_parser("check", help="print whether the cluster can be built here")
    sw = sub.add_parser("sweep", help="remove leftovers of killed runs")
    sw.add_argument("--prefix", default=PREFIX)
    sw.add_argument("--all", action="store_true", help="also the namespaces of live runs")
    demo = sub.add_parser("demo", help="2 nodes x 2 NICs: throughput of 1 NIC, 2 NICs, 2 streams on 1 NIC")
    demo.add_argument("--rate", default="100mbit")
    demo.add_argument("--nbytes", type=int, default=3_000_000)
    a = ap.parse_args(argv)
    if a.cmd == "sweep":
        for ns in sweep(a.prefix, all_runs=a.all):
            print(f"removed {ns}")
        return 0
    ok, why = available()
    print(why)
    if a.cmd != "demo" or not ok:
        return 0 if ok else 1
    with Cluster(nodes=2, nics_per_node=2, rate=a.rate) as c:
        for label, nics in (("1 NIC", [0]), ("2 NICs", [0, 1]), ("2 streams on 1 NIC", [0, 0])):
            t = measure_throughput(c, 0, 1, nics=nics, nbytes=a.nbytes)
            print(f"{label:>20}: {t.bits_per_s / 1e6:7.1f} Mbit/s ({t.bits_per_s / c.rate_bps:.2f} x rate)")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
