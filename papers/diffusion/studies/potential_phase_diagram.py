"""Notebook 02: the potential U(x, t), speciation, unstable symmetry breaking and the phase diagram
(Sec. VI, Appendix B, Figs. 4-6).

Paper: Yu & Huang, https://arxiv.org/abs/2405.11932. Closed forms against numerical roots of U's curvature
(t_S = ½ ln(μ² + √(μ⁴ + (σ² − 1)²)), Sec. VI; t_USB = ½ ln(σ² − 1), Appendix B) and the analytic phase
boundaries μ² = σ² − σ⁴/2, σ = √2 (Fig. 5) against phases read from U.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq

from .. import landscape
from ..mixture import GaussianMixture

SPECIATION_CASES = [(1.0, 1.0), (1.0, 0.4), (1.0, 0.1), (1.0, 0.64), (0.4, 1.0), (4.0, 2.25),
                    (0.7, 0.5), (2.0, 3.0), (0.3, 0.2), (1.5, 1.9)]
USB_VARIANCES = (2.25, 3.0, 5.0)


def measure(cfg, run) -> dict:
    """Notebook 02: the speciation and t_USB checks, then the phase diagram (Fig. 5); closed forms and roots,
    nothing random (`run` is unused)."""
    out = {"speciation": speciation_checks(cfg), "phase": phase_diagram(cfg)}
    out["metrics"] = {**out["speciation"]["metrics"], **out["phase"]["metrics"]}
    return out


# ---- the measurement-to-metric mapping ----------------------------------------------------------------

def closed_form_miss(formula: float, root: float) -> float:
    """|closed form − numerical root| where the closed form says speciation happens (t > 0); where it
    says none, the root must not exist either: 0 for a nan root, else |root|."""
    if formula > 0:
        return abs(formula - root)
    return 0.0 if math.isnan(root) else abs(root)


def phase_metrics(analytic: np.ndarray, numeric: np.ndarray, high_dim: np.ndarray, away: np.ndarray) -> dict:
    """Fig. 5: the fraction of grid points (away from the boundaries) where the analytic phase, and the
    competitor's phase map (the null), equal the phase read from U; and over every point."""
    return {"phase_agreement": float(np.mean(analytic[away] == numeric[away])), "phase_points_checked": int(away.sum()),
            "phase_agreement_high_dim": float(np.mean(high_dim[away] == numeric[away])),
            "phase_agreement_all": float(np.mean(analytic == numeric))}


# ---- the sections ---------------------------------------------------------------------------------------

def usb_time_from_variance(mix: GaussianMixture) -> float:
    """Appendix B: the loss of confinement, where the coefficient of x² in U at large |x|, 1/v_t − ½,
    changes sign (brentq on the marginal's variance)."""
    return brentq(lambda t: 1.0 / float(mix.at(t).variances[0]) - 0.5, 1e-9, 10.0)


def speciation_checks(cfg) -> dict:
    """Closed-form t_S (Sec. VI) against the numerical root of the curvature of U at 0, and t_USB
    (Appendix B) likewise.

    Nulls: the competitor's closed form ½ ln(μ² + σ²) (Biroli et al., exact only as d → ∞) against
    the same roots; U's curvature read at the origin instead of far from
    it against t_USB (it finds t_S instead); where p_t itself turns bimodal (`*_bimodal`, the curvature
    of ln p_t at 0) and where its modes split (`*_modes`), against the paper's t_S."""
    rows, diffs, diffs_hd = [], [], []
    for mu, s2 in SPECIATION_CASES:
        closed = landscape.speciation_time_closed_form(mu, s2)
        num = landscape.speciation_time_numeric(GaussianMixture.two_gaussians(mu, s2))
        rows.append((mu, s2, closed, num))
        diffs.append(closed_form_miss(closed, num))
        diffs_hd.append(closed_form_miss(landscape.speciation_time_high_dim(mu, s2), num))
    usb_diffs = [abs(usb_time_from_variance(GaussianMixture.two_gaussians(1.0, s2)) - landscape.usb_time(s2))
                 for s2 in USB_VARIANCES]
    usb_u, usb_0 = [], []
    for s2 in USB_VARIANCES:
        mix = GaussianMixture.two_gaussians(1.0, s2)
        # the loss of confinement read from U far from the origin, against ½ ln(σ² − 1)
        usb_u.append(abs(landscape.usb_time_from_potential(mix) - landscape.usb_time(s2)))
        # null: the same reading of U's curvature at the origin
        usb_0.append(abs(landscape.usb_time_from_potential(mix, x_far=0.0, h=1e-3) - landscape.usb_time(s2)))
    m = {"speciation_max_abs_diff": float(max(diffs)), "usb_max_abs_diff": float(max(usb_diffs)),
         "speciation_high_dim_max_abs_diff": float(max(diffs_hd)),
         "usb_from_potential_max_abs_diff": float(max(usb_u)), "usb_at_origin_max_abs_diff": float(max(usb_0)),
         "speciation_t_fig4": landscape.speciation_time_closed_form(1.0, 1.0),
         "speciation_t_fig9": landscape.speciation_time_closed_form(1.0, 0.4),
         "speciation_t_fig11": landscape.speciation_time_closed_form(1.0, 0.1)}
    for tag, s2 in (("fig9", 0.4), ("fig11", 0.1)):
        mix = GaussianMixture.two_gaussians(1.0, s2)
        m[f"speciation_root_{tag}"] = landscape.speciation_time_numeric(mix)        # curvature of U at 0
        m[f"speciation_pitchfork_{tag}"] = landscape.speciation_time_pitchfork(mix)  # sampler's fixed points
        # null: the competing reading of speciation from the density itself: where p_t turns
        # bimodal (curvature of ln p_t at 0) and where its modes split (fixed points of ∂ln p_t)
        m[f"speciation_root_{tag}_bimodal"] = landscape.bimodality_time_numeric(mix)
        m[f"speciation_pitchfork_{tag}_modes"] = landscape.speciation_time_pitchfork(mix, field="modes")
    return {"rows": rows, "metrics": m}


def phase_diagram(cfg) -> dict:
    """Fig 5: analytic phases against phases read numerically from U, away from the boundaries."""
    mus = np.linspace(0.02, 2.0, int(cfg.phase_grid))
    sigmas = np.linspace(0.05, 2.0, int(cfg.phase_grid))
    ana, num = landscape.phase_diagram(mus, sigmas)
    dist = np.array([[landscape.boundary_distance(m, s) for m in mus] for s in sigmas])
    # null: the competitor's phase map (speciation boundary of ½ ln Λ > 0, Λ = μ² + σ²) on the same points
    hd = np.array([[landscape.phase_high_dim(m, s) for m in mus] for s in sigmas])
    return {"mus": mus, "sigmas": sigmas, "analytic": ana, "numeric": num,
            "metrics": phase_metrics(ana, num, hd, dist > 0.02)}
