"""Notebook 05-lyapunov: lambda(g) from DMFT against simulation, the official OS rate, a QR spectrum.

Z. Yu and H. Huang, "Network reconstruction may not mean dynamics prediction",
https://arxiv.org/abs/2409.04240

Paper: the DMFT section (lambda_DMFT = -1 + sqrt(1 - E_0), E_0 the ground state of
H = -d^2/dtau^2 + 1 - g^2 C_phi'(tau)) and the "Largest Lyapunov exponent against g" figure; the
teacher-student "OS" rate of the official `dp.py` (erratum 2 of the README: it is no exponent).
Claims `dmft-lambda-*`, `sim-lambda-vs-dmft-*` (the simulated side is logged by notebook 04).
"""
from __future__ import annotations

import numpy as np

from common.parallel import single_threaded

from .. import tasks
from ..cache import cached_pmap
from ..pool import kept
from . import gain_key, pool_workers


def os_metrics(os_gs, os_res: list[dict]) -> dict:
    """Per gain, means over networks (`mismatch_task` results): the official OS rate, its one-step error
    eps, the rate with a fixed eps = 1e-6, and the teacher's true exponent."""
    metrics = {}
    for g in os_gs:
        rs = [r for r in os_res if r["g"] == g]
        k = gain_key(g)
        metrics[f"os_rate_{k}"] = float(np.mean([r["os_rate"] for r in rs]))          # official protocol
        metrics[f"os_eps_{k}"] = float(np.mean([r["eps"] for r in rs]))              # its one-step error
        metrics[f"os_rate_eps1e-6_{k}"] = float(np.mean([r["os_rate_eps1e-6"] for r in rs]))
        metrics[f"os_true_lam_{k}"] = float(np.mean([r["lam"] for r in rs]))
    return metrics


def task_list(cfg, streams) -> tuple[list, list, list]:
    """`dispatch` arguments of the notebook's own work, in one pool: the QR spectrum (longest first), the
    official OS rate per network, and lambda_DMFT at every gain it needs (`dmft_lambda_task`); and those gains
    (`ly_gs_dmft`, then each `st_gs` at g and at its near miss g (1 + ctrl_dg_rel))."""
    spec = [dict(fn="spectrum_task", kw=dict(N=cfg.qr_N, g=float(cfg.qr_g), streams=streams, k=cfg.qr_k,
                                             t_average=cfg.qr_t_average, dt=cfg.dt))]
    os_ = [dict(fn="mismatch_task", kw=dict(N=cfg.os_N, g=float(g), streams=streams.child("net", s), eta=cfg.os_eta,
                                            t_total=cfg.os_t_total, t_discard=cfg.os_t_discard, dt=cfg.dt))
           for g in cfg.os_gs for s in range(cfg.os_seeds)]
    gains = [float(g) for g in cfg.ly_gs_dmft]
    gains += [x for g in cfg.st_gs for x in (float(g), float(g) * (1.0 + cfg.ctrl_dg_rel))]
    lam = [dict(fn="dmft_lambda_task", kw=dict(g=g)) for g in gains]
    return spec, os_, lam


@single_threaded
def measure(cfg, run) -> dict:
    """lambda(g) from DMFT, the simulated grid (shared with 01), N = st_N points (shared with 04),
    the official OS rate next to the true exponent, and a QR spectrum.

    Returns {"metrics", "gs", "lam_th" (the DMFT curve), "grid", "big", "os", "spectrum", "running"}."""
    cache_dir = run.dir / "cache"
    spec_t, os_t, lam_t = task_list(cfg, run.streams)
    with kept(pool_workers(cfg)):
        res = cached_pmap(tasks.dispatch, spec_t + os_t + lam_t, cache_dir, pool_workers(cfg),
                          desc="OS rate, spectrum, DMFT")
        grid = cached_pmap(tasks.lyapunov_task, tasks.grid_tasks(cfg, run.streams), cache_dir, pool_workers(cfg),
                           desc="lambda grid")
        big = cached_pmap(tasks.lyapunov_task, tasks.stationary_tasks(cfg, run.streams), cache_dir, pool_workers(cfg),
                          desc="lambda N")
    spec, os_res, lam_all = res[0], res[1: 1 + len(os_t)], res[1 + len(os_t):]
    n_gs = len(cfg.ly_gs_dmft)
    gs = np.asarray(cfg.ly_gs_dmft, dtype=float)
    lam_th = np.array(lam_all[:n_gs])
    metrics = {}
    for i, g in enumerate(cfg.st_gs):   # lambda_sim / lambda_DMFT (with its error) is logged by notebook 04 from the same runs
        metrics[f"lam_dmft_{gain_key(g)}"] = lam_all[n_gs + 2 * i]
        # near miss: the same problem 10 % off in gain, g (1 + ctrl_dg_rel)
        metrics[f"ctrl_lam_dmft_{gain_key(g)}"] = lam_all[n_gs + 2 * i + 1]
    metrics.update(os_metrics(cfg.os_gs, os_res))
    metrics["qr_lam_max"] = float(spec["lam"][0])
    # running estimates of the N = st_N runs (shared with 04) beside their DMFT exponent, for the figure
    running = {g: {"running": [(r["times"], r["running"]) for r in big if r["g"] == g],
                   "lam_dmft": metrics[f"lam_dmft_{gain_key(g)}"]} for g in cfg.st_gs}
    return {"metrics": metrics, "gs": gs, "lam_th": lam_th, "grid": grid, "big": big, "os": os_res, "spectrum": spec,
            "running": running}
