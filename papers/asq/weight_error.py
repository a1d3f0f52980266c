"""Weight quantization error of the grids: synthetic (Gaussian, Laplace) and trained weights.

Paper: "Precision Neural Network Quantization via Learnable Adaptive Modules",
arXiv:2504.17263, https://arxiv.org/abs/2504.17263

The error of a grid is the mean squared error at its best clip alpha (grid-searched), divided by
the weights' variance so that layers and distributions are comparable:

    e = min_alpha mean((alpha * P(clamp(w / alpha, -1, 1)) - w)^2) / var(w)

The trained layers' errors are computed on the weights' device (float64) and returned as plain numbers.
The weight-error identity (POST below APoT, the grid with the same level count and LUT cost, on most
layers) has POT in place of POST as its broken variant (`post_vs_pot_fraction(df, bits, "pot", "apot")`).
POST below POT is level-set arithmetic for bell-shaped weights (any grid denser than POT where the weights
are beats it) and stays a figure.
"""
from __future__ import annotations

import pandas as pd
import torch
from torch import nn

from .convert import quantizable_layers
from .levels import weight_mse


def synthetic_errors(grids, bits_list, n: int, streams) -> pd.DataFrame:
    """Normalised best-clip MSE of each grid on N(0,1) and Laplace(0,1) samples drawn from the stream
    "synthetic-weights" of `streams` (POST fits bell-shaped weights: abstract, POST across bit widths; the
    reference notes' weight-MSE proxy)."""
    gen = streams.torch_generator("synthetic-weights")
    gauss = torch.randn(1, n, generator=gen, dtype=torch.float64)
    u = torch.rand(1, n, generator=gen, dtype=torch.float64) - 0.5
    laplace = -torch.sign(u) * torch.log1p(-2 * u.abs())                     # inverse-CDF Laplace(0, 1)
    rows = []
    for dist, w in (("gaussian", gauss), ("laplace", laplace)):
        var = float(w.var())
        for bits in bits_list:
            for grid in grids:
                rows.append({"distribution": dist, "grid": grid, "bits": int(bits),
                             "nmse": float(weight_mse(w, grid, bits)[0]) / var})
    return pd.DataFrame(rows)


def layer_errors(model: nn.Module, grids, bits: int, first_last: str = "fp", tag: str = "") -> pd.DataFrame:
    """Per-layer normalised MSE (per-channel clip, averaged over channels) of a float model: the measurement of
    the identity `post-vs-apot-mse-w4` (source: abstract, POST across bit widths).

    Only the layers that QAT would quantize at `bits` (inner layers when first_last = "fp").
    """
    layers = quantizable_layers(model)
    if first_last == "fp":
        layers = layers[1:-1]
    rows = []
    for name, layer in layers:
        w = layer.weight.detach().reshape(layer.weight.shape[0], -1).double()
        var = w.var(dim=1).clamp_min(1e-30)
        for grid in grids:
            rows.append({"model": tag, "layer": name, "grid": grid, "bits": int(bits),
                         "nmse": float((weight_mse(w, grid, bits) / var).mean())})
    return pd.DataFrame(rows)


def post_vs_pot_fraction(df: pd.DataFrame, bits: int, grid: str = "post", against: str = "pot") -> float:
    """Fraction of (model, layer) pairs where `grid`'s error (POST) is below `against`'s (POT) at `bits`: the
    figure `frac_layers_post_lower_mse_w4`; with against="apot", the identity `post-vs-apot-mse-w4` (POST) and its broken
    variant (grid="pot")."""
    sub = df[df.bits == bits].pivot_table(index=["model", "layer"], columns="grid", values="nmse")
    return float((sub[grid] < sub[against]).mean())
