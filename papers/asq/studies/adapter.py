"""Notebook 04: what the ASQ adapter learns: beta over test images, layers, classes and bit widths.

Paper: "Precision Neural Network Quantization via Learnable Adaptive Modules",
arXiv:2504.17263, https://arxiv.org/abs/2504.17263. ASQ's step is s_a = s * beta(x), beta predicted per
sample by a small adapter from the layer input (abstract; official code `asq.py: Adapter`, `AsqActQuant`).
No claim is judged here: the figures show whether beta varies between inputs (adaptivity) or mostly
between layers (a per-layer rescaling of the step), the distinction the ASQ-vs-LSQ claims' control draws.
"""
from __future__ import annotations

import pandas as pd

from ..betas import collect_betas
from ..qat_grid import QATGrid


def beta_metrics(betas: pd.DataFrame, bits_list) -> dict:
    """Per width b: `beta_mean_w<b>` (over layers and images), `beta_cv_within_layer_w<b>` (the mean over
    layers of std / mean over images) and `beta_layer_mean_range_w<b>` (max - min of the layer means)."""
    stats = {}
    for b in bits_list:
        sub = betas[betas.bits == b]
        stats[f"beta_mean_w{b}"] = float(sub.beta.mean())
        stats[f"beta_cv_within_layer_w{b}"] = float((sub.groupby("layer").beta.std() / sub.groupby("layer").beta.mean()).mean())
        stats[f"beta_layer_mean_range_w{b}"] = float(sub.groupby("layer").beta.mean().max() - sub.groupby("layer").beta.mean().min())
    return stats


N_EXAMPLES = 2000   # test images beta is collected on (all of them when the test set is smaller)


def measure(cfg, run) -> dict:
    """beta of every ASQ layer of the first training replicate's ASQ model (uniform weights) at each width of
    `cfg.bits`, on the first `N_EXAMPLES` test images (the models come from notebook 02's grid in the run)."""
    grid = QATGrid.of_run(cfg, run)
    n = min(N_EXAMPLES, len(grid.test))
    frames = []
    for b in cfg.bits:
        qm, _ = grid.qat_model(cfg.seeds[0], "asq", b, "uniform")
        d = collect_betas(qm, grid.test, n=n)
        d["bits"] = b
        d["width"] = f"W{b}A{b}"
        frames.append(d)
    betas = pd.concat(frames, ignore_index=True)
    return {"metrics": beta_metrics(betas, cfg.bits), "betas": betas,
            "summary": betas.groupby(["bits", "layer"], sort=False).beta.describe()[["mean", "std", "min", "max"]],
            "per_class": betas.groupby(["bits", "layer", "label"], sort=False).beta.mean().reset_index()}
