"""Notebook 04: what the ASQ adapter learns: beta over test images, layers, classes and bit widths.

Paper: "Precision Neural Network Quantization via Learnable Adaptive Modules",
arXiv:2504.17263, https://arxiv.org/abs/2504.17263. ASQ's step is s_a = s * beta(x), beta predicted per
sample by a small adapter from the layer input (abstract; official code `asq.py: Adapter`, `AsqActQuant`).
No claim is judged here: the figures show whether beta varies between inputs (adaptivity) or mostly
between layers (a per-layer rescaling of the step), the distinction the ASQ-vs-LSQ claims' control draws.
At quick, which trains no QAT grid, the model studied is the one ASQ model the run trains (ASQ W4A4 with POST
weights, notebook 03's); the W2 and W4 uniform models' beta figures are in `devtune w2_finding`'s record.
"""
from __future__ import annotations

import pandas as pd

from ..betas import collect_betas
from ..qat_grid import QATGrid, grid_sets


def beta_metrics(betas: pd.DataFrame, bits_list, suffix: str = "") -> dict:
    """Per width b: `beta_mean_w<b><suffix>` (over layers and images), `beta_cv_within_layer_w<b><suffix>` (the
    mean over layers of std / mean over images) and `beta_layer_mean_range_w<b><suffix>` (max - min of the layer
    means)."""
    stats = {}
    for b in bits_list:
        sub = betas[betas.bits == b]
        stats[f"beta_mean_w{b}{suffix}"] = float(sub.beta.mean())
        stats[f"beta_cv_within_layer_w{b}{suffix}"] = float((sub.groupby("layer").beta.std() / sub.groupby("layer").beta.mean()).mean())
        stats[f"beta_layer_mean_range_w{b}{suffix}"] = float(sub.groupby("layer").beta.mean().max() - sub.groupby("layer").beta.mean().min())
    return stats


def studied_models(cfg) -> list[tuple[int, str]]:
    """(bits, weight grid) of the ASQ models whose beta the notebook collects: uniform weights at each width of
    the run's grid; where the run trains no grid (quick, `qat_grid` off), the one ASQ model it trains, notebook 03's
    W`ablation_bits`A`ablation_bits` POST model (metrics suffixed `_post`)."""
    bits = grid_sets(cfg)["bits"]
    return [(b, "uniform") for b in bits] if bits else [(int(cfg.ablation_bits), "post")]


N_EXAMPLES = 2000   # test images beta is collected on (all of them when the test set is smaller)


def measure(cfg, run) -> dict:
    """beta of every ASQ layer of the first training replicate's ASQ models (`studied_models`), on the first
    `N_EXAMPLES` test images (the models come from notebook 02's pool in the run)."""
    grid = QATGrid.of_run(cfg, run)
    n = min(N_EXAMPLES, len(grid.test))
    frames = []
    models = studied_models(cfg)
    for b, g in models:
        qm, _ = grid.qat_model(cfg.seeds[0], "asq", b, g)
        d = collect_betas(qm, grid.test, n=n)
        d["bits"] = b
        d["grid"] = g
        d["width"] = f"W{b}A{b}" + ("" if g == "uniform" else f" {g}")
        frames.append(d)
    betas = pd.concat(frames, ignore_index=True)
    suffix = "" if models[0][1] == "uniform" else f"_{models[0][1]}"
    return {"metrics": beta_metrics(betas, [b for b, _ in models], suffix), "betas": betas,
            "summary": betas.groupby(["bits", "layer"], sort=False).beta.describe()[["mean", "std", "min", "max"]],
            "per_class": betas.groupby(["bits", "layer", "label"], sort=False).beta.mean().reset_index()}
