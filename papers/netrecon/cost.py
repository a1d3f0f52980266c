"""netrecon's full profile on one H100: numba/numpy network dynamics on the CPU; the Adam fits on the GPU.

The paper's cost model (common/README.md, the contract: `estimate(cfg) -> common.costmodel.Estimate`),
read by `benchmarks/full_cost.py`. Every number is an estimate from assumed inputs, listed in the record.
"""
from __future__ import annotations

import math

from common.costmodel import (CPU, H100, UTIL, CpuPart, Estimate, GpuPart, linear_flops, make_data, reproduce_command, round3,
                              train_memory_gb)


def estimate(cfg) -> Estimate:
    """The cost of one run of the full profile `cfg` (`config.get_config("full")`), from its counts."""
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
        commands=[reproduce_command("netrecon")], gpu=gpu, cpu=cpu, memory_gb=mem,
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
