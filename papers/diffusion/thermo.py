"""Ensemble entropy rates, fluctuation-theorem and second-law statistics.

Paper: Yu & Huang, https://arxiv.org/abs/2405.11932 (Eqs. 24-30 forward, 54-64 backward).

With force f and probability current J = f p − ∇p (unit temperature):

* entropy production rate  π = ∫ |J|²/p ≥ 0,
* entropy flux             φ = ∫ f·J,
* system entropy           dS/dt = π − φ.

Forward f = −x, so J = −(x + ∇ln p) p. Backward (time s = T − t) f* = x + 2∇ln p and
J* = (x + ∇ln p) p = −J, hence π* = π while φ* = ∫ (x + 2∇ln p)·(x + ∇ln p) p ≠ φ.

For the symmetric pair ½N(±μ, σ²I) with m = |μ|e^{−t}, v = v_t and A = E_{p_t} tanh²(m x/v)
(the projection on μ̂), the Fisher information is I = 1/v − (m²/v²)(1 − A) and

    π = m² + v − 2 + I,   φ = m² + v − 1,   φ* = m² + v − 3 + 2I,

plus, for each of the d − 1 orthogonal directions, (v−1)²/v, v − 1 and (v−1)(v−2)/v.
"""
from __future__ import annotations

import math

import numpy as np

from common.errors import UserError

from .mixture import GaussianMixture, ou_decay

_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(201)   # ∫ g(z) N(z;0,1) dz ≈ Σ w g(x) / √(2π)
_GH_W = _GH_W / np.sqrt(2.0 * np.pi)


def _projected_pair(mix: GaussianMixture):
    pair = mix.symmetric_pair()
    if pair is None:
        return None
    mu, s2 = pair
    return float(np.sqrt(mu @ mu)), s2


def rates_closed_form(mix: GaussianMixture, t, broken: bool = False) -> dict:
    """π, φ, dS/dt forward and φ*, dS*/ds backward for ½N(±μ, σ²I) (any d) or a single Gaussian.

    `broken=True` is a deliberately wrong variant (a null for controls): the pair's Fisher
    information taken as a single Gaussian's, I = 1/v, i.e. the between-cluster term
    −(m²/v²)(1 − A) dropped.

    Eqs. (24)-(30) forward and (54)-(64) backward, in closed form for the pair (Figs. 9-10; they match what the
    official `Eforward.py` / `Ebackward.py` compute)."""
    t = np.atleast_1d(np.asarray(t, dtype=np.float64))
    d = mix.d
    pp = _projected_pair(mix)
    e = ou_decay(t)
    if pp is not None:
        mu, s2 = pp
        m = mu * e; v = 1.0 + (s2 - 1.0) * e * e
        # A = E tanh²(m x / v), x ~ ½N(±m, v): by symmetry take the + component
        xs = m[:, None] + np.sqrt(v)[:, None] * _GH_X[None, :]
        a = (np.tanh(m[:, None] * xs / v[:, None]) ** 2) @ _GH_W
        fisher = 1.0 / v - (m * m / (v * v)) * (1.0 - a)          # I = 1/v − (m²/v²)(1 − A)
        if broken:
            fisher = 1.0 / v
        m2 = m * m
    elif mix.k == 1:
        s2 = float(mix.variances[0]); m0 = mix.means[0]
        v = 1.0 + (s2 - 1.0) * e * e
        m2 = float(m0 @ m0) * e * e
        fisher = 1.0 / v
    else:
        raise UserError("closed-form rates need a symmetric two-Gaussian mixture or a single Gaussian; "
                        "use rates_quadrature for other 1-D mixtures")
    pi = m2 + v - 2.0 + fisher + (d - 1) * (v - 1.0) ** 2 / v         # π = π*
    phi = m2 + v - 1.0 + (d - 1) * (v - 1.0)                           # φ
    phi_b = m2 + v - 3.0 + 2.0 * fisher + (d - 1) * (v - 1.0) * (v - 2.0) / v   # φ*
    return {"t": t, "pi": pi, "phi": phi, "dSdt": pi - phi, "pi_backward": pi,
            "phi_backward": phi_b, "dSds_backward": pi - phi_b, "fisher": fisher}


def _grid_1d(mix: GaussianMixture, t: float, n: int = 4001):
    m = mix.at(t)
    sd = np.sqrt(m.variances.max())
    lo = m.means[:, 0].min() - 12 * sd; hi = m.means[:, 0].max() + 12 * sd
    return np.linspace(lo, hi, n)


def rates_quadrature(mix: GaussianMixture, t, n_grid: int = 4001) -> dict:
    """The same rates by quadrature on a grid, for any 1-D mixture (the definitions, not the closed form).

    Eqs. (24)-(30) and (54)-(64) as defined: π = ∫|J|²/p, φ = ∫f·J, J = fp − ∇p."""
    if mix.d != 1:
        raise UserError("rates_quadrature works in d=1; use rates_closed_form for the symmetric pair in d>1")
    t = np.atleast_1d(np.asarray(t, dtype=np.float64))
    out = {k: np.empty_like(t) for k in ("pi", "phi", "phi_backward")}
    for i, ti in enumerate(t):
        x = _grid_1d(mix, ti, n_grid)
        p = mix.prob(x, ti); s = mix.score(x, ti)
        w = p * (x[1] - x[0])
        j_over_p = -(x + s)                                   # J = f p − ∂p, f = −x
        out["pi"][i] = np.sum(j_over_p ** 2 * w)               # π = ∫ J²/p
        out["phi"][i] = np.sum(-x * j_over_p * w)              # φ = ∫ f J
        out["phi_backward"][i] = np.sum((x + 2 * s) * (x + s) * w)   # φ* = ∫ f* J*, J* = −J
    out["t"] = t
    out["dSdt"] = out["pi"] - out["phi"]
    out["pi_backward"] = out["pi"]
    out["dSds_backward"] = out["pi"] - out["phi_backward"]
    return out


def kl_to_standard_normal(mix: GaussianMixture, t: float = 0.0, n_grid: int = 8001) -> float:
    """KL(p_t ‖ N(0, I)) by quadrature: exact in 1-D, and for the symmetric pair in any d
    (projection on μ̂ plus d − 1 Gaussian directions, each ½(v − 1 − ln v)).

    The second law in both directions: ⟨ΔS_tot⟩ = ∫π dt = KL(p_0‖N) − KL(p_T‖N), Eqs. (24)-(30) and (54)-(64)
    integrated over t (our derivation, checked by quadrature)."""
    pp = _projected_pair(mix)
    if mix.d == 1:
        m1 = mix
        extra = 0.0
    elif pp is not None:
        mu, s2 = pp
        m1 = GaussianMixture.two_gaussians(mu, s2)
        v = float(1.0 + (s2 - 1.0) * ou_decay(t) ** 2)
        extra = (mix.d - 1) * 0.5 * (v - 1.0 - np.log(v))
    elif mix.k == 1:
        v = float(mix.at(t).variances[0]); m = mix.at(t).means[0]
        return float(0.5 * (mix.d * (v - 1.0 - np.log(v)) + m @ m))
    else:
        raise UserError("KL is implemented for 1-D mixtures, the symmetric pair and single Gaussians")
    x = _grid_1d(m1, t, n_grid)
    lp = m1.log_prob(x, t)
    lq = -0.5 * x * x - 0.5 * np.log(2 * np.pi)
    p = np.exp(lp)
    return float(np.sum(p * (lp - lq)) * (x[1] - x[0]) + extra)


def ift_statistics(total: np.ndarray, floor: float = 0.01, n_checkpoints: int = 100) -> dict:
    """⟨e^{−ΔS_tot}⟩, its standard error, a z-type tolerance max(4 SE, floor) (logged only), quantiles, running mean.

    The integral fluctuation theorem ⟨e^{−ΔS_tot}⟩ = 1 (Sec. IV forward, Fig. 2; Sec. V backward, Fig. 7)."""
    total = np.asarray(total, dtype=np.float64)
    n = total.size
    if n < 2:
        raise UserError("need at least two trajectories for fluctuation-theorem statistics")
    w = np.exp(-total)
    mean = float(w.mean()); se = float(w.std(ddof=1) / np.sqrt(n))
    cum = np.cumsum(w)
    idx = np.unique(np.linspace(1, n, min(n_checkpoints, n)).astype(int))
    q = np.quantile(w, [0.5, 0.9, 0.99, 0.999])
    return {"mean": mean, "se": se, "tol": max(4.0 * se, floor), "n": n,
            "running_n": idx, "running_mean": cum[idx - 1] / idx,
            "q50": float(q[0]), "q90": float(q[1]), "q99": float(q[2]), "q999": float(q[3]),
            "max": float(w.max()), "frac_negative": float(np.mean(total < 0))}


def mean_and_se(x: np.ndarray) -> tuple[float, float]:
    x = np.asarray(x, dtype=np.float64)
    return float(x.mean()), float(x.std(ddof=1) / np.sqrt(x.size))


def binned_rates(paths, medium: str = "stratonovich", rows=slice(None)) -> dict:
    """Monte-Carlo rates from binned per-path increments (needs paths simulated with n_bins > 0).

    In each bin, ⟨ΔS_tot⟩/duration estimates π, ⟨ΔS_E⟩/duration φ (φ* backward) and ⟨ΔS⟩/duration
    dS/dt (dS/ds backward); standard errors come from the spread over paths. `medium="ito"` uses
    the left-point medium entropy (backward paths simulated with ito=True; a null); `rows` selects
    a subset of the paths (e.g. one half, for a no-difference null).

    The Monte-Carlo dots of Figs. 9-10: π and φ from per-path entropy increments (Eqs. (24)-(30), (54)-(64)).
    """
    if paths.medium_bins is None:
        raise UserError("simulate with n_bins > 0 to get binned rates")
    if medium not in ("stratonovich", "ito"):
        raise UserError(f"medium must be 'stratonovich' or 'ito'; got {medium!r}")
    med = paths.medium_bins if medium == "stratonovich" else paths.medium_ito_bins
    if med is None:
        raise UserError("simulate the backward paths with ito=True to get left-point binned rates")
    med, sys_ = med[rows], paths.system_bins[rows]
    edges = paths.bin_edges
    dur = np.diff(edges) * paths.dt
    n = med.shape[0]
    out = {"t_start": paths.times[edges[:-1]], "t_end": paths.times[edges[1:]]}
    out["t_mid"] = 0.5 * (out["t_start"] + out["t_end"])
    for key, arr in (("pi", med + sys_), ("phi", med), ("dS", sys_)):
        out[key] = arr.mean(0) / dur
        out[key + "_se"] = arr.std(0, ddof=1) / np.sqrt(n) / dur
    return out


def bin_average(rate_fn, paths) -> np.ndarray:
    """Average a rate t ↦ r(t) over the steps of each bin (evaluated at step midpoints)."""
    mids = 0.5 * (paths.times[:-1] + paths.times[1:])
    vals = rate_fn(mids)
    e = paths.bin_edges
    return np.array([vals[a:b].mean() for a, b in zip(e[:-1], e[1:])])


def _logistic_information(s: np.ndarray, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P(label 1 | s) = expit(β₀ + β₁s) for every s, and the Fisher information Σ p(1 − p) [1, s]ᵀ[1, s]."""
    from scipy.special import expit

    p = expit(beta[1] * s + beta[0])
    w = p * (1.0 - p)
    ws = w * s
    return p, np.array([[w.sum(), ws.sum()], [ws.sum(), ws @ s]])


def crooks_fit(forward: np.ndarray, reverse: np.ndarray, iters: int = 50) -> dict:
    """Detailed fluctuation theorem ln[P(ΔS_tot = s) / P̃(ΔS̃_tot = −s)] = s, fitted without bins.

    `forward`: ΔS_tot of forward paths; `reverse`: ΔS̃_tot of paths of the reversed process (same
    dynamics with the reversed protocol, started from p_T), each evaluated along its own path. Pool
    s = forward ∪ (−reverse) with labels 1/0; the theorem says the log-odds of the label given s
    is α + βs with β = 1 and α = ln(n_forward/n_reverse). Logistic regression by Newton's method
    gives (slope β, intercept α − ln(n_f/n_r)) and their standard errors from the Fisher information.

    Sec. IV, the detailed fluctuation theorem P[X]/P̃[X̃] = e^{ΔS_tot} read on distributions.
    """
    f = np.asarray(forward, dtype=np.float64).ravel(); r = -np.asarray(reverse, dtype=np.float64).ravel()
    if f.size < 10 or r.size < 10:
        raise UserError("need at least 10 paths in each direction for the detailed fluctuation theorem")
    s = np.concatenate([f, r])
    # the labels enter the score only through Σy = n_f and Σy·s = Σf: each Newton step reads s alone
    target = np.array([float(f.size), float(f.sum())])
    beta = np.array([math.log(f.size / r.size), 1.0])       # start at the theorem's values
    for _ in range(iters):
        p, info = _logistic_information(s, beta)
        step = np.linalg.solve(info, target - np.array([p.sum(), p @ s]))
        beta = beta + step
        if np.max(np.abs(step)) < 1e-12:
            break
    cov = np.linalg.inv(_logistic_information(s, beta)[1])
    return {"slope": float(beta[1]), "slope_se": float(math.sqrt(cov[1, 1])),
            "intercept": float(beta[0] - math.log(f.size / r.size)), "intercept_se": float(math.sqrt(cov[0, 0])),
            "n_forward": int(f.size), "n_reverse": int(r.size)}
