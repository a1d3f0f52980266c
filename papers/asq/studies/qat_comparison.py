"""Notebook 02: FP, LSQ and ASQ at 2/3/4 bits, and the weight grids at W4A4, paired over training seeds.

Paper: "Precision Neural Network Quantization via Learnable Adaptive Modules",
arXiv:2504.17263, https://arxiv.org/abs/2504.17263. Claims (source: abstract): ASQ beats LSQ at 2/3/4 bits
(`asq-vs-lsq-w2`, `-w3`, `-w4`, `-all-bits`), POST beats POT and keeps uniform accuracy at W4A4
(`post-vs-pot-acc-w4`, `post-vs-uniform-w4`), 4-bit ASQ is competitive with full precision
(`asq-w4-vs-fp`), ResNet-34 W4A4 on ImageNet gains 1.2 points (`asq-w4-r34-imagenet`).

The training itself is `QATGrid.run_grid`, which the notebook calls one seed per cell (so that no cell
outlives the runner's per-cell timeout); `measure` takes those tables and maps them to the claims' metrics:
per-seed accuracy lists (`acc_*_per_seed`, ordered by seed, paired by position by the claims engine) and
the paired means beside them (`analysis`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..analysis import allbits_delta, paired, per_seed, tag


def claim_metrics(df: pd.DataFrame, bits_list, ablation_bits: int = 4, grids=("uniform", "pot", "post"),
                  sbeta_bits=()) -> dict:
    """Plain-number metrics of the accuracy claims from a table with columns seed, config, acc (and best_acc)."""
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
        # a diagnostic: the trained ASQ model with each layer's beta frozen at its mean (no input dependence left)
        out[f"acc_asq_frozen_w{b}_per_seed"] = per_seed(df, f"frozen-{tag('asq', b, 'uniform')}", seeds)
    for b in sbeta_bits:   # the trained null of ASQ's adaptivity: one trained scalar beta per layer
        out[f"acc_sbeta_w{b}_per_seed"] = per_seed(df, tag("sbeta", b, "uniform"), seeds)
    # ASQ - LSQ averaged over the bit widths, per seed (one paired difference per seed); the same for the nulls
    out["delta_asq_lsq_allbits_per_seed"] = allbits_delta(out, "asq", bits_list)
    out["delta_asq_frozen_lsq_allbits_per_seed"] = allbits_delta(out, "asq_frozen", bits_list)
    if set(bits_list) <= set(sbeta_bits):
        out["delta_sbeta_lsq_allbits_per_seed"] = allbits_delta(out, "sbeta", bits_list)
        out["delta_asq_sbeta_allbits_per_seed"] = [a - s for a, s in zip(out["delta_asq_lsq_allbits_per_seed"],
                                                                          out["delta_sbeta_lsq_allbits_per_seed"])]
    for b in sbeta_bits:
        if b in bits_list:
            out[f"delta_asq_lsq_w{b}_per_seed"] = _diff(out[f"acc_asq_w{b}_per_seed"], out[f"acc_lsq_w{b}_per_seed"])
            out[f"delta_sbeta_lsq_w{b}_per_seed"] = _diff(out[f"acc_sbeta_w{b}_per_seed"], out[f"acc_lsq_w{b}_per_seed"])
            out[f"delta_asq_sbeta_w{b}_per_seed"] = _diff(out[f"acc_asq_w{b}_per_seed"], out[f"acc_sbeta_w{b}_per_seed"])
    if "best_acc" in df:   # the release's best-of-epochs accuracy (best_acc1), reported beside the final one
        for conf in sorted(df.config[df.best_acc.notna()].unique()):
            out[f"best_acc_{conf.replace('-', '_')}_per_seed"] = per_seed(df, conf, seeds, column="best_acc")
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


def _diff(a, b) -> list[float]:
    """Per seed a - b (two lists paired by position)."""
    return [float(x - y) for x, y in zip(a, b)]


def imagenet_metrics(metrics: dict, dataset: str, arch: str, bits_list) -> dict:
    """The ImageNet ResNet-34 claim's lists (ASQ W4A4, FP, and LSQ W4A4 as the competitor measured the same
    way), only on ImageNet with ResNet-34; empty otherwise."""
    if dataset == "imagenet" and arch == "resnet34" and 4 in bits_list:
        return {"imagenet_r34_acc_asq_w4_per_seed": metrics["acc_asq_w4_per_seed"],
                "imagenet_r34_acc_fp_per_seed": metrics["acc_fp_per_seed"],
                "imagenet_r34_acc_lsq_w4_per_seed": metrics["acc_lsq_w4_per_seed"]}
    return {}


def paired_deltas(df: pd.DataFrame, bits_list, ablation_bits: int, ablation_grids) -> pd.DataFrame:
    """Per training seed, the paired differences the figure shows (long form: seed, comparison, delta (pp)):
    ASQ - LSQ and frozen-beta ASQ - LSQ per width, POST - POT and POST - uniform at the ablation width."""
    wide = df.pivot_table(index="seed", columns="config", values="acc")
    pairs = {f"ASQ-LSQ W{b}": wide[f"asq-w{b}a{b}-uniform"] - wide[f"lsq-w{b}a{b}-uniform"] for b in bits_list}
    pairs |= {f"frozen-LSQ W{b}": wide[f"frozen-asq-w{b}a{b}-uniform"] - wide[f"lsq-w{b}a{b}-uniform"] for b in bits_list}
    pairs |= {f"scalar beta-LSQ W{b}": wide[f"sbeta-w{b}a{b}-uniform"] - wide[f"lsq-w{b}a{b}-uniform"]
              for b in bits_list if f"sbeta-w{b}a{b}-uniform" in wide}
    b = ablation_bits
    if "post" in ablation_grids and "pot" in ablation_grids:
        pairs[f"POST-POT W{b}"] = wide[f"asq-w{b}a{b}-post"] - wide[f"asq-w{b}a{b}-pot"]
        pairs[f"POST-uniform W{b}"] = wide[f"asq-w{b}a{b}-post"] - wide[f"asq-w{b}a{b}-uniform"]
    return pd.DataFrame(pairs).reset_index().melt(id_vars="seed", var_name="comparison", value_name="delta (pp)")


def steps_over_converged(qat_epochs: int, n_train: int, batch_size: int, converged_steps: int) -> float:
    """The run's QAT steps (epochs x whole batches) over the steps before which LSQ's step has not converged
    (`config.converged_qat_steps_min`, a lower bound from development seeds): below 1, ASQ-vs-LSQ differences can
    be a learning-rate effect of short training."""
    return float(qat_epochs * max(1, n_train // batch_size) / converged_steps)


def measure(cfg, *, parts, n_train: int | None = None) -> dict:
    """The claims' metrics from `parts`, the tables of `QATGrid.run_grid` (one per group of seeds; empty ones
    skipped); also the joined table, accuracies per config and seed, and the per-seed paired differences.
    `n_train`: the training images of the run (`QATGrid.info`), for `qat_steps_over_converged_min`."""
    df = pd.concat([p for p in parts if len(p)], ignore_index=True)
    metrics = claim_metrics(df, cfg.bits, cfg.ablation_bits, tuple(cfg.ablation_grids),
                            tuple(getattr(cfg, "sbeta_bits", ())))
    if n_train:
        metrics["qat_steps_over_converged_min"] = steps_over_converged(cfg.qat_epochs, n_train, cfg.batch_size,
                                                                       cfg.converged_qat_steps_min)
    metrics.update(imagenet_metrics(metrics, cfg.dataset, cfg.arch, cfg.bits))
    return {"metrics": metrics, "table": df,
            "by_seed": df.pivot_table(index="config", columns="seed", values="acc").round(2),
            "summary": pd.Series({k: v for k, v in metrics.items() if not isinstance(v, list)}).round(3),
            "pairs": paired_deltas(df, cfg.bits, cfg.ablation_bits, cfg.ablation_grids)}
