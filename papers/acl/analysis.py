"""Per-replicate tables and the metrics the claims read (lists paired by replicate position): the
helpers the study modules (`papers/acl/studies/`) map their measurements with.

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539
"""
from __future__ import annotations

import numpy as np
import pandas as pd

SCALARS = ("fid", "kid", "precision", "recall", "density", "coverage", "class_min_frac", "class_kl", "class_tv", "memorization",
           "memorization_feat")


def image_table(results: list[dict]) -> pd.DataFrame:
    """One row per (study, replicate, method) with the scalar metrics."""
    rows = []
    for res in results:
        for method, m in res["metrics"].items():
            rows.append({"study": res["study"], "replicate": res["replicate"], "method": method,
                         **{k: m[k] for k in SCALARS if k in m}})
    return pd.DataFrame(rows)


def summary_table(table: pd.DataFrame, floor: dict) -> pd.DataFrame:
    """Mean of every scalar per method over the replicates, and the real-vs-real floor as the last row."""
    summary = table.groupby("method").mean(numeric_only=True).drop(columns="replicate")
    summary.loc["real-vs-real floor"] = {k: floor.get(k) for k in summary.columns}
    return summary.round(3)


FLOOR_KEYS = ("fid", "kid", "density", "coverage", "memorization")


def floor_metrics(prov: dict, featinfo: dict, floor: dict, keys=FLOOR_KEYS, half_density: bool = False) -> dict:
    """What an image notebook logs before its claims: the provenance, the evaluation network's info, and the
    real-vs-real floor as `floor_<key>` (with `half_density`: `floor_density_half` = half the floor's
    density, the reference of claim `prior-worst-region-density`)."""
    out = {**prov, **featinfo, **{f"floor_{k}": floor[k] for k in keys}}
    if half_density:
        out["floor_density_half"] = 0.5 * floor["density"]
    return out


def c2st_metrics(results: list[dict], study: str,
                 samplers=("acl", "normal", "gauss", "gmm", "mmd_gc", "train_codes")) -> dict:
    """`c2st_<study>_<sampler>`: the held-out code two-sample accuracy of each code sampler, per replicate; none where
    the replicates ran no test (`code_c2st` off, as at quick). Replicates of which only some ran it (caches of two
    settings in one run folder) are an error, not a shorter list."""
    tested = ["c2st" in r for r in results]
    if not any(tested):
        return {}
    if not all(tested):
        raise ValueError(f"code two-sample tests in {sum(tested)} of {len(results)} {study} replicates: one setting of "
                         "`code_c2st` per run folder")
    return {f"c2st_{study}_{k}": [r["c2st"][k] for r in results] for k in samplers}


def per_rep(df: pd.DataFrame, study: str, method: str, col: str) -> list[float]:
    """Values of `col` ordered by replicate (the pairing the comparison claims rely on)."""
    sub = df[(df.study == study) & (df.method == method)].sort_values("replicate")
    return [float(v) for v in sub[col]]


def region_ratio(regions: list[dict], key: str = "density", kind: str | None = None) -> float:
    """Worst region's value / best region's value (1 = every region of the prior equally good), over the
    regions whose name starts with `kind` ("shell", "orthant"; None: all of them)."""
    vals = np.array([r[key] for r in regions if kind is None or r.get("region", "shell").startswith(kind)], dtype=float)
    return float(vals.min() / vals.max()) if vals.max() > 0 else float("nan")


def region_worst(regions: list[dict], key: str = "density") -> float:
    """The worst region's value (over shells and orthants)."""
    return float(min(r[key] for r in regions))


def pooled_sd(a, b) -> float:
    """sqrt((var_a + var_b) / 2) with ddof=1."""
    return float(np.sqrt((np.var(a, ddof=1) + np.var(b, ddof=1)) / 2))


def synthetic_metrics(rows: list[dict], mixtures) -> dict:
    """`syn_<mixture>_<method>_{hq,modes,kl,modes_any}` per replicate (VEEGAN's HQ fraction, PacGAN's 1/5-share
    mode count, VEEGAN's one-sample count; claims `syn-*`, "abstract (synthetic data)"), and the min / median
    mode count of ACL-AE, its control and uniform noise."""
    df = pd.DataFrame(rows)
    out = {}
    for mix in mixtures:
        sub = df[df.mixture == mix]
        for method in sub.method.unique():
            s = sub[sub.method == method].sort_values("replicate")
            out[f"syn_{mix}_{method}_hq"] = [float(v) for v in s.hq_frac]
            out[f"syn_{mix}_{method}_modes"] = [int(v) for v in s.modes]
            out[f"syn_{mix}_{method}_kl"] = [float(v) for v in s.kl]
            if "modes_any" in s and s.modes_any.notna().all():  # VEEGAN's lenient count (one HQ sample captures a mode), for comparison
                out[f"syn_{mix}_{method}_modes_any"] = [int(v) for v in s.modes_any]
        for method in ("acl_ae", "ae_mmd_gc", "uniform"):  # the claim's sampler, its control (no adversary), uniform noise
            if f"syn_{mix}_{method}_modes" in out:
                modes = out[f"syn_{mix}_{method}_modes"]
                out[f"syn_{mix}_{method}_modes_min"] = int(min(modes))
                out[f"syn_{mix}_{method}_modes_median"] = float(np.median(modes))  # robust to one collapsed code GAN
    return out
