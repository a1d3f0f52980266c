"""GPU slice of nlm's full profile (the device check's contract: `full_slice(device, dry_run) -> dict`).

Paper: Yu, Huang & Huang, https://arxiv.org/abs/2506.23546. Times, on one device, every training,
sampling and stability-check shape the full profile runs (N = 784, 1000 chains, PCD-10 and Rdm-500, the
50-model P-sweep stack, the exploration stack with its quench null), with
`bench_nlm_cuda.full_profile`, and projects the whole full profile's GPU-hours from the profile's counts
(`papers.nlm.config.PROFILES["full"]`) times those unit times. A lower bound: the measurements on the CPU
(nearest neighbours, adversarial accuracies, bootstraps), the T = 0 quench of the sweep, loading MNIST and
writing checkpoints are left out. Random rows of the profile's sizes stand in for MNIST (speed does not
depend on the pixel values), so it runs where there is no dataset and no network.

    python benchmarks/gpu_slice_nlm.py [--device cuda] [--dry-run] [--seeds 1]
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

SEEDS = 1   # `make reproduce-nlm PROFILE=full` runs one seed; the README's reported seeds 0-2 are three times this


def projected_hours(counts: dict, unit_s: dict, keys: dict, seeds: int = SEEDS) -> float:
    """GPU-hours of `seeds` runs of the profile: sum over parts of count x the unit time of its shape."""
    return seeds * sum(int(counts[name]) * float(unit_s[keys[name]]) for name in counts) / 3600.0


def full_slice(device: str, dry_run: bool, seeds: int = SEEDS) -> dict:
    import torch

    import bench_nlm_cuda as bench

    on_cuda = str(device).startswith("cuda")
    if on_cuda:
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    r = bench.full_profile("float32", quick=True, device=device, tiny=dry_run)
    if on_cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    unit_s = {key: v["median"] for key, v in r["unit"].items()}
    hours = projected_hours(r["counts"], unit_s, r["unit_keys"], seeds)
    peak = torch.cuda.max_memory_allocated() / 2**30 if on_cuda else None
    basis = ("unit times on " + str(device) + " of each full-profile shape (fp32 products"
             + ("; dry run: N = {n}, {chains} chains, {K_sweep} sweep models, Rdm-{k_rdm}".format(**bench.TINY) if dry_run else "")
             + f") x the full profile's counts per seed (" + ", ".join(f"{k} {v}" for k, v in r["counts"].items())
             + f") x {seeds} seed(s)")
    ok = all(v > 0 for v in unit_s.values()) and hours > 0
    return {"ok": ok, "seconds": seconds, "projected_gpu_hours": hours, "basis": basis, "peak_mem_gb": peak,
            "notes": r["note"] + "; bf16 products (an option) are not in this projection",
            "counts": r["counts"], "unit_s": unit_s, "unit_keys": r["unit_keys"], "seeds": seeds}


def main(argv=None) -> int:
    from common.bench import slice_cli

    return slice_cli(full_slice, __doc__, argv, seeds=SEEDS)


if __name__ == "__main__":
    sys.exit(main())
