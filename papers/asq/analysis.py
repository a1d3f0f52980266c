"""Paired statistics over training seeds: config tags, per-seed accuracy lists, paired differences.

Paper: "Precision Neural Network Quantization via Learnable Adaptive Modules",
arXiv:2504.17263, https://arxiv.org/abs/2504.17263

All accuracies are top-1 in percent; a delta between two configurations is the mean over seeds
of the per-seed difference (same float checkpoint, same data order): a paired comparison. The
claims judge such comparisons from the per-seed lists (`*_per_seed`, ordered by seed), which the
claims engine pairs by position. The claims' metrics are built from these in
`studies/qat_comparison.py: claim_metrics`.
"""
from __future__ import annotations

import numpy as np
import pandas as pd


def tag(method: str, bits: int, grid: str) -> str:
    """The name of a QAT configuration in the grid's tables: "fp", or "<method>-w<b>a<b>-<grid>"."""
    return "fp" if method == "fp" else f"{method}-w{bits}a{bits}-{grid}"


def paired(df: pd.DataFrame, a: str, b: str) -> tuple[float, float, int]:
    """(mean over seeds of acc[a] - acc[b], fraction of seeds with a > b, number of pairs): the paired
    comparison of the accuracy claims (README "Claims and their controls")."""
    wide = df.pivot_table(index="seed", columns="config", values="acc")
    if a not in wide or b not in wide:
        return float("nan"), float("nan"), 0
    d = (wide[a] - wide[b]).dropna()
    return float(d.mean()), float((d > 0).mean()), int(len(d))


def per_seed(df: pd.DataFrame, config: str, seeds, column: str = "acc") -> list[float]:
    """Accuracy (`column`) of `config` at each of `seeds`, in that order (NaN where a seed lacks it)."""
    wide = df.pivot_table(index="seed", columns="config", values=column)
    col = wide[config] if config in wide else pd.Series(dtype=float)
    return [float(col.get(s, np.nan)) for s in seeds]


def allbits_delta(per_seed_lists: dict, method: str, bits_list) -> list[float]:
    """Per seed, the mean over `bits_list` of acc_<method>_w<b> - acc_lsq_w<b> (lists `acc_*_per_seed`)."""
    diffs = np.array([[a - l for a, l in zip(per_seed_lists[f"acc_{method}_w{b}_per_seed"],
                                              per_seed_lists[f"acc_lsq_w{b}_per_seed"])] for b in bits_list])
    return [float(v) for v in diffs.mean(axis=0)]
