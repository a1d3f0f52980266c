"""Notebook 02-reconstruction: least squares and the paper's Adam fit, and d_W against the data size.

Z. Yu and H. Huang, "Network reconstruction may not mean dynamics prediction",
https://arxiv.org/abs/2409.04240

Paper: the reconstruction section (training curves and W-J scatter at g = 0.8 and 2, official
`RNN learning` scripts: N = 200, 100 x 500 steps, Adam on windows of 4, batch 250, lr 0.1) and d_W
against the data size (official `Effective prediction time/`). Claims `least-squares-exact-g2`,
`adam-reconstruction-*`, `adam-student-horizon-g2`.
"""
from __future__ import annotations

import os

import numpy as np
from scipy import stats

from common.parallel import n_workers, pmap, single_threaded

from .. import pool, predict, recon, rnn, tasks
from ..estimates import sem
from . import gain_key, pool_workers


def adam_device(device=None) -> str:
    """Where the Adam fits run: the run's device when it is a CUDA (or ROCm) GPU, else the CPU.

    Everything else in this paper (numpy/numba simulations, DMFT) runs on the CPU whatever the device.
    Adam's minibatch order and start come from CPU generators, so only rounding depends on the device.
    """
    from common.device import select_device

    info = select_device(None if device in (None, "auto") else str(device))
    return str(info.device) if info.backend in ("cuda", "rocm") else "cpu"


def fit_metrics(k: str, ls: dict, adam: dict) -> dict:
    """The fits' scores (`recon.summary` of the least-squares and the Adam W) under the gain suffix `k`."""
    return {f"ls_relfro_{k}": ls["rel_fro"], f"adam_r_{k}": adam["r"], f"adam_dW_{k}": adam["d_W"],
            f"adam_eta_{k}": adam["eta"], f"adam_relfro_{k}": adam["rel_fro"]}


def control_metrics(k: str, relfro_float32: float, relfro_shuffled: float, r_shuffled: float,
                    r_untrained: float) -> dict:
    """The reconstruction's controls: least squares on float32-rounded states (the identity's near miss),
    on time-shuffled states (logged), and the untrained Adam student's r (the draw before step one)."""
    return {f"ctrl_ls_relfro_{k}": relfro_float32, f"shuffled_ls_relfro_{k}": relfro_shuffled,
            f"ctrl_ls_r_{k}": r_shuffled, f"ctrl_adam_r_{k}": r_untrained}


def student_metrics(k: str, g: float, T_pd: np.ndarray, rms: np.ndarray, t_max: float) -> dict:
    """The Adam student against its teacher: mean T_pd over states, censored at `t_max` where the error
    never reached delta (NaN), with its standard error; below onset the largest mean RMS error over
    time (`rms`: (time, state))."""
    T = np.where(np.isnan(T_pd), t_max, T_pd)
    out = {f"adam_Tpd_{k}": float(np.mean(T)), f"adam_Tpd_se_{k}": sem(T)}
    if g < 1:
        out[f"adam_max_rms_{k}"] = float(rms.mean(axis=1).max())       # from x0 ~ N(0, I)
    return out


def fit_gain(cfg, streams, g: float, dev: str) -> tuple[dict, dict]:
    """Every fit of one teacher at gain g (its draws from `streams`, the run's keyed streams): (metrics, data
    for the figures). Below onset also its Adam student against it (the horizon claim's control); in chaos
    that claim and its figure use the chaotic teachers' students (`measure`)."""
    J, rng = tasks.network(cfg.rec_N, g, streams, "recon")
    gk = tasks.num_key(g)
    traj = rnn.simulate(J, rng.standard_normal((cfg.rec_n_traj, cfg.rec_N)), cfg.rec_n_steps, dt=cfg.dt)
    W_ls = recon.fit_least_squares(traj, cfg.dt)
    epochs = cfg.adam_epochs_sub if g < 1 else cfg.adam_epochs_chaos
    gen = streams.torch_generator("adam", gk)
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
        # full: up to 1e4 epochs, stopped early on d_W as the official P-sweep does (patience 100)
        W_n, h_n = recon.fit_adam(traj[:, :n], cfg.dt, epochs=cfg.adam_sweep_epochs, lr=cfg.adam_lr,
                                  batch_size=cfg.adam_batch, window=cfg.adam_window,
                                  J_true=J if cfg.adam_sweep_patience else None, patience=cfg.adam_sweep_patience,
                                  generator=streams.torch_generator("adam-sweep", gk, n), device=dev)
        adam_sweep.append((n * cfg.rec_n_steps, recon.d_W(W_n, J), h_n["epochs"]))
    k = gain_key(g)
    s_ls, s_ad = recon.summary(W_ls, J, g), recon.summary(W_ad, J, g)
    metrics = fit_metrics(k, s_ls, s_ad)
    # least squares on noise-free data is an identity; its near miss is the same fit on the same
    # states rounded to float32 (what the check resolves). The shuffled-time fit (no dynamics to
    # learn) is logged beside it. The Adam null: the student before its first step (the
    # protocol's own initial draw)
    W_32 = recon.fit_least_squares(traj.astype(np.float32).astype(np.float64), cfg.dt)
    W_sh = recon.fit_least_squares(recon.shuffle_time(traj, streams.rng("shuffle-time", cfg.rec_N, gk)), cfg.dt)
    W_0 = recon.adam_init(cfg.rec_N, streams.torch_generator("adam", gk))
    metrics.update(control_metrics(k, recon.rel_frobenius(W_32, J), recon.rel_frobenius(W_sh, J),
                                   recon.pearson_r(W_sh, J), recon.pearson_r(W_0, J)))
    if len(sweep["P"]) > 2:
        metrics[f"sweep_spearman_noisy_{k}"] = float(stats.spearmanr(sweep["P"], sweep["dW_noisy"])[0])
    data = {"J": J, "W_ls": W_ls, "W_adam": W_ad, "hist": hist, "sweep": sweep, "adam_sweep": adam_sweep,
            "r": s_ad["r"]}
    if g < 1:
        # the Adam student against its teacher from x0 ~ N(0, I) (the attractor is x = 0): the error never
        # reaches delta, T_pd is censored at adam_t_max (a lower bound)
        x0 = rng.standard_normal((cfg.adam_n_x0, cfg.rec_N))
        pair = predict.run_pair(J, W_ad, x0, t_max=cfg.adam_t_max, dt=cfg.dt, delta=cfg.pred_delta, record_every=10)
        rms = np.sqrt(pair["D"])                                             # (time, state)
        metrics.update(student_metrics(k, g, pair["T_pd"], rms, cfg.adam_t_max))
        data["pair"] = {"t": pair["t"], "rms": rms}
    return metrics, data


@single_threaded
def fit_gain_task(cfg, streams, g: float, dev: str) -> tuple[dict, dict]:
    """`fit_gain` as a pool task (one process per gain; one BLAS and torch thread each)."""
    return fit_gain(cfg, streams, g, dev)


@single_threaded
def adam_student_task(kw: dict) -> dict:
    """`tasks.adam_student_task` as a pool task (one BLAS and torch thread)."""
    return tasks.adam_student_task(**kw)


@single_threaded
def teacher_exponent_task(cfg, s, g: float) -> float:
    """`tasks.teacher_exponent_task` of the chaotic teachers' draw `s` as a pool task (one BLAS thread)."""
    return tasks.teacher_exponent_task(cfg.rec_N, g, s, cfg.pred_t_burn, cfg.adam_h_t_lyap, dt=cfg.dt)


def chaotic_teachers(cfg, streams, g: float) -> tuple[list, list[float]]:
    """The teachers of the Adam student's horizon claim at gain g: networks drawn in order
    (`streams.child("net", i)`, i = 0, 1, ...) until `adam_h_nets` of them are chaotic (their own largest
    exponent, `tasks.teacher_exponent_task`, at least `adam_h_min_lam`), at most `adam_h_max_draws` draws.
    Returns (the chosen networks' streams, every drawn network's exponent). The criterion is the teacher's
    alone, fixed before any student is fitted: at N = rec_N some draws settle on a fixed point or a cycle,
    where no horizon is claimed."""
    chosen, lams = [], []
    for i in range(cfg.adam_h_max_draws):
        s = streams.child("net", i)
        lams.append(teacher_exponent_task(cfg, s, g))
        if lams[-1] >= cfg.adam_h_min_lam:
            chosen.append(s)
            if len(chosen) == cfg.adam_h_nets:
                break
    return chosen, lams


def horizon_student_kw(cfg, s, g: float, dev: str) -> dict:
    """`tasks.adam_student_task` arguments: the paper's Adam protocol (as `fit_gain`) on a chosen teacher `s`."""
    return dict(N=cfg.rec_N, g=g, streams=s, n_traj=cfg.rec_n_traj, n_steps=cfg.rec_n_steps,
                epochs=cfg.adam_epochs_sub if g < 1 else cfg.adam_epochs_chaos, lr=cfg.adam_lr,
                batch_size=cfg.adam_batch, window=cfg.adam_window, n_x0=cfg.adam_n_x0, t_burn=cfg.pred_t_burn,
                t_max=cfg.adam_t_max, delta=cfg.pred_delta, dt=cfg.dt, device=dev)


def chaotic_student_metrics(k: str, results: list[dict], lams: list[float], min_lam: float, t_max: float) -> dict:
    """The horizon claim's numbers at gain suffix `k`: T_pd (censored at `t_max`) averaged over each chaotic
    teacher's states, then over teachers, with its standard error over teachers; how many draws it took and
    what share of them was not chaotic (exponent below `min_lam`: a finding at finite N)."""
    per_net = np.array([np.mean(np.where(np.isnan(r["T_pd"]), t_max, r["T_pd"])) for r in results])
    lams = np.asarray(lams, dtype=float)
    out = {f"adam_Tpd_{k}": float(per_net.mean()) if len(per_net) else float("nan"),
           f"adam_Tpd_se_{k}": sem(per_net) if len(per_net) > 1 else float("nan"),
           f"adam_h_teachers_{k}": float(len(per_net)), f"adam_h_draws_{k}": float(len(lams)),
           f"adam_h_nonchaotic_frac_{k}": float(np.mean(lams < min_lam)),
           f"adam_h_teacher_lam_{k}": float(lams[lams >= min_lam].mean()) if len(per_net) else float("nan")}
    if results:
        out[f"adam_h_r_{k}"] = float(np.mean([r["r"] for r in results]))
    return out


@single_threaded
def measure(cfg, run) -> dict:
    """Least squares and the paper's Adam fit at rec_N for each g; d_W against the data size; the horizon claim's
    chaotic teachers and their Adam students.

    The Adam fits run on `adam_device(run.device)`; everything else on the CPU. On the CPU with more than one
    worker one pool runs it all (`pooled`: the teachers' exponent checks first, the gains' fits, each student as
    soon as its teacher is chosen); else the checks run here, one after the other, then the fits and the
    students (in a pool on the CPU, here on a GPU). The numbers are the same either way: each task is
    single-threaded and draws from its own keyed streams, and the teachers are taken in draw order. Returns
    {"metrics", "by_g": {g: fits, training history, sweeps, the student's error}} for the notebook's figures."""
    dev = adam_device(run.device)
    gs = [float(g) for g in cfg.rec_gs]
    chaos = [g for g in gs if g > 1]
    w = n_workers(len(gs) + cfg.adam_h_nets * len(chaos), pool_workers(cfg))
    if dev == "cpu" and w > 1 and not os.environ.get("REPRO_CLUSTER", "").strip():
        fits, teachers = pooled(cfg, run.streams, gs, chaos, dev, w)
    else:
        # the horizon claim in chaos: adam_h_nets chaotic teachers of their own, each with the paper's Adam student
        checked = {g: chaotic_teachers(cfg, run.streams, g) for g in chaos}
        students = [(g, horizon_student_kw(cfg, s, g, dev)) for g, (chosen, _) in checked.items() for s in chosen]
        if dev == "cpu":
            res = pmap(_one, [dict(fn="fit", kw=dict(cfg=cfg, streams=run.streams, g=g, dev=dev)) for g in gs]
                       + [dict(fn="student", kw=kw) for _, kw in students], workers=pool_workers(cfg), desc="fits")
        else:
            res = [fit_gain(cfg, run.streams, g, dev) for g in gs] + [tasks.adam_student_task(**kw) for _, kw in students]
        fits = res[: len(gs)]
        teachers = {g: ([r for (gg, _), r in zip(students, res[len(gs):]) if gg == g], lams)
                    for g, (_, lams) in checked.items()}
    out, metrics = {}, {}
    for g, (m, data) in zip(gs, fits):
        out[g] = data
        metrics.update(m)
    for g, (mine, lams) in teachers.items():
        metrics.update(chaotic_student_metrics(gain_key(g), mine, lams, cfg.adam_h_min_lam, cfg.adam_t_max))
        if mine:                                  # the figure: the first chosen teacher's student
            out[g].update(pair={"t": mine[0]["t"], "rms": mine[0]["rms"]}, r=mine[0]["r"])
    return {"metrics": metrics, "by_g": out}


def pooled(cfg, streams, gs: list, chaos: list, dev: str, workers: int) -> tuple[list, dict]:
    """`measure`'s work in one pool of `workers` spawned processes (`pool.kept`, or an outer kept pool: one BLAS
    and torch thread each): the exponent checks of the first adam_h_nets draws of each chaotic gain (short: their
    answers decide the students), the gains' fits (`fit_gain_task`), then, as the checks come back in draw
    order, each chaotic teacher's student and, for each teacher found not chaotic, the next draw's check. Only
    the missing teachers' checks are ever in flight, so every check is counted and no student is fitted for
    nothing: the same teachers, exponents and students as `chaotic_teachers` one draw after the other. Returns
    (the fits in the order of `gs`, {g: (the students in draw order, every drawn teacher's exponent)})."""
    from concurrent.futures import FIRST_COMPLETED, wait

    # the workers start at a submit: `pool.submit` holds the one-thread variables then, or each worker's torch
    # would take a thread per core
    with pool.kept(workers):
        checks = {g: [] for g in chaos}          # per gain: (draw's streams, its check's future), in draw order

        def draw(g):
            s = streams.child("net", len(checks[g]))
            checks[g].append((s, pool.submit(teacher_exponent_task, cfg, s, g)))

        for g in chaos:
            for _ in range(min(cfg.adam_h_nets, cfg.adam_h_max_draws)):
                draw(g)
        fit_futures = [pool.submit(fit_gain_task, cfg, streams, g, dev) for g in gs]
        lams = {g: [] for g in chaos}
        students = {g: [] for g in chaos}
        while pending := [f for g in chaos for _, f in checks[g][len(lams[g]):]]:
            wait(pending, return_when=FIRST_COMPLETED)
            for g in chaos:
                while len(lams[g]) < len(checks[g]) and checks[g][len(lams[g])][1].done():
                    s, fut = checks[g][len(lams[g])]
                    lams[g].append(fut.result())
                    if lams[g][-1] >= cfg.adam_h_min_lam:
                        students[g].append(pool.submit(adam_student_task, horizon_student_kw(cfg, s, g, dev)))
                    elif len(checks[g]) < cfg.adam_h_max_draws:
                        draw(g)                   # not chaotic: one more draw
        fits = [f.result() for f in fit_futures]
        return fits, {g: ([f.result() for f in students[g]], lams[g]) for g in chaos}


def _one(fn: str, kw: dict):
    """One task of `measure`'s pool: a gain's fits (`fit_gain_task`) or a chaotic teacher's student."""
    return fit_gain_task(**kw) if fn == "fit" else adam_student_task(kw)
