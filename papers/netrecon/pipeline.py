"""What each notebook computes: tasks in, tidy results and plain-number metrics out.

Z. Yu and H. Huang, "Network reconstruction may not mean dynamics prediction",
https://arxiv.org/abs/2409.04240

Every function takes the resolved profile `cfg`, the run's `seed` and a cache directory, runs its
(g, seed) tasks through `cache.cached_pmap` and returns {"metrics": {...}, ...data for figures}.
Metric values are plain floats so they go straight into metrics.json.
"""
from __future__ import annotations

import numpy as np
from scipy import stats

from . import dmft, experiments as ex, predict, recon, rnn
from .cache import cached_pmap
from .estimates import jackknife_se, sem
from common.parallel import single_threaded
from common.seed import numpy_rng


def _workers(cfg):
    return cfg.workers or None


def _gkey(g: float) -> str:
    """Metric suffix for a gain: 0.8 -> 'g0p8', 2.0 -> 'g2'."""
    return "g" + (f"{g:g}".replace(".", "p"))


# ---------------------------------------------------------------------------------------------
# 01 regimes
# ---------------------------------------------------------------------------------------------
def grid_tasks(cfg, seed):
    return [dict(N=cfg.grid_N, g=float(g), seed=seed * 1000 + s, n_traj=cfg.grid_n_traj,
                 t_transient=cfg.grid_t_transient, t_average=cfg.grid_t_average, t_align=cfg.grid_t_align, dt=cfg.dt)
            for g in cfg.grid_gs for s in range(cfg.grid_seeds)]


@single_threaded
def regimes(cfg, seed, cache_dir=None) -> dict:
    """Teacher trajectories below and above g = 1, and lambda(g) by the two-trajectory method."""
    trajs = [ex.trajectories_task(cfg.traj_N, float(g), seed, cfg.traj_t, cfg.traj_show, cfg.dt) for g in cfg.traj_gs]
    sub = [dict(N=cfg.sub_N, g=float(g), seed=seed * 1000 + s, n_traj=cfg.sub_n_traj, t_transient=cfg.sub_t_transient,
                t_average=cfg.sub_t_average, t_align=cfg.sub_t_align, dt=cfg.dt)
           for g in cfg.sub_gs for s in range(cfg.sub_seeds)]
    grid = grid_tasks(cfg, seed)
    # the near miss of the g < 1 exponent: networks at g + ctrl_dg_sub (fewer of them), same protocol
    # and N; their exponent is g + ctrl_dg_sub - 1, so the check must tell it from g - 1
    near = [dict(N=cfg.sub_N, g=float(g) + cfg.ctrl_dg_sub, seed=seed * 1000 + s, n_traj=cfg.sub_n_traj,
                 t_transient=cfg.sub_t_transient, t_average=cfg.sub_t_average, t_align=cfg.sub_t_align, dt=cfg.dt)
            for g in cfg.sub_gs for s in range(cfg.ctrl_sub_seeds)]
    res = cached_pmap(ex.lyapunov_task, grid + sub + near, cache_dir, _workers(cfg), desc="lyapunov")
    grid_res, sub_res, near_res = res[: len(grid)], res[len(grid): len(grid) + len(sub)], res[len(grid) + len(sub):]
    metrics = {}
    for g in cfg.sub_gs:
        # one estimate per network (its trajectories averaged): networks are the independent samples
        lam = [float(np.mean(r["lam"])) for r in sub_res if r["g"] == g]
        lin = [r["lam_linear"] for r in sub_res if r["g"] == g]
        lam_near = [float(np.mean(r["lam"])) for r in near_res if r["g"] == float(g) + cfg.ctrl_dg_sub]
        k = _gkey(g)
        metrics[f"lam_sim_{k}"] = float(np.mean(lam))
        metrics[f"lam_sim_se_{k}"] = sem(lam)
        metrics[f"lam_linear_{k}"] = float(np.mean(lin))
        metrics[f"ctrl_lam_sim_near_{k}"] = float(np.mean(lam_near)) if lam_near else float("nan")
        metrics[f"ctrl_lam_sim_near_se_{k}"] = sem(lam_near) if len(lam_near) > 1 else float("nan")
    return {"metrics": metrics, "trajs": trajs, "grid": grid_res, "sub": sub_res}


# ---------------------------------------------------------------------------------------------
# 02 reconstruction
# ---------------------------------------------------------------------------------------------
def adam_device(device=None) -> str:
    """Where the Adam fits run: the run's device when it is a CUDA (or ROCm) GPU, else the CPU.

    Everything else in this paper (numpy/numba simulations, DMFT) runs on the CPU whatever the device.
    Adam's minibatch order and start come from CPU generators, so only rounding depends on the device.
    """
    from common.device import select_device

    info = select_device(None if device in (None, "auto") else str(device))
    return str(info.device) if info.backend in ("cuda", "rocm") else "cpu"


@single_threaded
def reconstruction(cfg, seed, device=None) -> dict:
    """Least squares and the paper's Adam fit at rec_N for each g; d_W against the data size.

    The Adam fits run on `adam_device(device)`; everything else on the CPU."""

    from common.seed import torch_generator

    dev = adam_device(device)

    out, metrics = {}, {}
    for g in cfg.rec_gs:
        J, rng = ex.network(cfg.rec_N, g, seed, "recon")
        traj = rnn.simulate(J, rng.standard_normal((cfg.rec_n_traj, cfg.rec_N)), cfg.rec_n_steps, dt=cfg.dt)
        W_ls = recon.fit_least_squares(traj, cfg.dt)
        epochs = cfg.adam_epochs_sub if g < 1 else cfg.adam_epochs_chaos
        gen = torch_generator(seed, "adam", g)
        W_ad, hist = recon.fit_adam(traj, cfg.dt, epochs=epochs, lr=cfg.adam_lr, batch_size=cfg.adam_batch,
                                    window=cfg.adam_window, J_true=J, generator=gen, device=dev)
        noisy = recon.add_observation_noise(traj, cfg.sweep_noise, rng)
        sweep = {"n": [], "P": [], "dW_exact": [], "dW_noisy": [], "dW_adam": []}
        for n in cfg.sweep_n_trajs:
            sweep["n"].append(n)
            sweep["P"].append(n * cfg.rec_n_steps)
            sweep["dW_exact"].append(recon.d_W(recon.fit_least_squares(traj[:, :n], cfg.dt), J))
            sweep["dW_noisy"].append(recon.d_W(recon.fit_least_squares(noisy[:, :n], cfg.dt, ridge=cfg.sweep_ridge), J))
        adam_sweep = []
        for n in cfg.adam_sweep_n_trajs:
            W_n, _ = recon.fit_adam(traj[:, :n], cfg.dt, epochs=cfg.adam_sweep_epochs, lr=cfg.adam_lr,
                                    batch_size=cfg.adam_batch, window=cfg.adam_window,
                                    generator=torch_generator(seed, "adam-sweep", g, n), device=dev)
            adam_sweep.append((n * cfg.rec_n_steps, recon.d_W(W_n, J)))
        k = _gkey(g)
        s_ls, s_ad = recon.summary(W_ls, J, g), recon.summary(W_ad, J, g)
        metrics.update({f"ls_relfro_{k}": s_ls["rel_fro"], f"adam_r_{k}": s_ad["r"], f"adam_dW_{k}": s_ad["d_W"],
                        f"adam_eta_{k}": s_ad["eta"], f"adam_relfro_{k}": s_ad["rel_fro"]})
        # least squares on noise-free data is an identity; its near miss is the same fit on the same
        # states rounded to float32 (what the check resolves). The shuffled-time fit (no dynamics to
        # learn) is logged beside it. The Adam null: the student before its first step (the
        # protocol's own initial draw)
        W_32 = recon.fit_least_squares(traj.astype(np.float32).astype(np.float64), cfg.dt)
        W_sh = recon.fit_least_squares(recon.shuffle_time(traj, numpy_rng(seed, "shuffle-time", cfg.rec_N, g)), cfg.dt)
        W_0 = recon.adam_init(cfg.rec_N, torch_generator(seed, "adam", g))
        metrics.update({f"ctrl_ls_relfro_{k}": recon.rel_frobenius(W_32, J),
                        f"shuffled_ls_relfro_{k}": recon.rel_frobenius(W_sh, J), f"ctrl_ls_r_{k}": recon.pearson_r(W_sh, J),
                        f"ctrl_adam_r_{k}": recon.pearson_r(W_0, J)})
        # the Adam student against its teacher: from states on the attractor in chaos, from x0 ~ N(0, I)
        # below onset (where the attractor is x = 0)
        x0 = rng.standard_normal((cfg.adam_n_x0, cfg.rec_N))
        if g > 1:
            x0 = rnn.relax(J, x0, cfg.pred_t_burn, dt=cfg.dt)
        pair = predict.run_pair(J, W_ad, x0, t_max=cfg.adam_t_max, dt=cfg.dt, delta=cfg.pred_delta, record_every=10)
        rms = np.sqrt(pair["D"])                                                 # (time, state)
        # below onset the error never reaches delta: T_pd censored at adam_t_max (a lower bound)
        T_ad = np.where(np.isnan(pair["T_pd"]), cfg.adam_t_max, pair["T_pd"])
        metrics[f"adam_Tpd_{k}"] = float(np.mean(T_ad))
        metrics[f"adam_Tpd_se_{k}"] = sem(T_ad)
        if g < 1:
            metrics[f"adam_max_rms_{k}"] = float(rms.mean(axis=1).max())       # from x0 ~ N(0, I)
        pair_curve = {"t": pair["t"], "rms": rms}
        if len(sweep["P"]) > 2:
            metrics[f"sweep_spearman_noisy_{k}"] = float(stats.spearmanr(sweep["P"], sweep["dW_noisy"])[0])
        out[g] = {"J": J, "W_ls": W_ls, "W_adam": W_ad, "hist": hist, "sweep": sweep, "adam_sweep": adam_sweep,
                  "pair": pair_curve, "r": s_ad["r"]}
        del traj, noisy
    return {"metrics": metrics, "by_g": out}


# ---------------------------------------------------------------------------------------------
# 03 prediction
# ---------------------------------------------------------------------------------------------
@single_threaded
def prediction(cfg, seed, cache_dir=None) -> dict:
    """T_pd against eta (g > 1), the quiescent error (g < 1) and T_pd against the data size."""
    hor = [dict(N=cfg.pred_N, g=float(g), seed=seed * 1000 + s, etas=list(cfg.pred_etas), n_x0=cfg.pred_n_x0,
                t_burn=cfg.pred_t_burn, t_max=cfg.pred_t_max, delta=cfg.pred_delta, t_lyap=cfg.pred_t_lyap,
                t_align=cfg.pred_t_align, dt=cfg.dt)
           for g in cfg.pred_gs for s in range(cfg.pred_seeds)]
    qui = [dict(N=cfg.q_N, g=cfg.q_g, seed=seed * 1000 + s, eta=cfg.q_eta, n_x0=cfg.q_n_x0, t_max=cfg.q_T, dt=cfg.dt,
                ctrl_eta_horizon=cfg.q_ctrl_eta_horizon, ctrl_t_horizon=cfg.q_ctrl_T, delta=cfg.pred_delta)
           for s in range(cfg.q_seeds)]
    dsz = [dict(N=cfg.ds_N, g=cfg.ds_g, seed=seed * 1000 + s, n_trajs=list(cfg.ds_n_trajs), n_steps=cfg.ds_n_steps,
                noise=cfg.ds_noise, ridge=cfg.ds_ridge, t_burn=cfg.pred_t_burn, n_x0=cfg.ds_n_x0, t_max=cfg.ds_t_max,
                delta=cfg.pred_delta, t_lyap=cfg.pred_t_lyap, t_align=cfg.pred_t_align, dt=cfg.dt)
           for s in range(cfg.ds_seeds)]
    fns = [ex.horizon_task] * len(hor) + [ex.quiescent_pair_task] * len(qui) + [ex.data_size_task] * len(dsz)
    res = cached_pmap(_dispatch, [dict(fn=f.__name__, kw=t) for f, t in zip(fns, hor + qui + dsz)],
                      cache_dir, _workers(cfg), desc="prediction")
    h_res, q_res, d_res = res[: len(hor)], res[len(hor): len(hor) + len(qui)], res[len(hor) + len(qui):]
    metrics, horizon = {}, {}
    etas = np.asarray(cfg.pred_etas, dtype=float)
    for g in cfg.pred_gs:
        rs = [r for r in h_res if r["g"] == g]
        T = np.stack([r["T_pd"] for r in rs])                    # (networks, eta, x0)
        Tm = np.nanmean(T, axis=(0, 2))
        lam = np.array([r["lam"] for r in rs])
        lam_eff = 1.0 / np.mean(1.0 / lam)                      # slope of the pooled fit is mean(1/lambda)
        k = _gkey(g)
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

        try:
            fit = fit_of(units)
            ratio_se, r2_se = jackknife_se(units, ratio_of), jackknife_se(units, lambda u: fit_of(u)["r2"])
            r2_ctrl, r2_ctrl_se = r2_power(units), jackknife_se(units, r2_power)
        except Exception:
            fit = {"slope": float("nan"), "intercept": float("nan"), "r2": float("nan"), "lam_fit": float("nan")}
            ratio_se = r2_se = r2_ctrl = r2_ctrl_se = float("nan")
        metrics.update({f"pred_lam_fit_{k}": fit["lam_fit"], f"pred_lam_benettin_{k}": float(lam_eff),
                        f"pred_lam_ratio_{k}": float(fit["lam_fit"] / lam_eff), f"pred_lam_ratio_se_{k}": ratio_se,
                        f"pred_r2_{k}": fit["r2"], f"pred_r2_se_{k}": r2_se,
                        f"ctrl_pred_r2_{k}": r2_ctrl, f"ctrl_pred_r2_se_{k}": r2_ctrl_se,
                        f"pred_finite_frac_{k}": float(np.isfinite(T).mean())})
        i3 = int(np.argmin(np.abs(np.log(etas / 1e-3))))
        metrics[f"pred_Tpd_eta1e-3_{k}"] = float(Tm[i3])
        metrics[f"pred_Tpd_eta1e-3_se_{k}"] = sem(T[:, i3, :])
        metrics[f"pred_r_eta1e-3_{k}"] = float(np.mean([r["r"][i3] for r in rs]))
        eps = np.mean([r["eps"] for r in rs], axis=0)
        phi2 = float(np.mean([r["phi2"] for r in rs]))
        eps_th = predict.one_step_theory(cfg.pred_N, g, etas, phi2, cfg.dt)
        # one-step error law per (network, state): eps over dt sqrt(2 N g^2 (1 - rho) <phi^2>), averaged over eta
        law = np.concatenate([np.mean(r["eps_each"] / predict.one_step_theory(cfg.pred_N, g, etas[:, None],
                                                                               r["phi2_each"][None], cfg.dt), axis=0)
                              for r in rs])
        metrics[f"eps_ratio_{k}"] = float(np.mean(law))
        metrics[f"eps_ratio_se_{k}"] = sem(law)
        # the linearised law (phi(x) = x: <x^2> of each state in place of its <phi^2>), the answer
        # without the saturating nonlinearity
        lin = np.concatenate([np.mean(r["eps_each"] / predict.one_step_theory(cfg.pred_N, g, etas[:, None],
                                                                               r["x2_each"][None], cfg.dt), axis=0)
                              for r in rs])
        metrics[f"ctrl_eps_ratio_{k}"] = float(np.mean(lin))
        metrics[f"ctrl_eps_ratio_se_{k}"] = sem(lin)
        n_max = max(len(r["t"]) for r in rs)
        Dpad = np.full((len(rs), n_max, len(etas)), np.nan)
        for i, r in enumerate(rs):
            Dpad[i, : len(r["t"])] = r["D_mean"]
        t_long = max((r["t"] for r in rs), key=len)
        n_min = min(len(r["t"]) for r in rs)   # times every network reached
        horizon[g] = {"T": T, "Tm": Tm, "lam": lam, "fit": fit, "eps": eps, "eps_theory": eps_th,
                      "t": t_long[:n_min], "D": np.nanmean(Dpad[:, :n_min], axis=0)}   # D: (time, eta)
    # competitor of the slope: 1 / lambda from the annealed (frozen-Jacobian) exponent in place of the
    # networks' own lambda_Benettin
    for g in cfg.pred_gs:
        h, k = horizon[g], _gkey(g)
        lam_ann = dmft.annealed_lyapunov(g)
        metrics[f"lam_annealed_{k}"] = lam_ann

        def ann_ratio(u, h=h, lam_ann=lam_ann):
            return predict.fit_log_slope(etas, np.nanmean(h["T"][u], axis=(0, 2)))["lam_fit"] / lam_ann

        u = np.arange(len(h["lam"]))
        try:
            metrics[f"ctrl_pred_lam_ratio_{k}"] = float(ann_ratio(u))
            metrics[f"ctrl_pred_lam_ratio_se_{k}"] = jackknife_se(u, ann_ratio)
        except Exception:
            metrics[f"ctrl_pred_lam_ratio_{k}"] = metrics[f"ctrl_pred_lam_ratio_se_{k}"] = float("nan")
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
    # data size: d_W falls, T_pd rises only like ln(1/eps) / lambda (eps: the measured one-step error)
    sp = [stats.spearmanr(r["P"], r["d_W"])[0] for r in d_res]
    units = [(i, j) for i, r in enumerate(d_res) for j in range(r["T_pd"].shape[1])]

    # the sizes' labels shuffled (ctrl_n_perm permutations per network), logged beside the nulls
    prng = numpy_rng(seed, "size-shuffle", float(cfg.ds_g))
    size_perms = [np.argsort(prng.random((cfg.ctrl_n_perm, len(r["P"]))), axis=1) for r in d_res]

    lam_ann_ds = dmft.annealed_lyapunov(cfg.ds_g)   # competitor of the rate: the annealed exponent

    def ds_slopes(sel, against, shuffled=False, lam=None):
        out = []
        for i, r in enumerate(d_res):
            cols = [j for (n, j) in sel if n == i]
            if not cols:
                continue
            Tm = np.nanmean(r["T_pd"][:, cols], axis=1)
            good = (np.asarray(r["r"]) >= cfg.ds_min_r) & np.isfinite(Tm)
            if good.sum() < 2:
                return float("nan")
            x = np.log(1 / np.asarray(r[against])[good])
            idx = np.flatnonzero(good)
            # shuffled: the good sizes' T_pd in the order of each permutation q restricted to them
            y = [Tm[idx]] if not shuffled else [Tm[idx[np.argsort(q[idx])]] for q in size_perms[i]]
            b = np.mean([np.polyfit(x, yy, 1)[0] for yy in y])   # T_pd = a + b ln(1/eps)
            out.append(b * (r["lam"] if lam is None else lam) * (2.0 if against == "d_W" else 1.0))
        return float(np.mean(out))

    units = np.asarray(units)
    metrics["ds_spearman_dW_P"] = float(np.mean(sp))
    metrics["ds_slope_times_lam"] = ds_slopes(units, "eps")                 # 1: T_pd = ln(delta/eps) / lambda
    metrics["ds_slope_times_lam_se"] = jackknife_se(units, lambda u: ds_slopes(u, "eps"))
    metrics["ds_slope_times_2lam"] = ds_slopes(units, "d_W")                # 1 only for an isotropic error
    metrics["shuffled_ds_spearman_dW_P"] = float(np.mean([np.mean([stats.spearmanr(np.asarray(r["P"])[q], r["d_W"])[0]
                                                                    for q in qs]) for r, qs in zip(d_res, size_perms)]))
    # null: P grown by repeating the smallest set's trajectories with fresh observation noise
    metrics["ctrl_ds_spearman_dW_P"] = float(np.mean([stats.spearmanr(r["P"], r["d_W_repeat"])[0] for r in d_res]))
    metrics["ds_dW_repeat_drop"] = float(np.mean([r["d_W_repeat"][0] / r["d_W_repeat"][-1] for r in d_res]))
    metrics["shuffled_ds_slope_times_lam"] = ds_slopes(units, "eps", shuffled=True)
    metrics["ctrl_ds_slope_times_lam"] = ds_slopes(units, "eps", lam=lam_ann_ds)
    metrics["ctrl_ds_slope_times_lam_se"] = jackknife_se(units, lambda u: ds_slopes(u, "eps", lam=lam_ann_ds))
    metrics["ds_dW_drop"] = float(np.mean([r["d_W"][0] / r["d_W"][-1] for r in d_res]))
    metrics["ds_eps_drop"] = float(np.mean([r["eps"][0] / r["eps"][-1] for r in d_res]))
    metrics["ds_Tpd_gain"] = float(np.mean([np.nanmean(r["T_pd"][-1]) - np.nanmean(r["T_pd"][0]) for r in d_res]))
    metrics["ds_r_max_P"] = float(np.mean([r["r"][-1] for r in d_res]))
    metrics["ds_Tpd_max_P"] = float(np.mean([np.nanmean(r["T_pd"][-1]) for r in d_res]))
    return {"metrics": metrics, "horizon": horizon, "etas": etas,
            "quiescent": {"t": q_t, "rms_over_eta": q_rms, "rel": rel.mean(axis=1), "rel_untrained": rel_un.mean(axis=1)},
            "data_size": d_res}


def _dispatch(fn: str, kw: dict):
    """Run the task function named `fn` of `experiments` (lets one pool mix task kinds)."""
    return getattr(ex, fn)(**kw)


@single_threaded
def teacher_student_example(cfg, seed, eta: float, g: float, t_max: float = 20.0) -> dict:
    """Three units of a teacher and a student sqrt(1-eta^2) J + eta J' from the same state."""
    J, rng = ex.network(cfg.traj_N, g, seed, "example")
    JS = rnn.perturb(J, eta, g, rng)
    x0 = rnn.relax(J, rng.standard_normal(cfg.traj_N), 20.0, dt=cfg.dt)
    n = int(round(t_max / cfg.dt))
    xT = rnn.simulate(J, x0, n, dt=cfg.dt, record_every=5)
    xS = rnn.simulate(JS, x0, n, dt=cfg.dt, record_every=5)
    return {"t": np.arange(xT.shape[0]) * 5 * cfg.dt, "xT": xT[:, :3], "xS": xS[:, :3], "g": g, "eta": eta}


# ---------------------------------------------------------------------------------------------
# 04 DMFT
# ---------------------------------------------------------------------------------------------
def stationary_tasks(cfg, seed):
    return [dict(N=cfg.st_N, g=float(g), seed=seed * 1000 + s, n_traj=cfg.st_n_traj, t_transient=cfg.st_t_transient,
                 t_average=cfg.st_t_average, t_align=cfg.st_t_align, dt=cfg.dt, record_dt=cfg.st_record_dt,
                 max_lag_time=cfg.st_max_lag, method="tangent", dtype=cfg.st_dtype)
            for g in cfg.st_gs for s in range(cfg.st_seeds)]


@single_threaded
def stationary_comparison(cfg, seed, cache_dir=None) -> dict:
    """Delta(tau) and lambda: DMFT against N = st_N simulations (several networks)."""
    sims = cached_pmap(ex.lyapunov_task, stationary_tasks(cfg, seed), cache_dir, _workers(cfg), desc="stationary")
    metrics, by_g = {}, {}
    for g in cfg.st_gs:
        th = dmft.stationary(g, tau_max=max(40.0, cfg.st_max_lag))
        lam_th = dmft.lyapunov(g, stat=th)["lam"]
        rs = [r for r in sims if r["g"] == g]
        tau = rs[0]["tau"]
        # independent samples are networks (each averaged over its states): at N = 1000 the
        # network-to-network fluctuations of Delta_0 (a few %) dominate the time-averaging noise
        each = np.stack([r["Delta"] for r in rs])                                # (network, lag)
        lam_each = np.array([np.mean(r["lam"]) for r in rs])
        D_sim = each.mean(axis=0)
        D_th = np.interp(tau, th.tau, th.Delta)

        decay = tau <= cfg.st_dev_lag + 1e-9   # the decay of Delta(tau); beyond it a slow finite-N tail

        def maxdev(u, sel=decay):
            return float(np.max(np.abs(u.mean(axis=0) - D_th)[sel]) / th.Delta0)

        def maxdev_all(u):
            return maxdev(u, slice(None))

        lam_sim = float(lam_each.mean())
        k = _gkey(g)
        # competing approximations: the static mean-field Delta_0 (a frozen Gaussian field) and the
        # annealed (frozen-Jacobian) exponent; each claim's metric is the relative deviation
        # |sim / theory - 1|, and its control the same deviation from the competitor
        d_static = dmft.static_delta0(g)
        lam_ann = dmft.annealed_lyapunov(g, th.Delta0)

        def dev(u, ref):   # |mean / ref - 1|; its standard error is that of the ratio, sem / ref
            return float(abs(np.mean(u) / ref - 1.0))

        # near miss of the curve: the DMFT Delta(tau) solved at g + ctrl_dg (a few % off in gain)
        gw = g + cfg.ctrl_dg
        th_w = dmft.stationary(gw, tau_max=max(40.0, cfg.st_max_lag))
        lam_w = dmft.lyapunov(gw, stat=th_w)["lam"]
        D_w = np.interp(tau, th_w.tau, th_w.Delta)

        def maxdev_w(u, sel=decay):
            return float(np.max(np.abs(u.mean(axis=0) - D_w)[sel]) / th_w.Delta0)

        def maxdev_w_all(u):
            return maxdev_w(u, slice(None))

        metrics.update({f"delta0_static_{k}": d_static, f"lam_annealed_{k}": lam_ann, f"lam_dmft_near_{k}": lam_w,
                        f"delta0_dev_{k}": dev(each[:, 0], th.Delta0),
                        f"delta0_dev_se_{k}": sem(each[:, 0]) / th.Delta0,
                        f"ctrl_delta0_dev_{k}": dev(each[:, 0], d_static),
                        f"ctrl_delta0_dev_se_{k}": sem(each[:, 0]) / d_static,
                        f"ctrl_delta_maxdev_{k}": maxdev_w(each), f"ctrl_delta_maxdev_se_{k}": jackknife_se(each, maxdev_w),
                        f"ctrl_delta_maxdev_all_{k}": maxdev_w_all(each),
                        f"ctrl_delta_maxdev_all_se_{k}": jackknife_se(each, maxdev_w_all),
                        f"lam_dev_{k}": dev(lam_each, lam_th),
                        f"lam_dev_se_{k}": sem(lam_each) / lam_th,
                        f"ctrl_lam_dev_{k}": dev(lam_each, lam_ann),
                        f"ctrl_lam_dev_se_{k}": sem(lam_each) / lam_ann})
        metrics.update({f"delta0_dmft_{k}": th.Delta0, f"delta0_sim_{k}": float(D_sim[0]),
                        f"delta0_ratio_{k}": float(D_sim[0] / th.Delta0),
                        f"delta0_ratio_se_{k}": sem(each[:, 0]) / th.Delta0,
                        f"delta_maxdev_{k}": maxdev(each), f"delta_maxdev_se_{k}": jackknife_se(each, maxdev),
                        f"delta_maxdev_all_{k}": maxdev_all(each), f"delta_maxdev_all_se_{k}": jackknife_se(each, maxdev_all),
                        f"delta_tail_{k}": float(np.mean((D_sim - D_th)[~decay]) / th.Delta0),
                        f"lam_dmft_{k}": lam_th, f"lam_sim_N{cfg.st_N}_{k}": lam_sim,
                        f"lam_sim_over_dmft_{k}": lam_sim / lam_th,
                        f"lam_sim_over_dmft_se_{k}": sem(lam_each) / lam_th})
        by_g[g] = {"tau": tau, "D_sim": D_sim, "D_sim_each": [r["Delta"] for r in rs], "theory": th, "lam_dmft": lam_th,
                   "lam_sim": lam_sim, "running": [(r["times"], r["running"]) for r in rs]}
    return {"metrics": metrics, "by_g": by_g}


@single_threaded
def two_replica_comparison(cfg, seed, cache_dir=None) -> dict:
    """D(t) from the two-replica DMFT against teacher-student simulations, and its long-time limit."""
    cases = [(float(g), float(e)) for g, e in cfg.tr_cases]
    th_tasks = [dict(fn="two_replica_task", kw=dict(g=g, eta=e, T=cfg.tr_T, dt=cfg.tr_dt, n_nodes=cfg.tr_nodes))
                for g, e in cases]
    sat_cases = [c for c in cases if c[0] != 2.0] or cases[:1]
    th_tasks += [dict(fn="two_replica_task", kw=dict(g=g, eta=e, T=cfg.sat_T, dt=cfg.sat_dt, n_nodes=cfg.tr_nodes))
                 for g, e in sat_cases]
    # near miss: the two-replica DMFT at the gain g + ctrl_dg, against the same simulations
    th_tasks += [dict(fn="two_replica_task", kw=dict(g=g + cfg.ctrl_dg, eta=e, T=cfg.tr_T, dt=cfg.tr_dt,
                                                     n_nodes=cfg.tr_nodes)) for g, e in cases]
    # below onset, the untrained student (eta = 1: an independent J') in the same regime
    quiet = [(g, e) for g, e in sat_cases if g < 1]
    th_tasks += [dict(fn="two_replica_task", kw=dict(g=g, eta=1.0, T=cfg.sat_T, dt=cfg.sat_dt, n_nodes=cfg.tr_nodes))
                 for g, e in quiet]
    sim_tasks = [dict(fn="pair_distance_task", kw=dict(N=cfg.tr_N, g=g, eta=e, seed=seed * 1000 + s, n_x0=cfg.tr_n_x0,
                                                      T=cfg.sat_T if ((g, e) in sat_cases and g > 1) else cfg.tr_T, dt=cfg.dt))
                 for g, e in cases for s in range(cfg.tr_seeds)]
    res = cached_pmap(_dispatch, th_tasks + sim_tasks, cache_dir, _workers(cfg), desc="two-replica")
    n_th = 2 * len(cases) + len(sat_cases) + len(quiet)
    th, sat = res[: len(cases)], res[len(cases): len(cases) + len(sat_cases)]
    wrong = res[len(cases) + len(sat_cases): 2 * len(cases) + len(sat_cases)]
    untrained = dict(zip(quiet, res[2 * len(cases) + len(sat_cases): n_th]))
    sims = res[n_th:]
    metrics, out = {}, {}
    for (g, e), r, rw in zip(cases, th, wrong):
        rs = [s for s in sims if s["g"] == g and s["eta"] == e]
        t_sim = rs[0]["t"]
        sel = t_sim <= cfg.tr_T + 1e-9
        each = np.concatenate([s["D_each"][sel] for s in rs], axis=1).T    # (network x state, time)
        D_sim = np.mean([s["D"] for s in rs], axis=0)
        D_sd = np.std([s["D"] for s in rs], axis=0)
        k = _gkey(g)
        for pre, rr in (("", r), ("ctrl_", rw)):          # the claim's DMFT, then the near miss in gain
            D_th = np.interp(t_sim[sel], rr["t"], rr["D"])
            if g > 1:
                win = (t_sim[sel] >= min(2.0, cfg.tr_T / 2)) & (t_sim[sel] <= cfg.tr_T)

                def maxlog(u, D_th=D_th, win=win):
                    return float(np.max(np.abs(np.log(D_th[win] / u.mean(axis=0)[win]))))

                metrics[f"{pre}tr_maxlog_{k}"] = maxlog(each)
                metrics[f"{pre}tr_maxlog_se_{k}"] = jackknife_se(each, maxlog)
            else:
                def maxrel(u, D_th=D_th):
                    m = u.mean(axis=0)
                    return float(np.max(np.abs(D_th - m)) / np.max(m))

                metrics[f"{pre}tr_maxrel_{k}"] = maxrel(each)
                metrics[f"{pre}tr_maxrel_se_{k}"] = jackknife_se(each, maxrel)
        out[(g, e)] = {"t_th": r["t"], "D_th": r["D"], "t_sim": t_sim, "D_sim": D_sim, "D_sd": D_sd}
    for (g, e), r in zip(sat_cases, sat):
        k = _gkey(g)
        rs = [s for s in sims if s["g"] == g and s["eta"] == e]
        # saturated level per (network, state): D averaged over the last 10 time units (t <= sat_T)
        late = rs[0]["t"] >= rs[0]["t"][-1] - 10.0
        D_late = np.concatenate([s["D_each"][late].mean(axis=0) for s in rs])
        D_sim_end = float(D_late.mean())
        # D(T)/max D: it vanishes below onset for any student (the absolute decay is the regime's)
        metrics[f"sat_dmft_final_over_max_{k}"] = float(r["D"][-1] / r["D"].max())
        if g < 1:
            # relative to the teacher's own decaying state: sqrt(D / C_TT) at sat_T, against the
            # untrained student's (eta = 1) in the same regime
            rel = ex.relative_error(r["D"][-1], r["C_TT"][-1])
            rel_un = untrained[(g, e)]
            metrics[f"sat_dmft_rel_final_{k}"] = float(rel)
            metrics[f"ctrl_sat_dmft_rel_final_{k}"] = float(ex.relative_error(rel_un["D"][-1], rel_un["C_TT"][-1]))
            metrics[f"ctrl_sat_dmft_final_over_max_{k}"] = float(rel_un["D"][-1] / rel_un["D"].max())
            i10 = int(np.argmin(np.abs(r["t"] - min(10.0, r["t"][-1]))))
            metrics[f"sat_dmft_rel_t10_{k}"] = float(ex.relative_error(r["D"][i10], r["C_TT"][i10]))
        if g > 1:
            # D -> 2 Delta_0 (decorrelation); the competitor is the static mean-field 2 Delta
            two_d0, two_st = 2.0 * dmft.delta0(g), 2.0 * dmft.static_delta0(g)
            metrics[f"sat_dmft_over_2delta0_{k}"] = float(r["D"][-1] / two_d0)
            metrics[f"sat_sim_over_2delta0_{k}"] = float(D_sim_end / two_d0)
            metrics[f"sat_sim_over_2delta0_se_{k}"] = sem(D_late) / two_d0
            metrics[f"sat_dmft_dev_{k}"] = float(abs(r["D"][-1] / two_d0 - 1.0))
            metrics[f"ctrl_sat_dmft_dev_{k}"] = float(abs(r["D"][-1] / two_st - 1.0))
            metrics[f"sat_sim_dev_{k}"] = float(abs(D_sim_end / two_d0 - 1.0))
            metrics[f"sat_sim_dev_se_{k}"] = sem(D_late) / two_d0
            metrics[f"ctrl_sat_sim_dev_{k}"] = float(abs(D_sim_end / two_st - 1.0))
            metrics[f"ctrl_sat_sim_dev_se_{k}"] = sem(D_late) / two_st
        out[("sat", g, e)] = {"t_th": r["t"], "D_th": r["D"], "t_sim": rs[0]["t"],
                              "D_sim": np.mean([s["D"] for s in rs], axis=0),
                              "two_delta0": 2.0 * dmft.delta0(g)}
    return {"metrics": metrics, "cases": out}


# ---------------------------------------------------------------------------------------------
# 05 Lyapunov
# ---------------------------------------------------------------------------------------------
@single_threaded
def lyapunov_theory_vs_simulation(cfg, seed, cache_dir=None) -> dict:
    """lambda(g) from DMFT, the simulated grid (shared with 01), N = st_N points (shared with 04),
    the official OS rate next to the true exponent, and a QR spectrum."""
    gs = np.asarray(cfg.ly_gs_dmft, dtype=float)
    lam_th = np.array([dmft.lyapunov(g)["lam"] for g in gs])
    grid = cached_pmap(ex.lyapunov_task, grid_tasks(cfg, seed), cache_dir, _workers(cfg), desc="lambda grid")
    big = cached_pmap(ex.lyapunov_task, stationary_tasks(cfg, seed), cache_dir, _workers(cfg), desc="lambda N")
    os_res = cached_pmap(_dispatch, [dict(fn="mismatch_task", kw=dict(N=cfg.os_N, g=float(g), seed=seed * 1000 + s,
                                                                       eta=cfg.os_eta, t_total=cfg.os_t_total,
                                                                       t_discard=cfg.os_t_discard, dt=cfg.dt))
                                     for g in cfg.os_gs for s in range(cfg.os_seeds)], cache_dir, _workers(cfg),
                         desc="OS rate")
    spec = ex.spectrum_task(cfg.qr_N, cfg.qr_g, seed, cfg.qr_k, cfg.qr_t_average, cfg.dt)
    metrics = {}
    for g in cfg.st_gs:   # lambda_sim / lambda_DMFT (with its error) is logged by notebook 04 from the same runs
        metrics[f"lam_dmft_{_gkey(g)}"] = dmft.lyapunov(g)["lam"]
        metrics[f"ctrl_lam_dmft_{_gkey(g)}"] = dmft.lyapunov(g + cfg.ctrl_dg)["lam"]   # near miss: g + ctrl_dg
    for g in cfg.os_gs:
        rs = [r for r in os_res if r["g"] == g]
        k = _gkey(g)
        metrics[f"os_rate_{k}"] = float(np.mean([r["os_rate"] for r in rs]))          # official protocol
        metrics[f"os_eps_{k}"] = float(np.mean([r["eps"] for r in rs]))              # its one-step error
        metrics[f"os_rate_eps1e-6_{k}"] = float(np.mean([r["os_rate_eps1e-6"] for r in rs]))
        metrics[f"os_true_lam_{k}"] = float(np.mean([r["lam"] for r in rs]))
    metrics["qr_lam_max"] = float(spec["lam"][0])
    # running estimates of the N = st_N runs (shared with 04) beside their DMFT exponent, for the figure
    running = {g: {"running": [(r["times"], r["running"]) for r in big if r["g"] == g],
                   "lam_dmft": metrics[f"lam_dmft_{_gkey(g)}"]} for g in cfg.st_gs}
    return {"metrics": metrics, "gs": gs, "lam_th": lam_th, "grid": grid, "big": big, "os": os_res, "spectrum": spec,
            "running": running}
