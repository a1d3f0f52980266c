"""Notebook 05: LLaMA-3-8B and Qwen2-7B on a two-node NVIDIA+AMD cluster. A PROJECTION, not a measurement.

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007
(abstract: device-direct at 98-94 % of NVIDIA-homogeneous; 0.9-2.3 % above AMD-homogeneous per a
third-party summary; claims `projection-*`). The model is `perfmodel.project` (1F1B step time with the
alpha-beta link cost and the searched layer split) under `perfmodel.ASSUMPTIONS`.
"""
from __future__ import annotations

from dataclasses import replace

from .. import perfmodel

SENSITIVITY = [0.90, 0.92, 0.945, 0.97, 1.0]                  # assumed AMD/NVIDIA speeds of the sensitivity plot
RHO_SCAN = [round(0.85 + 0.0025 * i, 4) for i in range(61)]   # the speeds scanned for the paper's ranges
PAPER_RANGES = (("in_paper_range", lambda r: 0.94 <= r["vs_nv"] <= 0.98), ("above_amd", lambda r: r["vs_amd"] >= 1.0))


def measure(cfg, run) -> dict:
    """Notebook 05: the projections, their sensitivity to the assumed AMD/NVIDIA speed, and the speeds for
    which they land in the paper's ranges (`run` unused: arithmetic from assumed inputs, no draw, no file).
    {"metrics", "projections", "sensitivity"}."""
    res = {m: perfmodel.project(m) for m in cfg.projection_models}
    sens = {m: perfmodel.sensitivity(m, SENSITIVITY) for m in cfg.projection_models}
    metrics = projection_metrics(res)
    metrics.update(rho_ranges(cfg.projection_models))
    metrics["proj_cf1_vs_amd_max"] = max(r["ratios"]["cpu_forward_k1"]["vs_amd"] for r in res.values())
    return {"metrics": metrics, "projections": res, "sensitivity": sens}


def projection_metrics(res: dict) -> dict:
    """{model: `perfmodel.project(model)`} -> proj_<family>_<plan>_vs_nv / _vs_amd for every plan, the smallest
    device-direct / AMD-homogeneous ratio over the models, and the assumed AMD/NVIDIA speed."""
    metrics = {}
    for m, r in res.items():
        key = m.split("-")[0]
        for name, rr in r["ratios"].items():
            metrics[f"proj_{key}_{name}_vs_nv"] = rr["vs_nv"]
            metrics[f"proj_{key}_{name}_vs_amd"] = rr["vs_amd"]
    metrics["proj_dd_vs_amd_min"] = min(r["ratios"]["device_direct"]["vs_amd"] for r in res.values())
    metrics["proj_assumed_amd_over_nv"] = perfmodel.ASSUMPTIONS.amd_over_nv
    return metrics


def rho_ranges(models) -> dict:
    """The assumed AMD/NVIDIA speeds (of `RHO_SCAN`) for which device-direct lands in the paper's ranges on
    every model (it follows the input): proj_rho_<range>_low / _high, None where none does."""
    metrics = {}
    dd = {rho: [perfmodel.project(m, replace(perfmodel.ASSUMPTIONS, amd_over_nv=rho), ks=(1,))["ratios"]["device_direct"]
                for m in models] for rho in RHO_SCAN}   # each projection once, read by every range
    for name, ok in PAPER_RANGES:
        hit = [rho for rho in RHO_SCAN if all(ok(r) for r in dd[rho])]
        metrics[f"proj_rho_{name}_low"], metrics[f"proj_rho_{name}_high"] = (min(hit), max(hit)) if hit else (None, None)
    return metrics
