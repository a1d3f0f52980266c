"""The timed slice of the full profile on one GPU, and the projection of the whole profile from it.

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007

What one GPU can time: the compute of each pipeline stage's training step at the full profile's sizes
(the model, partition, micro-batches; forward and backward of every micro-batch, the optimizer step),
with the activations and gradients that would arrive over the link made up on the device, and one
decoder layer of the projection's LLaMA-3-8B (bf16, one 4096-token sequence), whose achieved FLOP/s
is the measured counterpart of the projection's assumed 400 TFLOP/s per NVIDIA GPU. What it cannot
time: the cross-vendor link (CPU-forwarding or device-direct between an AMD and an NVIDIA node, its
NICs, PCIe staging, UCC/RDMA) and the AMD GPUs' speed; the projection sets the link's cost to zero
and says so.
"""
from __future__ import annotations

import time
from dataclasses import replace

import torch

from common.seed import Streams

from .config import variant_steps
from .model import CONFIGS, LLAMA3_8B, Block, Decoder, flops_per_token, lm_loss, rope_tables
from .perfmodel import pipeline_time


def full_step_counts(cfg) -> dict:
    """Optimizer steps of the pipeline per section of the profile `cfg` (the notebooks' launches),
    each run by every rank of the section's launch: {section: (steps, ranks)}."""
    short = variant_steps(cfg)
    correct = sum(short.get(spec, int(cfg.correctness_steps)) for spec in list(cfg.correctness_links) + list(cfg.control_links))
    tput = len(cfg.throughput_links) * (int(cfg.tput_windows) * int(cfg.tput_window_steps) + int(cfg.tput_warmup))
    from .clusterbench import speed_variants

    n_var = len(speed_variants(float(cfg.cluster_rho), 1.0))  # every speed variant, the staging link's included
    cluster = n_var * (int(cfg.cluster_windows) * int(cfg.cluster_window_steps) + int(cfg.cluster_warmup))
    return {"correctness": (correct, int(cfg.processes)), "stability": (int(cfg.stability_steps), int(cfg.processes)),
            "throughput": (tput, int(cfg.tput_processes)), "cluster": (cluster, 2)}


def projected_gpu_hours(counts: dict, step_s: float) -> float:
    """GPU-hours of the sections: steps x ranks (one GPU each) x the seconds of one pipeline step."""
    return sum(steps * ranks for steps, ranks in counts.values()) * step_s / 3600.0


def _sync(device: torch.device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _best(fn, device, repeats: int) -> float:
    fn()  # warm-up (allocations, kernels)
    best = float("inf")
    for _ in range(repeats):
        _sync(device)
        t0 = time.perf_counter()
        fn()
        _sync(device)
        best = min(best, time.perf_counter() - t0)
    return best


def stage_times(cfg, device: str, repeats: int = 5) -> dict:
    """Seconds of one micro-batch's forward and backward on each stage of `cfg`'s partition, and of each
    stage's optimizer step, on `device`; the incoming activations and gradients are made on the device
    (no link). {"forward": [s0, s1], "backward": [...], "optimizer": [...]}."""
    dev = torch.device(device)
    mcfg = CONFIGS[cfg.model]
    full = Decoder(mcfg, seed=0)
    gen = Streams(0).torch_generator("gpu-slice", "tokens")
    tokens = torch.randint(0, mcfg.vocab, (int(cfg.micro_size), mcfg.seq_len + 1), generator=gen).to(dev)
    act = (int(cfg.micro_size), mcfg.seq_len, mcfg.d_model)
    out: dict = {"forward": [], "backward": [], "optimizer": []}
    start = 0
    part = list(cfg.partition)
    for s, n in enumerate(part):
        first, last = s == 0, s == len(part) - 1
        mod = full.stage(range(start, start + n), first, last).to(dev)
        start += n
        opt = torch.optim.AdamW(mod.parameters(), lr=float(cfg.lr))
        x = tokens[:, :-1] if first else torch.randn(act, generator=gen).to(dev).requires_grad_(True)
        grad = None if last else torch.randn(act, generator=gen).to(dev)
        keep = {}

        def fwd():
            y = mod(x)
            keep["y"] = lm_loss(y, tokens[:, 1:]) if last else y

        def fwd_bwd():
            fwd()
            keep["y"].backward(None if last else grad)

        t_f = _best(lambda: torch.no_grad()(fwd)(), dev, repeats)  # forward alone (no graph kept)
        t_fb = _best(fwd_bwd, dev, repeats)
        t_opt = _best(opt.step, dev, repeats)
        out["forward"].append(t_f)
        out["backward"].append(max(t_fb - t_f, 0.0))
        out["optimizer"].append(t_opt)
    return out


def pipeline_step_s(times: dict, n_micro: int) -> float:
    """One optimizer step of the pipeline from the stage times: the 1F1B simulation with free links
    (the cross-vendor link cannot be timed on one GPU) plus the slowest stage's optimizer step."""
    return pipeline_time(times["forward"], times["backward"], 0.0, int(n_micro)) + max(times["optimizer"])


def layer_throughput(device: str, dry_run: bool, repeats: int = 5) -> dict:
    """Forward + backward of one LLaMA-3-8B decoder layer on one 4096-token sequence (bf16 on a GPU):
    seconds and achieved FLOP/s by the perfmodel's count. `dry_run`: a shrunk layer in fp32."""
    dev = torch.device(device)
    cfg = LLAMA3_8B if not dry_run else replace(LLAMA3_8B, d_model=128, n_heads=4, n_kv_heads=2, d_ff=256, seq_len=64)
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    streams = Streams(0).child("gpu-slice", "layer")   # timing only: fixed weights and input
    with torch.device(dev), streams.torch_global("init"):
        blk = Block(cfg).to(dtype)
    cos, sin = (t.to(dtype) for t in rope_tables(cfg, device=dev))
    x = torch.randn(1, cfg.seq_len, cfg.d_model, device=dev, dtype=dtype, requires_grad=True,
                    generator=streams.torch_generator("input", device=dev))

    def step():
        blk(x, cos, sin).float().pow(2).mean().backward()

    sec = _best(step, dev, repeats)
    flops = flops_per_token(cfg, "layer") * cfg.seq_len
    return {"config": "llama3-8b layer" if not dry_run else "shrunk llama3-8b layer (dry run)", "seconds": sec,
            "flops": flops, "achieved_tflops": flops / sec / 1e12, "dtype": str(dtype).removeprefix("torch.")}
