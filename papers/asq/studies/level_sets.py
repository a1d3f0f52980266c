"""Notebook 01: the weight grids' level sets and their weight error (POST vs POT vs uniform).

Paper: "Precision Neural Network Quantization via Learnable Adaptive Modules",
arXiv:2504.17263, https://arxiv.org/abs/2504.17263. Claim `post-vs-apot-mse-w4` (source: abstract, POST fits
bell-shaped weights), an identity (level-set arithmetic on bell-shaped weights): POST's best-clip weight error
is below that of APoT, the grid with the same level count and LUT cost, on >= 90 % of the trained layers at
4 bits; its broken variant is POT in place of POST (README "Claims and their controls"). POST against POT is
kept as a figure (`frac_layers_post_lower_mse_w4`).

The error of a grid is the MSE at its best clip divided by the weights' variance (`weight_error`), on
N(0, 1) and Laplace samples and on every layer that QAT quantizes of each seed's trained float model.
"""
from __future__ import annotations

import pandas as pd

from .. import levels, weight_error
from ..qat_grid import QATGrid

TABLE_GRIDS = ["uniform", "pot", "post", "post_released", "pot_released", "apot"]   # the level-set table
SYNTHETIC_GRIDS = ["uniform", "pot", "post", "apot"]
LAYER_GRIDS = ["uniform", "pot", "post", "apot"]
BITS = [2, 3, 4]           # synthetic errors
LAYER_BITS = (3, 4)        # trained layers


def level_table() -> pd.DataFrame:
    """Every grid's level count, storage bits and positive levels at 2, 3 and 4 bits (`levels.py`, the
    released `post.py: build_power_value` sets included)."""
    return pd.DataFrame([{"grid": g, "bits": b, "levels": levels.level_set(g, b).numel(),
                          "storage bits": levels.storage_bits(g, b),
                          "positive levels": ", ".join(f"{v:.4g}" for v in levels.level_set(g, b).tolist() if v > 0)}
                         for g in TABLE_GRIDS for b in BITS])


def synthetic_metrics(wide: pd.DataFrame) -> dict:
    """`nmse_<distribution>_<grid>_w<bits>` from the synthetic errors pivoted to (distribution, bits) x grid."""
    return {f"nmse_{d}_{gr}_w{b}": float(v) for (d, b), row in wide.iterrows() for gr, v in row.items()}


def layer_wide(layer_df: pd.DataFrame, bits: int = 4) -> pd.DataFrame:
    """The trained layers' errors at `bits`, one row per (model, layer), one column per grid."""
    return layer_df[layer_df.bits == bits].pivot_table(index=["model", "layer"], columns="grid", values="nmse")


def layer_metrics(layer_df: pd.DataFrame) -> dict:
    """The weight-error claim's metric (share of layers where POST is below POT at 4 bits), its control
    (the uniform grid in place of POST) and the companions: 3 bits, POST against uniform."""
    wide = layer_wide(layer_df, 4)
    return {"frac_layers_post_lower_mse_w4": weight_error.post_vs_pot_fraction(layer_df, 4),
            # the identity against the competitor with the same LUT cost (APoT), and its broken variant (POT)
            "frac_layers_post_lower_mse_vs_apot_w4": weight_error.post_vs_pot_fraction(layer_df, 4, "post", "apot"),
            "frac_layers_pot_lower_mse_vs_apot_w4": weight_error.post_vs_pot_fraction(layer_df, 4, "pot", "apot"),
            "frac_layers_post_lower_mse_w3": weight_error.post_vs_pot_fraction(layer_df, 3),
            "frac_layers_uniform_lower_mse_w4": weight_error.post_vs_pot_fraction(layer_df, 4, "uniform", "pot"),
            "median_post_over_uniform_mse_w4": float((wide["post"] / wide["uniform"]).median()),
            "frac_layers_post_within_10pct_uniform_w4": float(((wide["post"] / wide["uniform"]) <= 1.1).mean())}


def trained_layer_errors(grid: QATGrid, seeds, first_last: str) -> pd.DataFrame:
    """Per-layer errors of the float model of every training replicate (trained here once, reused by the next
    notebooks)."""
    frames = []
    for s in seeds:
        fmodel, _ = grid.float_model(s)
        for b in LAYER_BITS:
            frames.append(weight_error.layer_errors(fmodel, LAYER_GRIDS, b, first_last, tag=f"seed{s}"))
    return pd.concat(frames, ignore_index=True)


def measure(cfg, run) -> dict:
    """The level sets, the synthetic errors (drawn from the run's stream "synthetic-weights") and the trained
    layers' errors; the float models are trained into the run's checkpoints (`QATGrid`), the data's provenance
    logged as the run's inputs."""
    metrics = {"dataset": cfg.dataset, "arch": cfg.arch}   # the configuration claims may require (`when`)
    synthetic = weight_error.synthetic_errors(SYNTHETIC_GRIDS, BITS, cfg.mse_samples, run.streams)
    synthetic_wide = synthetic.pivot_table(index=["distribution", "bits"], columns="grid", values="nmse")
    metrics.update(synthetic_metrics(synthetic_wide))
    grid = QATGrid.of_run(cfg, run)
    run.log_inputs(grid.info["provenance"])
    layers = trained_layer_errors(grid, cfg.seeds, cfg.first_last)
    metrics.update(layer_metrics(layers))
    return {"metrics": metrics, "levels": level_table(), "synthetic": synthetic, "synthetic_wide": synthetic_wide,
            "layers": layers, "layers_wide": layer_wide(layers, 4), "provenance": grid.info["provenance"]}
