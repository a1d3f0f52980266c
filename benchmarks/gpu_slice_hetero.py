"""GPU slice of hetero's full profile (the device check's contract: `full_slice(device, dry_run) -> dict`).

Times, on one device, each pipeline stage's training step at the full profile's sizes (the tiny decoder,
partition, micro-batches; `papers.hetero.gpuslice.stage_times`) and one LLaMA-3-8B decoder layer in bf16
(the projection's model), then projects the whole full profile's GPU-hours from the profile's step counts
(steps x ranks x one pipeline step). Not projectable from one NVIDIA GPU: the cross-vendor links
(CPU-forwarding / device-direct between an AMD and an NVIDIA node: NICs, PCIe staging, UCC/RDMA) and
the AMD GPUs' speed; the projection counts the link as free and the AMD stages at NVIDIA speed.
The full profile itself is the CPU emulation (issue 42: it needs no GPU), so the slice reports 0 GPU-hours
for it (`projected_gpu_hours`, what the device check adds up and the cost table would bill) and, apart,
`real_device_gpu_hours`: what its steps would cost with one GPU per rank on the real-device path (the
torchrun entry), the compute the slice can time.

    python benchmarks/gpu_slice_hetero.py [--device cuda] [--dry-run]
"""
from __future__ import annotations

import time


def full_slice(device: str, dry_run: bool) -> dict:
    import torch

    from papers.hetero import gpuslice
    from papers.hetero.config import get_config

    cfg = get_config("full")
    on_cuda = str(device).startswith("cuda")
    if on_cuda:
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    repeats = 2 if dry_run else 20
    times = gpuslice.stage_times(cfg, device, repeats=repeats)
    step_s = gpuslice.pipeline_step_s(times, cfg.n_micro)
    layer = gpuslice.layer_throughput(device, dry_run, repeats=2 if dry_run else 10)
    if on_cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    counts = gpuslice.full_step_counts(cfg)
    hours = gpuslice.projected_gpu_hours(counts, step_s)
    peak = torch.cuda.max_memory_allocated() / 2**30 if on_cuda else None
    basis = (f"per-stage fwd/bwd/optimizer of the {cfg.model} model (partition {list(cfg.partition)}, M = {cfg.n_micro} "
             f"micro-batches of {cfg.micro_size}) timed on {device}, one pipeline step {step_s * 1e3:.3f} ms by the 1F1B "
             "simulation with a free link; x steps x ranks of the full profile ("
             + ", ".join(f"{k} {s} steps x {r} ranks" for k, (s, r) in counts.items()) + ")")
    notes = (f"{layer['config']} fwd+bwd {layer['seconds'] * 1e3:.2f} ms = {layer['achieved_tflops']:.1f} TFLOP/s "
             f"({layer['dtype']}; the projection assumes 400 per NVIDIA GPU). Not projectable from one NVIDIA GPU: the "
             "cross-vendor links (AMD<->NVIDIA over NICs: CPU-forwarding staging, device-direct UCC/RDMA) and the AMD "
             "GPUs' speed, so the hours count the link as free and every stage at this GPU's speed"
             + ("; dry run: tiny repeats and a shrunk layer on the CPU" if dry_run else "")
             + f". The full profile is the CPU emulation and takes no GPU (0 GPU-h billed); on the real-device path, one "
             f"GPU per rank, its steps would take {hours:.3g} GPU-h (real_device_gpu_hours)")
    return {"ok": all(t > 0 for t in times["forward"]) and step_s > 0, "seconds": seconds,
            "projected_gpu_hours": 0.0, "real_device_gpu_hours": hours, "basis": basis, "peak_mem_gb": peak, "notes": notes,
            "step_s": step_s, "stage_times": times, "counts": counts, "layer": layer}


def main(argv=None) -> int:
    from common.bench import slice_cli

    return slice_cli(full_slice, __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
