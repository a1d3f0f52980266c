"""The arithmetic of a full-profile cost estimate on one H100: what each paper's `papers/<id>/cost.py` builds on.

A paper's cost model is one function in its own folder (common/README.md, the contract):

    papers/<id>/cost.py:  estimate(cfg) -> Estimate    # cfg: the resolved full profile (`common.study.get_config(paper, "full")`)

It splits the profile's work into parts, counting FLOPs from the profile's own sizes (models built on
torch's "meta" device, `forward_flops`, or matrix products of the known sizes, `linear_flops`). Each GPU part
takes the longest of three bounds,

    compute  FLOPs / (peak x utilisation),   memory  HBM bytes / bandwidth,   overhead  eager ops x seconds per op,

and each CPU part FLOPs / (an assumed rate per core). Every number is an ESTIMATE from assumed inputs (each
paper lists them in `Estimate.assumptions`); none is a measurement. `benchmarks/full_cost.py` calls every
registered paper's `estimate` and writes `results/bench/full_cost.json`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

ESTIMATE = "estimate from the profile's counts"   # the `source` of a record built here

# one H100 and the machine around it: ASSUMED figures (the card's data sheet rounded down; not measured here)
H100 = {
    "fp32_tflops": 50.0,     # fp32 without TF32 (H100 PCIe 51, SXM 67 TFLOP/s peak)
    "fp64_tflops": 50.0,     # fp64 on tensor cores (PCIe 51, SXM 67)
    "bf16_tflops": 750.0,    # dense bf16 (PCIe 756, SXM 989)
    "hbm_tb_s": 3.0,         # HBM3 (SXM 3.35, PCIe 2.0 TB/s)
    "op_overhead_s": 10e-6,  # one eager PyTorch op: Python dispatch + kernel launch
    "context_gb": 0.5,       # CUDA context and allocator slack per process
}
CPU = {
    "blas_gflops_per_core": 20.0,       # dense fp32/fp64 products in numpy/torch BLAS (one core of a workstation)
    "small_gflops_per_core": 5.0,       # tiny networks and matrix-vector steps (numba, small batches): memory- and call-bound
    "elementwise_gflops_per_core": 1.0,  # numpy elementwise chains (temporaries through memory)
}
UTIL = {"tiny": 0.05, "small": 0.15, "gemm": 0.5}   # assumed fraction of the fp peak reached


def hw_assumptions() -> list[str]:
    return [f"H100: fp32 {H100['fp32_tflops']:g} TFLOP/s, fp64 {H100['fp64_tflops']:g} TFLOP/s, "
            f"HBM {H100['hbm_tb_s']:g} TB/s, {H100['op_overhead_s'] * 1e6:g} us per eager op, "
            f"CUDA context {H100['context_gb']:g} GB per process (assumed, not measured)",
            "utilisation of the fp peak (assumed): tiny nets " + f"{UTIL['tiny']:g}, small conv/MLP nets {UTIL['small']:g}, "
            f"large dense products {UTIL['gemm']:g}; a training step = 3 x its forward FLOPs (backward = 2 x forward)"]


def linear_flops(batch: float, fan_in: float, fan_out: float) -> float:
    """FLOPs of x W^T for x of shape (batch, fan_in): one multiply and one add per weight and row."""
    return 2.0 * batch * fan_in * fan_out


def count_time(count: float, seconds_each: float) -> float:
    """Total seconds of `count` repetitions of a unit that takes `seconds_each`."""
    return float(count) * float(seconds_each)


@dataclass
class GpuPart:
    """One stretch of GPU work: FLOPs, HBM bytes and sequential eager ops, whichever bound is slowest."""
    name: str
    flops: float = 0.0
    bytes: float = 0.0
    ops: float = 0.0
    util: float = UTIL["small"]
    peak: str = "fp32_tflops"

    def seconds(self, hw: dict = H100) -> float:
        compute = self.flops / (hw[self.peak] * 1e12 * self.util) if self.flops else 0.0
        memory = self.bytes / (hw["hbm_tb_s"] * 1e12) if self.bytes else 0.0
        return max(compute, memory, count_time(self.ops, hw["op_overhead_s"]))

    def bound(self, hw: dict = H100) -> str:
        c = self.flops / (hw[self.peak] * 1e12 * self.util) if self.flops else 0.0
        m = self.bytes / (hw["hbm_tb_s"] * 1e12) if self.bytes else 0.0
        o = count_time(self.ops, hw["op_overhead_s"])
        return max((c, "compute"), (m, "memory"), (o, "op overhead"))[1]


@dataclass
class CpuPart:
    name: str
    flops: float
    rate: str = "blas_gflops_per_core"

    def core_seconds(self, cpu: dict = CPU) -> float:
        return self.flops / (cpu[self.rate] * 1e9)


@dataclass
class Estimate:
    data: str
    make_data: str
    commands: list[str]
    gpu: list[GpuPart] = field(default_factory=list)
    cpu: list[CpuPart] = field(default_factory=list)
    memory_gb: float = 0.0
    assumptions: list[str] = field(default_factory=list)
    extra: dict = field(default_factory=dict)

    def record(self) -> dict:
        gpu_s = sum(p.seconds() for p in self.gpu)
        cpu_s = sum(p.core_seconds() for p in self.cpu)
        gpu_flops = sum(p.flops for p in self.gpu)
        cpu_flops = sum(p.flops for p in self.cpu)
        notes = []
        if cpu_s > gpu_s:
            notes.append(f"CPU-side work dominates: ~{cpu_s / 3600:.3g} CPU core-hours (runs on the CPU whatever the device; "
                         f"divide by the cores the run uses) against ~{gpu_s / 3600:.3g} GPU-hours")
        rec = {"data": self.data, "make_data": self.make_data, "gpu_memory_gb_estimate": round3(self.memory_gb),
               "gpu_hours_estimate": round3(gpu_s / 3600.0), "source": ESTIMATE,
               "assumptions": notes + self.assumptions + hw_assumptions(), "commands": self.commands,
               "flops": float(f"{gpu_flops + cpu_flops:.4g}"), "gpu_flops": float(f"{gpu_flops:.4g}"),
               "cpu_flops": float(f"{cpu_flops:.4g}"), "cpu_core_hours_estimate": round3(cpu_s / 3600.0),
               "gpu_parts": {p.name: {"hours": round3(p.seconds() / 3600.0), "flops": float(f"{p.flops:.4g}"),
                                      "bound": p.bound()} for p in self.gpu},
               "cpu_parts": {p.name: {"core_hours": round3(p.core_seconds() / 3600.0), "flops": float(f"{p.flops:.4g}")}
                             for p in self.cpu}}
        rec["command"] = self.commands[0]
        multi = [c for c in self.commands if c.startswith("torchrun") and "--nproc" in c]
        if multi:
            rec["multi_gpu_command"] = multi[0]
        rec.update(self.extra)
        return rec


def round3(x: float) -> float:
    """Three significant figures, never rounded to zero."""
    return float(f"{x:.3g}")


def forward_flops(model, *shapes) -> float:
    """FLOPs of one forward pass of `model` (built under `torch.device("meta")`) on empty inputs of `shapes`."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    inputs = [torch.empty(s, device="meta") for s in shapes]
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(*inputs)
    return float(counter.get_total_flops())


def leaf_modules(model) -> int:
    """Modules without children: about one eager op each per forward pass."""
    return sum(1 for m in model.modules() if not list(m.children()))


def n_params(model) -> int:
    return sum(p.numel() for p in model.parameters())


def activation_numel(model, *shapes) -> int:
    """Elements of every leaf module's output in one forward pass (what backward keeps, roughly)."""
    import torch

    total = [0]

    def hook(_m, _i, out):
        if isinstance(out, torch.Tensor):
            total[0] += out.numel()

    handles = [m.register_forward_hook(hook) for m in model.modules() if not list(m.children())]
    try:
        with torch.no_grad():
            model(*[torch.empty(s, device="meta") for s in shapes])
    finally:
        for h in handles:
            h.remove()
    return total[0]


def meta(build):
    """`build()` with every tensor on the meta device (shapes only)."""
    import torch

    with torch.device("meta"):
        return build()


def train_memory_gb(params: int, act_numel_per_batch: float, resident_bytes: float = 0.0, optimizer_states: int = 2,
                    bytes_per: int = 4, processes: int = 1) -> float:
    """Parameters, their gradients and `optimizer_states` copies, the activations of one batch, tensors resident
    on the device (a dataset), plus a CUDA context; times the processes that share the GPU."""
    one = (params * (2 + optimizer_states) + act_numel_per_batch) * bytes_per + resident_bytes
    return processes * (one / 1e9 + H100["context_gb"])




IMAGE_SHAPES = {"mnist": (1, 28, 60000, 10000), "fashion_mnist": (1, 28, 60000, 10000), "cifar10": (3, 32, 50000, 10000),
                "digits": (1, 8, 1797, 0)}
DATA = {  # what `make data` fetches: folder and size on disk (the official archives' sizes)
    "mnist": "MNIST (data/mnist/, four gzipped IDX files, 11.6 MB)",
    "fashion_mnist": "Fashion-MNIST (data/fashion-mnist/, four gzipped IDX files, 30.9 MB)",
    "cifar10": "CIFAR-10 (data/cifar-10-batches-py/, python batches, 178 MB unpacked from a 170 MB archive)",
}


def make_data(names) -> str:
    """The `make data` command that fetches the datasets `names` (those `make data` knows), or "none"."""
    names = [n for n in names if n in DATA]
    return f'make data DATASETS="{" ".join(names)}"' if names else "none (no dataset: generated in the run)"


def reproduce_command(paper: str) -> str:
    """The command that runs the paper's full profile on a GPU."""
    return f"make reproduce-{paper} PROFILE=full DEVICE=cuda"
