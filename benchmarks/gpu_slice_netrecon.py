"""GPU slice of netrecon's full profile (the device check's contract: `full_slice(device, dry_run) -> dict`).

Paper: Yu & Huang, https://arxiv.org/abs/2409.04240. Only the Adam fits of notebook 02 run on a GPU; every
simulation (numpy/numba Euler maps of N = 1000 networks) and the DMFT stay on the CPU, in one process per
core. So the slice times three units at the full profile's real sizes and projects the whole profile from
its counts (`papers.netrecon.config.PROFILES["full"]`):

* one Adam epoch on `device` (N = 200, 100 x 500 steps, windows of 4, batch 250): the GPU part;
* the time per step of one pass over an N = 1000 coupling matrix on the CPU (the two-trajectory exponent
  of one state, the fused kernel), scaled by (N / 1000)^2 and by the number of matrices each step reads
  (teacher and students), for every simulation of the profile;
* one small two-replica DMFT solve, scaled by (steps x nodes)^2 to the profile's solves.

The projection is the hours one GPU machine is held: the GPU part plus the CPU part spread over the
machine's cores (the profile runs one process per core). An estimate: early stops, the least-squares
fits, the stationary DMFT, plotting and the pool's start-up are left out. Synthetic trajectories of the
real shapes stand in for the teacher's (speed does not depend on the values).

    python benchmarks/gpu_slice_netrecon.py [--device cuda] [--dry-run]
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SEEDS = 1   # `make reproduce-netrecon PROFILE=full` runs one seed; the README's seeds 0-2 are three times this


def _steps(t: float, dt: float) -> int:
    return int(round(t / dt))


def full_counts(cfg) -> dict:
    """Per seed of the profile `cfg`: {part: (N, passes)}, passes = steps x matrices read per step (a
    batch of states shares one pass over its matrix)."""
    dt = cfg.dt
    c = {}
    c["lambda grid (01, 05)"] = (cfg.grid_N, len(cfg.grid_gs) * cfg.grid_seeds
                                 * _steps(cfg.grid_t_transient + cfg.grid_t_align + cfg.grid_t_average, dt))
    c["g < 1 exponents and near miss (01)"] = (cfg.sub_N, len(cfg.sub_gs) * (cfg.sub_seeds + cfg.ctrl_sub_seeds)
                                               * _steps(cfg.sub_t_transient + cfg.sub_t_align + cfg.sub_t_average, dt))
    c["stationary N = 1000, float32 (04, 05)"] = (cfg.st_N, len(cfg.st_gs) * cfg.st_seeds
                                                 * _steps(cfg.st_t_transient + cfg.st_t_align + cfg.st_t_average, dt) // 2)
    c["eta sweep (03)"] = (cfg.pred_N, len(cfg.pred_gs) * cfg.pred_seeds * (
        _steps(cfg.pred_t_burn, dt) + (1 + len(cfg.pred_etas)) * _steps(cfg.pred_t_max, dt)
        + _steps(cfg.pred_t_align + cfg.pred_t_lyap, dt)))
    # teacher + student, the teacher alone, the untrained pair, the eta^-2 control's horizon, the eta grid (+ teacher)
    c["g < 1 student and nulls (03)"] = (cfg.q_N, cfg.q_seeds * ((5 + 1 + len(cfg.q_rel_etas)) * _steps(cfg.q_T, dt)
                                                                 + 2 * _steps(cfg.q_ctrl_T, dt)))
    n_max = max(cfg.ds_n_trajs)
    c["data-size sweep (03)"] = (cfg.ds_N, cfg.ds_seeds * (
        cfg.ds_n_steps * max(1, n_max // 16) + _steps(cfg.pred_t_burn, dt)
        + (1 + len(cfg.ds_n_trajs)) * _steps(cfg.ds_t_max, dt) + _steps(cfg.pred_t_align + cfg.pred_t_lyap, dt)))
    t_tr = sum(cfg.sat_sim_T if g > 1 and g != 2.0 else cfg.tr_T for g, _ in cfg.tr_cases)
    c["two-replica simulations (04)"] = (cfg.tr_N, cfg.tr_seeds * 2 * _steps(t_tr, dt))
    c["official OS rate (05)"] = (cfg.os_N, len(cfg.os_gs) * cfg.os_seeds * (
        4 * _steps(cfg.os_t_total, dt) + _steps(20.0 + 5.0 + 50.0, dt)))
    c["QR spectrum (05)"] = (cfg.qr_N, _steps(30.0 + cfg.qr_t_average, dt) * max(1, cfg.qr_k // 8))
    return c


def dmft_counts(cfg) -> dict:
    """Per seed: {solve: (steps, nodes, how many)} of the two-replica DMFT."""
    sat = [c for c in cfg.tr_cases if c[0] != 2.0]
    return {"tracking and near miss": (_steps(cfg.tr_T, cfg.tr_dt), cfg.tr_nodes, 2 * len(cfg.tr_cases)),
            "long time": (_steps(cfg.sat_T, cfg.sat_dt), cfg.tr_nodes, len(sat) + sum(g < 1 for g, _ in sat)),
            "horizon law in eta": (_steps(cfg.eta2_T, cfg.sat_dt), cfg.tr_nodes, len(cfg.eta2_etas)),
            "horizon law in eta, chaos": (_steps(cfg.eta2_T_chaos, cfg.sat_dt), cfg.tr_nodes, len(cfg.eta2_etas)),
            "power-law control (g < 1 horizons)": (_steps(cfg.law_ctrl_T, cfg.sat_dt), cfg.tr_nodes, len(cfg.law_ctrl_etas))}


def adam_epochs(cfg) -> float:
    """Full-data Adam epochs per seed: the fits at each gain and the data-size sweep (a fraction of the data).
    The sweep counts its epoch cap (full: 1e4, as the official P-sweep); early stopping (patience 100 on d_W)
    ends it sooner, so this is an upper bound."""
    per_g = [cfg.adam_epochs_sub if g < 1 else cfg.adam_epochs_chaos for g in cfg.rec_gs]
    sweep = len(cfg.rec_gs) * cfg.adam_sweep_epochs * sum(n / cfg.rec_n_traj for n in cfg.adam_sweep_n_trajs)
    return float(sum(per_g) + sweep)


def projected_hours(counts: dict, pass_s_1000: float, dmft: dict, dmft_unit: tuple, adam_s: float, epochs: float,
                    cores: int, seeds: int = SEEDS) -> dict:
    """CPU core-seconds of the simulations and DMFT, GPU seconds of Adam, and the hours one machine is held."""
    sim = sum(passes * pass_s_1000 * (N / 1000.0) ** 2 for N, passes in counts.values())
    steps0, nodes0, t0 = dmft_unit
    th = sum(k * t0 * (s * n / (steps0 * nodes0)) ** 2 for s, n, k in dmft.values())
    cpu_core_s = seeds * (sim + th)
    gpu_s = seeds * epochs * adam_s
    return {"cpu_core_hours": cpu_core_s / 3600, "adam_gpu_hours": gpu_s / 3600,
            "machine_hours": (gpu_s + cpu_core_s / max(cores, 1)) / 3600}


def _time_adam(cfg, device: str, epochs: int = 1) -> float:
    import numpy as np
    import torch

    from common.seed import torch_generator
    from papers.netrecon import recon

    rng = np.random.default_rng(0)
    traj = 0.5 * rng.standard_normal((cfg.rec_n_steps + 1, cfg.rec_n_traj, cfg.rec_N))
    gen = torch_generator(0, "slice")
    recon.fit_adam(traj[:9, :2], cfg.dt, epochs=1, batch_size=cfg.adam_batch, generator=gen, device=device)  # warm-up
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    recon.fit_adam(traj, cfg.dt, epochs=epochs, lr=cfg.adam_lr, batch_size=cfg.adam_batch, window=cfg.adam_window,
                   generator=gen, device=device)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return (time.perf_counter() - t0) / epochs


def _time_pass(N: int, t_average: float) -> float:
    """Seconds per step of one pass over an N x N matrix (two-trajectory exponent of one state), one thread."""
    import numpy as np

    from common.parallel import one_thread
    from papers.netrecon import lyap, rnn

    rng = np.random.default_rng(1)
    J = rnn.make_J(N, 2.0, rng)
    x0 = rng.standard_normal((1, N))
    with one_thread():
        lyap.largest_exponent(J, x0, t_transient=0.0, t_align=0.0, t_average=0.05, rng=rng)   # compile / warm
        t0 = time.perf_counter()
        lyap.largest_exponent(J, x0, t_transient=0.0, t_align=0.0, t_average=t_average, rng=rng)
        return (time.perf_counter() - t0) / _steps(t_average, rnn.DT)


def _time_dmft(T: float, dt: float, nodes: int) -> tuple:
    from papers.netrecon import dmft

    t0 = time.perf_counter()
    dmft.two_replica(3.0, 0.1, T=T, dt=dt, n_nodes=nodes)
    return (_steps(T, dt), nodes, time.perf_counter() - t0)


def full_slice(device: str, dry_run: bool, seeds: int = SEEDS) -> dict:
    import torch

    from common.profiles import resolve
    from papers.netrecon.config import PROFILES

    full = resolve(PROFILES, "full")
    sized = resolve(PROFILES, "full", rec_N=20, rec_n_traj=4, rec_n_steps=40) if dry_run else full
    on_cuda = str(device).startswith("cuda")
    if on_cuda:
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    adam_s = _time_adam(sized, str(device))
    n_pass = 200 if dry_run else 1000
    pass_s = _time_pass(n_pass, 0.5 if dry_run else 2.0) * (1000.0 / n_pass) ** 2   # per pass at N = 1000
    dmft_unit = _time_dmft(1.0, 0.05, 11) if dry_run else _time_dmft(2.0, 0.02, 21)
    seconds = time.perf_counter() - t0
    counts, th, epochs = full_counts(full), dmft_counts(full), adam_epochs(full)
    cores = os.cpu_count() or 1
    hours = projected_hours(counts, pass_s, th, dmft_unit, adam_s, epochs, cores, seeds)
    peak = torch.cuda.max_memory_allocated() / 2**30 if on_cuda else None
    basis = (f"Adam epoch on {device} x {epochs:g} full-data epochs; CPU pass over an N = 1000 matrix "
             f"({pass_s * 1e3:.3g} ms per step, one thread" + (f", timed at N = {n_pass}" if dry_run else "")
             + ") x the profile's passes (" + ", ".join(f"{k} {p} at N = {N}" for k, (N, p) in counts.items())
             + f"); two-replica DMFT scaled by (steps x nodes)^2 from one solve; CPU part over {cores} cores"
             + f"; x {seeds} seed(s)" + ("; dry run: Adam at N = 20" if dry_run else ""))
    ok = adam_s > 0 and pass_s > 0 and hours["machine_hours"] > 0
    return {"ok": ok, "seconds": seconds, "projected_gpu_hours": hours["machine_hours"], "basis": basis,
            "peak_mem_gb": peak,
            "notes": (f"only the Adam fits use the GPU ({hours['adam_gpu_hours']:.3g} GPU-h); the simulations and the "
                      f"DMFT run on the CPU ({hours['cpu_core_hours']:.3g} core-h), so the machine is held "
                      "for the CPU part; an estimate (early stops, fits and plotting left out)"),
            "counts": counts, "dmft_counts": th, "adam_epochs": epochs, "unit_s": {"adam_epoch": adam_s,
            "pass_N1000": pass_s, "dmft_solve": dmft_unit[2]}, "dmft_unit": dmft_unit, "cores": cores,
            "seeds": seeds, **hours}


def main(argv=None) -> int:
    from common.bench import slice_cli

    return slice_cli(full_slice, __doc__, argv, seeds=SEEDS)


if __name__ == "__main__":
    sys.exit(main())
