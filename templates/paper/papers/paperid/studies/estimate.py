"""Notebook 01: the Monte-Carlo estimate of a closed form, and antithetic variates (the toy's Eqs. 1-3).

TEMPLATE: a study is `measure(cfg, run) -> dict` (tests/common/test_study_contract.py). It returns "metrics" (exactly
the dict the notebook logs: claim metrics and their controls) beside what the notebook plots. Every random draw comes
from a keyed stream of the run (`run.torch_generator(key)`, `run.rng(key)`), never from a seed you derive.
"""
from __future__ import annotations

import torch

from .. import mc


def measure(cfg, run) -> dict:
    """The estimates of notebook 01 on the run's device: the agreement and its near miss, the variance of antithetic
    pairs against independent pairs, and the control that draws each pair's partner independently."""
    dtype = torch.float32 if run.device.type == "mps" else torch.float64   # MPS has no float64
    u = mc.uniforms(cfg.n_draws, run.torch_generator("draws"), run.device, dtype)
    half = cfg.n_draws // 2
    v, w = (mc.uniforms(half, run.torch_generator("partners", k), run.device, dtype) for k in ("reference", "control"))
    f = mc.integrand(u)
    pairs = {   # three samples of pair estimators, two evaluations each, independent of one another
        "independent": mc.pair_means(f[half:2 * half], mc.integrand(v)),       # the plain estimator, in pairs
        "antithetic": mc.pair_means(f[:half], mc.integrand(1 - u[:half])),     # what the paper credits
        "partner": mc.pair_means(f[:half], mc.integrand(w)),                   # control: the same u, partner drawn apart
    }
    return {"metrics": estimate_metrics(f, mc.integrand(u, 1 + cfg.near_miss), pairs),
            "variances": {name: float(y.var()) for name, y in pairs.items()}}   # what the figure plots


# ---- the measurement-to-metric mapping (unit-tested in tests/paperid/) --------------------------------------

def estimate_metrics(f: torch.Tensor, near: torch.Tensor, pairs: dict) -> dict:
    """The claims' metrics: the plain estimate of I(1) and its near miss (the same draws through exp((1 + d) u)),
    and ln(var of independent pairs / var of antithetic pairs) with its control (partners drawn independently)."""
    mean, se = mc.mean_and_se(f)
    near_mean, near_se = mc.mean_and_se(near)
    ratio, ratio_se = log_variance_ratio(pairs["independent"], pairs["antithetic"])
    ctl, ctl_se = log_variance_ratio(pairs["independent"], pairs["partner"])
    return {"closed_form": mc.closed_form(1.0), "mc_integral": mean, "mc_integral_se": se,
            "near_miss_integral": near_mean, "near_miss_integral_se": near_se,
            "log_variance_ratio": ratio, "log_variance_ratio_se": ratio_se,
            "partner_log_variance_ratio": ctl, "partner_log_variance_ratio_se": ctl_se, "n_draws": int(f.numel())}


def log_variance_ratio(reference: torch.Tensor, other: torch.Tensor) -> tuple[float, float]:
    """ln(var reference / var other) and its standard error (two independent samples: the SEs add in quadrature)."""
    a, a_se = mc.log_variance_and_se(reference)
    b, b_se = mc.log_variance_and_se(other)
    return a - b, (a_se**2 + b_se**2) ** 0.5
