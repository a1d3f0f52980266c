"""Notebook 03: entropy production rate π, entropy flux φ and dS/dt, forward and backward (Figs. 9-10).

Paper: Yu & Huang, https://arxiv.org/abs/2405.11932. The ensemble rates π = ∫|J|²/p, φ = ∫f·J,
dS/dt = π − φ (Eqs. (24)-(30)) and their backward counterparts with J* = −J, so π* = π while φ* ≠ φ
(Eqs. (54)-(64)): closed forms against quadrature of the definitions and against binned Monte Carlo.
"""
from __future__ import annotations

import numpy as np

from .. import landscape, thermo
from ..mixture import GaussianMixture
from ..processes import simulate_backward, simulate_forward, wrong_noise_score

FINE_POINTS = 20001          # the fine grid of the closed forms (argmin φ*, its sign change, ∫π dt)


def measure(cfg, run) -> dict:
    """Notebook 03: every rate of Figs. 9-10 and its checks (`run.streams`: the paths' random streams)."""
    return entropy_rates(cfg, run.streams)


# ---- the measurement-to-metric mapping ----------------------------------------------------------------

def max_z(mc: dict, theory: dict, key: str) -> float:
    """Largest |Monte Carlo − theory| / SE over the bins of one rate."""
    return float((np.abs(mc[key] - theory[key]) / mc[key + "_se"]).max())


def z_between(a: dict, b: dict, key: str) -> np.ndarray:
    """Per-bin |a − b| / √(SE_a² + SE_b²) between two Monte-Carlo rates."""
    return np.abs(a[key] - b[key]) / np.hypot(a[key + "_se"], b[key + "_se"])


def reversed_bins(mc: dict) -> dict:
    """Backward bins run in s = T − t; reversed, they line up with the forward bins in t."""
    return {k: v[::-1] for k, v in mc.items()}


def rates_metrics(r: dict) -> dict:
    """The claims' metrics of the rates from the section's arrays `r` (keys as `entropy_rates` returns:
    closed, quad, broken, the Monte-Carlo rates mc_forward / mc_backward / mc_backward_wrong / halves and
    the bin-averaged closed forms theory_* and broken_*, the fine grid's closed forms, kl_drop, t_S)."""
    closed, quad, brk = r["closed"], r["quad"], r["broken"]
    mc_f, mc_b, th_f, th_b, br_f, br_b = (r[k] for k in ("mc_forward", "mc_backward", "theory_forward",
                                                         "theory_backward", "broken_forward", "broken_backward"))
    rb, rb_wrong = reversed_bins(mc_b), reversed_bins(r["mc_backward_wrong"])
    same_grid = np.allclose(rb["t_mid"], mc_f["t_mid"])
    h1, h2 = r["halves"]
    fine, cfine = r["fine"], r["closed_fine"]
    sign_change = fine[np.where(np.diff(np.sign(cfine["phi_backward"])) != 0)[0]]
    integral = float(np.trapezoid(cfine["pi"], fine))
    rates = ("pi", "phi", "phi_backward")
    return {
        "rates_closed_vs_quadrature_maxdiff": float(max(np.abs(closed[k] - quad[k]).max() for k in rates)),
        "pi_forward_mc_max_z": max_z(mc_f, th_f, "pi"),
        "phi_forward_mc_max_z": max_z(mc_f, th_f, "phi"),
        "pi_backward_mc_max_z": max_z(mc_b, th_b, "pi"),
        "phi_backward_mc_max_z": max_z(mc_b, th_b, "phi"),
        "forward_mc_max_z": float(max(max_z(mc_f, th_f, "pi"), max_z(mc_f, th_f, "phi"))),
        "backward_mc_max_z": float(max(max_z(mc_b, th_b, "pi"), max_z(mc_b, th_b, "phi"))),
        "rates_broken_vs_quadrature_maxdiff": float(max(np.abs(brk[k] - quad[k]).max() for k in rates)),
        "forward_mc_broken_max_z": float(max(max_z(mc_f, br_f, "pi"), max_z(mc_f, br_f, "phi"))),
        "backward_mc_broken_max_z": float(max(max_z(mc_b, br_b, "pi"), max_z(mc_b, br_b, "phi"))),
        "pi_forward_backward_wrong_score_max_z": float(z_between(rb_wrong, mc_f, "pi").max()) if same_grid else float("nan"),
        "phi_forward_halves_max_z": float(z_between(h1, h2, "phi").max()),
        "pi_forward_backward_max_z": float(z_between(rb, mc_f, "pi").max()) if same_grid else float("nan"),
        "phi_forward_backward_max_z": float(z_between(rb, mc_f, "phi").max()) if same_grid else float("nan"),
        "pi_backward_minus_forward_closed_maxabs": float(np.abs(closed["pi_backward"] - closed["pi"]).max()),
        "phi_backward_minus_forward_closed_maxabs": float(np.abs(closed["phi_backward"] - closed["phi"]).max()),
        "pi_at_0": float(closed["pi"][0]),
        "pi_monotone_decreasing": bool(np.all(np.diff(cfine["pi"]) <= 1e-12)),
        "argmin_phi_backward": float(r["t_star"]),
        "phi_backward_sign_change": float(sign_change[0]) if sign_change.size else float("nan"),
        "speciation_t_rates": r["t_s"],
        "pi_integral": integral, "rates_kl_drop": float(r["kl_drop"]),
        "pi_integral_minus_kl": float(integral - r["kl_drop"]),
    }


# ---- the section ----------------------------------------------------------------------------------------

def entropy_rates(cfg, streams) -> dict:
    """Figs 9-10: π, φ, dS/dt forward (Eqs. (24)-(30)) and backward (Eqs. (54)-(64)); closed form,
    quadrature and binned Monte Carlo.

    Nulls: the closed forms with the mixture's Fisher-information term dropped (I = 1/v); for π* = π the
    sampler with the noise-doubled score (`wrong_noise_score`) weighed as the exact process; for φ* ≠ φ
    two halves of the forward paths."""
    mix = GaussianMixture.two_gaussians(cfg.rates_mu, cfg.rates_sigma2)
    t = np.linspace(0.0, cfg.rates_T, int(cfg.rates_points))
    closed = thermo.rates_closed_form(mix, t)
    quad = thermo.rates_quadrature(mix, t)
    fwd = simulate_forward(mix, cfg.rates_T, cfg.rates_forward_dt, cfg.n_rates_paths, streams,
                           n_bins=cfg.rates_bins, show_progress=True)
    bwd = simulate_backward(mix, cfg.rates_T, cfg.rates_backward_dt, cfg.n_rates_paths, streams,
                            n_bins=cfg.rates_bins, show_progress=True)
    bwd_wrong = simulate_backward(mix, cfg.rates_T, cfg.rates_backward_dt, cfg.n_rates_paths, streams,
                                  n_bins=cfg.rates_bins, sampler_score=wrong_noise_score(mix, cfg.ift_wrong_noise))
    mc_f, mc_b = thermo.binned_rates(fwd), thermo.binned_rates(bwd)
    cf = lambda key: (lambda tt: thermo.rates_closed_form(mix, tt)[key])  # noqa: E731
    th_f = {"pi": thermo.bin_average(cf("pi"), fwd), "phi": thermo.bin_average(cf("phi"), fwd),
            "dS": thermo.bin_average(cf("dSdt"), fwd)}
    th_b = {"pi": thermo.bin_average(cf("pi"), bwd), "phi": thermo.bin_average(cf("phi_backward"), bwd),
            "dS": thermo.bin_average(cf("dSds_backward"), bwd)}
    br = lambda key: (lambda tt: thermo.rates_closed_form(mix, tt, broken=True)[key])  # noqa: E731
    brk = thermo.rates_closed_form(mix, t, broken=True)
    br_f = {"pi": thermo.bin_average(br("pi"), fwd), "phi": thermo.bin_average(br("phi"), fwd)}
    br_b = {"pi": thermo.bin_average(br("pi"), bwd), "phi": thermo.bin_average(br("phi_backward"), bwd)}
    mc_wrong = thermo.binned_rates(bwd_wrong)
    halves = (thermo.binned_rates(fwd, rows=slice(0, fwd.n // 2)), thermo.binned_rates(fwd, rows=slice(fwd.n // 2, None)))
    fine = np.linspace(0.0, cfg.rates_T, FINE_POINTS)
    cfine = thermo.rates_closed_form(mix, fine)
    kl_drop = thermo.kl_to_standard_normal(mix, 0.0) - thermo.kl_to_standard_normal(mix, cfg.rates_T)
    out = {"t": t, "closed": closed, "quad": quad, "broken": brk, "mc_forward": mc_f, "mc_backward": mc_b,
           "mc_backward_wrong": mc_wrong, "halves": halves, "theory_forward": th_f, "theory_backward": th_b,
           "broken_forward": br_f, "broken_backward": br_b, "fine": fine, "closed_fine": cfine,
           "t_star": fine[np.argmin(cfine["phi_backward"])], "kl_drop": kl_drop,
           "t_s": landscape.speciation_time_closed_form(cfg.rates_mu, cfg.rates_sigma2)}
    out["metrics"] = rates_metrics(out)
    return out
