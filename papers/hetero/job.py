"""What one multi-process run does: the `Job` every rank reads, and its validation.

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007

`validate(job, world)` turns every bad input (a partition that does not sum to the layer count,
more stages than processes, an unknown link, a vendor map of the wrong length, ...) into a
one-line `UserError`, in the parent before any process starts, and again in each rank.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields

from common.errors import UserError

from .links import channels_needed, parse_link, parse_variant
from .model import CONFIGS
from .schedule import SCHEDULES
from .topology import build_topology, parse_vendors

MODES = ("train", "throughput", "p2p", "selftest", "cluster")
DEVICES = ("cpu", "cuda", "auto")
CORPORA = ("markov", "stdlib")


@dataclass
class Job:
    mode: str = "train"
    model: str = "tiny"
    stages: int = 2
    partition: list | None = None
    vendors: str | None = None          # one vendor per rank; None: $HETERO_VENDORS, else detected
    links: list = field(default_factory=lambda: ["device_direct"])
    schedule: str = "1f1b"
    n_micro: int = 4
    micro_size: int = 2
    steps: int = 10
    variant_steps: dict | None = None    # train: {variant: steps} for variants that stop earlier (at most `steps`)
    lr: float = 3e-3
    clip: float = 0.5
    seed: int = 0
    corpus: str = "markov"
    corpus_tokens: int = 200_000
    timeout_s: float = 30.0              # process-group timeout
    checkpoint_dir: str | None = None
    checkpoint_every: int = 0
    resume: bool = False
    save_params: bool = False
    audit_control: bool = False          # also create one group on a deliberately wrong backend (the audit's control)
    selftest: bool = False               # first send awkward tensors over every link and check them
    fail_rank: int = -1                  # fault injection: this rank dies (SIGKILL) ...
    fail_step: int = -1                  # ... at the start of this step
    fail_mode: str = "kill"              # kill (the process dies) | stop (it hangs, SIGSTOP)
    windows: int = 4                     # throughput: interleaved repeats per link
    window_steps: int = 5
    warmup_steps: int = 2
    sizes: list = field(default_factory=lambda: [65536, 1 << 20])   # p2p: message bytes
    p2p_links: list | None = None        # p2p: links (default: `links`)
    p2p_iters: int = 5
    pin_cores: bool = False
    # cluster mode (`clusterbench`): point-to-point phases and vendor-speed windows on an emulated cluster
    p2p_phases: list | None = None       # [{"name", "links", "sizes", "copy_rate_bps"}]: copy_rate_bps = staging engine
    speed_variants: list | None = None   # [{"label", "link", "partition", "speeds": [stage 0, stage 1]}]
    layer_ms: float = 0.0                # emulated device: forward ms of one layer at speed 1 (backward 2x); 0 = unpaced
    head_layers: float = 0.5             # the last stage's norm + head, paced as this many layers
    nics: int = 0                        # NICs per node in an emulated cluster (0: one per channel, k_max)
    device: str = "cpu"                  # cpu: the emulation (every rank on the CPU, whatever GPUs are visible);
                                         # cuda: rank r on GPU LOCAL_RANK (one per GPU); auto: cuda when torch sees a GPU
    out: str | None = None

    def link_specs(self) -> list[str]:
        """Every link spec the job uses (training variants, p2p links and phases, speed variants)."""
        specs = [parse_variant(s)[0] for s in self.links] + list(self.p2p_links or [])
        specs += [s for ph in self.p2p_phases or [] for s in ph.get("links", [])]
        return specs + [v.get("link", "direct") for v in self.speed_variants or []]

    @property
    def k_max(self) -> int:
        return max(channels_needed(s, self.nics) for s in self.link_specs())

    def fingerprint(self) -> dict:
        """What every rank must agree on (the vendor map and output path excepted)."""
        d = asdict(self)
        for k in ("out", "vendors", "fail_rank", "fail_step", "fail_mode", "pin_cores", "device"):
            d.pop(k)
        return d

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_dict(cls, d: dict) -> "Job":
        names = {f.name for f in fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise UserError(f"unknown job field(s) {', '.join(sorted(unknown))}; valid: {', '.join(sorted(names))}")
        return cls(**d)


def validate(job: Job, world: int, vendors=None):
    """(vendor list, Topology) or a UserError naming the fix."""
    if job.mode not in MODES:
        raise UserError(f"unknown mode {job.mode!r}; choose one of {', '.join(MODES)}")
    if job.model not in CONFIGS or CONFIGS[job.model].vocab > 4096:
        raise UserError(f"model {job.model!r} cannot run here; choose tiny or tiny-qwen2 (the 8B configs feed the performance model)")
    if job.schedule not in SCHEDULES:
        raise UserError(f"unknown schedule {job.schedule!r}; choose one of {', '.join(SCHEDULES)}")
    if job.corpus not in CORPORA:
        raise UserError(f"unknown corpus {job.corpus!r}; choose one of {', '.join(CORPORA)}")
    if not job.links:
        raise UserError("no link given; choose one of direct, cpu_forward:k, device_direct")
    for spec in job.links:
        parse_variant(spec)
    for spec in job.p2p_links or []:
        parse_link(spec)
    for name in ("n_micro", "micro_size", "steps"):
        if int(getattr(job, name)) < 1:
            raise UserError(f"{name} must be >= 1, got {getattr(job, name)}")
    for spec, n in (job.variant_steps or {}).items():
        if spec not in job.links or int(n) < 1:
            raise UserError(f"variant_steps: {spec!r}: {n} steps; give variants of the job's links and steps >= 1")
    if job.timeout_s <= 0:
        raise UserError(f"timeout_s must be > 0, got {job.timeout_s}")
    if world < 2:
        raise UserError(f"a pipeline needs at least 2 processes, got {world}")
    vlist = parse_vendors(vendors if vendors is not None else job.vendors, world)
    topo = build_topology(vlist, job.stages, job.partition, CONFIGS[job.model].n_layers)
    if job.mode in ("p2p", "selftest", "cluster") and (world != 2 or job.stages != 2):
        raise UserError(f"the {job.mode} mode runs on exactly 2 processes and 2 stages")
    if job.device not in DEVICES:
        raise UserError(f"device must be one of {', '.join(DEVICES)}, got {job.device!r}")
    if job.fail_mode not in ("kill", "stop"):
        raise UserError(f"unknown fail_mode {job.fail_mode!r}; choose kill or stop")
    if job.resume and not job.checkpoint_dir:
        raise UserError("resume needs checkpoint_dir")
    _validate_cluster(job)
    return vlist, topo


def rank_device(requested: str, local_rank: int, local_world: int, n_gpus: int | None = None) -> str:
    """The device of the rank with `local_rank` among `local_world` ranks of its node: "cpu", or
    "cuda:<local_rank>" (one rank per GPU, CUDA or ROCm). `n_gpus`: the GPUs torch sees (asked only
    when the request is not "cpu"). A node with fewer GPUs than ranks is a one-line `UserError`; the
    CPU emulation ("cpu") never touches a GPU, whatever is visible."""
    if requested not in DEVICES:
        raise UserError(f"device must be one of {', '.join(DEVICES)}, got {requested!r}")
    if requested == "cpu":
        return "cpu"
    if n_gpus is None:
        import torch

        n_gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if requested == "auto" and n_gpus == 0:
        return "cpu"
    if n_gpus == 0:
        raise UserError("device cuda: torch sees no GPU on this node; install a CUDA/ROCm build of torch "
                        "(README: GPU installs) or run the CPU emulation (device cpu)")
    if local_world > n_gpus or local_rank >= n_gpus:
        raise UserError(f"device {requested}: {local_world} ranks on this node need one GPU each, but {n_gpus} "
                        f"present; launch at most {n_gpus} per node (torchrun --nproc-per-node {n_gpus}) "
                        "or run the CPU emulation (device cpu)")
    return f"cuda:{local_rank}"


def _validate_cluster(job: Job) -> None:
    """The cluster mode's phases and speed variants (one-line errors)."""
    for ph in job.p2p_phases or []:
        if not isinstance(ph, dict) or not ph.get("links") or not ph.get("sizes"):
            raise UserError(f"p2p phase {ph!r}: give a dict with name, links and sizes")
        for spec in ph["links"]:
            parse_link(spec)
        if float(ph.get("copy_rate_bps", 0)) < 0 or min(int(x) for x in ph["sizes"]) < 4:
            raise UserError(f"p2p phase {ph.get('name')!r}: sizes >= 4 bytes and copy_rate_bps >= 0")
    n_layers = CONFIGS[job.model].n_layers
    for v in job.speed_variants or []:
        part, speeds = list(v.get("partition") or []), list(v.get("speeds") or [])
        if len(part) != 2 or sum(part) != n_layers or min(part) < 1:
            raise UserError(f"speed variant {v.get('label')!r}: partition {part} must be 2 stages summing to {n_layers}")
        if len(speeds) != 2 or min(speeds) <= 0:
            raise UserError(f"speed variant {v.get('label')!r}: speeds {speeds} must be 2 positive numbers (1 = nv)")
        parse_link(v.get("link", "direct"))
    if job.layer_ms < 0 or job.head_layers < 0 or job.nics < 0:
        raise UserError("layer_ms, head_layers and nics must be >= 0")
