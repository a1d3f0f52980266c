"""Notebook 03-prediction: the prediction horizon T_pd against eta, the g < 1 error, T_pd against data size.

Z. Yu and H. Huang, "Network reconstruction may not mean dynamics prediction",
https://arxiv.org/abs/2409.04240

Paper: the teacher-student trajectory figure at g = 2, the "One-step error against eta" and "T_pd
against eta" figures with the T_pd formula T_pd = lambda^-1 ln(delta / eps) (official `eta and T.py`,
`3pT.py`), the teacher-student error figure at g = 0.8, and the "Effective prediction time against
data size" figure (official `Effective prediction time/`). Claims `chaos-horizon-*`,
`one-step-error-law-*`, `quiescent-error-*`, `data-*`.
"""
from __future__ import annotations

import warnings

import numpy as np
from scipy import stats

from common.parallel import single_threaded

from .. import dmft, predict, rnn, tasks
from ..cache import cached_pmap
from ..estimates import jackknife_se, sem
from ..pool import kept
from . import gain_key, pool_workers

NAN_FIT = {"slope": float("nan"), "intercept": float("nan"), "r2": float("nan"), "lam_fit": float("nan")}


@single_threaded
def teacher_student_example(cfg, streams, eta: float, g: float, t_max: float = 20.0) -> dict:
    """Three units of a teacher and a student sqrt(1-eta^2) J + eta J' from the same state (the paper's
    teacher-student trajectory figure; official code: 3 neurons, T = 20)."""
    J, rng = tasks.network(cfg.traj_N, g, streams, "example")
    JS = rnn.perturb(J, eta, g, rng)
    x0 = rnn.relax(J, rng.standard_normal(cfg.traj_N), 20.0, dt=cfg.dt)
    n = int(round(t_max / cfg.dt))
    xT = rnn.simulate(J, x0, n, dt=cfg.dt, record_every=5)
    xS = rnn.simulate(JS, x0, n, dt=cfg.dt, record_every=5)
    return {"t": np.arange(xT.shape[0]) * 5 * cfg.dt, "xT": xT[:, :3], "xS": xS[:, :3], "g": g, "eta": eta}


def horizon_gain(g: float, rs: list[dict], etas: np.ndarray, N: int, dt: float) -> tuple[dict, dict]:
    """T_pd against ln(1/eta) at one gain (`horizon_task` results `rs`, one per network): (metrics, data).

    The fitted slope against the networks' own lambda_Benettin (T_pd formula), the line's R^2 against a
    power law's, T_pd at eta = 1e-3, and the one-step error law eps / (dt sqrt(2 N g^2 (1 - rho)
    <phi^2>)) per (network, state) against the linearised law (phi(x) = x). Standard errors over
    networks (delete-one jackknife for the fits)."""
    T = np.stack([r["T_pd"] for r in rs])                    # (networks, eta, x0)
    Tm = np.nanmean(T, axis=(0, 2))
    lam = np.array([r["lam"] for r in rs])
    lam_eff = 1.0 / np.mean(1.0 / lam)                      # slope of the pooled fit is mean(1/lambda)
    k = gain_key(g)
    # independent samples: networks, each with its states' T_pd (eta, x0) and its lambda
    units = np.arange(len(rs))

    def fit_of(u):
        return predict.fit_log_slope(etas, np.nanmean(T[u], axis=(0, 2)))

    def ratio_of(u):
        return fit_of(u)["lam_fit"] * np.mean(1.0 / lam[u])     # lambda_fit / lambda_Benettin

    # competitor of the straight line: a power law T_pd = A eta^-b (ln T_pd linear in ln(1/eta)),
    # its R^2 taken on T_pd itself like the line's
    def r2_power(u):
        return predict.fit_power_law(etas, np.nanmean(T[u], axis=(0, 2)))["r2"]

    def resid(u):   # ln of the log law's residual variance over the power law's, on the same mean curve
        return float(np.log(predict.law_residual_ratio(etas, np.nanmean(T[u], axis=(0, 2)))))

    def curvature(u):   # the mean curve's curvature in ln(1/eta) over the best power law's: 0 log law, 1 power law
        return predict.law_curvature_ratio(etas, np.nanmean(T[u], axis=(0, 2)))

    try:
        fit = fit_of(units)
        ratio_se, r2_se = jackknife_se(units, ratio_of), jackknife_se(units, lambda u: fit_of(u)["r2"])
        r2_ctrl, r2_ctrl_se = r2_power(units), jackknife_se(units, r2_power)
        res_ratio, res_ratio_se = resid(units), jackknife_se(units, resid)
    except Exception:
        fit = dict(NAN_FIT)
        ratio_se = r2_se = r2_ctrl = r2_ctrl_se = res_ratio = res_ratio_se = float("nan")
    try:                                          # needs four finite etas (a quadratic and its residual)
        curv, curv_se = curvature(units), jackknife_se(units, curvature)
    except Exception:
        curv = curv_se = float("nan")
    metrics = {f"pred_lam_fit_{k}": fit["lam_fit"], f"pred_lam_benettin_{k}": float(lam_eff),
               f"pred_lam_ratio_{k}": float(fit["lam_fit"] / lam_eff), f"pred_lam_ratio_se_{k}": ratio_se,
               f"pred_r2_{k}": fit["r2"], f"pred_r2_se_{k}": r2_se,
               f"ctrl_pred_r2_{k}": r2_ctrl, f"ctrl_pred_r2_se_{k}": r2_ctrl_se,
               f"pred_resid_ratio_{k}": float(np.exp(res_ratio)),
               f"pred_log_resid_ratio_{k}": res_ratio, f"pred_log_resid_ratio_se_{k}": res_ratio_se,
               f"pred_law_curvature_{k}": curv, f"pred_law_curvature_se_{k}": curv_se,
               f"pred_finite_frac_{k}": float(np.isfinite(T).mean())}
    i3 = int(np.argmin(np.abs(np.log(etas / 1e-3))))
    metrics[f"pred_Tpd_eta1e-3_{k}"] = float(Tm[i3])
    metrics[f"pred_Tpd_eta1e-3_se_{k}"] = sem(T[:, i3, :])
    metrics[f"pred_r_eta1e-3_{k}"] = float(np.mean([r["r"][i3] for r in rs]))
    eps = np.mean([r["eps"] for r in rs], axis=0)
    phi2 = float(np.mean([r["phi2"] for r in rs]))
    eps_th = predict.one_step_theory(N, g, etas, phi2, dt)
    # one-step error law per (network, state): eps over dt sqrt(2 N g^2 (1 - rho) <phi^2>), averaged over eta
    law = np.concatenate([np.mean(r["eps_each"] / predict.one_step_theory(N, g, etas[:, None],
                                                                           r["phi2_each"][None], dt), axis=0)
                          for r in rs])
    metrics[f"eps_ratio_{k}"] = float(np.mean(law))
    metrics[f"eps_ratio_se_{k}"] = sem(law)
    # the linearised law (phi(x) = x: <x^2> of each state in place of its <phi^2>), the answer
    # without the saturating nonlinearity
    lin = np.concatenate([np.mean(r["eps_each"] / predict.one_step_theory(N, g, etas[:, None],
                                                                           r["x2_each"][None], dt), axis=0)
                          for r in rs])
    metrics[f"ctrl_eps_ratio_{k}"] = float(np.mean(lin))
    metrics[f"ctrl_eps_ratio_se_{k}"] = sem(lin)
    n_max = max(len(r["t"]) for r in rs)
    Dpad = np.full((len(rs), n_max, len(etas)), np.nan)
    for i, r in enumerate(rs):
        Dpad[i, : len(r["t"])] = r["D_mean"]
    t_long = max((r["t"] for r in rs), key=len)
    n_min = min(len(r["t"]) for r in rs)   # times every network reached
    data = {"T": T, "Tm": Tm, "lam": lam, "fit": fit, "eps": eps, "eps_theory": eps_th,
            # D: (time, eta), the mean over networks while every network's student runs (NaN after one stopped)
            "t": t_long[:n_min], "D": np.mean(Dpad[:, :n_min], axis=0)}
    return metrics, data


def annealed_slope_metrics(g: float, h: dict, etas: np.ndarray) -> dict:
    """Competitor of the slope: lambda_fit over the annealed (frozen-Jacobian) exponent in place of the
    networks' own lambda_Benettin (`h`: `horizon_gain`'s data at gain g)."""
    k = gain_key(g)
    lam_ann = dmft.annealed_lyapunov(g)
    metrics = {f"lam_annealed_{k}": lam_ann}

    def ann_ratio(u, h=h, lam_ann=lam_ann):
        return predict.fit_log_slope(etas, np.nanmean(h["T"][u], axis=(0, 2)))["lam_fit"] / lam_ann

    u = np.arange(len(h["lam"]))
    try:
        metrics[f"ctrl_pred_lam_ratio_{k}"] = float(ann_ratio(u))
        metrics[f"ctrl_pred_lam_ratio_se_{k}"] = jackknife_se(u, ann_ratio)
    except Exception:
        metrics[f"ctrl_pred_lam_ratio_{k}"] = metrics[f"ctrl_pred_lam_ratio_se_{k}"] = float("nan")
    return metrics


def quiescent_metrics(q_res: list[dict]) -> tuple[dict, dict]:
    """g < 1 (`quiescent_pair_task` results, one per network): (metrics, curves for the figure).

    The RMS error in units of eta (its maximum and final value) and relative to the teacher's own
    state, against the untrained student's (eta = 1); the horizon of an eta = 1e-3 student, censored
    at the run's end. Samples are (network, state) pairs (jackknife for the maximum of the mean curve)."""
    metrics = {}
    q_each = np.concatenate([r["rms_over_eta_each"] for r in q_res], axis=1)   # (time, network x state)
    q_rms = q_each.mean(axis=1)
    q_t = q_res[0]["t"]
    metrics["q_max_rms_over_eta"] = float(q_rms.max())
    metrics["q_max_rms_over_eta_se"] = jackknife_se(q_each.T, lambda u: u.mean(axis=0).max())
    metrics["q_final_rms_over_eta"] = float(q_rms[-1])
    metrics["q_final_rms_over_eta_se"] = sem(q_each[-1])
    # nulls: the untrained student (independent J', eta = 1), same teacher, states and regime, for the
    # bound and for the relative error; the g < 1 horizon of an eta = q_ctrl_eta_horizon student
    un = np.concatenate([r["untrained_rms_over_eta_each"] for r in q_res], axis=1)
    q_T = np.concatenate([np.ravel(r["horizon_T_pd"]) for r in q_res])
    metrics["ctrl_q_max_rms_over_eta"] = float(un.mean(axis=1).max())
    metrics["ctrl_q_max_rms_over_eta_se"] = jackknife_se(un.T, lambda u: u.mean(axis=0).max())
    # the absolute decay is the regime's: the untrained student's RMS error at q_T decays too
    metrics["ctrl_q_final_rms_over_eta"] = float(un[-1].mean())
    metrics["ctrl_q_final_rms_over_eta_se"] = sem(un[-1])
    # relative to the teacher's own decaying state: RMS(x_S - x_T) / RMS(x_T) at q_T, per (network, state)
    rel = np.concatenate([r["rel_each"] for r in q_res], axis=1)               # (time, network x state)
    rel_un = np.concatenate([r["untrained_rel_each"] for r in q_res], axis=1)
    metrics["q_rel_final"] = float(rel[-1].mean())
    metrics["q_rel_final_se"] = sem(rel[-1])
    metrics["ctrl_q_rel_final"] = float(rel_un[-1].mean())
    metrics["ctrl_q_rel_final_se"] = sem(rel_un[-1])
    i5 = int(np.argmin(np.abs(q_t - min(5.0, q_t[-1]))))
    metrics["q_rel_t5"] = float(rel[i5].mean())                                  # early: before the decay
    metrics["q_teacher_rms_final"] = float(np.concatenate([r["teacher_rms_each"] for r in q_res], axis=1)[-1].mean())
    metrics["q_Tpd_eta_ctrl"] = float(q_T.mean())          # censored at q_ctrl_T: never crossed
    metrics["q_Tpd_eta_ctrl_se"] = sem(q_T)
    metrics["q_max_rms_eta_ctrl"] = float(max(r["horizon_max_rms"] for r in q_res))
    metrics.update(quiescent_law_metrics(q_res))
    curves = {"t": q_t, "rms_over_eta": q_rms, "rel": rel.mean(axis=1), "rel_untrained": rel_un.mean(axis=1)}
    return metrics, curves


def quiescent_law_metrics(q_res: list[dict], key: str = "g0p8") -> dict:
    """Below onset, the simulated relative horizon T_rel over the eta grid (`quiescent_pair_task`'s
    "rel_T", (eta, state) per network): its mean per eta, the exponent b of T_rel ~ eta^-b fitted per
    (network, state) (2 at N = infinity), and the comparison of laws the chaos claim makes, here on
    horizons that follow a power law: ln of the log law's residual variance over the power law's (the
    control of `chaos-horizon-linear-g3`; jackknife over (network, state))."""
    if not all("rel_T" in r for r in q_res):
        return {}
    etas = np.asarray(q_res[0]["rel_etas"], dtype=float)
    T = np.concatenate([r["rel_T"] for r in q_res], axis=1).T                 # (network x state, eta)
    with warnings.catch_warnings():                                           # an eta never reached: NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        return _quiescent_law(etas, T, key)


def _quiescent_law(etas: np.ndarray, T: np.ndarray, key: str) -> dict:
    m = {f"q_Trel_{gain_key(e).replace('g', 'eta', 1)}": float(np.nanmean(T[:, i])) for i, e in enumerate(etas)}
    x = np.log(1.0 / etas)
    b = np.array([np.polyfit(x[np.isfinite(t)], np.log(t[np.isfinite(t)]), 1)[0] if np.isfinite(t).sum() >= 2
                  else np.nan for t in T])
    m["q_Trel_exponent"] = float(np.nanmean(b))
    m["q_Trel_exponent_se"] = sem(b[np.isfinite(b)])
    m["q_Trel_censored_frac"] = float(np.mean(~np.isfinite(T)))

    def resid(u):   # ln of the ratio: its jackknife is far less skewed than the ratio's
        return float(np.log(predict.law_residual_ratio(etas, np.nanmean(u, axis=0))))

    try:
        m[f"ctrl_pred_log_resid_ratio_{key}"] = resid(T)
        m[f"ctrl_pred_log_resid_ratio_se_{key}"] = jackknife_se(T, resid)
        m[f"ctrl_pred_resid_ratio_{key}"] = float(np.exp(m[f"ctrl_pred_log_resid_ratio_{key}"]))
    except Exception:
        m[f"ctrl_pred_log_resid_ratio_{key}"] = m[f"ctrl_pred_log_resid_ratio_se_{key}"] = float("nan")
        m[f"ctrl_pred_resid_ratio_{key}"] = float("nan")
    return m


def ds_slope(d_res: list[dict], sel, against: str, min_r: float, size_perms=None, shuffled: bool = False,
             lam: float | None = None) -> float:
    """The data-size rate: slope b of T_pd = a + b ln(1/x) over the sizes with r(W, J) >= min_r, times
    lambda (the network's own, or `lam`), times 2 when x = d_W (T_pd formula: b lambda = 1 against
    eps; 1/2 against d_W only for an isotropic error), averaged over networks.

    `sel`: the (network, state) units used; `shuffled`: the sizes' T_pd in the order of each
    permutation of `size_perms[network]` (the null). NaN when a network has fewer than two good sizes."""
    out = []
    for i, r in enumerate(d_res):
        cols = [j for (n, j) in sel if n == i]
        if not cols:
            continue
        Tm = np.nanmean(r["T_pd"][:, cols], axis=1)
        good = (np.asarray(r["r"]) >= min_r) & np.isfinite(Tm)
        if good.sum() < 2:
            return float("nan")
        x = np.log(1 / np.asarray(r[against])[good])
        idx = np.flatnonzero(good)
        # shuffled: the good sizes' T_pd in the order of each permutation q restricted to them
        y = [Tm[idx]] if not shuffled else [Tm[idx[np.argsort(q[idx])]] for q in size_perms[i]]
        b = np.mean([np.polyfit(x, yy, 1)[0] for yy in y])   # T_pd = a + b ln(1/eps)
        out.append(b * (r["lam"] if lam is None else lam) * (2.0 if against == "d_W" else 1.0))
    return float(np.mean(out))


def data_size_metrics(d_res: list[dict], size_perms: list[np.ndarray], lam_ann: float, min_r: float) -> dict:
    """d_W falls with P (Spearman), T_pd rises only like ln(1/eps) / lambda (`ds_slope`); against the
    nulls (sizes' labels permuted, P grown by repeating trajectories) and the annealed exponent `lam_ann`.
    Samples are (network, state) units (jackknife). Tasks run without horizons (ds_horizons off, as at
    quick: their "T_pd" is None) give no T_pd metric (`ds_slope_*`, `ds_Tpd_*`); the others are unchanged."""
    metrics = {}
    sp = [stats.spearmanr(r["P"], r["d_W"])[0] for r in d_res]
    horizons = all(r["T_pd"] is not None for r in d_res)
    units = np.asarray([(i, j) for i, r in enumerate(d_res) for j in range(r["T_pd"].shape[1])]) if horizons else None

    def slopes(sel, against, **kw):
        return ds_slope(d_res, sel, against, min_r, size_perms=size_perms, **kw)

    metrics["ds_spearman_dW_P"] = float(np.mean(sp))
    if horizons:
        metrics["ds_slope_times_lam"] = slopes(units, "eps")                 # 1: T_pd = ln(delta/eps) / lambda
        metrics["ds_slope_times_lam_se"] = jackknife_se(units, lambda u: slopes(u, "eps"))
        metrics["ds_slope_times_2lam"] = slopes(units, "d_W")                # 1 only for an isotropic error
    metrics["shuffled_ds_spearman_dW_P"] = float(np.mean([np.mean([stats.spearmanr(np.asarray(r["P"])[q], r["d_W"])[0]
                                                                    for q in qs]) for r, qs in zip(d_res, size_perms)]))
    # null: P grown by repeating the smallest set's trajectories with fresh observation noise
    metrics["ctrl_ds_spearman_dW_P"] = float(np.mean([stats.spearmanr(r["P"], r["d_W_repeat"])[0] for r in d_res]))
    metrics["ds_dW_repeat_drop"] = float(np.mean([r["d_W_repeat"][0] / r["d_W_repeat"][-1] for r in d_res]))
    if horizons:
        metrics["shuffled_ds_slope_times_lam"] = slopes(units, "eps", shuffled=True)
        metrics["ctrl_ds_slope_times_lam"] = slopes(units, "eps", lam=lam_ann)
        metrics["ctrl_ds_slope_times_lam_se"] = jackknife_se(units, lambda u: slopes(u, "eps", lam=lam_ann))
    # the size of the fall, per network: d_W at the smallest P over d_W at the largest, against the same
    # ratio when P grows by repeating trajectories (claim: at least P_max / P_min, i.e. as fast as 1 / P)
    drop = np.array([r["d_W"][0] / r["d_W"][-1] for r in d_res])
    drop_rep = np.array([r["d_W_repeat"][0] / r["d_W_repeat"][-1] for r in d_res])
    metrics["ds_dW_drop"] = float(drop.mean())
    metrics["ds_dW_drop_se"] = sem(drop) if len(drop) > 1 else float("nan")
    metrics["ds_dW_repeat_drop_se"] = sem(drop_rep) if len(drop_rep) > 1 else float("nan")
    metrics["ds_P_ratio"] = float(d_res[0]["P"][-1] / d_res[0]["P"][0])
    metrics["ds_eps_drop"] = float(np.mean([r["eps"][0] / r["eps"][-1] for r in d_res]))
    if horizons:
        metrics["ds_Tpd_gain"] = float(np.mean([np.nanmean(r["T_pd"][-1]) - np.nanmean(r["T_pd"][0]) for r in d_res]))
    metrics["ds_r_max_P"] = float(np.mean([r["r"][-1] for r in d_res]))
    if horizons:
        metrics["ds_Tpd_max_P"] = float(np.mean([np.nanmean(r["T_pd"][-1]) for r in d_res]))
    return metrics


def task_lists(cfg, streams) -> tuple[list, list, list]:
    """`horizon_task`, `quiescent_pair_task` and `data_size_task` arguments of the run."""
    hor = [dict(N=cfg.pred_N, g=float(g), streams=streams.child("net", s), etas=list(cfg.pred_etas), n_x0=cfg.pred_n_x0,
                t_burn=cfg.pred_t_burn, t_max=cfg.pred_t_max, delta=cfg.pred_delta, t_lyap=cfg.pred_t_lyap,
                t_align=cfg.pred_t_align, dt=cfg.dt)
           for g in cfg.pred_gs for s in range(cfg.pred_seeds)]
    qui = [dict(N=cfg.q_N, g=cfg.q_g, streams=streams.child("net", s), eta=cfg.q_eta, n_x0=cfg.q_n_x0, t_max=cfg.q_T, dt=cfg.dt,
                ctrl_eta_horizon=cfg.q_ctrl_eta_horizon, ctrl_t_horizon=cfg.q_ctrl_T, delta=cfg.pred_delta,
                rel_etas=list(cfg.q_rel_etas))
           for s in range(cfg.q_seeds)]
    dsz = [dict(N=cfg.ds_N, g=cfg.ds_g, streams=streams.child("net", s), n_trajs=list(cfg.ds_n_trajs), n_steps=cfg.ds_n_steps,
                noise=cfg.ds_noise, ridge=cfg.ds_ridge, t_burn=cfg.pred_t_burn, n_x0=cfg.ds_n_x0, t_max=cfg.ds_t_max,
                delta=cfg.pred_delta, t_lyap=cfg.pred_t_lyap, t_align=cfg.pred_t_align, dt=cfg.dt,
                horizons=cfg.ds_horizons)
           for s in range(cfg.ds_seeds)]
    return hor, qui, dsz


@single_threaded
def horizons(cfg, streams, cache_dir=None) -> dict:
    """T_pd against eta (g > 1), the quiescent error (g < 1) and T_pd against the data size."""
    hor, qui, dsz = task_lists(cfg, streams)
    fns = [tasks.horizon_task] * len(hor) + [tasks.quiescent_pair_task] * len(qui) + [tasks.data_size_task] * len(dsz)
    res = cached_pmap(tasks.dispatch, [dict(fn=f.__name__, kw=t) for f, t in zip(fns, hor + qui + dsz)],
                      cache_dir, pool_workers(cfg), desc="prediction")
    h_res, q_res, d_res = res[: len(hor)], res[len(hor): len(hor) + len(qui)], res[len(hor) + len(qui):]
    with warnings.catch_warnings():
        # a horizon not reached by the run's end is NaN by design (censored): a mean over a slice of NaN only
        # is NaN, which is what the metrics report, not a problem to warn about
        warnings.filterwarnings("ignore", "Mean of empty slice", RuntimeWarning)
        return horizon_metrics(cfg, streams, h_res, q_res, d_res)


def horizon_metrics(cfg, streams, h_res: list[dict], q_res: list[dict], d_res: list[dict]) -> dict:
    """`horizons`' metrics and figure data from the tasks' results."""
    metrics, horizon = {}, {}
    etas = np.asarray(cfg.pred_etas, dtype=float)
    for g in cfg.pred_gs:
        m, horizon[g] = horizon_gain(g, [r for r in h_res if r["g"] == g], etas, cfg.pred_N, cfg.dt)
        metrics.update(m)
    for g in cfg.pred_gs:
        metrics.update(annealed_slope_metrics(g, horizon[g], etas))
    m, quiescent = quiescent_metrics(q_res)
    metrics.update(m)
    # data size: d_W falls, T_pd rises only like ln(1/eps) / lambda (eps: the measured one-step error);
    # the sizes' labels shuffled (ctrl_n_perm permutations per network), logged beside the nulls
    prng = streams.rng("size-shuffle", tasks.num_key(cfg.ds_g))
    size_perms = [np.argsort(prng.random((cfg.ctrl_n_perm, len(r["P"]))), axis=1) for r in d_res]
    lam_ann_ds = dmft.annealed_lyapunov(cfg.ds_g)   # competitor of the rate: the annealed exponent
    metrics.update(data_size_metrics(d_res, size_perms, lam_ann_ds, cfg.ds_min_r))
    return {"metrics": metrics, "horizon": horizon, "etas": etas, "quiescent": quiescent, "data_size": d_res}


def measure(cfg, run) -> dict:
    """The teacher-student example (g = 2, eta = 0.01) and `horizons`: {"metrics", "example", "horizon",
    "etas", "quiescent", "data_size"} (the example is for its figure only; it logs no metric)."""
    example = teacher_student_example(cfg, run.streams, eta=0.01, g=2.0, t_max=40.0 if cfg.profile != "smoke" else 5.0)
    with kept(pool_workers(cfg)):
        return {"example": example, **horizons(cfg, run.streams, run.dir / "cache")}
