"""The Franz-Parisi potential of the reverse step read as inference.

Paper: Yu & Huang, https://arxiv.org/abs/2405.11932 (Sec. VII, Eqs. 70-79, Fig. 11).

Denoising X_t is inference of X_0 with Hamiltonian (X_t is quenched disorder)

    H(X_0; X_t) = |X_t − e^{−t} X_0|² / (2Δ_t) − ln p_0(X_0).

A reference configuration X_0' and X_t are drawn *jointly* (X_0' ~ p_0, X_t | X_0' forward);
a second replica X_0 is constrained at squared distance q from X_0'. In one dimension
d(X_0, X_0') = (X_0 − X_0')², and the constrained partition function is

    Z(q) = [e^{−H(X_0' + √q)} + e^{−H(X_0' − √q)}] / (2√q),          V(q) = −⟨ln Z(q)⟩.

V, V' and V'' are computed here analytically per sample (no finite differences): with r = √q,
L(r) = ln[e^{g(X_0'+r)} + e^{g(X_0'−r)}], g = −H and softmax weights w±,

    L' = w₊ g'(y₊) − w₋ g'(y₋),   L'' = w₊ g''(y₊) + w₋ g''(y₋) + w₊w₋ (g'(y₊) + g'(y₋))²,
    d ln Z/dq = L'/(2r) − 1/(2q),   d² ln Z/dq² = L''/(4q) − L'/(4r³) + 1/(2q²).

A *secondary minimum* is an interior local minimum of V (V' crossing zero upwards): the second
replica can sit in the other cluster. It disappears as t decreases; `threshold_time` finds when.
"""
from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from common.errors import UserError
from common.seed import numpy_rng

from .mixture import GaussianMixture, log_cosh, ou_decay, ou_delta


@dataclass
class FPSamples:
    """Common random numbers for V at several t: X_0' and the standard normal Z of X_t."""

    x0: np.ndarray
    z: np.ndarray

    def xt(self, t: float) -> np.ndarray:
        return float(ou_decay(t)) * self.x0 + math.sqrt(float(ou_delta(t))) * self.z   # X_t = e^{−t}X_0' + √Δ_t Z


def draw_samples(mix: GaussianMixture, n: int, seed: int = 0) -> FPSamples:
    if mix.d != 1:
        raise UserError("the Franz-Parisi potential is implemented for d=1 (as in the paper)")
    if int(n) < 2:
        raise UserError(f"need at least 2 samples; got {n}")
    rng = numpy_rng(seed, "franz-parisi")
    x0 = mix.sample(int(n), rng)[:, 0]
    z = rng.standard_normal(int(n))
    return FPSamples(x0, z)


def _logp0_derivs(mix: GaussianMixture):
    """y ↦ (ln p_0(y), d/dy, d²/dy²) for a 1-D mixture (tanh fast path for the symmetric pair)."""
    pair = mix.symmetric_pair()
    if pair is not None:
        mu, s2 = float(pair[0][0]), pair[1]
        c = -0.5 * math.log(2 * math.pi * s2) - 0.5 * mu * mu / s2

        def f(y):
            z = (mu / s2) * y
            th = np.tanh(z)
            lp = -0.5 * y * y / s2 + log_cosh(z) + c
            return lp, (mu * th - y) / s2, ((mu * mu / s2) * (1.0 - th * th) - 1.0) / s2
        return f
    means = mix.means[:, 0]; var = mix.variances; lw = np.log(mix.weights)

    def f(y):
        lj = np.stack([lw[k] - 0.5 * (y - means[k]) ** 2 / var[k] - 0.5 * math.log(2 * math.pi * var[k])
                       for k in range(mix.k)])
        top = lj.max(0)
        r = np.exp(lj - top)
        tot = r.sum(0)
        lp = top + np.log(tot)
        r /= tot
        u = np.stack([(means[k] - y) / var[k] for k in range(mix.k)])
        s = (r * u).sum(0)
        inv_var = (1.0 / var).reshape((-1,) + (1,) * y.ndim)
        h = (r * (u * u - inv_var)).sum(0) - s * s        # (ln p)'' = Σ r_k (u_k² − 1/s_k) − s²
        return lp, s, h
    return f


def fp_potential(mix: GaussianMixture, t: float, q: np.ndarray, samples: FPSamples, *,
                 block: int = 2048, q_block: int = 16, workers: int | None = None) -> dict:
    """V(q), V'(q), V''(q) averaged over the joint samples, vectorised over (q, samples)."""
    q = np.asarray(q, dtype=np.float64)
    if np.any(q <= 0):
        raise UserError("q must be positive (it is a squared distance)")
    if t <= 0:
        raise UserError(f"t must be positive; got {t}")
    e = float(ou_decay(t)); delta = float(ou_delta(t))
    a_all = samples.x0; x_all = samples.xt(t)
    r_all = np.sqrt(q)[:, None]
    derivs = _logp0_derivs(mix)
    n = a_all.size

    def part(lo):
        """Sums over one block of samples, for every q (cache-sized tiles of q_block × block)."""
        out = np.zeros((3, q.size))
        for qlo in range(0, q.size, q_block):
            out[:, qlo: qlo + q_block] = tile(lo, qlo)
        return out

    def tile(lo, qlo):
        a = a_all[lo: lo + block][None, :]
        x = x_all[lo: lo + block][None, :]
        r = r_all[qlo: qlo + q_block]

        def g(y):   # g = −H and its first two derivatives in y
            lp, s0, h0 = derivs(y)
            res = x - e * y
            return lp - 0.5 * res * res / delta, s0 + e * res / delta, h0 - e * e / delta

        gp, dgp, ddgp = g(a + r)
        gm, dgm, ddgm = g(a - r)
        top = np.maximum(gp, gm)
        ep = np.exp(gp - top); em = np.exp(gm - top)
        tot = ep + em
        big_l = top + np.log(tot)                         # L = ln(e^{g+} + e^{g−})
        wp = ep / tot; wm = em / tot
        dl = wp * dgp - wm * dgm
        ddl = wp * ddgp + wm * ddgm + wp * wm * (dgp + dgm) ** 2
        qq = r * r
        lnz = big_l - math.log(2.0) - np.log(r)           # ln Z = L − ln(2√q)
        dlnz = dl / (2 * r) - 0.5 / qq
        ddlnz = ddl / (4 * qq) - dl / (4 * r ** 3) + 0.5 / (qq * qq)
        return lnz.sum(1), dlnz.sum(1), ddlnz.sum(1)

    w = workers if workers is not None else int(os.environ.get("REPRO_THREADS", os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=max(1, w)) as pool:
        parts = list(pool.map(part, range(0, n, block)))
    lnz, dlnz, ddlnz = sum(parts) / n
    return {"q": q, "V": -lnz, "dV": -dlnz, "ddV": -ddlnz}


def secondary_minimum(curve: dict) -> dict | None:
    """The interior local minimum of V (V' − → +) beyond the first local maximum, or None."""
    q, dv, v = curve["q"], curve["dV"], curve["V"]
    down = np.where((dv[:-1] > 0) & (dv[1:] <= 0))[0]    # local maxima
    up = np.where((dv[:-1] < 0) & (dv[1:] >= 0))[0]      # local minima
    if up.size == 0 or down.size == 0:
        return None
    i_max = down[0]
    later = up[up > i_max]
    if later.size == 0:
        return None
    i_min = later[0]

    def root(i):
        return float(q[i] - dv[i] * (q[i + 1] - q[i]) / (dv[i + 1] - dv[i]))
    return {"q_max": root(i_max), "q_min": root(i_min), "barrier": float(v[i_max] - v[i_min]),
            "n_inflections": int(np.sum(np.diff(np.sign(curve["ddV"])) != 0))}


def threshold_time(mix: GaussianMixture, q: np.ndarray, samples: FPSamples, t_hi: float, t_lo: float,
                   tol: float = 2e-3, **kw) -> float:
    """The time below which the secondary minimum is gone, by bisection on common random numbers.

    Requires a secondary minimum at t_hi and none at t_lo; returns nan otherwise.
    """
    has = lambda t: secondary_minimum(fp_potential(mix, t, q, samples, **kw)) is not None  # noqa: E731
    if not has(t_hi) or has(t_lo):
        return float("nan")
    lo, hi = t_lo, t_hi
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if has(mid):
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


def n_inflection_points(curve: dict) -> int:
    return int(np.sum(np.diff(np.sign(curve["ddV"])) != 0))

