"""Notebook 04-dmft: stationary DMFT Delta(tau) and the two-replica D(t) against simulation.

Z. Yu and H. Huang, "Network reconstruction may not mean dynamics prediction",
https://arxiv.org/abs/2409.04240

Paper: the DMFT section (Delta'' = Delta - g^2 C_phi(Delta; Delta_0), Delta_0 from energy
conservation) and the "Two-replica DMFT against simulation" figure, D(t) = C_TT + C_SS - 2 C_TS with
D -> 2 Delta_0 in chaos and D -> 0 below onset (official `total.py`, `4DMFT map in machine
learning.py`). The theory is `papers.netrecon.dmft`. Claims `dmft-delta*`, `two-replica-*`.
"""
from __future__ import annotations

import numpy as np

from common.parallel import single_threaded

from .. import dmft, predict, tasks
from ..cache import cached_pmap, prefetch
from ..estimates import jackknife_se, sem
from ..pool import kept
from . import gain_key, pool_workers


def rel_dev(samples, ref: float) -> float:
    """|mean / ref - 1|: a simulation's relative deviation from a theory (its standard error is sem / ref)."""
    return float(abs(np.mean(samples) / ref - 1.0))


def stationary_metrics(k: str, each: np.ndarray, lam_each: np.ndarray, decay: np.ndarray, th: dict, near: dict,
                       competitors: dict, st_N: int) -> dict:
    """Delta(tau) and lambda of simulated networks against the DMFT at one gain (suffix `k`).

    `each`: Delta(tau) per network (network, lag); `lam_each`: lambda per network; `decay`: the lags
    compared (tau <= st_dev_lag); `th` / `near`: the DMFT at g and at g + ctrl_dg, {"Delta" (on the
    simulation's lags), "Delta0", "lam"}; `competitors`: {"delta0_static", "lam_annealed"}. Standard
    errors over networks (jackknife for the maximum deviation of the mean curve)."""
    D_sim = each.mean(axis=0)
    D_th, D0, lam_th = th["Delta"], th["Delta0"], th["lam"]
    d_static, lam_ann = competitors["delta0_static"], competitors["lam_annealed"]

    def maxdev(u, sel=decay):
        return float(np.max(np.abs(u.mean(axis=0) - D_th)[sel]) / D0)

    def maxdev_all(u):
        return maxdev(u, slice(None))

    def maxdev_w(u, sel=decay):
        return float(np.max(np.abs(u.mean(axis=0) - near["Delta"])[sel]) / near["Delta0"])

    def maxdev_w_all(u):
        return maxdev_w(u, slice(None))

    lam_sim = float(lam_each.mean())
    metrics = {f"delta0_static_{k}": d_static, f"lam_annealed_{k}": lam_ann, f"lam_dmft_near_{k}": near["lam"],
               f"delta0_dev_{k}": rel_dev(each[:, 0], D0),
               f"delta0_dev_se_{k}": sem(each[:, 0]) / D0,
               f"ctrl_delta0_dev_{k}": rel_dev(each[:, 0], d_static),
               f"ctrl_delta0_dev_se_{k}": sem(each[:, 0]) / d_static,
               f"ctrl_delta_maxdev_{k}": maxdev_w(each), f"ctrl_delta_maxdev_se_{k}": jackknife_se(each, maxdev_w),
               f"ctrl_delta_maxdev_all_{k}": maxdev_w_all(each),
               f"ctrl_delta_maxdev_all_se_{k}": jackknife_se(each, maxdev_w_all),
               f"lam_dev_{k}": rel_dev(lam_each, lam_th),
               f"lam_dev_se_{k}": sem(lam_each) / lam_th,
               f"ctrl_lam_dev_{k}": rel_dev(lam_each, lam_ann),
               f"ctrl_lam_dev_se_{k}": sem(lam_each) / lam_ann}
    metrics.update({f"delta0_dmft_{k}": D0, f"delta0_sim_{k}": float(D_sim[0]),
                    f"delta0_ratio_{k}": float(D_sim[0] / D0),
                    f"delta0_ratio_se_{k}": sem(each[:, 0]) / D0,
                    f"delta_maxdev_{k}": maxdev(each), f"delta_maxdev_se_{k}": jackknife_se(each, maxdev),
                    f"delta_maxdev_all_{k}": maxdev_all(each), f"delta_maxdev_all_se_{k}": jackknife_se(each, maxdev_all),
                    f"delta_tail_{k}": float(np.mean((D_sim - D_th)[~decay]) / D0),
                    f"lam_dmft_{k}": lam_th, f"lam_sim_N{st_N}_{k}": lam_sim,
                    f"lam_sim_over_dmft_{k}": lam_sim / lam_th,
                    f"lam_sim_over_dmft_se_{k}": sem(lam_each) / lam_th})
    return metrics


def dmft_on_lags(res: dict, tau: np.ndarray) -> tuple[dict, dmft.Stationary]:
    """A `stationary_dmft_task` result on the lags `tau`: {"Delta" there, "Delta0", "lam"} and the full solution."""
    th = res["sol"]
    return {"Delta": np.interp(tau, th.tau, th.Delta), "Delta0": th.Delta0, "lam": res["lam"]}, th


def stationary_theory_tasks(cfg) -> list[dict]:
    """`stationary_dmft_task` arguments of notebook 04: every st_g, then its near miss g (1 + ctrl_dg_rel)."""
    return [dict(g=x, tau_max=max(40.0, cfg.st_max_lag)) for g in cfg.st_gs for x in (g, g * (1.0 + cfg.ctrl_dg_rel))]


@single_threaded
def stationary_comparison(cfg, streams, cache_dir=None) -> dict:
    """Delta(tau) and lambda: DMFT against N = st_N simulations (several networks)."""
    sims = cached_pmap(tasks.lyapunov_task, tasks.stationary_tasks(cfg, streams), cache_dir, pool_workers(cfg),
                       desc="stationary")
    theory = cached_pmap(tasks.stationary_dmft_task, stationary_theory_tasks(cfg), cache_dir, pool_workers(cfg),
                         desc="stationary DMFT")
    metrics, by_g = {}, {}
    for i, g in enumerate(cfg.st_gs):
        rs = [r for r in sims if r["g"] == g]
        tau = rs[0]["tau"]
        th, sol = dmft_on_lags(theory[2 * i], tau)
        # independent samples are networks (each averaged over its states): at N = 1000 the
        # network-to-network fluctuations of Delta_0 (a few %) dominate the time-averaging noise
        each = np.stack([r["Delta"] for r in rs])                                # (network, lag)
        lam_each = np.array([np.mean(r["lam"]) for r in rs])
        decay = tau <= cfg.st_dev_lag + 1e-9   # the decay of Delta(tau); beyond it a slow finite-N tail
        # competing approximations: the static mean-field Delta_0 (a frozen Gaussian field) and the
        # annealed (frozen-Jacobian) exponent; each claim's metric is the relative deviation
        # |sim / theory - 1|, and its control the same deviation from the competitor
        competitors = {"delta0_static": dmft.static_delta0(g), "lam_annealed": dmft.annealed_lyapunov(g, sol.Delta0)}
        # near miss of the curve: the DMFT Delta(tau) solved 10 % off in gain, g (1 + ctrl_dg_rel)
        near, _ = dmft_on_lags(theory[2 * i + 1], tau)
        metrics.update(stationary_metrics(gain_key(g), each, lam_each, decay, th, near, competitors, cfg.st_N))
        by_g[g] = {"tau": tau, "D_sim": each.mean(axis=0), "D_sim_each": [r["Delta"] for r in rs], "theory": sol,
                   "lam_dmft": th["lam"], "lam_sim": float(lam_each.mean()),
                   "running": [(r["times"], r["running"]) for r in rs]}
    return {"metrics": metrics, "by_g": by_g}


def transient_metrics(pre: str, k: str, g: float, t: np.ndarray, each: np.ndarray, D_th: np.ndarray,
                      tr_T: float) -> dict:
    """Two-replica D(t) against simulation over t <= tr_T (`each`: (network x state, time); `D_th` on `t`).

    In chaos the largest |ln(D_th / D_sim)| over 2 <= t <= tr_T (or tr_T / 2 <= t); below onset the
    largest |D_th - D_sim| over the largest D_sim. `pre` is "" for the claim's DMFT, "ctrl_" for the
    near miss; standard errors by the delete-one jackknife over (network, state)."""
    if g > 1:
        win = (t >= min(2.0, tr_T / 2)) & (t <= tr_T)

        def maxlog(u):
            return float(np.max(np.abs(np.log(D_th[win] / u.mean(axis=0)[win]))))

        return {f"{pre}tr_maxlog_{k}": maxlog(each), f"{pre}tr_maxlog_se_{k}": jackknife_se(each, maxlog)}

    def maxrel(u):
        m = u.mean(axis=0)
        return float(np.max(np.abs(D_th - m)) / np.max(m))

    return {f"{pre}tr_maxrel_{k}": maxrel(each), f"{pre}tr_maxrel_se_{k}": jackknife_se(each, maxrel)}


def saturation_metrics(k: str, g: float, r: dict, D_late: np.ndarray, untrained: dict | None,
                       two_delta0: float, two_static: float) -> dict:
    """Long-time D: the two-replica DMFT `r` ({"t", "D", "C_TT"}) and the simulations' late levels `D_late`
    (per network and state). Below onset D(T) / max D, and sqrt(D / C_TT) against the untrained student's
    DMFT `untrained`; in chaos D(T) / 2 Delta_0 (`two_delta0`) against the static mean field's 2 Delta
    (`two_static`)."""
    metrics = {f"sat_dmft_final_over_max_{k}": float(r["D"][-1] / r["D"].max())}
    D_sim_end = float(D_late.mean())
    if g < 1:
        # relative to the teacher's own decaying state: sqrt(D / C_TT) at sat_T, against the
        # untrained student's (eta = 1) in the same regime
        metrics[f"sat_dmft_rel_final_{k}"] = float(predict.relative_error(r["D"][-1], r["C_TT"][-1]))
        metrics[f"ctrl_sat_dmft_rel_final_{k}"] = float(predict.relative_error(untrained["D"][-1], untrained["C_TT"][-1]))
        metrics[f"ctrl_sat_dmft_final_over_max_{k}"] = float(untrained["D"][-1] / untrained["D"].max())
        i10 = int(np.argmin(np.abs(r["t"] - min(10.0, r["t"][-1]))))
        metrics[f"sat_dmft_rel_t10_{k}"] = float(predict.relative_error(r["D"][i10], r["C_TT"][i10]))
    if g > 1:
        # D -> 2 Delta_0 (decorrelation); the competitor is the static mean-field 2 Delta
        metrics[f"sat_dmft_over_2delta0_{k}"] = float(r["D"][-1] / two_delta0)
        metrics[f"sat_sim_over_2delta0_{k}"] = float(D_sim_end / two_delta0)
        metrics[f"sat_sim_over_2delta0_se_{k}"] = sem(D_late) / two_delta0
        metrics[f"sat_dmft_dev_{k}"] = float(abs(r["D"][-1] / two_delta0 - 1.0))
        metrics[f"ctrl_sat_dmft_dev_{k}"] = float(abs(r["D"][-1] / two_static - 1.0))
        metrics[f"sat_sim_dev_{k}"] = float(abs(D_sim_end / two_delta0 - 1.0))
        metrics[f"sat_sim_dev_se_{k}"] = sem(D_late) / two_delta0
        metrics[f"ctrl_sat_sim_dev_{k}"] = float(abs(D_sim_end / two_static - 1.0))
        metrics[f"ctrl_sat_sim_dev_se_{k}"] = sem(D_late) / two_static
    return metrics


def relative_horizon(r: dict, delta: float) -> float:
    """First t at which the two-replica DMFT's relative error sqrt(D / C_TT) reaches `delta` (NaN if never)."""
    rel = predict.relative_error(r["D"], r["C_TT"])
    return float(predict.first_crossing(rel[:, None], np.asarray(r["t"]), delta)[0])


def horizon_law_metrics(quiet: list[dict], chaos: list[dict], g_q: float, g_c: float, lam_c: float,
                        delta: float) -> dict:
    """The horizon's law in eta by the two-replica DMFT (N = infinity), from runs at eta and eta / 2.

    Below onset (`quiet`, gain g_q) the relative horizon T_rel (first t with sqrt(D / C_TT) >= delta)
    should scale as eta^-2: its exponent ln(T(eta/2) / T(eta)) / ln 2, against the same exponent in chaos
    (`chaos`, gain g_c). In chaos halving eta should buy ln 2 / lambda: (T(eta/2) - T(eta)) lambda / ln 2,
    against the gain the eta^-2 law predicts, 3 T(eta), in place of ln 2 / lambda."""
    kq, kc = gain_key(g_q), gain_key(g_c)
    Tq = [relative_horizon(r, delta) for r in quiet]
    Tc = [relative_horizon(r, delta) for r in chaos]
    f = quiet[0]["eta"] / quiet[1]["eta"]                  # 2 at the profiles' eta and eta / 2

    def expo(T):                                           # T_rel ~ eta^-b: b = ln(T(eta/f) / T(eta)) / ln f
        return float(np.log(T[1] / T[0]) / np.log(f))

    gain_c = Tc[1] - Tc[0]
    return {f"hor_Trel_eta_{kq}": Tq[0], f"hor_Trel_half_{kq}": Tq[1], f"hor_exponent_{kq}": expo(Tq),
            f"hor_Trel_eta_{kc}": Tc[0], f"hor_Trel_half_{kc}": Tc[1], f"ctrl_hor_exponent_{kq}": expo(Tc),
            # in chaos: the gain over ln(f) / lambda (1: the log law), and over the eta^-2 law's (f^2 - 1) T(eta)
            f"hor_gain_times_lam_{kc}": float(gain_c * lam_c / np.log(f)),
            f"ctrl_hor_gain_times_lam_{kc}": float(gain_c / ((f**2 - 1.0) * Tc[0])),
            f"hor_gain_{kq}": float(Tq[1] - Tq[0]), f"hor_gain_{kc}": float(gain_c)}


def power_law_control(rs: list[dict], etas, g: float, delta: float) -> dict:
    """The control of `chaos-horizon-linear-g3`: the same comparison of laws, ln of the log law's residual
    variance over the power law's (`predict.law_residual_ratio`), on the two-replica DMFT's relative
    horizons below onset (gain g), which follow eta^-2 exactly; no sampling noise."""
    T = np.array([relative_horizon(r, delta) for r in rs])
    k = gain_key(g)
    out = {f"law_ctrl_Trel_{gain_key(e).replace('g', 'eta', 1)}_{k}": float(x) for e, x in zip(etas, T)}
    try:
        ratio = predict.law_residual_ratio(np.asarray(etas, dtype=float), T)
        out[f"ctrl_pred_log_resid_ratio_dmft_{k}"] = float(np.log(ratio))
    except Exception:
        out[f"ctrl_pred_log_resid_ratio_dmft_{k}"] = float("nan")
    try:   # the same curvature ratio as the claim's (1 for a power law)
        out[f"ctrl_law_curvature_dmft_{k}"] = predict.law_curvature_ratio(np.asarray(etas, dtype=float), T)
    except Exception:
        out[f"ctrl_law_curvature_dmft_{k}"] = float("nan")
    return out


def theory_specs(cfg) -> tuple[list[tuple], dict]:
    """The two-replica DMFT runs of notebook 04, in the order `two_replica_comparison` reads them:
    [(g, eta, T, dt)], and the counts {"cases", "sat", "quiet", "law"} that slice them."""
    cases = [(float(g), float(e)) for g, e in cfg.tr_cases]
    specs = [(g, e, cfg.tr_T, cfg.tr_dt) for g, e in cases]
    sat_cases = [c for c in cases if c[0] != 2.0] or cases[:1]
    specs += [(g, e, cfg.sat_T, cfg.sat_dt) for g, e in sat_cases]
    # near miss: the two-replica DMFT 15 % off in gain, g (1 + ctrl_dg_rel_tr), against the same simulations
    specs += [(g * (1.0 + cfg.ctrl_dg_rel_tr), e, cfg.tr_T, cfg.tr_dt) for g, e in cases]
    # below onset, the untrained student (eta = 1: an independent J') in the same regime
    quiet = [(g, e) for g, e in sat_cases if g < 1]
    specs += [(g, 1.0, cfg.sat_T, cfg.sat_dt) for g, e in quiet]
    # the horizon's law in eta: relative horizons at eta and eta / 2, below onset and in chaos
    law = [(cfg.eta2_g, e, cfg.eta2_T) for e in cfg.eta2_etas] + [(cfg.eta2_g_chaos, e, cfg.eta2_T_chaos)
                                                                  for e in cfg.eta2_etas]
    law += [(cfg.eta2_g, e, cfg.law_ctrl_T) for e in cfg.law_ctrl_etas]   # the log-law claim's control
    specs += [(float(g), float(e), float(T), cfg.sat_dt) for g, e, T in law]
    return specs, {"cases": len(cases), "sat": len(sat_cases), "quiet": len(quiet), "law": len(law)}


def theory_groups(specs: list[tuple], n_nodes: int) -> list[dict]:
    """`two_replica_group_task` arguments: the runs of `specs` grouped by (g, dt), in first-seen order,
    each (eta, T) once. Every group solves its teacher once (`dmft.two_replica_batch`)."""
    groups: dict = {}
    for g, e, T, dt in specs:
        runs = groups.setdefault((float(g), float(dt)), [])
        if [float(e), float(T)] not in runs:
            runs.append([float(e), float(T)])
    return [dict(fn="two_replica_group_task", kw=dict(g=g, runs=runs, dt=dt, n_nodes=n_nodes))
            for (g, dt), runs in groups.items()]


def theory_results(specs: list[tuple], groups: list[dict], results: list[list[dict]]) -> list[dict]:
    """The group tasks' `results` back in the order of `specs`."""
    found = {(grp["kw"]["g"], grp["kw"]["dt"], e, T): r
             for grp, res in zip(groups, results) for (e, T), r in zip(grp["kw"]["runs"], res)}
    return [found[(float(g), float(dt), float(e), float(T))] for g, e, T, dt in specs]


def sim_tasks(cfg, streams) -> list[dict]:
    """`pair_distance_task` arguments of notebook 04 (the saturating chaotic cases run to sat_sim_T), in single
    precision: the students' eta (0.1, 0.3) puts their difference far above float32 rounding."""
    cases = [(float(g), float(e)) for g, e in cfg.tr_cases]
    sat_cases = [c for c in cases if c[0] != 2.0] or cases[:1]
    return [dict(fn="pair_distance_task", kw=dict(N=cfg.tr_N, g=g, eta=e, streams=streams.child("net", s), n_x0=cfg.tr_n_x0,
                                                 T=cfg.sat_sim_T if ((g, e) in sat_cases and g > 1) else cfg.tr_T, dt=cfg.dt,
                                                 dtype="float32" if e >= 0.01 else "float64"))
            for g, e in cases for s in range(cfg.tr_seeds)]


def work(cfg, streams) -> list[tuple]:
    """Every (task function, arguments) of notebook 04, longest first (for `cache.prefetch`)."""
    specs, _ = theory_specs(cfg)
    sims, groups = sim_tasks(cfg, streams), theory_groups(specs, cfg.tr_nodes)
    long = [t for t in sims if t["kw"]["T"] > cfg.tr_T]
    short = [t for t in sims if t["kw"]["T"] <= cfg.tr_T]
    big = [grp for grp in groups if max(T for _, T in grp["kw"]["runs"]) > cfg.tr_T]
    small = [grp for grp in groups if grp not in big]
    return ([(tasks.dispatch, t) for t in long] + [(tasks.lyapunov_task, t) for t in tasks.stationary_tasks(cfg, streams)]
            + [(tasks.dispatch, t) for t in big + short + small]
            + [(tasks.stationary_dmft_task, t) for t in stationary_theory_tasks(cfg)]
            + [(tasks.dmft_lambda_task, dict(g=cfg.eta2_g_chaos))])


@single_threaded
def two_replica_comparison(cfg, streams, cache_dir=None) -> dict:
    """D(t) from the two-replica DMFT against teacher-student simulations, and its long-time limit."""
    cases = [(float(g), float(e)) for g, e in cfg.tr_cases]
    sat_cases = [c for c in cases if c[0] != 2.0] or cases[:1]
    quiet = [(g, e) for g, e in sat_cases if g < 1]
    specs, n = theory_specs(cfg)
    groups, sims = theory_groups(specs, cfg.tr_nodes), sim_tasks(cfg, streams)
    res = cached_pmap(tasks.dispatch, groups + sims, cache_dir, pool_workers(cfg), desc="two-replica")
    th_all = theory_results(specs, groups, res[: len(groups)])
    n_law = n["law"]
    n_th = len(specs)
    th, sat = th_all[: len(cases)], th_all[len(cases): len(cases) + len(sat_cases)]
    wrong = th_all[len(cases) + len(sat_cases): 2 * len(cases) + len(sat_cases)]
    untrained = dict(zip(quiet, th_all[2 * len(cases) + len(sat_cases): n_th - n_law]))
    law_res = th_all[n_th - n_law: n_th]
    sims = res[len(groups):]
    n_e = len(cfg.eta2_etas)
    lam_chaos = cached_pmap(tasks.dmft_lambda_task, [dict(g=cfg.eta2_g_chaos)], cache_dir, pool_workers(cfg))[0]
    metrics, out = horizon_law_metrics(law_res[:n_e], law_res[n_e: 2 * n_e], cfg.eta2_g, cfg.eta2_g_chaos, lam_chaos,
                                       cfg.pred_delta), {}
    metrics.update(power_law_control(law_res[2 * n_e:], cfg.law_ctrl_etas, cfg.eta2_g, cfg.pred_delta))
    for (g, e), r, rw in zip(cases, th, wrong):
        rs = [s for s in sims if s["g"] == g and s["eta"] == e]
        t_sim = rs[0]["t"]
        sel = t_sim <= cfg.tr_T + 1e-9
        each = np.concatenate([s["D_each"][sel] for s in rs], axis=1).T    # (network x state, time)
        D_sim = np.mean([s["D"] for s in rs], axis=0)
        D_sd = np.std([s["D"] for s in rs], axis=0)
        for pre, rr in (("", r), ("ctrl_", rw)):          # the claim's DMFT, then the near miss in gain
            D_th = np.interp(t_sim[sel], rr["t"], rr["D"])
            metrics.update(transient_metrics(pre, gain_key(g), g, t_sim[sel], each, D_th, cfg.tr_T))
        out[(g, e)] = {"t_th": r["t"], "D_th": r["D"], "t_sim": t_sim, "D_sim": D_sim, "D_sd": D_sd}
    for (g, e), r in zip(sat_cases, sat):
        rs = [s for s in sims if s["g"] == g and s["eta"] == e]
        # saturated level per (network, state): D averaged over the last sat_window time units (t <= sat_sim_T)
        late = rs[0]["t"] >= rs[0]["t"][-1] - cfg.sat_window
        D_late = np.concatenate([s["D_each"][late].mean(axis=0) for s in rs])
        two_d0 = 2.0 * dmft.delta0(g) if g > 1 else float("nan")
        two_st = 2.0 * dmft.static_delta0(g) if g > 1 else float("nan")
        metrics.update(saturation_metrics(gain_key(g), g, r, D_late, untrained.get((g, e)), two_d0, two_st))
        out[("sat", g, e)] = {"t_th": r["t"], "D_th": r["D"], "t_sim": rs[0]["t"],
                              "D_sim": np.mean([s["D"] for s in rs], axis=0),
                              "two_delta0": 2.0 * dmft.delta0(g)}
    return {"metrics": metrics, "cases": out}


def measure(cfg, run) -> dict:
    """`stationary_comparison` then `two_replica_comparison`: {"metrics" (both), "stationary", "two_replica"}.
    Task results are cached under `run.dir / "cache"` (notebook 05 reads the stationary runs from there)."""
    cache_dir = run.dir / "cache"
    with kept(pool_workers(cfg)):
        prefetch(work(cfg, run.streams), cache_dir, pool_workers(cfg), desc="simulations and DMFT")   # longest first
        st = stationary_comparison(cfg, run.streams, cache_dir)
        tr = two_replica_comparison(cfg, run.streams, cache_dir)
    return {"metrics": st["metrics"] | tr["metrics"], "stationary": st, "two_replica": tr}
