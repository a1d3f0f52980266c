"""GPU slice of paperid's full profile (the device check's contract: `full_slice(device, dry_run) -> dict`).

TEMPLATE: time a short slice of your full profile at its real sizes on `device` (stand-in data where the paper needs
a dataset) and project the whole profile from the profile's counts. The toy's full profile is one pass of the study,
so the slice is the study itself at the full size (dry run: a thousandth of it, on the CPU).

    python benchmarks/gpu_slice_paperid.py [--device cuda] [--dry-run]
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def full_slice(device: str, dry_run: bool) -> dict:
    import torch

    from common.study import get_config, measure
    from common.runs import Run

    full = get_config("paperid", "full")
    n = max(full.n_draws // 1000, 4) if dry_run else full.n_draws
    cfg = get_config("paperid", "full", n_draws=n)
    on_cuda = str(device).startswith("cuda")
    if on_cuda:
        torch.cuda.reset_peak_memory_stats()
    with tempfile.TemporaryDirectory() as tmp:
        run = Run.open("paperid", "full", run_dir=tmp, seed=0, device=device)
        t0 = time.perf_counter()
        metrics = measure("paperid", "estimate", cfg, run)["metrics"]
        if on_cuda:
            torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
    hours = seconds * (full.n_draws / n) / 3600.0
    return {"ok": metrics["n_draws"] == n and hours > 0, "seconds": seconds, "projected_gpu_hours": hours,
            "basis": f"the study timed on {device} at {n} draws x {full.n_draws / n:g} (the full profile's draws)"
                     + (" (dry run)" if dry_run else ""),
            "peak_mem_gb": torch.cuda.max_memory_allocated() / 2**30 if on_cuda else None,
            "notes": "one pass of the study is the whole full profile"}


def main(argv=None) -> int:
    from common.bench import slice_cli

    return slice_cli(full_slice, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
