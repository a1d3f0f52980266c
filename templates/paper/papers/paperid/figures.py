"""The figures notebook 01 saves (TEMPLATE: one function per figure, returning a matplotlib Figure)."""
from __future__ import annotations

import matplotlib.pyplot as plt


def estimate_figure(out: dict):
    """(a) The plain estimate and its near miss, each +- 2 SE, against the closed form; (b) the variance of one pair
    estimator: independent pairs, antithetic pairs and the control's pairs (partner drawn independently)."""
    m = out["metrics"]
    fig, (a, b) = plt.subplots(1, 2, figsize=(8, 3))
    names = ["exp(u)", "near miss"]
    a.errorbar(names, [m["mc_integral"], m["near_miss_integral"]], yerr=[2 * m["mc_integral_se"], 2 * m["near_miss_integral_se"]],
               fmt="o", capsize=4)
    a.axhline(m["closed_form"], color="k", lw=1, label="closed form e - 1")
    a.set_ylabel("estimate of the integral")
    a.legend(loc="upper left")
    var = out["variances"]
    b.bar(list(var), list(var.values()), color=["C0", "C2", "C1"])
    b.set_yscale("log")
    b.set_ylabel("variance of one pair estimator")
    fig.tight_layout()
    return fig
