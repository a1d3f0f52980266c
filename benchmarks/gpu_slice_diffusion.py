"""GPU slice of the diffusion paper's full profile (the device check's contract: `full_slice(device, dry_run) -> dict`).

Paper: Yu & Huang, https://arxiv.org/abs/2405.11932. Only the learned score of notebook 05 (denoising score
matching of an MLP on Fashion-MNIST trouser/bag at 14x14, and the reverse SDE of its clones) runs on the GPU;
every simulation (forward and backward paths, Franz-Parisi, cloning, collapse) is numpy on the CPU. The slice
times one unit of each at the full profile's real sizes and projects the whole profile from its counts
(`papers.diffusion.config.get_config("full")`):

* score-matching steps on `device` (dimension 196, hidden 512, batch 256) x learned_steps;
* reverse-SDE steps of the clones on `device` (starts x 8 clones rows) x learned_times x 2 networks x learned_clone_steps;
* CPU path-steps of the backward and forward simulators (1-D, the pair's fast drift) x the profile's path-steps;
* one Franz-Parisi potential (800 q) per sample x samples x evaluations (panels, nulls, bisection, fold fit);
* one evaluation of the empirical self-overlap per (d x n_train x n_test) x the collapse search's evaluations.

The projection is the hours one GPU machine is held (the notebooks run one after another). An estimate: the
Monte-Carlo cloning curves, the exact empirical score's curves, plotting and start-up are left out. Synthetic
arrays of the real shapes stand in for the images (speed does not depend on the values).

    python benchmarks/gpu_slice_diffusion.py [--device cuda] [--dry-run]
"""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common.seed import Streams  # noqa: E402

CLONES = 8                       # learned.cloning_curve's default clones per start
FULL_DIM = 196                   # Fashion-MNIST 28x28 pooled 2x2
FULL_TRAIN = 12_000              # trouser + bag training images


def _steps(t: float, dt: float) -> int:
    return int(round(t / dt))


def full_counts(cfg) -> dict:
    """How many units of each kind the profile `cfg` runs (one seed)."""
    f = float(cfg.ift_long_fraction)
    back = (2 * cfg.n_backward * _steps(cfg.ift_T, cfg.backward_dt)
            + 2 * int(cfg.n_backward * f) * _steps(cfg.ift_T_long, cfg.backward_dt)
            + 2 * cfg.n_rates_paths * _steps(cfg.rates_T, cfg.rates_backward_dt))
    fwd = (2 * cfg.n_forward * _steps(cfg.ift_T, cfg.forward_dt)
           + 2 * int(cfg.n_forward * f) * _steps(cfg.ift_T_long, cfg.forward_dt)
           + 3 * cfg.n_dft * _steps(cfg.dft_T, cfg.forward_dt)
           + cfg.hist_seeds * cfg.n_hist * _steps(cfg.hist_forward_T, cfg.forward_dt)
           + cfg.n_rates_paths * _steps(cfg.rates_T, cfg.rates_forward_dt))
    bisect = math.ceil(math.log2((cfg.fp_threshold_hi - cfg.fp_threshold_lo) / cfg.fp_threshold_tol)) + 2
    fp = (len(cfg.fp_times) + 2) * cfg.fp_samples + (bisect + len(cfg.fp_fold_offsets)) * cfg.fp_threshold_samples
    overlap = sum(70 * d * cfg.collapse_n * cfg.collapse_test for d in cfg.collapse_dims)
    return {"dsm_step": cfg.learned_steps,
            "reverse_step": cfg.learned_times * 2 * cfg.learned_clone_steps,
            "backward_path_step": back, "forward_path_step": fwd, "fp_sample": fp, "overlap_unit": overlap}


GPU_UNITS = ("dsm_step", "reverse_step")


def projected_hours(counts: dict, unit_s: dict) -> dict:
    """Seconds per unit x units, split into the GPU part and the CPU part, and the hours the machine is held."""
    gpu = sum(counts[k] * unit_s[k] for k in GPU_UNITS)
    cpu = sum(counts[k] * unit_s[k] for k in counts if k not in GPU_UNITS)
    return {"gpu_hours": gpu / 3600, "cpu_hours": cpu / 3600, "machine_hours": (gpu + cpu) / 3600}


def _sync(device: str) -> None:
    import torch

    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def _time_learned(device: str, dim: int, n_train: int, hidden: int, batch: int, steps: int, starts: int,
                  clone_steps: int) -> tuple[float, float]:
    """(seconds per score-matching step, seconds per reverse step of starts x CLONES rows) on `device`."""
    import numpy as np

    from papers.diffusion import learned

    rng = np.random.default_rng(0)
    x = np.clip(rng.standard_normal((n_train, dim)), -1, 1)
    y = rng.integers(0, 2, n_train)
    data = learned.TwoClassData(x, y, x[:starts], y[:starts], (1, 8), [])
    learned.train_score(data, 3, streams=Streams(0), batch=batch, hidden=hidden, device=device)          # warm-up
    _sync(device)
    t0 = time.perf_counter()
    model, _ = learned.train_score(data, steps, streams=Streams(0), batch=batch, hidden=hidden, device=device)
    _sync(device)
    dsm = (time.perf_counter() - t0) / steps
    t0 = time.perf_counter()
    learned.cloning_curve(model, data, [0.5], starts, clone_steps, streams=Streams(0), n_clones=CLONES)
    _sync(device)
    return dsm, (time.perf_counter() - t0) / clone_steps


def _time_paths(n: int, steps: int) -> tuple[float, float]:
    """Seconds per path-step of the backward and the forward simulator (1-D pair, the CPU's threads)."""
    from papers.diffusion.mixture import GaussianMixture
    from papers.diffusion.processes import simulate_backward, simulate_forward

    mix = GaussianMixture.two_gaussians(1.0, 1.0)
    t0 = time.perf_counter()
    simulate_backward(mix, 1.0, 1.0 / steps, n, streams=Streams(0))
    back = (time.perf_counter() - t0) / (n * steps)
    t0 = time.perf_counter()
    simulate_forward(mix, 1.0, 1.0 / steps, n, streams=Streams(0))
    return back, (time.perf_counter() - t0) / (n * steps)


def _time_fp(samples: int, q_points: int) -> float:
    """Seconds per sample of one Franz-Parisi potential V, V', V'' over q_points values of q."""
    import numpy as np

    from papers.diffusion import franz_parisi as fp
    from papers.diffusion.mixture import GaussianMixture

    mix = GaussianMixture.two_gaussians(1.0, 0.1)
    q = 0.075 + 0.01 * np.arange(q_points)
    s = fp.draw_samples(mix, samples, Streams(0))
    t0 = time.perf_counter()
    fp.fp_potential(mix, 0.42, q, s)
    return (time.perf_counter() - t0) / samples


def _time_overlap(n_train: int, d: int, n_test: int) -> float:
    """Seconds per (d x n_train x n_test) of one evaluation of the empirical self-overlap."""
    from papers.diffusion import highdim

    ov = highdim.EmpiricalOverlap(n_train, d, n_test, streams=Streams(0))
    t0 = time.perf_counter()
    ov.values(0.5)
    return (time.perf_counter() - t0) / (d * n_train * n_test)


def full_slice(device: str, dry_run: bool) -> dict:
    import torch

    from papers.diffusion.config import get_config

    full = get_config("full")
    on_cuda = str(device).startswith("cuda")
    if on_cuda:
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    if dry_run:
        dsm, rev = _time_learned(str(device), 16, 200, 16, 32, 5, 10, 3)
        back, fwd = _time_paths(2000, 10)
        fp_s = _time_fp(200, 100)
        ov = _time_overlap(200, 8, 50)
    else:
        dsm, rev = _time_learned(str(device), FULL_DIM, FULL_TRAIN, full.learned_hidden, full.learned_batch, 300,
                                 full.learned_clone_starts, full.learned_clone_steps)
        back, fwd = _time_paths(200_000, 20)
        fp_s = _time_fp(10_000, full.fp_q_points)
        ov = _time_overlap(full.collapse_n, 32, full.collapse_test)
    seconds = time.perf_counter() - t0
    unit_s = {"dsm_step": dsm, "reverse_step": rev, "backward_path_step": back, "forward_path_step": fwd,
              "fp_sample": fp_s, "overlap_unit": ov}
    counts = full_counts(full)
    hours = projected_hours(counts, unit_s)
    peak = torch.cuda.max_memory_allocated() / 2**30 if on_cuda else None
    basis = (f"score matching on {device} (dim {FULL_DIM}, hidden {full.learned_hidden}, batch {full.learned_batch}) "
             f"x {counts['dsm_step']} steps; clones' reverse steps ({full.learned_clone_starts} x {CLONES} rows) x "
             f"{counts['reverse_step']}; CPU path-steps x {counts['backward_path_step']:.3g} backward and "
             f"{counts['forward_path_step']:.3g} forward; Franz-Parisi per sample x {counts['fp_sample']:.3g}; "
             f"self-overlap per d*n*m x {counts['overlap_unit']:.3g}"
             + ("; dry run: tiny shapes on the CPU" if dry_run else ""))
    ok = all(v > 0 for v in unit_s.values()) and hours["machine_hours"] > 0
    return {"ok": ok, "seconds": seconds, "projected_gpu_hours": hours["machine_hours"], "basis": basis,
            "peak_mem_gb": peak,
            "notes": (f"only the learned score uses the GPU ({hours['gpu_hours']:.3g} h); the numpy simulations run on "
                      f"the CPU ({hours['cpu_hours']:.3g} h), so the machine is held mostly for them; an estimate "
                      "(cloning Monte Carlo, empirical-score curves, plotting left out)"),
            "counts": counts, "unit_s": unit_s, **hours}


def main(argv=None) -> int:
    from common.bench import slice_cli

    return slice_cli(full_slice, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
