"""Paired statistics over seeds and the metrics the claims test.

Paper: "Precision Neural Network Quantization via Learnable Adaptive Modules",
arXiv:2504.17263, https://arxiv.org/abs/2504.17263

All accuracies are top-1 in percent; a delta between two configurations is the mean over seeds
of the per-seed difference (same float checkpoint, same data order): a paired comparison. The
claims judge such comparisons from the per-seed lists (`*_per_seed`, ordered by seed), which the
claims engine pairs by position.
"""
from __future__ import annotations

import numpy as np
import pandas as pd


def tag(method: str, bits: int, grid: str) -> str:
    return "fp" if method == "fp" else f"{method}-w{bits}a{bits}-{grid}"


def paired(df: pd.DataFrame, a: str, b: str) -> tuple[float, float, int]:
    """(mean over seeds of acc[a] - acc[b], fraction of seeds with a > b, number of pairs)."""
    wide = df.pivot_table(index="seed", columns="config", values="acc")
    if a not in wide or b not in wide:
        return float("nan"), float("nan"), 0
    d = (wide[a] - wide[b]).dropna()
    return float(d.mean()), float((d > 0).mean()), int(len(d))


def per_seed(df: pd.DataFrame, config: str, seeds) -> list[float]:
    """Accuracy of `config` at each of `seeds`, in that order (NaN where a seed lacks it)."""
    wide = df.pivot_table(index="seed", columns="config", values="acc")
    col = wide[config] if config in wide else pd.Series(dtype=float)
    return [float(col.get(s, np.nan)) for s in seeds]


def allbits_delta(per_seed_lists: dict, method: str, bits_list) -> list[float]:
    """Per seed, the mean over `bits_list` of acc_<method>_w<b> - acc_lsq_w<b> (lists `acc_*_per_seed`)."""
    diffs = np.array([[a - l for a, l in zip(per_seed_lists[f"acc_{method}_w{b}_per_seed"],
                                              per_seed_lists[f"acc_lsq_w{b}_per_seed"])] for b in bits_list])
    return [float(v) for v in diffs.mean(axis=0)]


def claim_metrics(df: pd.DataFrame, bits_list, ablation_bits: int = 4, grids=("uniform", "pot", "post")) -> dict:
    """Plain-number metrics for claims 1-3 from a table with columns seed, config, acc."""
    out: dict = {}
    fp = df[df.config == "fp"].acc.to_numpy()
    out["acc_fp_mean"] = float(fp.mean())
    out["acc_fp_std"] = float(fp.std(ddof=1)) if len(fp) > 1 else 0.0
    out["n_seeds"] = int(len(fp))
    seeds = sorted(df.seed.unique().tolist())
    out["seeds"] = [int(s) for s in seeds]
    out["acc_fp_per_seed"] = per_seed(df, "fp", seeds)
    for b in bits_list:
        for m in ("lsq", "asq"):
            out[f"acc_{m}_w{b}_per_seed"] = per_seed(df, tag(m, b, "uniform"), seeds)
        # the control of ASQ vs LSQ: the trained ASQ model with each layer's beta frozen at its mean
        out[f"acc_asq_frozen_w{b}_per_seed"] = per_seed(df, f"frozen-{tag('asq', b, 'uniform')}", seeds)
    # ASQ - LSQ averaged over the bit widths, per seed (one paired difference per seed); the same for frozen beta
    out["delta_asq_lsq_allbits_per_seed"] = allbits_delta(out, "asq", bits_list)
    out["delta_asq_frozen_lsq_allbits_per_seed"] = allbits_delta(out, "asq_frozen", bits_list)
    if 4 in bits_list:  # ASQ W4A4 before QAT (no fine-tuning): the null of the claims against full precision
        out["acc_ptq_asq_w4_per_seed"] = per_seed(df, "ptq-asq-w4a4-uniform", seeds)
    for g in grids:
        out[f"acc_{g}_w{ablation_bits}_per_seed"] = per_seed(df, tag("asq", ablation_bits, g), seeds)
    for b in bits_list:
        for m in ("lsq", "asq"):
            out[f"acc_{m}_w{b}_mean"] = float(df[df.config == tag(m, b, "uniform")].acc.mean())
        d, ahead, _ = paired(df, tag("asq", b, "uniform"), tag("lsq", b, "uniform"))
        out[f"delta_asq_lsq_w{b}"] = d
        out[f"asq_ahead_frac_w{b}"] = ahead
    b = ablation_bits
    for g in grids:
        out[f"acc_{g}_w{b}_mean"] = float(df[df.config == tag("asq", b, g)].acc.mean())
    if "post" in grids and "pot" in grids:
        out[f"delta_post_pot_w{b}"], out[f"post_ahead_pot_frac_w{b}"], _ = paired(df, tag("asq", b, "post"), tag("asq", b, "pot"))
    if "post" in grids and "uniform" in grids:
        out[f"delta_post_uniform_w{b}"], _, _ = paired(df, tag("asq", b, "post"), tag("asq", b, "uniform"))
    if 4 in bits_list:
        # claim 3: mean(ASQ W4A4) >= mean(FP) - max(0.3 pp, 2 sigma_FP)
        out["fp_floor_w4"] = out["acc_fp_mean"] - max(0.3, 2 * out["acc_fp_std"])
        out["delta_asq_fp_w4"] = out["acc_asq_w4_mean"] - out["acc_fp_mean"]
    return {k: (float(v) if isinstance(v, (float, np.floating)) else v) for k, v in out.items()}
