"""Beyond the paper's 1-D figures: speciation and collapse in d dimensions.

Paper extended: Yu & Huang, https://arxiv.org/abs/2405.11932 (the formulas are written in d
dimensions, every figure is 1-D). Theory used: Biroli, Bonnaire, de Bortoli & Mézard,
"Dynamical regimes of diffusion models", https://arxiv.org/abs/2402.18491 (same OU convention).

**Cloning (speciation).** Two clones started from the same X_t and run backward independently
end in the same class with probability φ(t) = E_{x~p_t} Σ_k P(k | x)². For ½N(±μ, σ²I) only
the projection on μ̂ matters, P± = ½(1 ± tanh(m x/v)), so

    φ(t) = ½ ∫ (G₊² + G₋²)/(G₊ + G₋) dx = ½ (1 + E tanh²(m x / v)),  m = |μ|e^{−t}, G± = N(±m, v).

Speciation is at t_s = ½ ln Λ (Λ the largest covariance eigenvalue); for σ = 1, Λ = 1 + |μ|²
and at t = ½ ln|μ|² one has m = 1, v = 1, hence φ = 0.7752 for every d (the "speciation value").

**Collapse.** With n training points a_i and the exact empirical score, p_t^emp = (1/n) Σ N(e^{−t}a_i, Δ_t I).
The self-overlap Y(t) = E Σ_i P(i | x_t)² (two clones end on the same training point) rises
from ~1/n to 1 as t decreases; Biroli-Mézard predict the collapse at

    t_C = ½ ln(1 + σ² / (n^{2/d} − 1)).

The null of that measurement is the exact *population* score of N(0, σ²I) (nothing memorised):
clones from the same x_t end at independent draws of the posterior p(x_0 | x_t), and two of them
count as collapsed together when their nearest training points coincide (`PopulationOverlap`).
"""
from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq

from common.errors import UserError
from common.seed import Streams

from .mixture import GaussianMixture, ou_decay, ou_delta
from .processes import simulate_backward

_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(201)
_GH_W = _GH_W / np.sqrt(2.0 * np.pi)


def cloning_probability_exact(mu_norm: float, sigma2: float, t) -> np.ndarray:
    """φ(t) = ½(1 + E tanh²(m x/v)) for ½N(±μ, σ²I), by Gauss-Hermite quadrature.

    Biroli, Bonnaire, de Bortoli & Mézard (arXiv:2402.18491), the cloning probability; an extension of Sec. VI
    to d dimensions."""
    if sigma2 <= 0:
        raise UserError(f"sigma2 must be a positive variance; got {sigma2}")
    t = np.atleast_1d(np.asarray(t, dtype=np.float64))
    e = ou_decay(t)
    m = mu_norm * e; v = 1.0 + (sigma2 - 1.0) * e * e
    xs = m[:, None] + np.sqrt(v)[:, None] * _GH_X[None, :]
    a = (np.tanh(m[:, None] * xs / v[:, None]) ** 2) @ _GH_W
    return 0.5 * (1.0 + a)                    # φ = ½∫(G₊² + G₋²)/(G₊ + G₋)


def speciation_value(sigma2: float = 1.0, mu_norm: float = 1.0) -> float:
    """φ at t = ½ ln|μ|² (0.7752 when σ = 1, whatever |μ|).

    Biroli et al. (arXiv:2402.18491): the cloning probability at their speciation time."""
    return float(cloning_probability_exact(mu_norm, sigma2, 0.5 * math.log(mu_norm ** 2))[0])


class CloningMC:
    """Rao-Blackwellised Monte-Carlo cloning curve in d dimensions with common random numbers.

    Each sample keeps its component label and standard normal vector, so x_t at any t is
    e^{−t} m_k + √v_k(t) z and the curve is smooth in t (its crossing can be found by brentq).

    Biroli et al. (arXiv:2402.18491), cloning.
    """

    def __init__(self, mix: GaussianMixture, n: int, streams: Streams):
        if int(n) < 2:
            raise UserError(f"need at least 2 samples; got {n}")
        rng = streams.rng("cloning", mix.d)
        self.mix = mix
        self.labels = rng.choice(mix.k, size=int(n), p=mix.weights)
        self.z = rng.standard_normal((int(n), mix.d))

    def values(self, t: float) -> np.ndarray:
        m = self.mix.at(t)
        x = m.means[self.labels] + np.sqrt(m.variances[self.labels])[:, None] * self.z
        r = self.mix.responsibilities(x, t)
        return (r * r).sum(-1)                         # Σ_k P(k|x_t)²

    def curve(self, ts) -> tuple[np.ndarray, np.ndarray]:
        vals = [self.values(t) for t in np.atleast_1d(ts)]
        return (np.array([v.mean() for v in vals]),
                np.array([v.std(ddof=1) / math.sqrt(v.size) for v in vals]))

    def crossing(self, level: float, t_lo: float, t_hi: float) -> float:
        f = lambda t: self.values(t).mean() - level  # noqa: E731
        if f(t_lo) * f(t_hi) > 0:
            return float("nan")
        return float(brentq(f, t_lo, t_hi, xtol=1e-6))

    def crossing_se(self, t: float, h: float = 1e-3) -> float:
        """Standard error of a crossing time (delta method): SE of the curve at t / |slope|."""
        return _crossing_se(self.values, t, h)


def _crossing_se(values, t: float, h: float) -> float:
    v = values(t)
    slope = (values(t + h).mean() - values(t - h).mean()) / (2.0 * h)   # common random numbers
    return float(v.std(ddof=1) / math.sqrt(v.size) / max(abs(slope), 1e-12))


def cloning_by_clones(mix: GaussianMixture, t: float, n: int, dt: float, streams: Streams,
                      shuffled: bool = False):
    """Direct clone experiment: x_t ~ p_t, two independent backward SDE runs to t = 0 with the
    exact score, then compare the components each clone ends closest to (max responsibility).

    Returns (probability, se); with `shuffled=True` also (probability, se) of the null with the
    pairing shuffled: each first clone compared with the second clone of the next start (a cyclic
    shift, so never its own), i.e. clones of independent starts.

    Biroli et al. (arXiv:2402.18491), cloning, run with the paper's backward SDE (Sec. V)."""
    rng = streams.rng("clones", mix.d)
    x_t = mix.sample(int(n), rng, t=t)
    start = np.concatenate([x_t, x_t])
    paths = simulate_backward(mix, t, dt, 2 * int(n), streams, x_start=start)
    cls = mix.responsibilities(paths.x_end, 0.0).argmax(-1)
    same = (cls[: int(n)] == cls[int(n):]).astype(np.float64)
    out = (float(same.mean()), float(same.std(ddof=1) / math.sqrt(same.size)))
    if not shuffled:
        return out
    other = (cls[: int(n)] == np.roll(cls[int(n):], 1)).astype(np.float64)
    return out + (float(other.mean()), float(other.std(ddof=1) / math.sqrt(other.size)))


# ---- collapse of the empirical score --------------------------------------------------------------

def collapse_time_theory(n: int, d: int, sigma2: float = 1.0) -> float:
    """t_C = ½ ln(1 + σ²/(n^{2/d} − 1)) (Biroli-Bonnaire-de Bortoli-Mézard, arXiv:2402.18491, collapse)."""
    if n < 2 or d < 1:
        raise UserError(f"need n >= 2 training points and d >= 1; got n={n}, d={d}")
    return 0.5 * math.log1p(sigma2 / math.expm1(2.0 * math.log(n) / d))


class EmpiricalOverlap:
    """Self-overlap Y(t) = E Σ_i P(i | x_t)² under the empirical marginal, common random numbers.

    Biroli et al. (arXiv:2402.18491), collapse."""

    def __init__(self, n_train: int, d: int, n_test: int, streams: Streams, sigma2: float = 1.0):
        if sigma2 <= 0:
            raise UserError(f"sigma2 must be a positive variance; got {sigma2}")
        if n_train < 2 or n_test < 2 or d < 1:
            raise UserError("need n_train >= 2, n_test >= 2 and d >= 1")
        rng = streams.rng("collapse", d, n_train)
        self.a = math.sqrt(sigma2) * rng.standard_normal((n_train, d))     # training set ~ N(0, σ²I)
        self.idx = rng.integers(0, n_train, size=n_test)
        self.z = rng.standard_normal((n_test, d))
        self.a2 = (self.a * self.a).sum(-1)
        self.sigma2 = sigma2
        # x_t = e^{−t} a_idx + √Δ_t z, so x_t·a_i = e^{−t} (a_idx·a_i) + √Δ_t (z·a_i): both products once, for every t
        self.gram_a = self.a[self.idx] @ self.a.T
        self.gram_z = self.z @ self.a.T

    def projections(self, t: float) -> np.ndarray:
        """x_t·a_i for every start and training point (x_t = e^{−t} a_idx + √Δ_t z, from p_t^emp)."""
        out = np.multiply(self.gram_a, float(ou_decay(t)))
        out += math.sqrt(float(ou_delta(t))) * self.gram_z
        return out

    def values(self, t: float) -> np.ndarray:
        e = float(ou_decay(t)); delta = float(ou_delta(t))
        logits = self.projections(t)
        logits *= e / delta
        logits -= (0.5 * e * e / delta) * self.a2[None, :]                  # −|x − e a_i|²/(2Δ) + const
        logits -= logits.max(-1, keepdims=True)
        w = np.exp(logits, out=logits)
        total = w.sum(-1)
        return np.einsum("ij,ij->i", w, w) / (total * total)                # Σ_i P(i | x_t)²

    def curve(self, ts) -> np.ndarray:
        return np.array([self.values(t).mean() for t in np.atleast_1d(ts)])

    def crossing(self, level: float = 0.5, t_lo: float = 1e-3, t_hi: float = 10.0) -> float:
        f = lambda t: self.values(t).mean() - level  # noqa: E731
        if f(t_lo) * f(t_hi) > 0:
            return float("nan")
        return float(brentq(f, t_lo, t_hi, xtol=1e-5))

    def crossing_se(self, t: float, h: float = 1e-3) -> float:
        """Standard error of the crossing time over test points (delta method)."""
        return _crossing_se(self.values, t, h)


class PopulationOverlap:
    """The collapse measurement with the exact population score of N(0, σ²I) (a null: a score that
    memorised nothing). The same training set and starts x_t as `EmpiricalOverlap` (same streams);
    each start gets two clones run backward with the exact score, which end at independent draws
    of the posterior N(e^{−t}σ² x_t / v_t, σ²Δ_t / v_t · I), v_t = σ²e^{−2t} + Δ_t; the pair agrees
    when both clones' nearest training points coincide. Common random numbers over t."""

    def __init__(self, n_train: int, d: int, n_test: int, streams: Streams, sigma2: float = 1.0):
        self.ref = EmpiricalOverlap(n_train, d, n_test, streams, sigma2)
        self.a, self.idx, self.z, self.a2, self.sigma2 = self.ref.a, self.ref.idx, self.ref.z, self.ref.a2, sigma2
        self.w = streams.rng("collapse-population", d, n_train).standard_normal((2, n_test, d))
        self.gram_w = [w @ self.a.T for w in self.w]                   # each clone's noise against the training set

    def values(self, t: float) -> np.ndarray:
        e = float(ou_decay(t)); delta = float(ou_delta(t))
        v = self.sigma2 * e * e + delta
        sd = math.sqrt(self.sigma2 * delta / v)
        # the clone's end mean·a_i: the posterior mean (e σ²/v) x_t of the same x_t as the empirical score
        base = self.ref.projections(t)
        base *= 2.0 * e * self.sigma2 / v
        base -= self.a2[None, :]
        near = [np.argmax(base + (2.0 * sd) * g, axis=1) for g in self.gram_w]   # nearest training point
        return (near[0] == near[1]).astype(np.float64)

    def curve(self, ts) -> tuple[np.ndarray, np.ndarray]:
        vals = [self.values(t) for t in np.atleast_1d(ts)]
        return (np.array([v.mean() for v in vals]),
                np.array([v.std(ddof=1) / math.sqrt(v.size) for v in vals]))

    def crossing(self, level: float = 0.5, t_lo: float = 1e-3, t_hi: float = 10.0) -> float:
        """A time where the agreement fraction (a step function of t) drops through `level` (brentq)."""
        f = lambda t: self.values(t).mean() - level  # noqa: E731
        if f(t_lo) * f(t_hi) > 0:
            return float("nan")
        return float(brentq(f, t_lo, t_hi, xtol=1e-5))

    def crossing_se(self, t: float, rel_h: float = 0.05) -> float:
        """Standard error of the crossing (delta method); the slope from ±rel_h·t, wide enough to
        average over the steps of the agreement fraction."""
        return _crossing_se(self.values, t, rel_h * t)


def grid_crossing(ts, values, level: float) -> float:
    """First t (scanning upward) where a curve on a grid drops through `level`, by linear interpolation."""
    ts = np.asarray(ts); values = np.asarray(values)
    for i in range(len(ts) - 1):
        if values[i] >= level > values[i + 1]:
            return float(ts[i] + (values[i] - level) * (ts[i + 1] - ts[i]) / (values[i] - values[i + 1]))
    return float("nan")


def grid_crossing_se(ts, values, ses, level: float) -> float:
    """Standard error of `grid_crossing` (delta method on the linear interpolation): the SE of the
    curve at the two bracketing times, weighted as in the interpolation, over |slope|."""
    ts = np.asarray(ts); values = np.asarray(values); ses = np.asarray(ses)
    for i in range(len(ts) - 1):
        if values[i] >= level > values[i + 1]:
            lam = (values[i] - level) / (values[i] - values[i + 1])
            slope = (values[i] - values[i + 1]) / (ts[i + 1] - ts[i])
            return float(math.hypot((1 - lam) * ses[i], lam * ses[i + 1]) / slope)
    return float("nan")
