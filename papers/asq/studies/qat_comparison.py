"""Notebook 02: FP, LSQ and ASQ at 2/3/4 bits, and the weight grids at W4A4, paired over training seeds.

Paper: "Precision Neural Network Quantization via Learnable Adaptive Modules",
arXiv:2504.17263, https://arxiv.org/abs/2504.17263. Claims (source: abstract): ASQ beats LSQ at 2/3/4 bits
(`asq-vs-lsq-w2`, `-w3`, `-w4`, `-all-bits`), POST beats POT and keeps uniform accuracy at W4A4
(`post-vs-pot-acc-w4`, `post-vs-uniform-w4`), 4-bit ASQ is competitive with full precision
(`asq-w4-vs-fp`), ResNet-34 W4A4 on ImageNet gains 1.2 points (`asq-w4-r34-imagenet`).

The training itself is `QATGrid.run_grid`, which the notebook calls through `train` one training replicate
per cell (so that no cell outlives the runner's per-cell timeout); `measure(cfg, run)` then loads the grid from
the run's checkpoints (training whatever is missing) and maps it to the claims' metrics (`grid_metrics`):
per-replicate accuracy lists (`acc_*_per_seed`, ordered by replicate, paired by position by the claims engine)
and the paired means beside them (`analysis`). Every claim of this notebook is judged at full only: at quick
the profile's `qat_grid` is off, so the notebook trains only notebook 03's ASQ W4A4 POST model and logs the float
models' accuracies; quick's comparison set is trained on development seeds by `devtune w2_finding` (README,
findings).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..analysis import allbits_delta, paired, per_seed, tag
from ..qat_grid import QATGrid, grid_jobs, grid_sets


def claim_metrics(df: pd.DataFrame, bits_list, ablation_bits: int = 4, grids=("uniform", "pot", "post"),
                  sbeta_bits=(), frozen_bits=None) -> dict:
    """Plain-number metrics of the accuracy claims from a table with columns seed, config, acc (and best_acc).
    `frozen_bits`: the widths with the frozen-beta diagnostic (None: every width of `bits_list`); the ASQ W4A4
    model before QAT (`ptq-asq-w4a4-uniform`) is listed when the table has it."""
    frozen_bits = [b for b in (bits_list if frozen_bits is None else frozen_bits) if b in bits_list]
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
    for b in frozen_bits:   # a diagnostic: the trained ASQ model with each layer's beta frozen at its mean
        out[f"acc_asq_frozen_w{b}_per_seed"] = per_seed(df, f"frozen-{tag('asq', b, 'uniform')}", seeds)
    for b in sbeta_bits:   # the trained null of ASQ's adaptivity: one trained scalar beta per layer
        out[f"acc_sbeta_w{b}_per_seed"] = per_seed(df, tag("sbeta", b, "uniform"), seeds)
    # ASQ - LSQ averaged over the bit widths, per seed (one paired difference per seed); the same for the nulls
    if bits_list:      # none where the run trains no QAT grid (quick: `qat_grid` off)
        out["delta_asq_lsq_allbits_per_seed"] = allbits_delta(out, "asq", bits_list)
    if bits_list and set(bits_list) <= set(frozen_bits):
        out["delta_asq_frozen_lsq_allbits_per_seed"] = allbits_delta(out, "asq_frozen", bits_list)
    if bits_list and set(bits_list) <= set(sbeta_bits):
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
    if 4 in bits_list and (df.config == "ptq-asq-w4a4-uniform").any():  # ASQ W4A4 before QAT (no fine-tuning)
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
    if 4 in bits_list:   # asq-w4-vs-fp's mean difference (the claim pairs the per-seed lists)
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
    if not bits_list and not ablation_grids:     # no QAT grid in the run (quick): no pairs
        return pd.DataFrame(columns=["seed", "comparison", "delta (pp)"])
    pairs = {f"ASQ-LSQ W{b}": wide[f"asq-w{b}a{b}-uniform"] - wide[f"lsq-w{b}a{b}-uniform"] for b in bits_list}
    pairs |= {f"frozen-LSQ W{b}": wide[f"frozen-asq-w{b}a{b}-uniform"] - wide[f"lsq-w{b}a{b}-uniform"] for b in bits_list
              if f"frozen-asq-w{b}a{b}-uniform" in wide}
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


def run_jobs(cfg) -> list[dict]:
    """Every QAT model of a run (`QATGrid.train_job`'s keyword arguments): the grid of every training replicate
    (`qat_grid.grid_jobs`; none where the profile's `qat_grid` is off, quick) and notebook 03's ASQ W4A4 POST model
    of the first, which the integer-path claims read (at full also a configuration of the ablation)."""
    return grid_jobs(cfg, cfg.seeds) + [dict(seed=cfg.seeds[0], method="asq", bits=cfg.ablation_bits, grid="post")]


def train(cfg, run, replicates) -> pd.DataFrame:
    """Train (or load) the grid of the training `replicates` into the run's checkpoints (`QATGrid.run_grid`): the
    notebook's training cells, one replicate each. On the CPU the first of them hands every missing QAT model of
    the run (`run_jobs`) to the worker pool at once (`QATGrid.train_missing`; at quick only notebook 03's ASQ POST
    model, one task in one one-thread worker); the later cells load. On a GPU each cell trains its replicate."""
    grid = QATGrid.of_run(cfg, run)
    grid.train_missing(run_jobs(cfg))
    return grid.run_grid(replicates)


def measure(cfg, run) -> dict:
    """The grid of every training replicate, loaded from the run's checkpoints (`train`; whatever is missing is
    trained here), saved as `qat_results.json`, and its metrics (`grid_metrics`); the data's provenance is
    logged as the run's inputs."""
    grid = QATGrid.of_run(cfg, run)
    df = grid.run_grid()
    run.log_inputs(grid.info["provenance"])
    run.save_json("qat_results.json", df.to_dict(orient="records"))
    return grid_metrics(cfg, df, grid.info["n_train"])


def grid_metrics(cfg, df: pd.DataFrame, n_train: int | None = None) -> dict:
    """The claims' metrics from the grid's table (`QATGrid.run_grid`); also the table, accuracies per config and
    replicate, and the per-replicate paired differences. `n_train`: the training images of the run
    (`QATGrid.info`), for `qat_steps_over_converged_min`."""
    sets = grid_sets(cfg)      # what the run's grid trained (nothing but the float models at quick)
    metrics = claim_metrics(df, sets["bits"], cfg.ablation_bits, tuple(sets["ablation_grids"]),
                            tuple(sets["sbeta_bits"]), tuple(sets["frozen_bits"]))
    if n_train:
        metrics["qat_steps_over_converged_min"] = steps_over_converged(cfg.qat_epochs, n_train, cfg.batch_size,
                                                                       cfg.converged_qat_steps_min)
    metrics.update(imagenet_metrics(metrics, cfg.dataset, cfg.arch, sets["bits"]))
    return {"metrics": metrics, "table": df,
            "by_seed": df.pivot_table(index="config", columns="seed", values="acc").round(2),
            "summary": pd.Series({k: v for k, v in metrics.items() if not isinstance(v, list)}).round(3),
            "pairs": paired_deltas(df, sets["bits"], cfg.ablation_bits, sets["ablation_grids"])}
