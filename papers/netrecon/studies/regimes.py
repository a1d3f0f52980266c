"""Notebook 01-regimes: teacher trajectories on both sides of g = 1, and lambda(g).

Z. Yu and H. Huang, "Network reconstruction may not mean dynamics prediction",
https://arxiv.org/abs/2409.04240

Paper: the teacher-trajectory figure (15 units at g = 0.8 and 2) and the "Largest Lyapunov exponent
against g" figure (official `lledian.py`: two-trajectory method, N = 1000, 5 networks); below onset
the exponent is that of the linear map around x = 0 (g - 1 by the circular law). Claims
`quiescent-lambda-*`.
"""
from __future__ import annotations

import numpy as np

from common.parallel import single_threaded

from .. import tasks
from ..cache import cached_pmap
from ..estimates import sem
from . import gain_key, pool_workers


def quiescent_metrics(sub_gs, sub_res: list[dict], near_res: list[dict], dg_sub: float) -> dict:
    """The g < 1 exponent per gain: mean and standard error over networks (each network's states
    averaged: networks are the independent samples), the linear map's exponent, and the near miss
    at g + dg_sub (`ctrl_lam_sim_near_*`)."""
    metrics = {}
    for g in sub_gs:
        lam = [float(np.mean(r["lam"])) for r in sub_res if r["g"] == g]
        lin = [r["lam_linear"] for r in sub_res if r["g"] == g]
        lam_near = [float(np.mean(r["lam"])) for r in near_res if r["g"] == float(g) + dg_sub]
        k = gain_key(g)
        metrics[f"lam_sim_{k}"] = float(np.mean(lam))
        metrics[f"lam_sim_se_{k}"] = sem(lam)
        metrics[f"lam_linear_{k}"] = float(np.mean(lin))
        metrics[f"ctrl_lam_sim_near_{k}"] = float(np.mean(lam_near)) if lam_near else float("nan")
        metrics[f"ctrl_lam_sim_near_se_{k}"] = sem(lam_near) if len(lam_near) > 1 else float("nan")
    return metrics


@single_threaded
def measure(cfg, *, seed: int, cache_dir=None) -> dict:
    """Teacher trajectories below and above g = 1, and lambda(g) by the two-trajectory method.

    Returns {"metrics", "trajs" (for `figures.trajectories`), "grid", "sub" (for `figures.lambda_vs_g`)}."""
    trajs = [tasks.trajectories_task(cfg.traj_N, float(g), seed, cfg.traj_t, cfg.traj_show, cfg.dt) for g in cfg.traj_gs]
    sub = [dict(N=cfg.sub_N, g=float(g), seed=seed * 1000 + s, n_traj=cfg.sub_n_traj, t_transient=cfg.sub_t_transient,
                t_average=cfg.sub_t_average, t_align=cfg.sub_t_align, dt=cfg.dt)
           for g in cfg.sub_gs for s in range(cfg.sub_seeds)]
    grid = tasks.grid_tasks(cfg, seed)
    # the near miss of the g < 1 exponent: networks at g + ctrl_dg_sub (fewer of them), same protocol
    # and N; their exponent is g + ctrl_dg_sub - 1, so the check must tell it from g - 1
    near = [dict(N=cfg.sub_N, g=float(g) + cfg.ctrl_dg_sub, seed=seed * 1000 + s, n_traj=cfg.sub_n_traj,
                 t_transient=cfg.sub_t_transient, t_average=cfg.sub_t_average, t_align=cfg.sub_t_align, dt=cfg.dt)
            for g in cfg.sub_gs for s in range(cfg.ctrl_sub_seeds)]
    res = cached_pmap(tasks.lyapunov_task, grid + sub + near, cache_dir, pool_workers(cfg), desc="lyapunov")
    grid_res, sub_res, near_res = res[: len(grid)], res[len(grid): len(grid) + len(sub)], res[len(grid) + len(sub):]
    metrics = quiescent_metrics(cfg.sub_gs, sub_res, near_res, cfg.ctrl_dg_sub)
    return {"metrics": metrics, "trajs": trajs, "grid": grid_res, "sub": sub_res}
