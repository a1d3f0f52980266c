"""diffusion's full profile on one H100: numpy path simulations (CPU); the learned score on Fashion-MNIST (GPU).

The paper's cost model (common/README.md, the contract: `estimate(cfg) -> common.costmodel.Estimate`),
read by `benchmarks/full_cost.py`. Every number is an estimate from assumed inputs, listed in the record.
"""
from __future__ import annotations

from common.costmodel import (DATA, CpuPart, Estimate, GpuPart, activation_numel, forward_flops, leaf_modules, linear_flops, make_data,
                              meta, n_params, reproduce_command, train_memory_gb)


PATH_STEP_FLOPS = 40          # one Euler step of one 1-D path in a Gaussian-mixture score, numpy (assumed)
COLLAPSE_EVALS = 60           # evaluations of the overlap per dimension (curve points + root finding + SE; assumed)


def estimate(cfg) -> Estimate:
    """The cost of one run of the full profile `cfg` (`config.get_config("full")`), from its counts."""
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
        make_data=make_data([cfg.learned_dataset]), commands=[reproduce_command("diffusion")],
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
