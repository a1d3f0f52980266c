"""The worker tasks: one unit of work per (g, seed), fanned out with `common.parallel.pmap`.

Z. Yu and H. Huang, "Network reconstruction may not mean dynamics prediction",
https://arxiv.org/abs/2409.04240

Each task is a module-level function (pmap ships it to spawned processes or Dask workers by its
qualified name, `papers.netrecon.tasks.<name>`) that builds its own network from its `streams` (a child of
the run's keyed streams, `run.streams.child("net", s)`, picklable): `streams.rng("network", N, g, <kind>)`,
so a result depends only on its arguments, whatever process runs it. Results are small (no N-sized arrays except where asked) so they travel cheaply
between processes. `dispatch` lets one pool mix task kinds; `grid_tasks` and `stationary_tasks` are
the task lists two notebooks share (01 and 05, 04 and 05), so the second one reads them from the
run's cache (`cache.cached_pmap`).
"""
from __future__ import annotations

import numpy as np

from common.seed import Streams

from . import lyap, predict, recon, rnn
from .predict import relative_error


def autocorrelation(states: np.ndarray, max_lag: int, per_trajectory: bool = False) -> np.ndarray:
    """Delta(k) = <x_i(t) x_i(t+k)> averaged over t, units and trajectories; states (R, K, N).

    With `per_trajectory` the trajectories are kept apart: shape (max_lag + 1, K).

    Paper: the DMFT section's Delta(tau), measured on simulations (README maths (M4))."""
    states = np.asarray(states, dtype=np.float64)
    R = states.shape[0]
    if max_lag >= R:
        max_lag = R - 1
    n_fft = 1 << int(np.ceil(np.log2(2 * R)))
    # along axis 0 as laid out: transforming contiguous copies gives the same bits but measured slower here
    # ((6000, 2, 1000) float32 states, 2-core Xeon 6/207: 1.00-1.35 s against 0.97-0.99 s a call)
    f = np.fft.rfft(states, n=n_fft, axis=0)
    ac = np.fft.irfft(f * np.conj(f), n=n_fft, axis=0)[: max_lag + 1]  # sum_t x(t) x(t+k)
    norm = R - np.arange(max_lag + 1)
    if per_trajectory:
        return ac.mean(axis=2) / norm[:, None]
    return ac.mean(axis=(1, 2)) / norm


def num_key(x: float) -> str:
    """A stream key for a number (keys are strings or integers): 2.0 -> '2', 0.001 -> '0.001'."""
    return f"{float(x):.12g}"


def network(N: int, g: float, streams: Streams, *keys):
    """The teacher J for (N, g, keys) from `streams` and a generator for everything else in the task."""
    rng = streams.rng("network", N, num_key(g), *keys)
    return rnn.make_J(N, g, rng), rng


def net_index(streams: Streams):
    """The network's index in its study (the last key of `run.streams.child("net", s)`), for labels."""
    return streams.keys[-1] if streams.keys else None


def dispatch(fn: str, kw: dict):
    """Run the task of this module named `fn` with keyword arguments `kw` (lets one pmap mix task kinds)."""
    return globals()[fn](**kw)


def grid_tasks(cfg, streams: Streams) -> list[dict]:
    """`lyapunov_task` arguments of the lambda(g) grid (notebooks 01 and 05 share them through the cache; their
    figures plot lambda only, so no linear exponent)."""
    return [dict(N=cfg.grid_N, g=float(g), streams=streams.child("net", s), n_traj=cfg.grid_n_traj,
                 t_transient=cfg.grid_t_transient, t_average=cfg.grid_t_average, t_align=cfg.grid_t_align, dt=cfg.dt,
                 linear=False)
            for g in cfg.grid_gs for s in range(cfg.grid_seeds)]


def stationary_tasks(cfg, streams: Streams) -> list[dict]:
    """`lyapunov_task` arguments of the N = st_N stationary runs, float32 tangent map with recorded states
    (notebooks 04 and 05 share them through the cache)."""
    return [dict(N=cfg.st_N, g=float(g), streams=streams.child("net", s), n_traj=cfg.st_n_traj, t_transient=cfg.st_t_transient,
                 t_average=cfg.st_t_average, t_align=cfg.st_t_align, dt=cfg.dt, record_dt=cfg.st_record_dt,
                 max_lag_time=cfg.st_max_lag, method="tangent", dtype=cfg.st_dtype,
                 fused=cfg.st_n_traj == 1)   # more rows: BLAS's blocked product reads J once for all of them
            for g in cfg.st_gs for s in range(cfg.st_seeds)]


def lyapunov_task(N: int, g: float, streams: Streams, n_traj: int, t_transient: float, t_average: float,
                  t_align: float = 0.0, dt: float = rnn.DT, method: str = "two-trajectory",
                  record_dt: float = 0.0, max_lag_time: float = 0.0, dtype: str = "float64",
                  fused: bool = True, linear: bool = True) -> dict:
    """lambda of one network (several initial states), optional autocorrelation Delta_sim(tau).

    Below onset also the linear map's exponent `lam_linear` (`lyap.quiescent_exponent`: the eigenvalues of J,
    about a second at N = 1000) unless `linear=False` (NaN then), for runs whose readers take only lambda.

    Paper: the largest Lyapunov exponent against g figure and, with states recorded, Delta(tau) of the
    DMFT section (README maths (M7), (M4))."""
    J, rng = network(N, g, streams, "lyap")
    x0 = rng.standard_normal((n_traj, N))
    rec = int(round(record_dt / dt)) if record_dt else 0
    res = lyap.largest_exponent(J, x0, dt=dt, t_transient=t_transient, t_average=t_average,
                                t_align=t_align, method=method, rng=rng, record_every=rec, dtype=dtype,
                                fused=fused)
    out = {"N": N, "g": g, "net": net_index(streams), "lam": res.lam.tolist(), "lam_mean": res.mean,
           "times": res.times, "running": res.running.mean(axis=1),
           "lam_linear": lyap.quiescent_exponent(J, dt) if g < 1 and linear else float("nan")}
    if rec:
        states = res.extra["states"]
        lag = int(round(max_lag_time / record_dt))
        out["tau"] = np.arange(lag + 1) * record_dt
        out["Delta_each"] = autocorrelation(states, lag, per_trajectory=True)   # (lag, K)
        out["Delta"] = out["Delta_each"].mean(axis=1)
    return out


def trajectories_task(N: int, g: float, streams: Streams, t_max: float, n_show: int, dt: float = rnn.DT) -> dict:
    """A few units of one teacher trajectory from x0 ~ N(0, I) (for plots).

    Paper: the teacher-trajectory figure (15 units at g = 0.8 and 2)."""
    J, rng = network(N, g, streams, "traj")
    x = rnn.simulate(J, rng.standard_normal(N), int(round(t_max / dt)), dt=dt, record_every=10)
    return {"t": np.arange(x.shape[0]) * 10 * dt, "x": x[:, :n_show], "g": g}


def horizon_task(N: int, g: float, streams: Streams, etas: list, n_x0: int, t_burn: float, t_max: float,
                 delta: float, t_lyap: float, t_align: float = 0.0, dt: float = rnn.DT, record_every: int = 20) -> dict:
    """T_pd for students sqrt(1-eta^2) J + eta J' over a grid of eta, and lambda of the same network.

    The teacher first relaxes for t_burn onto its attractor; all students start from that state.

    Paper: the T_pd against eta and one-step error against eta figures (README maths (M8)).
    """
    J, rng = network(N, g, streams, "horizon")
    etas = np.asarray(etas, dtype=np.float64)
    JS = rnn.perturb(J, etas, g, rng)
    x0 = rnn.relax(J, rng.standard_normal((n_x0, N)), t_burn, dt=dt)
    # in chaos each student stops once its states have all crossed delta (the same T_pd, fewer steps)
    res = predict.run_pair(J, JS, x0, t_max=t_max, dt=dt, delta=delta if g > 1 else None,
                           record_every=record_every, stop_crossed=g > 1)
    eps = np.stack([predict.one_step_error(J, JS[i], x0, dt) for i in range(len(etas))])
    phi2_each = np.mean(np.tanh(x0) ** 2, axis=1)
    x2_each = np.mean(x0**2, axis=1)          # <x^2> per state: the linearised law's phi(x) = x
    out = {"x2_each": x2_each, "N": N, "g": g, "net": net_index(streams), "etas": etas, "t": res["t"], "D_mean": res["D"].mean(axis=2),
           "eps": eps.mean(axis=1), "eps_each": eps, "phi2": float(phi2_each.mean()), "phi2_each": phi2_each, "r": [recon.pearson_r(W, J) for W in JS],
           "d_W": [recon.d_W(W, J) for W in JS]}
    if g > 1:
        out["T_pd"] = res["T_pd"]
        # two states (four rows per product) keep the product in the fast small-matrix regime
        lr = lyap.largest_exponent(J, x0[:2], dt=dt, t_transient=0.0, t_align=t_align, t_average=t_lyap, rng=rng)
        out["lam"] = lr.mean
    return out



def teacher_exponent_task(N: int, g: float, streams: Streams, t_burn: float, t_lyap: float, t_align: float = 10.0,
                          dt: float = rnn.DT) -> float:
    """The largest exponent of the teacher that `adam_student_task` draws from the same `streams`, from two
    states on its attractor (after `t_burn`): the chaos check of the Adam student's horizon claim. At N = 200
    and g = 2 some draws settle on a fixed point or a cycle (exponent <= 0), a finite-N effect.

    Paper: the largest Lyapunov exponent against g figure (README maths (M7))."""
    J, rng = network(N, g, streams, "adam-horizon")
    x0 = rnn.relax(J, rng.standard_normal((2, N)), t_burn, dt=dt)
    return float(lyap.largest_exponent(J, x0, dt=dt, t_transient=0.0, t_align=t_align, t_average=t_lyap, rng=rng).mean)


def adam_student_task(N: int, g: float, streams: Streams, n_traj: int, n_steps: int, epochs: int, lr: float,
                      batch_size: int, window: int, n_x0: int, t_burn: float, t_max: float, delta: float,
                      dt: float = rnn.DT, device: str = "cpu") -> dict:
    """The paper's Adam protocol on the teacher of `teacher_exponent_task` (same `streams`), then the student
    against its teacher from `n_x0` attractor states: T_pd per state (NaN: not reached by t_max), r(W, J), and the
    RMS error per unit over time ("t", "rms": (time, state), up to the last crossing) for the figure.

    Paper: the reconstruction section and the teacher-student trajectory figure (README maths (M3), (M8))."""
    J, _ = network(N, g, streams, "adam-horizon")
    rng = streams.rng("adam-horizon-data", N, num_key(g))
    traj = rnn.simulate(J, rng.standard_normal((n_traj, N)), n_steps, dt=dt)
    W, _ = recon.fit_adam(traj, dt, epochs=epochs, lr=lr, batch_size=batch_size, window=window,
                          generator=streams.torch_generator("adam-horizon", num_key(g)), device=device)
    x0 = rnn.relax(J, rng.standard_normal((n_x0, N)), t_burn, dt=dt)
    pair = predict.run_pair(J, W, x0, t_max=t_max, dt=dt, delta=delta, record_every=10)   # stops once all crossed
    return {"T_pd": pair["T_pd"], "r": recon.pearson_r(W, J), "g": g, "net": net_index(streams),
            "t": pair["t"], "rms": np.sqrt(pair["D"])}


def quiescent_pair_task(N: int, g: float, streams: Streams, eta: float, n_x0: int, t_max: float,
                        dt: float = rnn.DT, ctrl_eta_horizon: float | None = None,
                        ctrl_t_horizon: float | None = None, delta: float = 0.3, rel_etas: list | None = None) -> dict:
    """g < 1: teacher-student error from x0 ~ N(0, I), in units of eta and relative to the teacher's
    own (decaying) state, and the nulls.

    Controls, from the same states and drawn after the claim's student (so its numbers do not move):
    the untrained student, an independent J' of the same ensemble (eta = 1: it knows the statistics of
    J, not J), in the same regime; and the horizon T_pd (sqrt(D) reaches `delta`) of an eta =
    `ctrl_eta_horizon` student of this g < 1 teacher, run to `ctrl_t_horizon` and censored there
    (NaN -> ctrl_t_horizon: never crossed). Below onset every state decays to x = 0, so the error of
    any student decays with it: only the error relative to the teacher's state tells a student that
    learned J from one that did not.

    Paper: the teacher-student error figure at g = 0.8 (README maths (M8)).
    """
    J, rng = network(N, g, streams, "quiescent")
    JS = rnn.perturb(J, eta, g, rng)
    x0 = rng.standard_normal((n_x0, N))
    # the teacher once, to the longest run's end; every run below reads its states (the same D, bit for bit)
    n_steps = int(round(max(t_max, ctrl_t_horizon if ctrl_eta_horizon is not None else 0.0) / dt))
    teacher = rnn.simulate(J, x0, n_steps, dt=dt, record_every=10)   # (time, state, N)
    res = predict.run_pair(J, JS, x0, t_max=t_max, dt=dt, record_every=10, teacher=teacher)
    ms = np.mean(teacher[: len(res["t"])] ** 2, axis=-1)                # <x_T^2>(t), (time, state)
    each = np.sqrt(res["D"]) / eta                                      # (time, state)
    out = {"t": res["t"], "rms_over_eta": each.mean(axis=1), "rms_over_eta_each": each, "g": g, "eta": eta,
           "teacher_rms_each": np.sqrt(ms), "rel_each": relative_error(res["D"], ms)}
    crng = streams.rng("quiescent-control", N, num_key(g))
    un = predict.run_pair(J, rnn.perturb(J, 1.0, g, crng), x0, t_max=t_max, dt=dt, record_every=10, teacher=teacher)
    out["untrained_rms_over_eta_each"] = np.sqrt(un["D"]) / eta
    out["untrained_rel_each"] = relative_error(un["D"], ms)
    if ctrl_eta_horizon is not None:
        h = predict.run_pair(J, rnn.perturb(J, ctrl_eta_horizon, g, crng), x0, t_max=ctrl_t_horizon, dt=dt,
                             delta=delta, record_every=10, teacher=teacher)
        out["horizon_T_pd"] = np.where(np.isnan(h["T_pd"]), ctrl_t_horizon, h["T_pd"])   # censored
        out["horizon_max_rms"] = float(np.sqrt(np.nanmax(h["D"])))
    if rel_etas:
        # students over an eta grid (drawn last, from their own stream): the relative horizon T_rel,
        # the first t with RMS(x_S - x_T) / RMS(x_T) >= delta (NaN: not reached by t_max)
        erng = streams.rng("quiescent-eta-grid", N, num_key(g))
        grid = predict.run_pair(J, rnn.perturb(J, np.asarray(rel_etas, dtype=np.float64), g, erng), x0, t_max=t_max,
                                dt=dt, record_every=10, teacher=teacher)
        rel = relative_error(grid["D"], ms[:, None, :])                  # (time, eta, state)
        out["rel_etas"] = list(rel_etas)
        out["rel_T"] = predict.first_crossing(rel, grid["t"], delta)      # (eta, state)
    return out


def pair_distance_task(N: int, g: float, eta: float, streams: Streams, n_x0: int, T: float, dt: float = rnn.DT,
                       dtype: str = "float64") -> dict:
    """Simulated D(t) for teacher J and student sqrt(1-eta^2) J + eta J' from x0 ~ N(0, I).

    `dtype="float32"` runs the pair in single precision (`predict.run_pair`): at eta >= 0.1 the
    students' one-step difference is 1e4 times the rounding.

    Paper: the two-replica DMFT against simulation figure (README maths (M6))."""
    J, rng = network(N, g, streams, "pair", num_key(eta))
    JS = rnn.perturb(J, eta, g, rng)
    res = predict.run_pair(J, JS, rng.standard_normal((n_x0, N)), t_max=T, dt=dt, record_every=5,
                           dtype=np.dtype(dtype))
    return {"t": res["t"], "D": res["D"].mean(axis=1), "D_each": res["D"], "g": g, "eta": eta, "net": net_index(streams)}


def data_size_task(N: int, g: float, streams: Streams, n_trajs: list, n_steps: int, noise: float, ridge: float,
                   t_burn: float, n_x0: int, t_max: float, delta: float, t_lyap: float,
                   t_align: float = 0.0, dt: float = rnn.DT, horizons: bool = True) -> dict:
    """d_W and T_pd against the number of observed trajectories (ridge least squares, noisy data).

    Without `horizons` (profile key ds_horizons, off at quick) no student is run against the teacher and no
    exponent is measured: "T_pd" and "lam" are None, every other entry is what it is with them (the skipped
    runs draw last, from the task's own stream). Paper: the effective prediction time against data size
    figure (README maths (M3), (M8)); official `Effective prediction time/`."""
    J, rng = network(N, g, streams, "datasize")
    n_max = max(n_trajs)
    traj = rnn.simulate(J, rng.standard_normal((n_max, N)), n_steps, dt=dt)  # (T+1, n_max, N)
    obs = recon.add_observation_noise(traj, noise, rng)
    Ws = recon.fit_least_squares_nested(obs, dt, n_trajs, ridge=ridge)   # each trajectory's products once
    # null: the same sizes P made of the smallest set's trajectories repeated, each copy with fresh
    # observation noise: more samples, no new dynamics (only the noise is averaged)
    k0, nrng = min(n_trajs), streams.rng("datasize-repeat", N, num_key(g))
    dW_rep = []
    for k in n_trajs:
        rep = recon.add_observation_noise(traj[:, np.arange(k) % k0], noise, nrng)
        dW_rep.append(recon.d_W(recon.fit_least_squares(rep, dt, ridge=ridge), J))
        del rep
    x0 = rnn.relax(J, rng.standard_normal((n_x0, N)), t_burn, dt=dt)
    T_pd = lam = None
    if horizons:
        T_pd = predict.run_pair(J, np.stack(Ws), x0, t_max=t_max, dt=dt, delta=delta, record_every=50,
                                stop_crossed=True)["T_pd"]
        lam = lyap.largest_exponent(J, x0[:2], dt=dt, t_transient=0.0, t_align=t_align, t_average=t_lyap, rng=rng).mean
    eps = [float(predict.one_step_error(J, W, x0, dt).mean()) for W in Ws]
    return {"n_trajs": list(n_trajs), "P": [k * n_steps for k in n_trajs], "eps": eps,
            "d_W": [recon.d_W(W, J) for W in Ws], "r": [recon.pearson_r(W, J) for W in Ws],
            "d_W_repeat": dW_rep, "T_pd": T_pd, "lam": lam, "net": net_index(streams)}


def two_replica_task(g: float, eta: float, T: float, dt: float, n_nodes: int) -> dict:
    """The two-replica DMFT D(t) (a task, so several (g, eta) run in parallel).

    Paper: the two-replica DMFT section (README maths (M6))."""
    from . import dmft   # imported by the DMFT tasks only: scipy's solvers are most of a worker's start-up

    r = dmft.two_replica(g, eta, T=T, dt=dt, n_nodes=n_nodes)
    return {"g": g, "eta": eta, "t": r.t, "D": r.D, "C_TT": r.C_TT}


def two_replica_group_task(g: float, runs: list, dt: float, n_nodes: int) -> list[dict]:
    """The two-replica DMFT D(t) for several (eta, T) at one gain and time step (`dmft.two_replica_batch`:
    the teacher's kernels solved once), each result as `two_replica_task` gives it.

    Paper: the two-replica DMFT section (README maths (M6))."""
    from . import dmft

    rs = dmft.two_replica_batch(g, [e for e, _ in runs], [T for _, T in runs], dt=dt, n_nodes=n_nodes)
    return [{"g": g, "eta": float(e), "t": r.t, "D": r.D, "C_TT": r.C_TT} for (e, _), r in zip(runs, rs)]


def stationary_dmft_task(g: float, tau_max: float) -> dict:
    """The stationary DMFT at gain g (`dmft.stationary` to tau_max) and lambda_DMFT on it (`dmft.lyapunov`), as a
    task so that notebook 04's theory runs in its pool beside the simulations: {"sol", "lam"}.

    Paper: the DMFT section (README maths (M4), (M5))."""
    from . import dmft

    th = dmft.stationary(g, tau_max=tau_max)
    return {"sol": th, "lam": dmft.lyapunov(g, stat=th)["lam"]}


def dmft_lambda_task(g: float) -> float:
    """lambda_DMFT at gain g (`dmft.lyapunov`), as a task so that a notebook's gains run in its pool.

    Paper: the DMFT section (README maths (M5))."""
    from . import dmft

    return float(dmft.lyapunov(g)["lam"])


def mismatch_task(N: int, g: float, streams: Streams, eta: float, t_total: float, t_discard: float,
                  dt: float = rnn.DT, t_lyap: float = 50.0) -> dict:
    """The official "OS" teacher-student rate (dp.py protocol) next to the teacher's true exponent.

    As in the released script: teacher and student J_S = sqrt(1-eta^2) J + eta J' start from the same
    x0 ~ N(0, I) with no transient, the student is pulled back every step to the one-step error
    eps = ||x_S(1) - x_T(1)||, and the first `t_discard` of the `t_total` run is dropped. The rate
    with a fixed eps = 1e-6 is logged too, to show that the "rate" depends on eps (it is no exponent).

    Official `dp.py` (README maths (M9), erratum 2).
    """
    J, rng = network(N, g, streams, "mismatch")
    JS = rnn.perturb(J, eta, g, rng)
    x0 = rng.standard_normal((1, N))
    off = predict.mismatch_rate(J, JS, x0, t_total=t_total, t_discard=t_discard, dt=dt)
    fixed = predict.mismatch_rate(J, JS, x0, t_total=t_total, t_discard=t_discard, dt=dt, eps=1e-6)
    lam = lyap.largest_exponent(J, x0, dt=dt, t_transient=20.0, t_average=t_lyap, t_align=5.0, rng=rng)
    return {"g": g, "net": net_index(streams), "os_rate": float(off["rate"][0]), "eps": float(off["eps"][0]),
            "os_rate_eps1e-6": float(fixed["rate"][0]), "lam": lam.mean}


def spectrum_task(N: int, g: float, streams: Streams, k: int, t_average: float, dt: float = rnn.DT) -> dict:
    """The k largest exponents of one network by QR, with running estimates.

    A diagnostic, not in the paper (README maths (M7))."""
    J, rng = network(N, g, streams, "spectrum")
    r = lyap.spectrum(J, rng.standard_normal(N), k, dt=dt, t_transient=20.0, t_ons_transient=10.0,
                      t_average=t_average, t_ons=0.5, rng=rng)
    return {"lam": r.lam, "times": r.times, "running": r.running}
