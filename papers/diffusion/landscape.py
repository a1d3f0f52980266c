"""The potential of the reverse drift, speciation, unstable symmetry breaking and the phase diagram.

Paper: Yu & Huang, https://arxiv.org/abs/2405.11932 (Sec. VI, Figs. 4-6, Appendix B).

In reversed time the drift is X + 2∇ln p_t = −∇U, so

    U(x, t) = −|x|²/2 − 2 ln p_t(x)        (for σ = 1: ½|x|² − 2 ln cosh(x·μ_t) + const).

*Speciation* is the time t_S at which the curvature of U at the origin changes sign
(the symmetric fixed point loses stability). For ½N(±μ, σ²) in one dimension,
with u = e^{−2t}: (σ²−1)²u² + 2μ²u − 1 = 0, hence

    t_S = ½ ln(μ² + √(μ⁴ + (σ² − 1)²)).

*Unstable symmetry breaking*: at large |x|, U ≈ |x|²(1/v_t − ½), which stops confining
for t < t_USB = ½ ln(σ² − 1), possible only when σ > √2.

Phases in the (μ, σ) plane: "none" when t_S ≤ 0 (μ² ≤ σ² − σ⁴/2), "unstable" when σ > √2,
"symmetry breaking" otherwise.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import brentq

from common.errors import UserError

from .mixture import GaussianMixture
from .processes import backward_drift

PHASES = ("none", "symmetry breaking", "unstable")


def potential(mix: GaussianMixture, x, t: float, shift_origin: bool = True) -> np.ndarray:
    """U(x, t) = −|x|²/2 − 2 ln p_t(x), optionally shifted so that U(0, t) = 0.

    Sec. VI: the potential of the reverse drift, Figs. 4 and 6."""
    xs, flat = mix.points(x)
    u = -0.5 * (xs * xs).sum(-1) - 2.0 * mix.log_prob(xs, t)   # −∇U = x + 2∇ln p_t
    if shift_origin:
        u = u + 2.0 * mix.log_prob(np.zeros((1, mix.d)), t)[0]
    return u


def speciation_time_closed_form(mu, sigma2: float) -> float:
    """t_S = ½ ln(|μ|² + √(|μ|⁴ + (σ² − 1)²)); negative means no speciation (t_S ≤ 0).

    Sec. VI: t_S, where U's curvature at the origin changes sign (Figs. 4, 5, 9-11)."""
    if sigma2 <= 0:
        raise UserError(f"sigma2 must be a positive variance; got {sigma2}")
    mu2 = float(np.sum(np.square(mu)))
    return 0.5 * float(np.log(mu2 + np.sqrt(mu2 * mu2 + (sigma2 - 1.0) ** 2)))


def speciation_time_high_dim(mu, sigma2: float) -> float:
    """The competitor's formula, Biroli et al.'s t_s = ½ ln Λ with Λ = |μ|² + σ² the largest
    covariance eigenvalue of ½N(±μ, σ²I) (exact as d → ∞, not in 1-D); negative: no speciation."""
    if sigma2 <= 0:
        raise UserError(f"sigma2 must be a positive variance; got {sigma2}")
    return 0.5 * float(np.log(float(np.sum(np.square(mu))) + sigma2))


def phase_high_dim(mu: float, sigma: float) -> int:
    """Phases with the speciation boundary of t_s = ½ ln Λ > 0 (μ² + σ² > 1) in place of the 1-D
    one, and the same unstable line σ = √2: the competitor's phase map (a null for Fig. 5)."""
    if sigma > np.sqrt(2.0):
        return 2
    return 1 if mu * mu + sigma * sigma > 1.0 else 0


def curvature_at_origin(mix: GaussianMixture, t: float) -> float:
    """Smallest eigenvalue of ∇∇U(0, t) = −I − 2∇∇ln p_t(0). Sec. VI: its sign change marks speciation."""
    h = mix.hessian_log_prob(np.zeros((1, mix.d)), t)[0]
    return float(-1.0 - 2.0 * np.linalg.eigvalsh(h).max())


def speciation_time_numeric(mix: GaussianMixture, t_max: float = 30.0, xtol: float = 1e-12) -> float:
    """The root in t of the curvature of U at 0 (brentq); nan when the curvature never changes sign.

    Sec. VI: t_S found numerically (Figs. 9-11's vertical lines)."""
    f = lambda t: curvature_at_origin(mix, t)  # noqa: E731
    lo = 1e-12
    if f(lo) >= 0 or f(t_max) <= 0:
        return float("nan")
    return float(brentq(f, lo, t_max, xtol=xtol))


def bimodality_time_numeric(mix: GaussianMixture, t_max: float = 30.0, xtol: float = 1e-12) -> float:
    """The root in t of the largest curvature of ln p_t at 0: where the marginal p_t itself turns
    bimodal, ½ ln(μ² + 1 − σ²) for the pair. The competing reading of speciation (from the density,
    without the −x²/2 of U that the sampler's drift carries): a near-miss null for t_S; nan when
    p_t never turns bimodal."""
    def g(t):
        h = mix.hessian_log_prob(np.zeros((1, mix.d)), t)[0]
        return float(np.linalg.eigvalsh(h).max())
    lo = 1e-12
    if g(lo) <= 0 or g(t_max) >= 0:
        return float("nan")
    return float(brentq(g, lo, t_max, xtol=xtol))


def usb_time(sigma2: float) -> float:
    """t_USB = ½ ln(σ² − 1) when σ² > 2, else nan (no unstable symmetry breaking).

    Appendix B: unstable symmetry breaking (Fig. 6)."""
    if sigma2 <= 0:
        raise UserError(f"sigma2 must be a positive variance; got {sigma2}")
    return 0.5 * float(np.log(sigma2 - 1.0)) if sigma2 > 2.0 else float("nan")


def phase(mu: float, sigma: float) -> int:
    """Analytic phase index into PHASES (0 none, 1 symmetry breaking, 2 unstable).

    Fig. 5: the phase boundaries μ² = σ² − σ⁴/2 and σ = √2 (Sec. VI, Appendix B)."""
    if sigma > np.sqrt(2.0):
        return 2
    return 1 if mu * mu > sigma ** 2 - sigma ** 4 / 2.0 else 0       # boundary μ² = σ² − σ⁴/2


def phase_numeric(mu: float, sigma: float, t_small: float = 1e-6, x_far: float = 1e3) -> int:
    """Phase read from the potential itself: non-confining at t→0 means unstable; otherwise a
    negative curvature at the origin at t→0 means speciation happens at some t_S > 0.

    Fig. 5, read from U."""
    mix = GaussianMixture.two_gaussians(mu, sigma * sigma)
    far = potential(mix, np.array([x_far, -x_far]), t_small)
    if np.any(far < 0):
        return 2
    return 1 if curvature_at_origin(mix, t_small) < 0 else 0


def phase_diagram(mus: np.ndarray, sigmas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(analytic, numeric) phase grids of shape (len(sigmas), len(mus)). Fig. 5."""
    ana = np.array([[phase(m, s) for m in mus] for s in sigmas])
    num = np.array([[phase_numeric(m, s) for m in mus] for s in sigmas])
    return ana, num


def boundary_distance(mu: float, sigma: float) -> float:
    """Distance-like measure to the nearest analytic boundary (to leave out ties in checks)."""
    return min(abs(mu * mu - (sigma ** 2 - sigma ** 4 / 2.0)), abs(sigma - np.sqrt(2.0)))


def usb_time_from_potential(mix: GaussianMixture, x_far: float = 100.0, h: float = 10.0,
                            t_max: float = 10.0) -> float:
    """t_USB read from U itself: the time at which the curvature of U far from the origin,
    [U(X + h) − 2U(X) + U(X − h)] / (2h²) at X = x_far (the coefficient of x² in U at large |x|),
    changes sign; nan when U confines at every t (Appendix B)."""
    x = np.array([x_far - h, x_far, x_far + h])

    def far_curvature(t):
        u = potential(mix, x, t, shift_origin=False)
        return float((u[0] - 2.0 * u[1] + u[2]) / (2.0 * h * h))
    lo = 1e-9
    if far_curvature(lo) >= 0 or far_curvature(t_max) <= 0:
        return float("nan")
    return float(brentq(far_curvature, lo, t_max, xtol=1e-13))


def pitchfork_branch(mix: GaussianMixture, ts, x_max: float = 20.0, field: str = "sampler") -> np.ndarray:
    """Positive fixed point x*(t) of the reverse drift f*(x, t) = x + 2∂ln p_t that the backward
    sampler integrates (d = 1); 0 where x = 0 is the only fixed point (f* < 0 just right of 0).
    `field="modes"`: the fixed points of ∂ln p_t alone, i.e. the modes of p_t (a null: the
    density's own splitting, born at the bimodality time rather than at t_S).

    Sec. VI: the sampler's fixed points split at t_S (Figs. 4 and 9-10)."""
    if mix.d != 1:
        raise UserError("the pitchfork is computed for d=1 (as in the paper's figures)")
    if field not in ("sampler", "modes"):
        raise UserError(f"field must be 'sampler' or 'modes'; got {field!r}")
    drift = backward_drift(mix)

    def f(x, t):
        xs = np.array([[x]])
        if field == "modes":
            return float(mix.score(xs, t)[0, 0])
        return float(drift(xs, t, np.empty_like(xs), np.empty_like(xs))[0, 0])
    out = []
    for t in np.atleast_1d(ts):
        eps = 1e-7
        if f(eps, t) <= 0 or f(x_max, t) >= 0:
            out.append(0.0)
        else:
            out.append(brentq(lambda x: f(x, t), eps, x_max, xtol=1e-14))
    return np.array(out)


def speciation_time_pitchfork(mix: GaussianMixture, t_lo: float = 1e-3, t_hi: float = 5.0,
                              n_grid: int = 400, n_fit: int = 6, field: str = "sampler") -> float:
    """t_S seen in the sampler's dynamics: the time at which the branch of non-zero fixed points
    of its reverse drift is born. Near a pitchfork x*(t)² is linear in t, so a quadratic fit of
    x*² over the n_fit grid points of the branch closest to its end, extrapolated to x*² = 0.

    Sec. VI (Figs. 4 and 9-10)."""
    grid = np.linspace(t_lo, t_hi, int(n_grid))
    amp = pitchfork_branch(mix, grid, field=field)
    alive = np.where(amp > 0)[0]
    if alive.size < n_fit or alive[-1] == grid.size - 1 or alive[0] != 0:
        return float("nan")
    end = alive[-1]
    # refine: a fine grid over the last two coarse intervals
    fine = np.linspace(grid[end - 1], grid[end + 1], 8 * n_fit)
    a2 = pitchfork_branch(mix, fine, field=field) ** 2
    keep = a2 > 0
    tt, yy = fine[keep][-n_fit:], a2[keep][-n_fit:]
    c = np.polyfit(tt - tt[-1], yy, 2)
    roots = np.roots(c)
    roots = roots[np.isreal(roots)].real + tt[-1]
    roots = roots[roots >= tt[-1]]
    return float(roots.min()) if roots.size else float("nan")
