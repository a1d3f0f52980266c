"""Teacher-student prediction: the distance D(t), the horizon T_pd and the one-step error law.

Z. Yu and H. Huang, "Network reconstruction may not mean dynamics prediction",
https://arxiv.org/abs/2409.04240

Teacher (couplings J) and student (couplings W, learned or sqrt(1-eta^2) J + eta J') start from
the same state. Their distance D(t) = (1/N) ||x_T(t) - x_S(t)||^2 stays O(eta^2) for g < 1 and
decays; for g > 1 it grows like exp(2 lambda t) until it saturates at 2 Delta_0. The prediction
horizon is the first time the RMS distance sqrt(D) exceeds a tolerance delta:

    T_pd ~ lambda^{-1} ln(delta / eps),   eps ~ one-step error ~ eta,

so T_pd is linear in ln(1/eta) with slope 1/lambda: a 100-fold better reconstruction buys only
ln(10)/lambda more time.
"""
from __future__ import annotations

import numpy as np

from common.errors import UserError

from .rnn import DT, check_params, euler_step, transposed


def distance(xT: np.ndarray, xS: np.ndarray) -> np.ndarray:
    """D = (1/N) ||x_T - x_S||^2 over the last axis.

    Paper: the two-replica DMFT against simulation figure, D(t) (README maths (M6)); official `total.py`."""
    return np.mean((xT - xS) ** 2, axis=-1)  # D(t) = (1/N) sum_i (x_i^T - x_i^S)^2


def relative_error(D: np.ndarray, teacher_ms: np.ndarray) -> np.ndarray:
    """RMS(x_S - x_T) / RMS(x_T): the teacher-student distance D = <(x_S - x_T)^2> in units of the
    teacher's own mean square state <x_T^2> (broadcast over students); 0 where both vanish.

    Our reading of the paper's g < 1 claim (teacher-student error figure at g = 0.8): below onset
    every state decays to x = 0, so the error is judged relative to the teacher's own state."""
    D, ms = np.asarray(D, dtype=np.float64), np.asarray(teacher_ms, dtype=np.float64)
    return np.sqrt(D / np.where(ms > 0, ms, np.inf))


def first_crossing(rms: np.ndarray, t: np.ndarray, delta: float) -> np.ndarray:
    """First time along axis 0 at which `rms` reaches `delta` (linear interpolation); NaN if never.

    Paper: the prediction horizon T_pd (README maths (M8)), measured instead of computed from the formula."""
    above = rms >= delta
    hit = above.any(axis=0)
    i = np.argmax(above, axis=0)
    i0 = np.maximum(i - 1, 0)
    r0 = np.take_along_axis(rms, i0[None], 0)[0]
    r1 = np.take_along_axis(rms, i[None], 0)[0]
    frac = np.where(r1 > r0, (delta - r0) / np.where(r1 > r0, r1 - r0, 1.0), 0.0)
    T = t[i0] + np.clip(frac, 0, 1) * (t[i] - t[i0])
    T = np.where(i == 0, t[0], T)
    return np.where(hit, T, np.nan)


def run_pair(J: np.ndarray, JS: np.ndarray, x0: np.ndarray, t_max: float, dt: float = DT,
             delta: float | None = None, record_every: int = 10, dtype=np.float64,
             stop_crossed: bool = False, teacher: np.ndarray | None = None) -> dict:
    """Teacher J and students JS (shape (S, N, N) or (N, N)) from the same states x0 (K, N).

    Returns times t, D (n_rec, S, K) and, with a tolerance delta, T_pd (S, K): the first time the
    RMS distance sqrt(D) reaches delta. Stops early once every pair has crossed; with `stop_crossed` (and a
    tolerance) a student stops as soon as all its states have crossed (its D is NaN from then on), so the
    stack of students shrinks as the horizons pass: the same T_pd bit for bit, for the cost of the steps
    that are needed (each student's product is its own in the batched matmul). `dtype=np.float32`
    halves the memory traffic of the products; only for students far from their teacher (eta >> 1e-6,
    whose one-step difference dwarfs single-precision rounding), never for the small-eta horizons.
    `teacher`: the teacher's states from x0 already simulated, every `record_every` steps to t_max or beyond
    (`rnn.simulate(J, x0, n, dt=dt, record_every=record_every)`, float64); the teacher is then not stepped again
    (the same map on the same states: D bit for bit as without it).

    Paper: the teacher-student trajectory and T_pd against eta figures (README maths (M8)).
    """
    check_params(N=J.shape[-1], dt=dt)
    if t_max <= 0 or record_every < 1:
        raise UserError("run_pair needs t_max > 0 and record_every >= 1")
    if delta is not None and delta <= 0:
        raise UserError(f"tolerance delta={delta} must be positive")
    single = JS.ndim == 2
    JS = JS[None] if single else JS
    xT = np.atleast_2d(np.array(x0, dtype=dtype))
    S, (K, N) = JS.shape[0], xT.shape
    JT, JST = transposed(J).astype(dtype, copy=False), transposed(JS).astype(dtype, copy=False)
    xS = np.broadcast_to(xT, (S, K, N)).copy()
    n_steps = int(round(t_max / dt))
    n_rec = n_steps // record_every + 1
    if teacher is not None and (np.dtype(dtype) != np.float64 or teacher.shape[0] < n_rec
                                or teacher.shape[1:] != xT.shape):
        raise UserError(f"the teacher's recorded states {teacher.shape} do not cover {n_rec} records of "
                        f"{xT.shape} float64 states")
    D = np.full((n_rec, S, K), np.nan)
    D[0] = 0.0
    T_pd = np.full((S, K), np.nan)
    prev = np.zeros((S, K))
    lo, hi = 0, S                 # the students still stepped (a slice: a view, no copy of their couplings)
    for n in range(1, n_steps + 1):
        if teacher is None:
            xT = euler_step(xT, JT, dt)
        xS[lo:hi] = euler_step(xS[lo:hi], JST[lo:hi], dt)
        if n % record_every:
            continue
        if teacher is not None:
            xT = teacher[n // record_every]
        d = distance(xT[None], xS)
        d[:lo], d[hi:] = np.nan, np.nan     # stopped students (stop_crossed): nothing recorded
        D[n // record_every] = d
        if delta is not None:
            # first crossing of sqrt(D) = delta, interpolated in ln sqrt(D) between records
            lr, lp = 0.5 * np.log(np.maximum(d, 1e-300)), 0.5 * np.log(np.maximum(prev, 1e-300))
            new = np.isnan(T_pd) & (lr >= np.log(delta))
            frac = np.clip((np.log(delta) - lp) / np.maximum(lr - lp, 1e-300), 0.0, 1.0)
            T_pd = np.where(new, (n - record_every + frac * record_every) * dt, T_pd)
            prev = d
            if not np.isnan(T_pd).any():
                D = D[: n // record_every + 1]
                break
            if stop_crossed:
                live = np.flatnonzero(np.isnan(T_pd).any(axis=1))
                lo, hi = live[0], live[-1] + 1
    t = np.arange(D.shape[0]) * record_every * dt
    out = {"t": t, "D": D[:, 0] if single else D}
    if delta is not None:
        out["T_pd"] = T_pd[0] if single else T_pd
    return out


def fit_log_slope(eta: np.ndarray, T_pd: np.ndarray) -> dict:
    """Least-squares line T_pd = a + b ln(1/eta); b estimates 1/lambda. Returns b, a, R^2, lambda_fit = 1/b.

    Paper: the T_pd against eta figure, T_pd linear in ln(1/eta) with slope 1/lambda (README maths (M8))."""
    x = np.log(1.0 / np.asarray(eta, dtype=np.float64))
    y = np.asarray(T_pd, dtype=np.float64)
    ok = np.isfinite(y)
    if ok.sum() < 3:
        raise UserError("fewer than three finite horizons; raise t_max or the tolerance")
    b, a = np.polyfit(x[ok], y[ok], 1)  # T_pd = a + b ln(1/eta)
    resid = y[ok] - (a + b * x[ok])
    r2 = 1.0 - resid.var() / y[ok].var()
    return {"slope": float(b), "intercept": float(a), "r2": float(r2), "lam_fit": float(1.0 / b)}


def fit_power_law(eta: np.ndarray, T_pd: np.ndarray) -> dict:
    """The competing power law T_pd = A eta^-b: a line ln T_pd = ln A + b ln(1/eta) fitted by least
    squares, and its R^2 on T_pd itself (1 - sum (T - A eta^-b)^2 / sum (T - mean T)^2), so that it
    compares with `fit_log_slope`'s R^2 of the logarithmic law on the same numbers.

    Not the paper's: the competitor of claim `chaos-horizon-linear-g3` (README, controls)."""
    x = np.log(1.0 / np.asarray(eta, dtype=np.float64))
    y = np.asarray(T_pd, dtype=np.float64)
    ok = np.isfinite(y) & (y > 0)
    if ok.sum() < 3:
        raise UserError("fewer than three finite horizons; raise t_max or the tolerance")
    b, lnA = np.polyfit(x[ok], np.log(y[ok]), 1)  # ln T = ln A + b ln(1/eta)
    resid = y[ok] - np.exp(lnA + b * x[ok])
    r2 = 1.0 - np.sum(resid**2) / np.sum((y[ok] - y[ok].mean()) ** 2)
    return {"exponent": float(b), "A": float(np.exp(lnA)), "r2": float(r2)}


def law_residual_ratio(eta: np.ndarray, T_pd: np.ndarray) -> float:
    """The logarithmic law's residual variance over the power law's on the same horizons:
    (1 - R^2_log) / (1 - R^2_power), both R^2 on T_pd itself (`fit_log_slope`, `fit_power_law`).
    Below 1 the log law fits better; claim `chaos-horizon-linear-g3` (README, controls)."""
    return float((1.0 - fit_log_slope(eta, T_pd)["r2"]) / (1.0 - fit_power_law(eta, T_pd)["r2"]))


def law_curvature_ratio(eta: np.ndarray, T_pd: np.ndarray) -> float:
    """How curved T_pd is against x = ln(1/eta), in units of the best power law's curvature on the same eta:
    the quadratic coefficient of T_pd(x) over that of A eta^-b (`fit_power_law`), both fitted by least squares
    in x centred. 0 for the logarithmic law (a straight line in x), 1 for a power law (convex in x).
    Claim `chaos-horizon-linear-g3` (README, controls)."""
    eta = np.asarray(eta, dtype=np.float64)
    y = np.asarray(T_pd, dtype=np.float64)
    ok = np.isfinite(y) & (y > 0)
    if ok.sum() < 4:
        raise UserError("fewer than four finite horizons; raise t_max or the tolerance")
    x = np.log(1.0 / eta[ok])
    xc = x - x.mean()
    p = fit_power_law(eta[ok], y[ok])
    return float(np.polyfit(xc, y[ok], 2)[0] / np.polyfit(xc, p["A"] * eta[ok] ** -p["exponent"], 2)[0])


def one_step_error(J: np.ndarray, JS: np.ndarray, x0: np.ndarray, dt: float = DT) -> np.ndarray:
    """eps = ||x_S(1) - x_T(1)|| from identical states (Euclidean norm over units), per state.

    Paper: the one-step error against eta figure (README maths (M8)); official `eta and T.py`."""
    x0 = np.atleast_2d(x0)
    return np.linalg.norm(euler_step(x0, transposed(JS), dt) - euler_step(x0, transposed(J), dt), axis=-1)


def one_step_theory(N: int, g: float, eta, phi2: float, dt: float = DT):
    """eps ~ dt sqrt(2 N g^2 (1 - rho) <phi^2>), rho = sqrt(1 - eta^2), <phi^2> over the states.

    The law behind the one-step error against eta figure (README maths (M8); derived in the reference
    notes, not read from the paper)."""
    rho = np.sqrt(1.0 - np.asarray(eta, dtype=np.float64) ** 2)
    return dt * np.sqrt(2.0 * N * g**2 * (1.0 - rho) * phi2)  # eps = dt sqrt(2 N g^2 (1-rho) <phi^2>)


def horizon_formula(lam: float, delta: float, eps) -> np.ndarray:
    """The paper's T_pd = lambda^{-1} ln(delta / eps) (delta and eps as Euclidean norms).

    Paper: the T_pd formula (README maths (M8)); official `eta and T.py`, `3pT.py`."""
    return np.log(delta / np.asarray(eps)) / lam  # T_pd = ln(delta/eps) / lambda


def mismatch_rate(J: np.ndarray, JS: np.ndarray, x0: np.ndarray, t_total: float, t_discard: float,
                  dt: float = DT, eps: float | None = None) -> dict:
    """The official code's teacher-student "OS" rate (its dp.py protocol), to show it is not an exponent.

    Teacher J and student JS start from the same states x0 (K, N). After the first step the student
    sits at the one-step error eps = ||x_S(1) - x_T(1)|| from the teacher (or at a given `eps`);
    every later step it is advanced by its own map, the rate ln(d/eps)/dt is recorded, and it is
    pulled back to distance eps along its offset. Rates of the first `t_discard` are dropped.
    Because teacher and student are different systems, the mismatch dt (J - J_S) tanh(x_T) enters
    every step with a size of the order of the one-step error itself, so the "rate" is about
    ln(1 + |forcing| / eps) / dt, of order ln(2)/dt, not lambda. Returns {"rate": (K,), "eps": (K,)}.

    Official `dp.py` (README maths (M9), erratum 2).
    """
    xT = np.atleast_2d(np.array(x0, dtype=np.float64))
    JT, JST = transposed(J), transposed(JS)
    n_total, n_discard = int(round(t_total / dt)), int(round(t_discard / dt))
    if not 1 <= n_discard < n_total - 1:
        raise UserError("mismatch_rate needs 0 < t_discard < t_total - 2 dt")
    xS = euler_step(xT, JST, dt)
    xT = euler_step(xT, JT, dt)
    d = np.linalg.norm(xS - xT, axis=-1)
    eps_used = d if eps is None else np.full_like(d, eps)   # official: eps = ||x_S(1) - x_T(1)||
    xS = xT + (xS - xT) * (eps_used / d)[:, None]
    acc = np.zeros(xT.shape[0])
    for n in range(1, n_total):
        xT, xS = euler_step(xT, JT, dt), euler_step(xS, JST, dt)
        d = np.linalg.norm(xS - xT, axis=-1)
        if n > n_discard:
            acc += np.log(d / eps_used) / dt             # rate_t = ln(d / eps) / dt
        xS = xT + (xS - xT) * (eps_used / d)[:, None]
    return {"rate": acc / (n_total - 1 - n_discard), "eps": eps_used}
