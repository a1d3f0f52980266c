"""Vendors per rank, pipeline stages on the vendor boundary, data-parallel replicas within a vendor.

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007
(heterogeneity only in pipeline parallelism; TP and DP groups stay single-vendor).

Ranks are laid out stage-major: stage s holds ranks [s*dp, (s+1)*dp); replica r is the pipeline
(r, dp + r, 2 dp + r, ...). Every stage must be single-vendor, so a stage boundary is where the
vendor changes (or, with more stages than vendors, a same-vendor boundary).
"""
from __future__ import annotations

from dataclasses import dataclass

from common.errors import UserError

from .specs import name_count

VENDORS = ("nv", "amd", "cpu")


def detect_vendor() -> str:
    """The vendor of this process's accelerator, from the torch build (ROCm reuses torch.cuda)."""
    import torch

    if getattr(torch.version, "hip", None):
        return "amd"
    if torch.version.cuda and torch.cuda.is_available():
        return "nv"
    return "cpu"


def parse_vendors(spec, world: int) -> list[str]:
    """'nv,nv,amd,amd', 'nv:2,amd:2' or a list -> one vendor per rank (length checked)."""
    out = expand_vendors(spec)
    if len(out) != world:
        raise UserError(f"the vendor map names {len(out)} ranks but the run has {world} processes; give one vendor per rank")
    return out


def expand_vendors(spec) -> list[str]:
    if spec is None or spec == "":
        raise UserError("no vendor map; pass vendors='nv,amd' (one per rank) or set HETERO_VENDORS")
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    out: list[str] = []
    for item in items:
        name, n = name_count(item, VENDORS, "vendor", "nv:2,amd:2")
        out += [name] * n
    return out


def even_partition(n_layers: int, n_stages: int) -> list[int]:
    """Layers per stage as equal as the count allows (the first stages take the remainder); the default when
    no partition is given. The paper's mixed cluster needs an uneven one ("appropriate pipeline-parallel
    partitioning", third-party summary; README "What is reconstructed", Topology)."""
    base, extra = divmod(n_layers, n_stages)
    return [base + (1 if s < extra else 0) for s in range(n_stages)]


@dataclass(frozen=True)
class Topology:
    vendors: tuple[str, ...]
    n_stages: int
    partition: tuple[int, ...]

    @property
    def world(self) -> int:
        return len(self.vendors)

    @property
    def dp(self) -> int:
        return self.world // self.n_stages

    def stage_of(self, rank: int) -> int:
        return rank // self.dp

    def replica_of(self, rank: int) -> int:
        return rank % self.dp

    def stage_ranks(self, s: int) -> list[int]:
        return list(range(s * self.dp, (s + 1) * self.dp))

    def pipeline_ranks(self, r: int) -> list[int]:
        return [s * self.dp + r for s in range(self.n_stages)]

    def stage_vendor(self, s: int) -> str:
        return self.vendors[s * self.dp]

    def layers(self, s: int) -> range:
        start = sum(self.partition[:s])
        return range(start, start + self.partition[s])

    def boundary_mixed(self, s: int) -> bool:
        """Whether the boundary between stage s and s+1 crosses vendors."""
        return self.stage_vendor(s) != self.stage_vendor(s + 1)

    def describe(self) -> list[dict]:
        return [{"stage": s, "vendor": self.stage_vendor(s), "ranks": self.stage_ranks(s),
                 "layers": [self.layers(s).start, self.layers(s).stop]} for s in range(self.n_stages)]


def build_topology(vendors: list[str], n_stages: int, partition, n_layers: int) -> Topology:
    """Validate and build; every bad input is a one-line UserError. Stages sit on the vendor boundary and
    stay single-vendor (heterogeneity only in pipeline parallelism: third-party summary, limitations);
    `partition` is the per-stage layer split the paper credits ("appropriate pipeline-parallel
    partitioning")."""
    world = len(vendors)
    if n_stages < 1:
        raise UserError(f"stages must be >= 1, got {n_stages}")
    if n_stages > world:
        raise UserError(f"{n_stages} pipeline stages need at least {n_stages} processes, the run has {world}; lower stages or add processes")
    if world % n_stages:
        raise UserError(f"{world} processes do not split into {n_stages} stages of equal data-parallel size; use a multiple of {n_stages} processes")
    part = even_partition(n_layers, n_stages) if partition in (None, "", []) else [int(x) for x in partition]
    if len(part) != n_stages:
        raise UserError(f"partition {part} has {len(part)} entries for {n_stages} stages; give one layer count per stage")
    if min(part) < 1 or sum(part) != n_layers:
        raise UserError(f"partition {part} sums to {sum(part)} but the model has {n_layers} layers (each stage needs >= 1); fix the partition")
    topo = Topology(tuple(vendors), n_stages, tuple(part))
    for s in range(n_stages):
        vs = {vendors[r] for r in topo.stage_ranks(s)}
        if len(vs) > 1:
            raise UserError(f"stage {s} (ranks {topo.stage_ranks(s)}) mixes vendors {sorted(vs)}; data parallelism stays within a vendor, so put the stage boundary on the vendor boundary")
    return topo
