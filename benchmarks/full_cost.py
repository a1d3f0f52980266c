"""What each paper's FULL profile costs on one H100: an estimate from the profile's own counts.

    .venv/bin/python benchmarks/full_cost.py [--papers acl asq ...]   # -> results/bench/full_cost.json (`common.bench.write_benchmark`)

For each paper the full profile is read at run time (`papers/<id>/config.py`: `get_config("full")`, else
`PROFILES["full"]` through `common.profiles.resolve`), its models are built on torch's "meta" device (no
memory, no training) and their forward FLOPs counted with `torch.utils.flop_counter.FlopCounterMode`, or the
FLOPs are counted analytically (matrix products of the known sizes). The work is split into parts; each GPU
part takes the longest of three bounds,

    compute  FLOPs / (peak x utilisation),   memory  HBM bytes / bandwidth,   overhead  eager ops x seconds per op,

and each CPU part FLOPs / (an assumed rate per core). Every number is an ESTIMATE from assumed inputs (each
paper lists them under "assumptions"); none is a measurement. Where the device check has run
(`results/bench/device_check.json`, `benchmarks/device_check.py`), its projected GPU-hours per paper are
preferred and the source says "device check". One run of `make reproduce-<id> PROFILE=full` is one seed;
`SEEDS="0 1 2"` costs three times as much.
"""
from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PAPERS = ("acl", "asq", "diffusion", "hetero", "netrecon", "nlm")
ESTIMATE = "estimate from the profile's counts"
DEVICE_CHECK = "device check"

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


# ------------------------------------------------------------------------------------------------
# arithmetic
# ------------------------------------------------------------------------------------------------
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


# ------------------------------------------------------------------------------------------------
# models on the meta device
# ------------------------------------------------------------------------------------------------
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


# ------------------------------------------------------------------------------------------------
# profiles
# ------------------------------------------------------------------------------------------------
def full_profile(paper: str):
    """The paper's resolved full profile (its `get_config`, else `PROFILES` through common.profiles.resolve)."""
    import importlib

    from common.profiles import resolve

    cfg = importlib.import_module(f"papers.{paper}.config")
    if hasattr(cfg, "get_config"):
        return cfg.get_config("full")
    return resolve(cfg.PROFILES, "full")


IMAGE_SHAPES = {"mnist": (1, 28, 60000, 10000), "fashion_mnist": (1, 28, 60000, 10000), "cifar10": (3, 32, 50000, 10000),
                "digits": (1, 8, 1797, 0)}
DATA = {  # what `make data` fetches: folder and size on disk (the official archives' sizes)
    "mnist": "MNIST (data/mnist/, four gzipped IDX files, 11.6 MB)",
    "fashion_mnist": "Fashion-MNIST (data/fashion-mnist/, four gzipped IDX files, 30.9 MB)",
    "cifar10": "CIFAR-10 (data/cifar-10-batches-py/, python batches, 178 MB unpacked from a 170 MB archive)",
}


def make_data(names) -> str:
    names = [n for n in names if n in DATA]
    return f'make data DATASETS="{" ".join(names)}"' if names else "none (no dataset: generated in the run)"


def reproduce(paper: str) -> str:
    return f"make reproduce-{paper} PROFILE=full DEVICE=cuda"


# ------------------------------------------------------------------------------------------------
# acl: small conv nets on MNIST (GPU), evaluation and the 2-D mixtures on the CPU
# ------------------------------------------------------------------------------------------------
def cost_acl(cfg) -> Estimate:
    from papers.acl.acl import CodeGAN
    from papers.acl.nets import Classifier, ConvDecoder, ConvEncoder, mlp

    ch, size, n_train_all, _ = IMAGE_SHAPES[cfg.dataset]
    n_train = n_train_all if cfg.n_train in (0, None) else min(cfg.n_train, n_train_all)
    img = (ch, size, size)
    E = meta(lambda: ConvEncoder(ch, size, cfg.code_dim, cfg.width))
    Dec = meta(lambda: ConvDecoder(cfg.code_dim, ch, size, cfg.width))
    Dx = meta(lambda: ConvEncoder(ch, size, 1, cfg.width))
    C = meta(lambda: Classifier(ch, size, 10, cfg.width // 2, cfg.cls_feat_dim))
    Dec_c = meta(lambda: ConvDecoder(cfg.cls_feat_dim, ch, size, cfg.width))
    feat = meta(lambda: Classifier(ch, size, 10))
    acl = meta(lambda: CodeGAN(cfg.code_dim, cfg.z_dim, cfg.hidden, cfg.depth))
    acl_c = meta(lambda: CodeGAN(cfg.cls_feat_dim, cfg.z_dim, cfg.hidden, cfg.depth))
    f = {"E": forward_flops(E, (1,) + img), "Dec": forward_flops(Dec, (1, cfg.code_dim)), "Dx": forward_flops(Dx, (1,) + img),
         "C": forward_flops(C, (1,) + img), "Dec_c": forward_flops(Dec_c, (1, cfg.cls_feat_dim)),
         "feat": forward_flops(feat, (1,) + img),
         "Gc": forward_flops(acl.G, (1, cfg.z_dim)), "Dc": forward_flops(acl.D, (1, cfg.code_dim)),
         "Gc_c": forward_flops(acl_c.G, (1, cfg.z_dim)), "Dc_c": forward_flops(acl_c.D, (1, cfg.cls_feat_dim))}
    ops = {k: leaf_modules(m) for k, m in dict(E=E, Dec=Dec, Dx=Dx, C=C, Gc=acl.G, Dc=acl.D).items()}
    B, Bc = cfg.batch, cfg.code_batch
    adam_ops = 15   # one fused-foreach Adam step and zero_grad, in eager ops (assumed)

    def code_round(gc, dc, batch):   # one D_c step (real and fake) and one G_c step
        return 3 * (2 * f[dc] + f[gc]) * batch + 3 * (f[gc] + f[dc]) * batch

    code_round_ops = 3 * (2 * ops["Dc"] + 2 * ops["Gc"]) + 2 * adam_ops + 10
    # fit_code_model, ACL-AE: ae_steps of E + Dec with a joint code round, then code_steps on cached codes
    ae_step = 3 * (f["E"] + f["Dec"]) * B + code_round("Gc", "Dc", B)
    ae_ops = 3 * (ops["E"] + ops["Dec"]) + adam_ops + code_round_ops
    cls_step = 3 * f["C"] * B
    cls_rec_step = f["C"] * B + 3 * f["Dec_c"] * B + code_round("Gc_c", "Dc_c", B)
    code_step_ae, code_step_cls = code_round("Gc", "Dc", Bc), code_round("Gc_c", "Dc_c", Bc)
    mmd_step = 3 * f["Gc"] * Bc + 3 * 2 * Bc * Bc * cfg.code_dim * 2   # G_c by MMD: the generator and the Gram matrices
    gan_step = f["Dec"] * B + 3 * 2 * f["Dx"] * B + 3 * (f["Dec"] + f["Dx"]) * B
    gan_ops = 3 * (2 * ops["Dx"] + ops["Dec"]) + ops["Dec"] + 2 * adam_ops + 10
    aclgan_step = gan_step + 3 * f["E"] * B + 3 * f["Dec"] * B + code_round("Gc", "Dc", B)
    aclgan_ops = gan_ops + 3 * (ops["E"] + ops["Dec"]) + code_round_ops
    R, Rc, Rg = cfg.replicates, cfg.cls_replicates, cfg.gan_replicates
    small = UTIL["small"]
    gpu = [
        GpuPart("ACL-AE replicates (E, Dec, joint code GAN; then the code phase and its MMD control)",
                R * (cfg.ae_steps * ae_step + cfg.code_steps * (code_step_ae + mmd_step)),
                ops=R * (cfg.ae_steps * ae_ops + cfg.code_steps * 2 * code_round_ops), util=small),
        GpuPart("ACL-classifier replicates (classifier, its decoder, code phase, MMD control)",
                Rc * (cfg.cls_steps * cls_step + cfg.ae_steps * cls_rec_step + cfg.code_steps * (code_step_cls + mmd_step)),
                ops=Rc * (cfg.cls_steps * (3 * ops["C"] + adam_ops) + cfg.ae_steps * ae_ops + cfg.code_steps * 2 * code_round_ops),
                util=small),
        GpuPart("plain GAN replicates", Rg * cfg.gan_steps * gan_step, ops=Rg * cfg.gan_steps * gan_ops, util=small),
        GpuPart("ACL-GAN replicates (image GAN + E + code GAN; code refit and MMD control)",
                Rg * (cfg.gan_steps * aclgan_step + cfg.code_steps * (code_step_ae + mmd_step)),
                ops=Rg * (cfg.gan_steps * aclgan_ops + cfg.code_steps * 2 * code_round_ops), util=small),
    ]
    # evaluation (CPU, numpy): features, FID / KID / PRDC on the feature net's 64-d features, memorization
    d_feat = 64
    npix = ch * size * size

    def evaluation(n: int, full: bool, mem: bool) -> float:
        fl = n * f["feat"] + cfg.kid_subsets * 3 * cfg.kid_subset_size ** 2 * d_feat * 2
        if full:
            fl += 3 * min(cfg.n_prdc, n) ** 2 * d_feat * 2
        if mem:
            m = min(cfg.n_mem, n)
            fl += 2 * m * n_train * (npix + d_feat) * 2
        return fl

    regions = cfg.n_regions + 2 ** max(1, int(math.log2(cfg.n_regions)))
    ev_ae = R * (evaluation(cfg.n_eval, True, True) + 4 * evaluation(cfg.n_eval, True, False)
                 + 2 * regions * evaluation(cfg.n_region, True, False))
    ev_cls = Rc * (evaluation(cfg.n_eval, True, True) + 4 * evaluation(cfg.n_eval, True, False))
    ev_gan = Rg * (evaluation(cfg.n_eval, True, True) + regions * evaluation(cfg.n_region, True, False))
    ev_aclgan = Rg * (evaluation(cfg.n_eval, True, True) + evaluation(cfg.n_eval, True, False)
                      + regions * evaluation(cfg.n_region, True, False))
    featnet = cfg.feat_epochs * n_train_all * 3 * f["feat"]
    # the 2-D mixtures (CPU worker processes): MLPs 2 -> h -> h -> c and back, batch syn_batch
    h, c2 = cfg.syn_hidden, cfg.syn_code_dim
    syn_mlp = lambda sizes: sum(linear_flops(1, a, b) for a, b in zip(sizes[:-1], sizes[1:]))  # noqa: E731
    fE, fG = syn_mlp([2, h, h, c2]), syn_mlp([c2, h, h, 2])
    fD, fgc, fdc = syn_mlp([2, h, h, 1]), syn_mlp([c2, h, h, c2]), syn_mlp([c2, h, h, 1])   # _syn_hyper: hidden = syn_hidden
    sb = cfg.syn_batch
    syn_code = 3 * (3 * fdc + 2 * fgc) * sb
    syn_ae = cfg.syn_ae_steps * (3 * (fE + fG) * sb + syn_code) + cfg.syn_code_steps * 2 * syn_code
    syn_gan = cfg.syn_gan_steps * (3 * (3 * fD + 2 * fG) * sb)
    syn_aclgan = cfg.syn_gan_steps * (3 * (3 * fD + 3 * fG + fE) * sb + syn_code) + cfg.syn_code_steps * 2 * syn_code
    syn = len(cfg.syn_mixtures) * cfg.syn_replicates * (syn_ae + syn_gan + syn_aclgan)
    cpu = [CpuPart("evaluation: features, FID/KID/PRDC, memorization (numpy)", ev_ae + ev_cls + ev_gan + ev_aclgan),
           CpuPart("feature network (trained once per run on the CPU)", featnet, "small_gflops_per_core"),
           CpuPart("2-D mixtures (worker processes on the CPU)", syn)]
    biggest = max(n_params(m) for m in (E, Dec, Dx, C, Dec_c))
    acts = max(activation_numel(E, (B,) + img) + activation_numel(Dec, (B, cfg.code_dim)),
               2 * activation_numel(Dx, (B,) + img) + 2 * activation_numel(Dec, (B, cfg.code_dim)) + activation_numel(E, (B,) + img))
    eval_batch = 2000 * (npix + activation_numel(E, (1,) + img))   # batched(...) encodes 2000 images at a time
    workers = 8
    per_process = train_memory_gb(4 * biggest + 2 * n_params(acl), max(acts, eval_batch), resident_bytes=n_train * npix * 4 + n_train * 8)
    tasks = R + Rc + 2 * Rg
    return Estimate(
        data=f"{cfg.dataset} (the full profile's images; the 2-D mixtures are generated). " + DATA.get(cfg.dataset, cfg.dataset),
        make_data=make_data([cfg.dataset]), commands=[reproduce("acl")],
        gpu=gpu, cpu=cpu, memory_gb=min(workers, tasks) * per_process,
        assumptions=[
            f"{cfg.dataset}: {n_train} training images {img} on the device (float32), batch {B}, code batch {Bc}",
            f"forward FLOPs per image from the models on the meta device: E {f['E']:.3g}, Dec {f['Dec']:.3g}, D_x {f['Dx']:.3g}, "
            f"classifier {f['C']:.3g}, feature net {f['feat']:.3g}; per code G_c {f['Gc']:.3g}, D_c {f['Dc']:.3g}",
            f"replicates: {R} ACL-AE, {Rc} ACL-classifier, {Rg} GAN and {Rg} ACL-GAN; steps: ae {cfg.ae_steps}, code {cfg.code_steps}, "
            f"classifier {cfg.cls_steps}, GAN {cfg.gan_steps}; the MMD control refits G_c for code_steps",
            "these nets are small: a step is bound by eager-op overhead (ops per step counted from the leaf modules "
            "x 3 for backward, plus 15 per Adam step), not by FLOPs",
            f"GPU memory: {min(workers, tasks)} worker processes at once (pmap, one per core; assumed an 8-core machine, "
            f"`-p workers=N` sets it), each {per_process:.2f} GB (its CUDA context, the training set, the nets and Adam, "
            "the largest batch)",
            f"CPU: evaluation and the 2-D mixtures ({len(cfg.syn_mixtures)} mixtures x {cfg.syn_replicates} replicates x 3 "
            f"models, MLPs of {h} units on batches of {sb}) at {CPU['blas_gflops_per_core']:g} GFLOP/s per core, the feature "
            f"net (small convolutions) at {CPU['small_gflops_per_core']:g} (assumed)",
            "one run = seed 0; --seeds 0 1 2 costs 3x"],
        extra={"replicates": {"ae": R, "cls": Rc, "gan": Rg, "aclgan": Rg}})


# ------------------------------------------------------------------------------------------------
# asq: CIFAR-10 ResNet-20, float pre-training and the QAT grid
# ------------------------------------------------------------------------------------------------
QAT_OVERHEAD = 1.5      # fake quantization of weights and activations: extra elementwise kernels per layer (assumed)


def qat_runs(cfg) -> int:
    """QAT runs per training seed: LSQ and ASQ at every width, then the weight-grid ablation (papers.asq.qat_grid.QATGrid.configs)."""
    out = {(m, b, "uniform") for b in cfg.bits for m in ("lsq", "asq")}
    out |= {("asq", cfg.ablation_bits, g) for g in cfg.ablation_grids}
    return len(out)


def cost_asq(cfg) -> Estimate:
    from papers.asq.models import ARCHS

    ch, size, n_train, n_test = IMAGE_SHAPES[cfg.dataset]
    model = meta(lambda: ARCHS[cfg.arch](num_classes=10, in_channels=ch))
    fwd = forward_flops(model, (1, ch, size, size))
    ops = leaf_modules(model)
    seeds, runs = len(cfg.seeds), qat_runs(cfg)
    steps_epoch = n_train // cfg.batch_size
    fp_steps = seeds * cfg.fp_epochs * steps_epoch
    qat_steps = seeds * runs * cfg.qat_epochs * steps_epoch
    step_flops = 3 * fwd * cfg.batch_size
    sgd_ops = 10
    evals = seeds * (runs + 3) * n_test * fwd        # accuracy of every model, the PTQ and frozen-beta controls
    gpu = [GpuPart("float pre-training", fp_steps * step_flops, ops=fp_steps * (3 * ops + sgd_ops)),
           GpuPart("QAT grid", qat_steps * step_flops * QAT_OVERHEAD, ops=qat_steps * (3 * ops * 3 + sgd_ops)),
           GpuPart("evaluations", evals, ops=seeds * (runs + 3) * math.ceil(n_test / cfg.eval_batch) * ops)]
    # integer LUT inference of the test set, with the right and the wrong LUT; the weight-error search's samples
    cpu = [CpuPart("integer LUT inference on the test set (notebook 03) and the weight-error search", 2 * n_test * fwd
                   + cfg.mse_samples * 64 * 2 * 20, "small_gflops_per_core")]
    acts = activation_numel(model, (cfg.batch_size, ch, size, size))
    mem = train_memory_gb(n_params(model), acts * 3, optimizer_states=1)   # QAT keeps masks and scale grads: 3x outputs
    r34 = meta(lambda: ARCHS["resnet34"](num_classes=1000, in_channels=3))
    r34_fwd = forward_flops(r34, (1, 3, 224, 224))
    imagenet_epochs = seeds * (cfg.fp_epochs + QAT_OVERHEAD * runs * cfg.qat_epochs)   # the same grid, on ImageNet
    imagenet_h = 1281167 * imagenet_epochs * 3 * r34_fwd / (H100["fp32_tflops"] * 1e12 * UTIL["gemm"]) / 3600
    return Estimate(
        data="CIFAR-10 " + DATA["cifar10"][len("CIFAR-10 "):] + "; optional: ImageNet (ILSVRC-2012 class folders, ~150 GB, "
             "by hand: an account is needed) for -p dataset=imagenet -p arch=resnet34",
        make_data=make_data([cfg.dataset]),
        commands=[reproduce("asq"),
                  "torchrun --nproc_per_node 8 -m papers.asq.cli --profile full --ckpt-dir results/asq/ckpt-full",
                  ".venv/bin/python -m common.reproduce asq --profile full -p ckpt_dir=results/asq/ckpt-full"],
        gpu=gpu, cpu=cpu, memory_gb=mem,
        assumptions=[
            f"{cfg.arch} on {cfg.dataset}: {fwd / 1e6:.1f} MFLOP per {size}x{size} image forward, {n_params(model)} parameters "
            "(counted on the meta device)",
            f"{seeds} training seeds x (1 float run of {cfg.fp_epochs} epochs + {runs} QAT runs of {cfg.qat_epochs} epochs "
            f"(LSQ/ASQ at bits {list(cfg.bits)}, grids {list(cfg.ablation_grids)} at {cfg.ablation_bits} bits)); "
            f"{steps_epoch} steps of {cfg.batch_size} per epoch",
            f"QAT step = {QAT_OVERHEAD:g} x the float step's FLOPs and 3x its eager ops (fake quantization; assumed)",
            f"one GPU; `torchrun --nproc_per_node 8` (DDP, global batch {cfg.batch_size}) divides the wall time of the "
            "training by up to 8 at about the same GPU-hours",
            "GPU memory: ResNet-20 with SGD momentum, 3x the leaf-module outputs of one batch, a CUDA context; the "
            "training set stays on the host",
            f"not in the total: the optional ImageNet ResNet-34 run ({r34_fwd / 1e9:.2f} GFLOP per 224x224 image forward, "
            f"the same {seeds} seeds x ({cfg.fp_epochs} float + {runs} x {cfg.qat_epochs} QAT epochs) of 1.28M images) ~ "
            f"{imagenet_h:.0f} GPU-hours at utilisation {UTIL['gemm']:g} (estimate; fewer epochs or bits cut it in proportion)",
            "one run = seed 0 (training seeds 0, 1, 2); --seeds 0 1 2 costs 3x"],
        extra={"qat_runs_per_seed": runs, "imagenet_resnet34_gpu_hours_estimate": round3(imagenet_h)})


# ------------------------------------------------------------------------------------------------
# diffusion: numpy path simulations (CPU); the learned score on Fashion-MNIST (GPU)
# ------------------------------------------------------------------------------------------------
PATH_STEP_FLOPS = 40          # one Euler step of one 1-D path in a Gaussian-mixture score, numpy (assumed)
COLLAPSE_EVALS = 60           # evaluations of the overlap per dimension (curve points + root finding + SE; assumed)


def cost_diffusion(cfg) -> Estimate:
    from papers.diffusion.learned import ScoreNet

    steps = lambda T, dt: int(round(T / dt))  # noqa: E731
    nf, nb = cfg.n_forward, cfg.n_backward
    path_steps = (2 * nf * steps(cfg.ift_T, cfg.forward_dt) + 2 * nb * steps(cfg.ift_T, cfg.backward_dt)
                  + nf * cfg.ift_long_fraction * steps(cfg.ift_T_long, cfg.forward_dt)
                  + nb * cfg.ift_long_fraction * steps(cfg.ift_T_long, cfg.backward_dt)
                  + cfg.hist_seeds * cfg.n_hist * steps(cfg.hist_forward_T, cfg.forward_dt)
                  + 3 * nf * steps(cfg.dft_T, cfg.forward_dt)
                  + cfg.n_rates_paths * (steps(cfg.rates_T, cfg.rates_forward_dt) + 2 * steps(cfg.rates_T, cfg.rates_backward_dt)))
    clone_check = 2 * cfg.clone_check_n * cfg.clone_check_d * steps(1.0, cfg.clone_check_dt)
    cloning_mc = sum(cfg.cloning_samples * d * 50 for d in cfg.cloning_dims)
    collapse = sum(3 * COLLAPSE_EVALS * linear_flops(cfg.collapse_test, d, cfg.collapse_n) for d in cfg.collapse_dims)
    fp = cfg.fp_samples * cfg.fp_q_points * len(cfg.fp_times) * 20 + cfg.fp_threshold_samples * cfg.fp_q_points * 20
    phase = cfg.phase_grid ** 2 * 1e5
    # learned score: dim = (28 / downsample)^2 pixels
    dim = (28 // cfg.learned_downsample) ** 2
    net = meta(lambda: ScoreNet(dim, hidden=cfg.learned_hidden))
    fwd = forward_flops(net, (1, dim), (1,))
    ops = leaf_modules(net) + 8
    rows = cfg.learned_clone_starts * 8           # n_clones = 8 per start (learned.cloning_curve)
    clone_steps = 2 * cfg.learned_times * cfg.learned_clone_steps   # trained and untrained networks
    emp = 2 * cfg.learned_times * linear_flops(cfg.learned_empirical_noise * cfg.learned_clone_starts, dim, 12000)
    gpu = [GpuPart("denoising score matching", cfg.learned_steps * 3 * fwd * cfg.learned_batch,
                   ops=cfg.learned_steps * (3 * ops + 25)),
           GpuPart("cloning curves (reverse SDE of the trained and the untrained network)", clone_steps * rows * fwd,
                   ops=clone_steps * (ops + 6))]
    cpu = [CpuPart("path simulations (fluctuation theorems, entropy rates): numpy", path_steps * PATH_STEP_FLOPS,
                   "elementwise_gflops_per_core"),
           CpuPart("high dimension: cloning MC and the clone check", cloning_mc + clone_check * 20, "elementwise_gflops_per_core"),
           CpuPart("collapse of the empirical score (products of test x training points)", collapse),
           CpuPart("Franz-Parisi potentials and the phase diagram", fp + phase, "elementwise_gflops_per_core"),
           CpuPart("empirical-score cloning curves (learned section)", emp)]
    acts = activation_numel(net, (max(cfg.learned_batch, rows), dim), (max(cfg.learned_batch, rows),))
    mem = train_memory_gb(n_params(net), acts * 2, resident_bytes=12000 * dim * 4)
    return Estimate(
        data=f"{cfg.learned_dataset} classes {list(cfg.learned_classes)} for the learned score; the rest is simulated. "
             + DATA.get(cfg.learned_dataset, cfg.learned_dataset),
        make_data=make_data([cfg.learned_dataset]), commands=[reproduce("diffusion")],
        gpu=gpu, cpu=cpu, memory_gb=mem,
        assumptions=[
            f"ScoreNet({dim} pixels, hidden {cfg.learned_hidden}): {fwd / 1e6:.2f} MFLOP per row forward (meta device); "
            f"{cfg.learned_steps} training steps of {cfg.learned_batch}; cloning: {cfg.learned_times} times x "
            f"{cfg.learned_clone_steps} steps x {rows} rows, twice (trained and untrained)",
            "everything but the learned score runs on the CPU in numpy whatever the device: "
            f"{path_steps:.3g} 1-D path steps at {PATH_STEP_FLOPS} FLOP each, the collapse's products "
            f"({COLLAPSE_EVALS} overlap evaluations per dimension, x3 with the population null), Franz-Parisi and the "
            "phase grid (1e5 FLOP per point); CPU rates per core as listed (assumed)",
            "the score net is tiny: its steps are bound by eager-op overhead, not by FLOPs",
            "GPU memory: the net, Adam, 2x the leaf outputs of the largest batch, the two classes' images, a CUDA context",
            "one run = seed 0; --seeds 0 1 2 costs 3x"])


# ------------------------------------------------------------------------------------------------
# hetero: the tiny pipeline model, steps x ranks of the full profile's launches (papers.hetero.gpuslice)
# ------------------------------------------------------------------------------------------------
KERNELS_PER_LAYER = 75   # one decoder layer's forward + backward of one micro-batch, in eager ops (assumed)


def cost_hetero(cfg) -> Estimate:
    from papers.hetero import gpuslice
    from papers.hetero.model import CONFIGS, LLAMA3_8B, flops_per_token

    mcfg = CONFIGS[cfg.model]
    counts = gpuslice.full_step_counts(cfg)
    part = list(cfg.partition)
    stages = len(part)
    tokens_micro = cfg.micro_size * mcfg.seq_len
    # one pipeline step (1F1B, M micro-batches): M + S - 1 slots of the slowest stage, plus the optimizer
    slot_ops = max(part) * KERNELS_PER_LAYER + 10
    step_ops = (cfg.n_micro + stages - 1) * slot_ops + 20
    step_s = count_time(step_ops, H100["op_overhead_s"])
    hours = gpuslice.projected_gpu_hours(counts, step_s)
    rank_steps = sum(s * r for s, r in counts.values())
    # FLOPs: every rank runs its stage's layers on its micro-batches
    per_rank_step = cfg.n_micro * tokens_micro * (max(part) * flops_per_token(mcfg, "layer") + flops_per_token(mcfg, "head") / stages)
    # the full profile is the CPU emulation (its ranks are processes on one host, vendors emulated): CPU time only
    cpu = [CpuPart(f"{name}: {s} steps x {r} ranks", s * r * per_rank_step, "small_gflops_per_core")
           for name, (s, r) in counts.items()]
    layer_8b = flops_per_token(LLAMA3_8B, "layer") * LLAMA3_8B.n_layers + flops_per_token(LLAMA3_8B, "head")
    rank_gb = train_memory_gb(_tiny_params(mcfg), 4 * cfg.n_micro * tokens_micro * mcfg.d_model * max(part))
    return Estimate(
        data="none: the corpora are generated (a Markov chain) or read from the Python standard library's sources",
        make_data=make_data([]),
        commands=[reproduce("hetero"),
                  f"torchrun --nnodes 2 --node-rank {{0,1}} --rdzv-endpoint HOST:PORT --nproc-per-node 8 "
                  f"-m papers.hetero.train --link {cfg.stability_link} --partition {','.join(map(str, part))} "
                  f"--corpus {cfg.corpus} --steps {cfg.stability_steps} --out results/hetero/torchrun",
                  f"HETERO_VENDORS=nv,nv,amd,amd torchrun --nproc-per-node 4 -m papers.hetero.train --link cpu_forward:2 "
                  f"--partition {','.join(map(str, part))} --steps {cfg.correctness_steps} --out results/hetero/torchrun"],
        gpu=[], cpu=cpu, memory_gb=0.0,
        assumptions=[
            "the full profile runs the paper's protocol as a CPU emulation: its ranks are processes on one host with the "
            "vendors emulated, because on GPUs of one vendor the vendor boundary cannot be carried (gloo has no GPU "
            "send/recv, device-direct needs a torch built with UCC, NCCL refuses two ranks of one group on one GPU); it is "
            "billed in CPU core-hours, no GPU-hours; the GPU path is the torchrun lines on a real mixed cluster",
            f"host memory: {cfg.processes} processes x {rank_gb:.2g} GB each",
            f"model {cfg.model!r} (d_model {mcfg.d_model}, {mcfg.n_layers} layers, seq {mcfg.seq_len}), partition {part}, "
            f"{cfg.n_micro} micro-batches of {cfg.micro_size}; FLOPs per token from papers.hetero.model.flops_per_token",
            "steps x ranks of the full profile's launches from papers.hetero.gpuslice.full_step_counts: "
            + ", ".join(f"{k} {s} x {r}" for k, (s, r) in counts.items()) + f" = {rank_steps} rank-steps, one GPU per rank",
            f"one pipeline step = (M + S - 1) slots x {max(part)} layers x {KERNELS_PER_LAYER} eager ops per layer and "
            f"micro-batch = {step_s * 1e3:.2f} ms (the tiny model is op-bound); the link counted as free and the AMD "
            "stages at NVIDIA speed, as in the device check's slice",
            "memory per rank: the tiny model with AdamW and its micro-batches' activations",
            f"the paper's LLaMA-3-8B training (~{layer_8b:.3g} FLOP per token) is not in the full profile: it is "
            "projected (notebook 05), and trained only by the torchrun command on a mixed cluster",
            "the two-node torchrun line is the paper's setting (8 NVIDIA + 8 AMD GPUs, vendors detected on GPUs; "
            "one node per vendor), the four-process line the README's local form (vendors set by hand)",
            "one run = seed 0; --seeds 0 1 2 costs 3x"],
        extra={"rank_steps": rank_steps, "pipeline_step_s_estimate": round3(step_s),
               "host_memory_gb_estimate": round3(cfg.processes * rank_gb),
               "gpuslice_projection_gpu_hours": round3(hours)})


def _tiny_params(mcfg) -> int:
    from papers.hetero.model import layer_params

    return mcfg.n_layers * layer_params(mcfg) + 2 * mcfg.vocab * mcfg.d_model


# ------------------------------------------------------------------------------------------------
# netrecon: numba/numpy network dynamics on the CPU; the Adam fits on the GPU
# ------------------------------------------------------------------------------------------------
def cost_netrecon(cfg) -> Estimate:
    steps = lambda T: int(round(T / cfg.dt))  # noqa: E731
    mv = lambda N: 2.0 * N * N  # noqa: E731  one network step: a matrix-vector product
    # network steps (x tangent-map factor) per section of notebooks 01-05
    sections = {
        "01 regimes (grid of gains, with the tangent map)": 2 * len(cfg.grid_gs) * cfg.grid_seeds * cfg.grid_n_traj
        * steps(cfg.grid_t_transient + cfg.grid_t_align + cfg.grid_t_average) * mv(cfg.grid_N),
        "01 g < 1 exponents (with the near-miss gains)": 2 * (len(cfg.sub_gs) * cfg.sub_seeds + cfg.ctrl_sub_seeds) * cfg.sub_n_traj
        * steps(cfg.sub_t_transient + cfg.sub_t_align + cfg.sub_t_average) * mv(cfg.sub_N),
        "03 prediction (teacher + one student per eta, from every state)": len(cfg.pred_gs) * cfg.pred_seeds
        * (1 + len(cfg.pred_etas)) * cfg.pred_n_x0 * steps(cfg.pred_t_burn + cfg.pred_t_max) * mv(cfg.pred_N)
        + 2 * len(cfg.pred_gs) * cfg.pred_seeds * steps(cfg.pred_t_lyap) * mv(cfg.pred_N),
        "03 g < 1 horizon and its control": 2 * cfg.q_seeds * cfg.q_n_x0 * (steps(cfg.q_T) + steps(cfg.q_ctrl_T)) * mv(cfg.q_N)
        + cfg.q_seeds * cfg.q_n_x0 * (1 + len(cfg.q_rel_etas)) * steps(cfg.q_T) * mv(cfg.q_N),   # the eta-grid students
        "03 data size (N = ds_N)": 2 * cfg.ds_seeds * len(cfg.ds_n_trajs) * cfg.ds_n_x0 * steps(cfg.ds_t_max) * mv(cfg.ds_N)
        + cfg.ds_seeds * sum(cfg.ds_n_trajs) * cfg.ds_n_steps * mv(cfg.ds_N)
        + cfg.ds_seeds * sum(linear_flops(n * cfg.ds_n_steps, cfg.ds_N, cfg.ds_N) for n in cfg.ds_n_trajs),
        "04 DMFT statistics (float32 tangent map)": 2 * len(cfg.st_gs) * cfg.st_seeds * cfg.st_n_traj
        * steps(cfg.st_t_transient + cfg.st_t_align + cfg.st_t_average) * mv(cfg.st_N),
        "04 transients and saturation": len(cfg.tr_cases) * cfg.tr_seeds * cfg.tr_n_x0
        * (int(round(cfg.tr_T / cfg.tr_dt)) + int(round(cfg.sat_T / cfg.sat_dt))) * mv(cfg.tr_N),
        "05 Lyapunov: OS protocol and QR spectrum": 2 * len(cfg.os_gs) * cfg.os_seeds * steps(cfg.os_t_total) * mv(cfg.os_N)
        + steps(cfg.qr_t_average) * (mv(cfg.qr_N) * (1 + cfg.qr_k) + 4 * cfg.qr_N * cfg.qr_k ** 2),
        "02 reconstruction: simulations, least squares": len(cfg.rec_gs) * (cfg.rec_n_traj * cfg.rec_n_steps * mv(cfg.rec_N)
        * (1 + cfg.adam_n_x0 * steps(cfg.adam_t_max) / (cfg.rec_n_traj * cfg.rec_n_steps) * 3)
        + (2 * len(cfg.sweep_n_trajs) + 4) * linear_flops(cfg.rec_n_traj * cfg.rec_n_steps, cfg.rec_N, cfg.rec_N)),
    }
    cpu = [CpuPart(name, fl, "small_gflops_per_core") for name, fl in sections.items()]
    # Adam fits (notebook 02) on the GPU in float64: windows of `adam_window` states, batch adam_batch
    n_win = (cfg.rec_n_steps + 1) // cfg.adam_window
    fits = []
    for g in cfg.rec_gs:
        fits.append((cfg.rec_n_traj, cfg.adam_epochs_sub if g < 1 else cfg.adam_epochs_chaos))
        fits += [(n, cfg.adam_sweep_epochs) for n in cfg.adam_sweep_n_trajs]
    batches = sum(e * math.ceil(n * n_win / cfg.adam_batch) for n, e in fits)
    flops = sum(e * n * n_win for n, e in fits) * 3 * linear_flops(cfg.adam_window - 1, cfg.rec_N, cfg.rec_N)
    gpu = [GpuPart("Adam fits of the student (float64)", flops, ops=batches * 40, util=UTIL["small"], peak="fp64_tflops")]
    data_bytes = cfg.rec_n_traj * n_win * cfg.adam_window * cfg.rec_N * 8
    mem = train_memory_gb(cfg.rec_N ** 2, cfg.adam_batch * cfg.adam_window * cfg.rec_N * 4, resident_bytes=data_bytes, bytes_per=8)
    hbm_s = sum(sections.values()) / 2 * 8 / (H100["hbm_tb_s"] * 1e12)   # each step reads its N^2 float64 matrix once
    return Estimate(
        data="none: the networks and trajectories are generated", make_data=make_data([]),
        commands=[reproduce("netrecon")], gpu=gpu, cpu=cpu, memory_gb=mem,
        assumptions=[
            "only the Adam fits of notebook 02 use the GPU; every simulation, DMFT and Lyapunov computation runs on the "
            "CPU (numba/numpy) whatever the device, and dominates: see cpu_core_hours_estimate",
            f"CPU: network steps of N x N matrix-vector products (2 N^2 FLOP each, x2 where the tangent map or a second "
            f"network runs beside), at {CPU['small_gflops_per_core']:g} GFLOP/s per core (assumed; the run spreads over "
            "one worker per core); the DMFT solver's iterations are not counted",
            f"Adam: {len(fits)} fits, {batches} minibatches of {cfg.adam_batch} windows of {cfg.adam_window} states at N = {cfg.rec_N}, "
            "~40 eager ops and one host sync per minibatch (op-bound)",
            f"if the simulations ran on the GPU they would be bound by HBM (each step reads its N^2 float64 matrix): "
            f"~{hbm_s / 3600:.3g} GPU-hours at {H100['hbm_tb_s']:g} TB/s, not counted (they do not run there)",
            "GPU memory: the trajectory windows on the device in float64, W with Adam, a CUDA context",
            "one run = seed 0; --seeds 0 1 2 costs 3x"],
        extra={"gpu_hours_if_simulations_on_gpu_estimate": round3(hbm_s / 3600)})


# ------------------------------------------------------------------------------------------------
# nlm: PCD-k training and Langevin sampling of N = 784 networks (fp32 GEMMs on the GPU)
# ------------------------------------------------------------------------------------------------
GEMM_ROWS = 1000   # chains per product from which an N = 784 fp32 product counts as a large GEMM (assumed)


def cost_nlm(cfg) -> Estimate:
    N = 784                                  # MNIST pixels
    m, B, k = cfg.n_chains, cfg.batch, cfg.k
    K_sweep = len(cfg.sweep_sizes) * cfg.sweep_replicates
    R = cfg.ooe_replicates
    u_rdm = cfg.ooe_rdm_updates or max(1, cfg.ooe_updates * k // cfg.ooe_rdm_k)
    N2 = 196                                 # the second data set: Fashion-MNIST pooled to 14 x 14
    step = lambda chains, n=N: linear_flops(chains, n, n)  # noqa: E731  one Langevin step of `chains` chains
    update = lambda models, kk=k, n=N: models * (kk * step(m, n) + 2 * linear_flops(n, B, n))  # noqa: E731  + data and model correlations
    noise_bytes = lambda models, chains, n=N: models * chains * n * 4 * 4  # noqa: E731  state and noise read/written
    parts = {  # name: (count, FLOPs per unit, bytes per unit, eager ops per unit); utilisation from the rows per product
        "main training (notebooks 01, 04, 06)": (cfg.main_updates, update(1), k * noise_bytes(1, m), k * 8 + 20),
        "second data set (notebook 01)": (cfg.second_updates, update(1, n=N2), k * noise_bytes(1, m, N2), k * 8 + 20),
        "P-sweep training (notebook 02)": (cfg.sweep_updates, update(K_sweep), k * noise_bytes(K_sweep, m), k * 8 + 20),
        "PCD replicates (notebook 03)": (cfg.ooe_updates, update(R), k * noise_bytes(R, m), k * 8 + 20),
        "Rdm replicates (notebook 03)": (u_rdm, update(R, cfg.ooe_rdm_k), cfg.ooe_rdm_k * noise_bytes(R, m), cfg.ooe_rdm_k * 8 + 20),
        "ages (notebook 01)": (2 * cfg.gen_steps, cfg.n_ages * step(cfg.n_gen), noise_bytes(cfg.n_ages, cfg.n_gen), 8),
        "sweep generation (notebook 02)": (3 * cfg.sweep_gen_steps + 2 * cfg.avg_steps, K_sweep * step(cfg.sweep_gen),
                                           noise_bytes(K_sweep, cfg.sweep_gen), 8),
        "out-of-equilibrium generation (notebook 03)": (2 * cfg.ooe_gen_steps, 2 * R * step(cfg.ooe_gen), noise_bytes(2 * R, cfg.ooe_gen), 8),
        "exploration (notebook 04)": (cfg.explore_steps, 4 * step(cfg.explore_chains), noise_bytes(4, cfg.explore_chains), 8),
        "entropy production chains (notebook 06)": (cfg.ep_steps + cfg.ep_burn, step(cfg.ep_chains), noise_bytes(1, cfg.ep_chains), 8),
        "Euler-stability checks (every 100 updates, float64 spectral norm)": (
            (cfg.main_updates + cfg.second_updates + cfg.ooe_updates * R + u_rdm * R + cfg.sweep_updates * K_sweep) // 100,
            30 * 2 * N ** 3 / 4, N * N * 8 * 30, 30),
    }
    rows = {"ages (notebook 01)": cfg.n_gen, "out-of-equilibrium generation (notebook 03)": cfg.ooe_gen,
            "sweep generation (notebook 02)": cfg.sweep_gen, "exploration (notebook 04)": cfg.explore_chains,
            "entropy production chains (notebook 06)": cfg.ep_chains}
    util = lambda name: UTIL["gemm"] if rows.get(name, m) >= GEMM_ROWS else UTIL["small"]  # noqa: E731
    gpu = [GpuPart(name, cnt * fl, cnt * by, cnt * op, util=util(name), peak="fp64_tflops" if "float64" in name else "fp32_tflops")
           for name, (cnt, fl, by, op) in parts.items()]
    # CPU measurements: nearest neighbours of generated images against the training set, adversarial accuracy
    nn_flops = (2 * cfg.n_ages * linear_flops(cfg.n_gen, N, cfg.main_p + cfg.n_test)
                + 2 * sum(cfg.sweep_replicates * linear_flops(cfg.sweep_gen, N, p + cfg.sweep_gen) for p in cfg.sweep_sizes)
                + 2 * cfg.ooe_times * R * linear_flops(cfg.ooe_gen, N, cfg.ooe_p + cfg.ooe_n_test + cfg.ooe_gen))
    cpu = [CpuPart("nearest neighbours and adversarial accuracies (numpy)", nn_flops),
           CpuPart("bootstraps, denoising (N = 64) and the rule checks", (cfg.sweep_boot * len(cfg.sweep_sizes) + cfg.ooe_boot * cfg.ooe_times) * 1e7,
                   "elementwise_gflops_per_core")]
    state = 4 * (K_sweep * (N * N * 2 + m * N * 3) + cfg.sweep_gen * K_sweep * N * 2)
    mem = train_memory_gb(0, 0, resident_bytes=state + cfg.main_p * N * 4 + cfg.ep_chains * N * 8)
    datasets = ["mnist"] + (["fashion_mnist"] if cfg.second_updates else [])
    return Estimate(
        data=" and ".join(DATA[d] for d in datasets) + f" ({cfg.second_dataset} is Fashion-MNIST pooled to 14x14)",
        make_data=make_data(datasets),
        commands=[reproduce("nlm"), "REPRO_GIT_SHA=$(git rev-parse HEAD) bash benchmarks/device_nlm.sh"],
        gpu=gpu, cpu=cpu, memory_gb=mem,
        assumptions=[
            f"N = {N} (the second data set N = {N2}), {m} chains, batch {B}, PCD-{k}: one update = {k} Langevin steps (2 N^2 FLOP per chain each) + the "
            "data and model correlations; counts as in benchmarks/bench_nlm_cuda.full_profile",
            f"P-sweep: {K_sweep} models stacked; PCD and Rdm-{cfg.ooe_rdm_k} replicates: {R} each; Rdm updates {u_rdm}",
            f"products of >= {GEMM_ROWS} chains x 784 x 784 (fp32) at utilisation {UTIL['gemm']:g}, fewer at {UTIL['small']:g}; "
            "sampling of few chains is bound by "
            "eager ops (~8 per Langevin step) or by reading the state and noise from HBM",
            "Euler-stability check: a float64 spectral norm of J, ~30 power iterations",
            f"CPU: nearest neighbours / adversarial accuracies at {CPU['blas_gflops_per_core']:g} GFLOP/s per core (assumed)",
            "GPU memory: the sweep's 50 stacked J (and their gradients), their chains and noise, the training set, a CUDA context",
            "one run = seed 0; --seeds 0 1 2 costs 3x"])


COSTS = {"acl": cost_acl, "asq": cost_asq, "diffusion": cost_diffusion, "hetero": cost_hetero,
         "netrecon": cost_netrecon, "nlm": cost_nlm}


# ------------------------------------------------------------------------------------------------
# the device check, when it has run
# ------------------------------------------------------------------------------------------------
def device_check_summary(root: Path | None = None) -> dict | None:
    """`results/bench/device_check.json` (`$REPRO_RESULTS` moves it), its summary; None when absent or unreadable."""
    from common import paths

    path = (root or paths.results_root()) / "bench" / "device_check.json"
    try:
        rec = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    summary = rec.get("results", rec) if isinstance(rec, dict) else None
    return summary if isinstance(summary, dict) and isinstance(summary.get("papers"), dict) else None


def _finite_positive(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def paper_cost(paper: str, check: dict | None = None) -> dict:
    """One paper's record: the estimate, with the device check's projected GPU-hours in its place when present."""
    rec = COSTS[paper](full_profile(paper)).record()
    row = (check or {}).get("papers", {}).get(paper) or {}
    hours = row.get("projected_gpu_hours")
    if _finite_positive(hours):
        rec["estimated_gpu_hours"] = rec["gpu_hours_estimate"]
        rec["gpu_hours_estimate"] = round3(float(hours))
        rec["source"] = DEVICE_CHECK
        rec["device_check"] = {k: row.get(k) for k in ("basis", "slice_peak_mem_gb", "notes") if row.get(k) is not None}
        rec["device_check"]["device"] = check.get("device")
        rec["device_check"]["when"] = check.get("when") or check.get("date")
    return rec


def full_cost(papers=PAPERS, check: dict | None | bool = True) -> dict:
    """{"papers": {id: record}, "total_gpu_hours_estimate": sum}; `check=True` reads the device check's summary."""
    if check is True:
        check = device_check_summary()
    out = {pid: paper_cost(pid, check or None) for pid in papers}
    return {"papers": out, "total_gpu_hours_estimate": round3(sum(r["gpu_hours_estimate"] for r in out.values())),
            "total_cpu_core_hours_estimate": round3(sum(r["cpu_core_hours_estimate"] for r in out.values())),
            "hardware_assumed": {"gpu": H100, "cpu": CPU, "utilisation": UTIL},
            "note": "estimates from the full profiles' counts and assumed throughputs (per paper: assumptions); one seed "
                    "per paper; 'device check' rows are the device check's projections"}


def main(argv=None) -> int:
    import argparse

    from common.bench import write_benchmark

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--papers", nargs="+", choices=PAPERS, default=list(PAPERS))
    args = ap.parse_args(argv)
    results = full_cost(tuple(args.papers))
    for pid, r in results["papers"].items():
        print(f"{pid:9s} {r['gpu_hours_estimate']:>9.3g} GPU-h  {r['gpu_memory_gb_estimate']:>6.3g} GB  "
              f"{r['flops']:.3g} FLOP  CPU {r['cpu_core_hours_estimate']:.3g} core-h  ({r['source']})")
    print(f"total     {results['total_gpu_hours_estimate']:>9.3g} GPU-h")
    write_benchmark("full_cost", results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
