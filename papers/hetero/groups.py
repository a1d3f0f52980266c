"""Per-group backend choice, every process group of a run, and the audit of them.

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007
("differentiated communication back-end selection across parallel groups"; the rules below are
our reconstruction, see README).

Rules (`select_backend`):
* on CPU every group is gloo;
* CPU-forwarding channels are gloo everywhere: they carry host buffers, which NCCL cannot send, also
  between two stages of one vendor;
* a single-vendor group on GPUs uses the vendor collective library, which torch calls "nccl"
  (NCCL on CUDA builds, RCCL on ROCm builds);
* mixed-vendor groups never use "nccl": the pipeline and CPU-forwarding channels are gloo, the
  device-direct proxy drives a registered backend ("ucc"), and the cross-stage scalar collectives
  (global gradient norm, loss) are gloo on CPU tensors.

The proxy groups exist only in a run whose links use the proxy (`proxy=True`: device_direct and its
control); a run without one never creates a UCC group, so it runs on a GPU node whose torch has no
UCC. A run that needs UCC where `torch.distributed.is_ucc_available()` is false fails before any
group is created with one `UserError` line naming the fix (a torch built with UCC, or a
cpu_forward:k link). No silent fallback: gloo cannot post GPU memory point to point, so a fallback
would stage through the host and no longer be device-direct.

The live audit asks every created group for its backend (`torch.distributed.get_backend`) and
compares it with the plan; its control is one extra group created on a deliberately wrong backend
(`WRONG_BACKEND`: nccl across vendors on GPUs; on a CPU build, which has no NCCL, a registered
stand-in backend that wraps gloo under another name), which the audit must flag. The planned
audit's control is `naive_backend`, the homogeneous-cluster default (nccl for every GPU group).
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta

from common.errors import UserError

KINDS = ("world", "dp", "scalar", "pp", "channel", "proxy")
DEVICE_DIRECT_BACKEND = "ucc"  # what the proxy drives on a cluster (torch.distributed.Backend.register_backend)
WRONG_BACKEND = {"cuda": "nccl", "cpu": "vendorccl"}  # the live audit's control group (see module doc)


def select_backend(kind: str, vendors, device_type: str) -> str:
    """Backend for a group of `kind` whose members have `vendors`, on `device_type` ('cpu'/'cuda'): the paper's
    "differentiated communication back-end selection across parallel groups" (abstract), with TP/DP groups
    single-vendor (third-party summary, limitations); the rules are reconstructed (module doc)."""
    if kind not in KINDS:
        raise ValueError(f"unknown group kind {kind!r}")
    mixed = len(set(vendors)) > 1
    if device_type == "cpu" or kind in ("world", "scalar", "channel"):
        return "gloo"  # CPU-forwarding channels carry host buffers, whatever the vendors: never nccl
    if not mixed:
        return "nccl" if set(vendors) <= {"nv", "amd"} else "gloo"
    if kind == "dp":
        raise ValueError("a data-parallel group must be single-vendor")
    return DEVICE_DIRECT_BACKEND if kind == "proxy" else "gloo"


def require_backend(name: str, what: str):
    """A one-line UserError when the registered backend `name` needed by `what` is missing here."""
    import torch.distributed as dist

    if name == "ucc" and not dist.is_ucc_available():
        raise UserError(f"{what} needs the UCC backend, but this torch has none (torch.distributed.is_ucc_available() "
                        "is False); install a torch built with UCC, or use a cpu_forward:k link")


def naive_backend(kind: str, vendors, device_type: str) -> str:
    """Control rule: what a homogeneous cluster does (the vendor library for every group on GPUs)."""
    if kind not in KINDS:
        raise ValueError(f"unknown group kind {kind!r}")
    return "gloo" if device_type == "cpu" else "nccl"


def _register_standin():
    """A backend named `WRONG_BACKEND['cpu']` (gloo underneath) so a CPU build can create a wrongly-backed group."""
    import torch.distributed as dist

    name = WRONG_BACKEND["cpu"]
    if name not in dist.Backend.backend_list:
        dist.Backend.register_backend(name, lambda store, rank, size, timeout: dist.ProcessGroupGloo(store, rank, size, timeout),
                                      devices=["cpu"])
    return name


@contextmanager
def channel_nic(channel):
    """The paper's "multi-NIC parallel data transfer" (abstract), on the emulated cluster: inside it
    (`HETERO_NICS` = k set by the launcher), bind CPU-forwarding channel
    `channel` to NIC `channel mod k` while its gloo group is created (torch reads GLOO_SOCKET_IFNAME
    per group); everything else stays on the launcher's setting (NIC 0). A no-op elsewhere."""
    k = int(os.environ.get("HETERO_NICS", "0") or 0)
    if channel is None or k < 1:
        yield
        return
    old = os.environ.get("GLOO_SOCKET_IFNAME")
    os.environ["GLOO_SOCKET_IFNAME"] = f"nic{channel % k}"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("GLOO_SOCKET_IFNAME", None)
        else:
            os.environ["GLOO_SOCKET_IFNAME"] = old


@dataclass
class GroupRecord:
    name: str
    kind: str
    ranks: list[int]
    vendors: list[str]
    backend: str          # what this run uses
    cluster_backend: str  # what the same group gets on GPUs
    handle: object = field(default=None, repr=False, compare=False)
    live_backend: str | None = None  # asked from the created group (None: not created, or not a member)

    @property
    def mixed(self) -> bool:
        return len(set(self.vendors)) > 1

    def record(self) -> dict:
        return {"name": self.name, "kind": self.kind, "ranks": list(self.ranks), "vendors": list(self.vendors),
                "backend": self.backend, "cluster_backend": self.cluster_backend, "mixed": self.mixed,
                "live_backend": self.live_backend}


def audit_violations(records) -> list[str]:
    """The planned invariant: no mixed-vendor group on nccl (in this run or in the cluster plan);
    scalar collectives on gloo."""
    bad = []
    for g in records:
        g = g if isinstance(g, dict) else g.record()
        mixed = len(set(g["vendors"])) > 1
        if mixed and "nccl" in (g["backend"], g["cluster_backend"]):
            bad.append(f"{g['name']}: mixed vendors {g['vendors']} on nccl")
        if g["kind"] in ("scalar", "world") and g["cluster_backend"] != "gloo":
            bad.append(f"{g['name']}: scalar collective not on gloo")
    return bad


def live_violations(records) -> list[str]:
    """The live audit, on the backend each created group reports: none mixed-vendor on nccl, and
    each on the backend its plan gives on this device. Groups not asked (live_backend None) are skipped."""
    bad = []
    for g in records:
        g = g if isinstance(g, dict) else g.record()
        live = g.get("live_backend")
        if live is None:
            continue
        if len(set(g["vendors"])) > 1 and live == "nccl":
            bad.append(f"{g['name']}: mixed vendors {g['vendors']} live on nccl")
        elif live != g["backend"]:
            bad.append(f"{g['name']}: live backend {live!r}, planned {g['backend']!r}")
    return bad


class Groups:
    """Creates, in one global order on every rank, all groups a run needs.

    world (gloo); per stage a dp group; per replica a scalar group over its pipeline; per replica
    and stage boundary a pp group (direct link), `k_max` channel groups (CPU-forwarding) and, when
    `proxy` (some link uses the proxy), a proxy group (device-direct)."""

    def __init__(self, topo, rank: int, device_type: str, k_max: int, timeout_s: float, create: bool = True,
                 rule=select_backend, control: bool = False, proxy: bool = True):
        self.topo, self.rank, self.device_type, self.rule = topo, rank, device_type, rule
        self.records: list[GroupRecord] = []
        self.control_records: list[GroupRecord] = []
        self.timeout = timedelta(seconds=timeout_s)
        self._create = create
        if create and proxy and topo.n_stages > 1:  # fail before any group exists, in one line
            for r in range(topo.dp):
                for s in range(topo.n_stages - 1):
                    pair = [topo.pipeline_ranks(r)[s], topo.pipeline_ranks(r)[s + 1]]
                    require_backend(rule("proxy", [topo.vendors[x] for x in pair], device_type),
                                    "the device_direct link (its proxy group)")
        self._add("world", "world", list(range(topo.world)), world=True)
        self.dp = {s: self._add(f"dp.stage{s}", "dp", topo.stage_ranks(s)) for s in range(topo.n_stages)}
        self.scalar = {r: self._add(f"scalar.replica{r}", "scalar", topo.pipeline_ranks(r)) for r in range(topo.dp)}
        self.pp, self.channels, self.proxy = {}, {}, {}
        for r in range(topo.dp):
            for s in range(topo.n_stages - 1):
                pair = [topo.pipeline_ranks(r)[s], topo.pipeline_ranks(r)[s + 1]]
                self.pp[r, s] = self._add(f"pp.replica{r}.b{s}", "pp", pair)
                self.channels[r, s] = [self._add(f"channel{i}.replica{r}.b{s}", "channel", pair, channel=i)
                                       for i in range(k_max)]
                if proxy:
                    self.proxy[r, s] = self._add(f"proxy.replica{r}.b{s}", "proxy", pair)
        if control and topo.n_stages > 1:  # created last, never used for traffic
            pair = topo.pipeline_ranks(0)[:2]
            wrong = WRONG_BACKEND["cuda" if device_type != "cpu" else "cpu"]
            if create and wrong == WRONG_BACKEND["cpu"]:
                _register_standin()
            self.control_records.append(self._add("control.wrong-backend", "pp", pair, backend=wrong, keep=False))

    def _add(self, name, kind, ranks, world=False, backend=None, keep=True, channel=None) -> GroupRecord:
        vendors = [self.topo.vendors[r] for r in ranks]
        planned = self.rule(kind, vendors, self.device_type)
        rec = GroupRecord(name, kind, ranks, vendors, planned, self.rule(kind, vendors, "cuda"))
        if self._create:
            import torch.distributed as dist

            if world:
                rec.handle = dist.group.WORLD
            else:
                with channel_nic(channel):
                    rec.handle = dist.new_group(ranks, timeout=self.timeout, backend=backend or planned)
            if self.rank in ranks:  # ask the live group what it runs on
                rec.live_backend = str(dist.get_backend(rec.handle))
        if keep:
            self.records.append(rec)
        return rec

    def audit(self) -> list[dict]:
        return [g.record() for g in self.records]

    def audit_control(self) -> list[dict]:
        return [g.record() for g in self.control_records]


def live_audit(ranks: list[dict], key: str = "audit", violations: str = "audit_live_violations") -> dict:
    """Merge every rank's view of its live groups: violations (by group) and groups no member asked."""
    asked, bad = {}, set()
    for r in ranks:
        for g in r[key]:
            asked.setdefault(g["name"], set())
            if g["live_backend"] is not None:
                asked[g["name"]].add(g["live_backend"])
        bad |= {v.split(":")[0] for v in r[violations]}
    unasked = sorted(n for n, b in asked.items() if not b)
    return {"violations": sorted(bad), "unasked": unasked, "groups": len(asked),
            "backends": sorted({b for v in asked.values() for b in v})}
