"""Lyapunov exponents of the rate network: Benettin's two-trajectory method and the QR spectrum.

Z. Yu and H. Huang, "Network reconstruction may not mean dynamics prediction",
https://arxiv.org/abs/2409.04240

The largest exponent lambda sets the prediction horizon T_pd ~ ln(delta/eps)/lambda. For the
Euler map x_{t+1} = (1-dt) x_t + dt J tanh(x_t) the Jacobian is

    D_t = (1 - dt) I + dt J diag(sech^2 x_t),

so with J = 0 every exponent is ln(1 - dt)/dt, and in the quiescent phase (g < 1) the largest is
ln|1 - dt + dt mu|/dt ~ g - 1 with mu the eigenvalue of J of largest real part.

Both estimators take the state transient (`t_transient`) and, for the spectrum, a tangent-space
transient (`t_ons_transient`) as parameters and return running estimates for diagnostics. All
trajectories in a batch share each step's product over J, a pair of states per pass (kernels.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from common.errors import UserError

from .kernels import rows_times_JT
from .rnn import DT, check_params, euler_step, transposed


@dataclass
class LyapunovResult:
    """lambda per trajectory, its mean and standard error, and the running estimates."""
    lam: np.ndarray                      # (K,) one estimate per trajectory
    times: np.ndarray                    # (R,) times of the running estimates (after the transient)
    running: np.ndarray                  # (R, K) running estimates lambda(t)
    extra: dict = field(default_factory=dict)

    @property
    def mean(self) -> float:
        return float(np.mean(self.lam))

    @property
    def sem(self) -> float:
        K = len(self.lam)
        return float(np.std(self.lam, ddof=1) / np.sqrt(K)) if K > 1 else float("nan")


def _steps(t: float, dt: float) -> int:
    return int(round(t / dt))


def default_stream() -> np.random.Generator:
    """The start vectors' generator when a caller passes none (tests, benchmarks): one fixed keyed stream."""
    from common.seed import Streams

    return Streams(0).rng("lyap", "start-vector")


def largest_exponent(J: np.ndarray, x0: np.ndarray, dt: float = DT, t_transient: float = 20.0,
                     t_average: float = 100.0, method: str = "two-trajectory", eps: float = 1e-6,
                     t_align: float = 0.0, dtype=np.float64,
                     renorm_every: int = 1, n_running: int = 200, record_every: int = 0,
                     rng: np.random.Generator | None = None, fused: bool = True) -> LyapunovResult:
    """Largest Lyapunov exponent of the Euler map for every row of `x0` (shape (K, N)).

    method "two-trajectory" (the paper's): a companion state at distance `eps` is evolved by the
    same map and pulled back to distance `eps` every `renorm_every` steps;
    method "tangent": the linearised map D_t acts on a unit vector (no eps).
    lambda = (1/T) sum_k ln(d_k / eps) over the averaging window.

    `dtype=np.float32` (tangent method only) halves the memory traffic of the products; the
    exponent is a time average, insensitive to single-precision rounding of the trajectory.
    `t_align` is a tangent transient: the perturbation is evolved and renormalised that long
    before its growth is counted, so it aligns with the most unstable direction first.
    `fused=False` takes BLAS's products instead of the fused pair kernel (kernels.py); the two agree
    to summation order. With `record_every > 0` the states are also recorded every that many steps during the
    averaging window and returned in `extra["states"]` (shape (R, K, N)) for autocorrelations.

    Paper: the largest Lyapunov exponent against g figure (README maths (M7)); official `lledian.py`.
    """
    check_params(N=J.shape[-1], dt=dt)
    if method not in ("two-trajectory", "tangent"):
        raise UserError(f"unknown method {method!r}; choose 'two-trajectory' or 'tangent'")
    if t_transient < 0 or t_align < 0 or t_average <= 0 or renorm_every < 1:
        raise UserError("need t_transient >= 0, t_align >= 0, t_average > 0 and renorm_every >= 1")
    dtype = np.dtype(dtype)
    if dtype == np.float32 and method != "tangent":
        raise UserError("single precision cannot resolve a 1e-6 separation; use method='tangent' or float64")
    x = np.atleast_2d(np.array(x0, dtype=dtype))
    K, N = x.shape
    JT = transposed(J).astype(dtype, copy=False)
    Jc = np.ascontiguousarray(J, dtype=dtype)  # rows of J for the fused pair product
    rng = rng if rng is not None else default_stream()
    n_tr, n_av = _steps(t_transient, dt), _steps(t_average, dt)
    n_av -= n_av % renorm_every
    if n_av == 0:
        raise UserError("t_average is shorter than one renormalisation interval")
    for _ in range(n_tr):  # state transient
        x = euler_step(x, JT, dt)
    u = rng.standard_normal((K, N)).astype(dtype)
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    if t_align > 0:  # tangent transient: align the perturbation, count nothing
        pre = largest_exponent(J, x, dt, 0.0, t_align, method=method, eps=eps, renorm_every=renorm_every,
                               n_running=1, rng=rng, dtype=dtype, fused=fused)
        x, u = pre.extra["x_final"], pre.extra["u_final"]
    states = None
    if record_every:
        from .rnn import check_memory

        check_memory((n_av // record_every) * K * N * 8, "recorded states")
        states = np.empty((n_av // record_every, K, N))
    n_blocks = n_av // renorm_every
    log_sum = np.zeros(K)
    every = max(1, n_blocks // n_running)
    times, running = [], []
    if method == "two-trajectory":
        # in place, each step the same operations in the same order as (1 - dt) z + dt J phi(z) (the same bits);
        # (at N = 500 the numpy calls on 2K rows, not the product, took a third of a step)
        z = np.concatenate([x, x + eps * u])  # reference and companion share one product
        for b in range(n_blocks):
            for s in range(renorm_every):
                prod = rows_times_JT(np.tanh(z), Jc, JT, fused)  # J phi(z), one pass over J (a fresh array)
                prod *= dt
                z *= 1.0 - dt
                z += prod                                        # Euler map: (1 - dt) z + dt J phi(z)
                if states is not None and (b * renorm_every + s + 1) % record_every == 0:
                    states[(b * renorm_every + s + 1) // record_every - 1] = z[:K]
            d = z[K:] - z[:K]
            dist = np.sqrt(np.add.reduce(d * d, axis=1))  # np.linalg.norm(d, axis=1), without its checks
            log_sum += np.log(dist / eps)  # ln(d_k / eps)
            if b == n_blocks - 1:
                u = d / dist[:, None]      # the last direction (`u_final`)
            d *= (eps / dist)[:, None]
            np.add(z[:K], d, out=z[K:])    # pull the companion back to distance eps
            if (b + 1) % every == 0:
                times.append((b + 1) * renorm_every * dt)
                running.append(log_sum / ((b + 1) * renorm_every * dt))
        x_final = z[:K]
    else:
        v = u.copy()
        rows, sech2 = np.empty((2 * K, N), dtype=dtype), np.empty((K, N), dtype=dtype)   # reused every step
        for b in range(n_blocks):
            for s in range(renorm_every):
                np.tanh(x, out=rows[:K])                                   # phi(x)
                np.cosh(x, out=sech2)
                np.square(sech2, out=sech2)
                np.divide(1.0, sech2, out=sech2)                           # sech^2 x = 1 / cosh(x)^2
                np.multiply(sech2, v, out=rows[K:])
                prod = rows_times_JT(rows, Jc, JT, fused)                  # J phi(x), J diag(sech^2 x) v
                x = x * (1 - dt)
                x += dt * prod[:K]                                         # (1 - dt) x + dt J phi(x)
                v = v * (1 - dt)
                v += dt * prod[K:]                                         # v <- D_t v
                if states is not None and (b * renorm_every + s + 1) % record_every == 0:
                    states[(b * renorm_every + s + 1) // record_every - 1] = x
            nv = np.linalg.norm(v, axis=1)
            log_sum += np.log(nv)
            v /= nv[:, None]
            u = v
            if (b + 1) % every == 0:
                times.append((b + 1) * renorm_every * dt)
                running.append(log_sum / ((b + 1) * renorm_every * dt))
        x_final = x
    lam = log_sum.astype(np.float64) / (n_av * dt)  # lambda = (1/T) sum ln(d_k/eps)
    extra = {"x_final": x_final, "u_final": u}
    if states is not None:
        extra["states"] = states
        extra["state_dt"] = record_every * dt
    return LyapunovResult(lam, np.array(times), np.array(running), extra)


def spectrum(J: np.ndarray, x0: np.ndarray, k: int, dt: float = DT, t_transient: float = 20.0,
             t_ons_transient: float = 10.0, t_average: float = 100.0, t_ons: float = 1.0,
             rng: np.random.Generator | None = None, n_running: int = 200) -> LyapunovResult:
    """The `k` largest Lyapunov exponents of one trajectory by repeated QR (Benettin et al.).

    k orthonormal tangent vectors follow D_t; every `t_ons` they are re-orthonormalised and
    ln|R_ii| accumulated. The first `t_ons_transient` of tangent evolution is discarded so the
    vectors align with the covariant directions. `running` has shape (R, k).

    Not in the paper (a diagnostic): QR as in RainerEngelken/RNN-LyapunovSpectra (README maths (M7)).
    """
    N = J.shape[-1]
    check_params(N=N, dt=dt)
    if not (1 <= k <= N):
        raise UserError(f"k={k} exponents requested; use 1 <= k <= N={N}")
    if t_ons <= 0 or t_average <= 0 or t_transient < 0 or t_ons_transient < 0:
        raise UserError("need t_ons > 0, t_average > 0 and non-negative transients")
    rng = rng if rng is not None else default_stream()
    x = np.array(x0, dtype=np.float64).reshape(1, N)
    JT = transposed(J)
    for _ in range(_steps(t_transient, dt)):
        x = euler_step(x, JT, dt)
    Q = np.linalg.qr(rng.standard_normal((N, k)))[0].T  # rows are tangent vectors
    n_ons = max(1, _steps(t_ons, dt))
    n_skip = _steps(t_ons_transient, dt) // n_ons
    n_blocks = max(1, _steps(t_average, dt) // n_ons)
    log_sum = np.zeros(k)
    every = max(1, n_blocks // n_running)
    times, running = [], []
    for b in range(n_skip + n_blocks):
        for _ in range(n_ons):
            prod = np.concatenate([np.tanh(x), (1.0 / np.cosh(x) ** 2) * Q]) @ JT
            x = (1 - dt) * x + dt * prod[:1]
            Q = (1 - dt) * Q + dt * prod[1:]  # Q <- D_t Q
        q, r = np.linalg.qr(Q.T)
        sign = np.sign(np.diag(r))
        Q = (q * sign).T
        if b >= n_skip:
            log_sum += np.log(np.abs(np.diag(r)))  # sum ln|R_ii|
            bb = b - n_skip + 1
            if bb % every == 0:
                times.append(bb * n_ons * dt)
                running.append(log_sum / (bb * n_ons * dt))
    lam = log_sum / (n_blocks * n_ons * dt)
    return LyapunovResult(lam, np.array(times), np.array(running), {"x_final": x[0]})


def euler_exponent_linear(mu: complex | np.ndarray, dt: float = DT):
    """Exponent of the linear Euler map around x = 0 for an eigenvalue mu of J: ln|1 - dt + dt mu|/dt.

    Paper: the exponent below onset, g - 1 for the flow (README maths (M7))."""
    return np.log(np.abs(1 - dt + dt * np.asarray(mu))) / dt


def quiescent_exponent(J: np.ndarray, dt: float = DT) -> float:
    """Largest exponent of the fixed point x = 0 (the g < 1 attractor): max over eigenvalues of J.

    Paper: the exponent below onset in the largest Lyapunov exponent against g figure (README maths (M7))."""
    mu = np.linalg.eigvals(J)
    return float(np.max(euler_exponent_linear(mu, dt)))
