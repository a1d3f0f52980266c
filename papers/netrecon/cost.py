"""netrecon's full profile on one H100: numba/numpy network dynamics on the CPU; the Adam fits on the GPU.

The paper's cost model (common/README.md, the contract: `estimate(cfg) -> common.costmodel.Estimate`),
read by `benchmarks/full_cost.py`. Every number is an estimate from assumed inputs, listed in the record.
"""
from __future__ import annotations

import math

from common.costmodel import (CPU, H100, UTIL, CpuPart, Estimate, GpuPart, linear_flops, make_data, reproduce_command, round3,
                              train_memory_gb)


# the DMFT solvers (CPU, numpy/numba, whatever the device); the constants were checked against one core here
# (Intel Xeon, load 1.6): two_replica_batch at 61 nodes ran 300 and 600 steps of a teacher and one student at
# 5.0 and 3.6 GFLOP/s of this count, and one stationary solve with its Lyapunov problem took 0.39 s at g = 2
ENTRY_FLOPS_PER_NODE2 = 5      # one (n, m) entry of a two-replica kernel: the fused z2 sum, per pair of nodes
ENTRY_FLOPS_PER_NODE = 42      # its 2 n exponentials (~20 FLOP each) and the z1 sum, per node
STATIONARY_SOLVE_FLOPS = 2e9   # dmft.stationary (tabulated kernels, the separatrix ODE) with its Lyapunov problem


def two_replica_flops(cfg) -> tuple[float, int, float]:
    """(FLOPs, solves, largest kernel memory in bytes) of notebook 04's two-replica DMFT runs, grouped as the
    study groups them (`studies.dmft.theory_specs`, `theory_groups`: one teacher per (g, dt), each student to
    its longest T). A kernel propagated n steps computes sum_{k<n} (k + 2) = n (n + 3) / 2 entries."""
    from papers.netrecon.studies.dmft import theory_groups, theory_specs

    specs, _ = theory_specs(cfg)
    flops, mem = 0.0, 0.0
    groups = theory_groups(specs, cfg.tr_nodes)
    for grp in groups:
        kw = grp["kw"]
        steps: dict = {}
        for e, T in kw["runs"]:
            steps[e] = max(steps.get(e, 0), int(round(T / kw["dt"])))
        kernels = [max(steps.values()), *steps.values()]            # the teacher, then one student per eta
        n = kw["n_nodes"]
        flops += sum(k * (k + 3) / 2 for k in kernels) * (ENTRY_FLOPS_PER_NODE2 * n ** 2 + ENTRY_FLOPS_PER_NODE * n)
        mem = max(mem, 2 * len(kernels) * (max(kernels) + 1) ** 2 * 8)   # C and G of every kernel, float64
    return flops, len(groups), mem


def stationary_solves(cfg) -> int:
    """Stationary DMFT solves (`dmft.stationary`, each with its Lyapunov problem) of notebooks 04 and 05: 05's
    curve over ly_gs_dmft (g > 1) and its lambda at each st_g and 10 % off; 04's Delta(tau) at each st_g and its
    near miss, and lambda at eta2_g_chaos."""
    return sum(g > 1 for g in cfg.ly_gs_dmft) + 4 * len(cfg.st_gs) + (cfg.eta2_g_chaos > 1)


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
        "03 data size (N = ds_N)": cfg.ds_horizons * 2 * cfg.ds_seeds * len(cfg.ds_n_trajs) * cfg.ds_n_x0 * steps(cfg.ds_t_max) * mv(cfg.ds_N)
        + cfg.ds_seeds * sum(cfg.ds_n_trajs) * cfg.ds_n_steps * mv(cfg.ds_N)
        + cfg.ds_seeds * sum(linear_flops(n * cfg.ds_n_steps, cfg.ds_N, cfg.ds_N) for n in cfg.ds_n_trajs),
        "04 DMFT statistics (float32 tangent map)": 2 * len(cfg.st_gs) * cfg.st_seeds * cfg.st_n_traj
        * steps(cfg.st_t_transient + cfg.st_t_align + cfg.st_t_average) * mv(cfg.st_N),
        "04 transients and saturation (teacher and student)": 2 * cfg.tr_seeds * cfg.tr_n_x0 * mv(cfg.tr_N)
        * sum(steps(cfg.sat_sim_T if g > 1 and g != 2.0 else cfg.tr_T) for g, _ in cfg.tr_cases),
        "05 Lyapunov: OS protocol and QR spectrum": 2 * len(cfg.os_gs) * cfg.os_seeds * steps(cfg.os_t_total) * mv(cfg.os_N)
        + steps(cfg.qr_t_average) * (mv(cfg.qr_N) * (1 + cfg.qr_k) + 4 * cfg.qr_N * cfg.qr_k ** 2),
        "02 reconstruction: simulations, least squares": len(cfg.rec_gs) * (cfg.rec_n_traj * cfg.rec_n_steps * mv(cfg.rec_N)
        * (1 + cfg.adam_n_x0 * steps(cfg.adam_t_max) / (cfg.rec_n_traj * cfg.rec_n_steps) * 3)
        + (2 * len(cfg.sweep_n_trajs) + 4) * linear_flops(cfg.rec_n_traj * cfg.rec_n_steps, cfg.rec_N, cfg.rec_N)),
        # the horizon claim's chaotic teachers: the chaos check (two states and their companions) of about
        # twice adam_h_nets draws, each chosen teacher's data and its student against it
        "02 chaotic teachers of the Adam student's horizon": sum(g > 1 for g in cfg.rec_gs) * cfg.adam_h_nets * mv(cfg.rec_N)
        * (2 * 4 * steps(cfg.pred_t_burn + cfg.adam_h_t_lyap) + cfg.rec_n_traj * cfg.rec_n_steps
           + 2 * cfg.adam_n_x0 * steps(cfg.pred_t_burn + cfg.adam_t_max)),
    }
    cpu = [CpuPart(name, fl, "small_gflops_per_core") for name, fl in sections.items()]
    dmft_flops, n_groups, dmft_mem = two_replica_flops(cfg)
    n_stat = stationary_solves(cfg)
    cpu += [CpuPart("04 two-replica DMFT (kernels on the (t, t') grid)", dmft_flops, "small_gflops_per_core"),
            CpuPart("04-05 stationary DMFT solves and their Lyapunov problems", n_stat * STATIONARY_SOLVE_FLOPS,
                    "small_gflops_per_core")]
    # Adam fits (notebook 02) on the GPU in float64: windows of `adam_window` states, batch adam_batch
    n_win = (cfg.rec_n_steps + 1) // cfg.adam_window
    fits = []
    for g in cfg.rec_gs:
        fits.append((cfg.rec_n_traj, cfg.adam_epochs_sub if g < 1 else cfg.adam_epochs_chaos))
        fits += [(n, cfg.adam_sweep_epochs) for n in cfg.adam_sweep_n_trajs]
        if g > 1:                                      # the horizon claim's chaotic teachers, one student each
            fits += [(cfg.rec_n_traj, cfg.adam_epochs_chaos)] * cfg.adam_h_nets
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
            "one worker per core)",
            f"DMFT: {n_groups} two-replica solves (one per gain and time step, `studies.dmft.theory_groups`, "
            f"{cfg.tr_nodes} quadrature nodes), each kernel n steps = n (n + 3) / 2 entries of "
            f"{ENTRY_FLOPS_PER_NODE2} x nodes^2 + {ENTRY_FLOPS_PER_NODE} x nodes FLOP, up to {dmft_mem / 1e9:.2g} GB of "
            f"host memory for the largest; {n_stat} stationary solves at {STATIONARY_SOLVE_FLOPS:.2g} FLOP each (0.4 s "
            "on one core); same rate per core (one core measured 3.6-5.0 GFLOP/s of this count)",
            f"Adam: {len(fits)} fits, {batches} minibatches of {cfg.adam_batch} windows of {cfg.adam_window} states at N = {cfg.rec_N}, "
            "~40 eager ops and one host sync per minibatch (op-bound)",
            f"if the simulations ran on the GPU they would be bound by HBM (each step reads its N^2 float64 matrix): "
            f"~{hbm_s / 3600:.3g} GPU-hours at {H100['hbm_tb_s']:g} TB/s, not counted (they do not run there)",
            "GPU memory: the trajectory windows on the device in float64, W with Adam, a CUDA context",
            "one run = seed 0; --seeds 0 1 2 costs 3x"],
        extra={"gpu_hours_if_simulations_on_gpu_estimate": round3(hbm_s / 3600)})
