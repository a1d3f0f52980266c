"""Per-group backend choice, every process group of a run, and the audit of them.

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007
("differentiated communication back-end selection across parallel groups"; the rules below are
our reconstruction, see README).

Rules (`select_backend`):
* on CPU every group is gloo;
* a single-vendor group on GPUs uses the vendor collective library, which torch calls "nccl"
  (NCCL on CUDA builds, RCCL on ROCm builds);
* mixed-vendor groups never use "nccl": the pipeline and CPU-forwarding channels are gloo, the
  device-direct proxy drives a registered backend ("ucc"), and the cross-stage scalar collectives
  (global gradient norm, loss) are gloo on CPU tensors.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

KINDS = ("world", "dp", "scalar", "pp", "channel", "proxy")
DEVICE_DIRECT_BACKEND = "ucc"  # what the proxy drives on a cluster (torch.distributed.Backend.register_backend)


def select_backend(kind: str, vendors, device_type: str) -> str:
    """Backend for a group of `kind` whose members have `vendors`, on `device_type` ('cpu'/'cuda')."""
    if kind not in KINDS:
        raise ValueError(f"unknown group kind {kind!r}")
    mixed = len(set(vendors)) > 1
    if device_type == "cpu" or kind in ("world", "scalar"):
        return "gloo"
    if not mixed:
        return "nccl" if set(vendors) <= {"nv", "amd"} else "gloo"
    if kind == "dp":
        raise ValueError("a data-parallel group must be single-vendor")
    return DEVICE_DIRECT_BACKEND if kind == "proxy" else "gloo"


@dataclass
class GroupRecord:
    name: str
    kind: str
    ranks: list[int]
    vendors: list[str]
    backend: str          # what this run uses
    cluster_backend: str  # what the same group gets on GPUs
    handle: object = field(default=None, repr=False, compare=False)

    @property
    def mixed(self) -> bool:
        return len(set(self.vendors)) > 1

    def record(self) -> dict:
        return {"name": self.name, "kind": self.kind, "ranks": list(self.ranks), "vendors": list(self.vendors),
                "backend": self.backend, "cluster_backend": self.cluster_backend, "mixed": self.mixed}


def audit_violations(records) -> list[str]:
    """The invariant: no mixed-vendor group on nccl (in this run or in the cluster plan); and the
    vendor library inside a vendor on GPUs."""
    bad = []
    for g in records:
        g = g if isinstance(g, dict) else g.record()
        mixed = len(set(g["vendors"])) > 1
        if mixed and "nccl" in (g["backend"], g["cluster_backend"]):
            bad.append(f"{g['name']}: mixed vendors {g['vendors']} on nccl")
        if g["kind"] in ("scalar", "world") and g["cluster_backend"] != "gloo":
            bad.append(f"{g['name']}: scalar collective not on gloo")
    return bad


class Groups:
    """Creates, in one global order on every rank, all groups a run needs.

    world (gloo); per stage a dp group; per replica a scalar group over its pipeline; per replica
    and stage boundary a pp group (direct link), `k_max` channel groups (CPU-forwarding) and a
    proxy group (device-direct)."""

    def __init__(self, topo, rank: int, device_type: str, k_max: int, timeout_s: float, create: bool = True):
        self.topo, self.rank, self.device_type = topo, rank, device_type
        self.records: list[GroupRecord] = []
        self.timeout = timedelta(seconds=timeout_s)
        self._create = create
        self._add("world", "world", list(range(topo.world)), world=True)
        self.dp = {s: self._add(f"dp.stage{s}", "dp", topo.stage_ranks(s)) for s in range(topo.n_stages)}
        self.scalar = {r: self._add(f"scalar.replica{r}", "scalar", topo.pipeline_ranks(r)) for r in range(topo.dp)}
        self.pp, self.channels, self.proxy = {}, {}, {}
        for r in range(topo.dp):
            for s in range(topo.n_stages - 1):
                pair = [topo.pipeline_ranks(r)[s], topo.pipeline_ranks(r)[s + 1]]
                self.pp[r, s] = self._add(f"pp.replica{r}.b{s}", "pp", pair)
                self.channels[r, s] = [self._add(f"channel{i}.replica{r}.b{s}", "channel", pair) for i in range(k_max)]
                self.proxy[r, s] = self._add(f"proxy.replica{r}.b{s}", "proxy", pair)

    def _add(self, name, kind, ranks, world=False) -> GroupRecord:
        vendors = [self.topo.vendors[r] for r in ranks]
        backend = select_backend(kind, vendors, self.device_type)
        rec = GroupRecord(name, kind, ranks, vendors, backend, select_backend(kind, vendors, "cuda"))
        if self._create:
            import torch.distributed as dist

            if world:
                rec.handle = dist.group.WORLD
            else:
                rec.handle = dist.new_group(ranks, timeout=self.timeout, backend=backend)
        self.records.append(rec)
        return rec

    def audit(self) -> list[dict]:
        return [g.record() for g in self.records]
