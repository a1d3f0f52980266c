"""Gaussian mixtures and their exact marginals under the forward Ornstein-Uhlenbeck process.

Paper: Yu & Huang, "Nonequilibrium physics of generative diffusion models",
https://arxiv.org/abs/2405.11932 (Sec. II, the data model ½N(μ, σ²) + ½N(−μ, σ²)).

The forward process has no noise schedule: dX = −X dt + √2 dW (unit temperature, D = 1), so

    X_t = e^{−t} X_0 + √Δ_t Z,   Δ_t = 1 − e^{−2t}.

A mixture Σ_k w_k N(m_k, s_k I) therefore stays a mixture with the *same* weights,
means e^{−t} m_k and variances v_k(t) = 1 + (s_k − 1) e^{−2t}. Everything below is exact:
log p_t, the score ∇ln p_t, its Hessian, and samplers of p_t.

Conventions: points are arrays of shape (n, d). For d = 1 a flat array of shape (n,) is also
accepted and results keep that flat shape (handy for plots).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from common.errors import UserError

LOG_2PI = float(np.log(2.0 * np.pi))


def ou_decay(t):
    """e^{−t}: how much of X_0 is left at time t.

    The forward kernel X_t = e^{−t}X_0 + √Δ_t Z of the paper's dX = −X dt + √2 dW (the official `forward_n.py`
    integrates that SDE by Euler-Maruyama)."""
    return np.exp(-np.asarray(t, dtype=np.float64))


def ou_delta(t):
    """Δ_t = 1 − e^{−2t}, the variance the forward kernel adds (computed stably).

    The forward kernel of the paper's dX = −X dt + √2 dW."""
    return -np.expm1(-2.0 * np.asarray(t, dtype=np.float64))


@dataclass(frozen=True)
class GaussianMixture:
    """Σ_k w_k N(m_k, s_k I_d): `means` (K, d), isotropic `variances` (K,), `weights` (K,)."""

    means: np.ndarray
    variances: np.ndarray
    weights: np.ndarray

    # ---- construction ----------------------------------------------------------------------
    @classmethod
    def create(cls, means, variances, weights=None, d: int | None = None) -> "GaussianMixture":
        """Validate and build. `means` may be (K,) for d = 1 or (K, d); `d` checks the dimension."""
        m = np.asarray(means, dtype=np.float64)
        if m.ndim == 1:
            m = m[:, None]
        if m.ndim != 2 or m.shape[0] < 1:
            raise UserError("means must have shape (K, d) with K >= 1; pass e.g. [[1.0], [-1.0]]")
        k, dim = m.shape
        if d is not None and int(d) != dim:
            raise UserError(f"d={d} does not match the means, which have dimension {dim}; make them agree")
        v = np.broadcast_to(np.asarray(variances, dtype=np.float64), (k,)).copy()
        if not np.all(np.isfinite(v)) or np.any(v <= 0):
            raise UserError(f"variances must be positive and finite; got {v.tolist()}")
        if weights is None:
            w = np.full(k, 1.0 / k)
        else:
            w = np.asarray(weights, dtype=np.float64).reshape(-1)
            if w.shape != (k,):
                raise UserError(f"need one weight per component ({k}); got {w.size}")
            if np.any(w < 0) or abs(w.sum() - 1.0) > 1e-9:
                raise UserError(f"weights must be non-negative and sum to one; they sum to {w.sum():.6g}")
        if not np.all(np.isfinite(m)):
            raise UserError("means must be finite numbers")
        return cls(m, v, w)

    @classmethod
    def two_gaussians(cls, mu=1.0, sigma2=1.0, d: int | None = None) -> "GaussianMixture":
        """The paper's data: ½N(μ, σ²I) + ½N(−μ, σ²I).

        `mu` is a scalar (then μ = mu·1_d, d defaulting to 1) or a vector of length d.
        """
        mu_arr = np.asarray(mu, dtype=np.float64)
        if mu_arr.ndim == 0:
            dim = 1 if d is None else int(d)
            if dim < 1:
                raise UserError(f"d must be a positive integer; got {d}")
            vec = np.full(dim, float(mu_arr))
        else:
            vec = mu_arr.reshape(-1)
        if sigma2 is None or not np.isfinite(sigma2) or sigma2 <= 0:
            raise UserError(f"sigma2 must be a positive variance; got {sigma2}")
        return cls.create(np.stack([vec, -vec]), [sigma2, sigma2], [0.5, 0.5], d=d)

    @classmethod
    def single_gaussian(cls, mean=0.0, variance=1.0, d: int | None = None) -> "GaussianMixture":
        """N(mean, variance·I): a mixture of one."""
        mean_arr = np.asarray(mean, dtype=np.float64)
        if mean_arr.ndim == 0:
            mean_arr = np.full(1 if d is None else int(d), float(mean_arr))
        return cls.create(mean_arr.reshape(1, -1), [variance], [1.0], d=d)

    def noise_scaled(self, c: float) -> "GaussianMixture":
        """The paper's process run with the wrong noise scale, as a null: dX = −X dt + √(2c) dW on
        this p_0 is √c times the unit-noise process on p_0 rescaled by 1/√c (means/√c, variances/c).
        Anything invariant under a global rescaling of space (class agreement, crossing times, the
        sign of U's curvature) is therefore read from the returned mixture."""
        c = float(c)
        if not (c > 0 and np.isfinite(c)):
            raise UserError(f"the noise scale must be a positive number; got {c}")
        return GaussianMixture(self.means / np.sqrt(c), self.variances / c, self.weights)

    # ---- basic facts -----------------------------------------------------------------------
    @property
    def k(self) -> int:
        return self.means.shape[0]

    @property
    def d(self) -> int:
        return self.means.shape[1]

    def at(self, t: float) -> "GaussianMixture":
        """The exact marginal p_t: means e^{−t} m_k, variances 1 + (s_k − 1) e^{−2t}.

        For the paper's pair, p_t = ½N(±μ_t, v_t I) with μ_t = μe^{−t}, v_t = 1 + (σ² − 1)e^{−2t} (the official
        scripts write it for σ = 1)."""
        t = float(t)
        if t < 0:
            raise UserError(f"time must be >= 0; got {t}")
        if t == 0.0:
            return self
        e = float(ou_decay(t))
        return GaussianMixture(self.means * e, 1.0 + (self.variances - 1.0) * e * e, self.weights)  # v_t = 1 + (σ²−1)e^{−2t}

    def mean(self) -> np.ndarray:
        return self.weights @ self.means

    def covariance(self) -> np.ndarray:
        """Σ w_k (s_k I + m_k m_kᵀ) − m̄ m̄ᵀ."""
        mbar = self.mean()
        cov = np.einsum("k,ki,kj->ij", self.weights, self.means, self.means) - np.outer(mbar, mbar)
        cov += np.eye(self.d) * float(self.weights @ self.variances)
        return cov

    def symmetric_pair(self):
        """(μ, σ²) when this is ½N(μ, σ²I) + ½N(−μ, σ²I), else None (enables tanh fast paths)."""
        if self.k != 2:
            return None
        m = self.means
        if (np.allclose(m[0], -m[1], rtol=0, atol=1e-14) and abs(self.weights[0] - 0.5) < 1e-14
                and abs(self.variances[0] - self.variances[1]) < 1e-14):
            return m[0].copy(), float(self.variances[0])
        return None

    # ---- densities ---------------------------------------------------------------------------
    def points(self, x):
        """`x` as an (n, d) float64 array of points, and whether it came as a flat (n,) array of d = 1
        points (so that results can be returned flat); a `UserError` when its dimension is not d."""
        x = np.asarray(x, dtype=np.float64)
        flat = x.ndim == 1 and self.d == 1
        if flat:
            x = x[:, None]
        if x.ndim == 1:
            x = x[None, :]
        if x.shape[-1] != self.d:
            raise UserError(f"points have dimension {x.shape[-1]} but the mixture has d={self.d}; make them agree")
        return x, flat

    def component_log_joint(self, x, t: float = 0.0) -> np.ndarray:
        """(n, K): ln w_k + ln N(x; e^{−t} m_k, v_k(t) I)."""
        mix = self.at(t)
        x, _ = self.points(x)
        sq = (x * x).sum(-1)[:, None] - 2.0 * x @ mix.means.T + (mix.means ** 2).sum(-1)[None, :]
        return (np.log(mix.weights)[None, :] - 0.5 * sq / mix.variances[None, :]
                - 0.5 * self.d * (LOG_2PI + np.log(mix.variances))[None, :])

    def log_prob(self, x, t: float = 0.0) -> np.ndarray:
        """ln p_t(x), by log-sum-exp over components.

        The system entropy ΔS = ln p_start − ln p_end of Secs. IV-V is read from it."""
        pair = self.symmetric_pair()
        x, _ = self.points(x)
        if pair is not None:
            mu, s2 = pair
            e = float(ou_decay(t)); v = 1.0 + (s2 - 1.0) * e * e; m = mu * e
            z = x @ m / v
            # ln p = −(|x|² + |m|²)/(2v) + ln cosh(m·x/v) − (d/2) ln(2πv)
            return -0.5 * ((x * x).sum(-1) + m @ m) / v + log_cosh(z) - 0.5 * self.d * (LOG_2PI + np.log(v))
        lj = self.component_log_joint(x, t)
        top = lj.max(-1, keepdims=True)
        return (top + np.log(np.exp(lj - top).sum(-1, keepdims=True)))[:, 0]

    def prob(self, x, t: float = 0.0) -> np.ndarray:
        return np.exp(self.log_prob(x, t))

    def responsibilities(self, x, t: float = 0.0) -> np.ndarray:
        """(n, K): posterior P(component k | X_t = x)."""
        lj = self.component_log_joint(x, t)
        lj -= lj.max(-1, keepdims=True)
        r = np.exp(lj)
        return r / r.sum(-1, keepdims=True)

    def score(self, x, t: float = 0.0) -> np.ndarray:
        """∇ln p_t(x) = Σ_k P(k|x) (e^{−t} m_k − x) / v_k(t).

        For the pair, ∇ln p_t = [μ_t tanh(μ_t·x/v_t) − x]/v_t: the score of the backward SDE (Sec. V;
        `backward_n.py`)."""
        x, flat = self.points(x)
        pair = self.symmetric_pair()
        if pair is not None:
            mu, s2 = pair
            e = float(ou_decay(t)); v = 1.0 + (s2 - 1.0) * e * e; m = mu * e
            out = (np.tanh(x @ m / v)[:, None] * m[None, :] - x) / v  # ∇ln p_t = [μ_t tanh(μ_t·x/v_t) − x]/v_t
        else:
            mix = self.at(t)
            r = self.responsibilities(x, t) / mix.variances[None, :]
            out = r @ mix.means - r.sum(-1, keepdims=True) * x
        return out[:, 0] if flat else out

    def hessian_log_prob(self, x, t: float = 0.0) -> np.ndarray:
        """(n, d, d): ∇∇ln p_t = Σ_k r_k [u_k u_kᵀ − I/v_k] − s sᵀ with u_k = (m_k − x)/v_k.

        U's curvature at the origin (Sec. VI, t_S) is −I − 2 times this."""
        x, _ = self.points(x)
        mix = self.at(t)
        r = self.responsibilities(x, t)
        u = (mix.means[None, :, :] - x[:, None, :]) / mix.variances[None, :, None]
        s = np.einsum("nk,nkd->nd", r, u)
        h = np.einsum("nk,nki,nkj->nij", r, u, u) - np.einsum("ni,nj->nij", s, s)
        h -= np.einsum("nk,k->n", r, 1.0 / mix.variances)[:, None, None] * np.eye(self.d)[None]
        return h

    # ---- sampling ----------------------------------------------------------------------------
    def sample(self, n: int, rng: np.random.Generator, t: float = 0.0, return_labels: bool = False):
        """n iid draws from p_t (shape (n, d)); optionally the component labels."""
        n = int(n)
        if n < 0:
            raise UserError(f"number of samples must be >= 0; got {n}")
        mix = self.at(t)
        labels = rng.choice(self.k, size=n, p=self.weights) if self.k > 1 else np.zeros(n, dtype=np.int64)
        x = rng.standard_normal((n, self.d))
        x *= np.sqrt(mix.variances)[labels][:, None]
        x += mix.means[labels]
        return (x, labels) if return_labels else x


def log_cosh(z):
    """ln cosh z, stable for large |z|: |z| + ln(1 + e^{−2|z|}) − ln 2."""
    a = np.abs(z)
    return a + np.log1p(np.exp(-2.0 * a)) - np.log(2.0)
