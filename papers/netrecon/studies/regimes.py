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
from ..cache import cached_pmap, prefetch
from ..estimates import sem
from ..pool import kept
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


def task_lists(cfg, streams) -> tuple[list, list, list]:
    """`lyapunov_task` arguments: the lambda(g) grid (shared with 05), the g < 1 networks and their near miss."""
    sub = [dict(N=cfg.sub_N, g=float(g), streams=streams.child("net", s), n_traj=cfg.sub_n_traj, t_transient=cfg.sub_t_transient,
                t_average=cfg.sub_t_average, t_align=cfg.sub_t_align, dt=cfg.dt)
           for g in cfg.sub_gs for s in range(cfg.sub_seeds)]
    grid = tasks.grid_tasks(cfg, streams)
    # the near miss of the g < 1 exponent: networks at g + ctrl_dg_sub (fewer of them), same protocol
    # and N; their exponent is g + ctrl_dg_sub - 1, so the check must tell it from g - 1
    near = [dict(N=cfg.sub_N, g=float(g) + cfg.ctrl_dg_sub, streams=streams.child("net", s), n_traj=cfg.sub_n_traj,
                 t_transient=cfg.sub_t_transient, t_average=cfg.sub_t_average, t_align=cfg.sub_t_align, dt=cfg.dt,
                 linear=False)   # only their lambda is read (`quiescent_metrics`)
            for g in cfg.sub_gs for s in range(cfg.ctrl_sub_seeds)]
    return grid, sub, near


@single_threaded
def measure(cfg, run) -> dict:
    """Teacher trajectories below and above g = 1, and lambda(g) by the two-trajectory method.

    Returns {"metrics", "trajs" (for `figures.trajectories`), "grid", "sub" (for `figures.lambda_vs_g`)}."""
    grid, sub, near = task_lists(cfg, run.streams)
    # the plotted trajectories ride in the same pool as the exponents (longest tasks first)
    traj = [dict(fn="trajectories_task", kw=dict(N=cfg.traj_N, g=float(g), streams=run.streams, t_max=cfg.traj_t,
                                                 n_show=cfg.traj_show, dt=cfg.dt)) for g in cfg.traj_gs]
    with kept(pool_workers(cfg)):
        prefetch([(tasks.lyapunov_task, t) for t in sub + near + grid] + [(tasks.dispatch, t) for t in traj],
                 run.dir / "cache", pool_workers(cfg), desc="lyapunov")
        trajs = cached_pmap(tasks.dispatch, traj, run.dir / "cache", pool_workers(cfg), desc="trajectories")
        res = cached_pmap(tasks.lyapunov_task, grid + sub + near, run.dir / "cache", pool_workers(cfg), desc="lyapunov")
    grid_res, sub_res, near_res = res[: len(grid)], res[len(grid): len(grid) + len(sub)], res[len(grid) + len(sub):]
    metrics = quiescent_metrics(cfg.sub_gs, sub_res, near_res, cfg.ctrl_dg_sub)
    return {"metrics": metrics, "trajs": trajs, "grid": grid_res, "sub": sub_res}
