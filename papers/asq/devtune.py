"""Development-seed runs of asq (never seeds 0-2): the QAT length of the adapter comparison, and quick's findings.

Paper: "Precision Neural Network Quantization via Learnable Adaptive Modules",
arXiv:2504.17263, https://arxiv.org/abs/2504.17263

    python -m papers.asq.devtune qat_length [--seeds 100 101 102]
    python -m papers.asq.devtune w4_vs_fp --seeds 100 101 102 103 104 105 106 107 108
    python -m papers.asq.devtune w2_finding [--seeds 100 101 102]

`qat_length`: at the quick profile's sizes (Fashion-MNIST, ResNet-8, 10k images, batch 128, the released QAT
recipe), per development seed: the float model, then LSQ W2A2 fine-tuned for each length of `LADDER` (epochs;
cosine schedule over the whole length), with every quantized layer's learned activation step s at the end; ASQ
and the scalar-beta null (`sbeta`) at the first and the third length. LSQ's step scales its gradient by
1 / sqrt(Qp * numel of the batch) (the release's convention) while ASQ's beta is unscaled, so in a short run
beta can move where LSQ's step cannot: a learning-rate effect, not adaptivity (issue 41). The comparison the
paper credits (ASQ against a trained per-layer scalar beta) needs a QAT length where LSQ's step has converged.

Criterion. The first one, fixed before the first run, asked every layer's final step to be within `TOL` (1 %)
of its final step at the next length of the ladder (`converged_length(..., rel=None)`, kept in the record as
`converged_epochs_abs`). It was met at every length, because LSQ's step hardly moves at all (its total
movement from initialisation is about 1-2 % even after 20 epochs): it reads a stalled step as a converged one
and could not come out the other way. The criterion used (`converged_epochs`) is scale-free: LSQ's step has
converged at L when, on every development seed, every layer's change from L to the next length is below
`REL_TOL` (10 %) of the step's largest change from its initialisation to L; the chosen length is the shortest
such L, and when none is, the converged length is longer than the ladder's last length (`converged_after_epochs`
= the last length: a lower bound). Results: results/asq/dev/qat_length.json (`common.devseeds`), read by the
README's tuned block through `config.TUNED`; the models are cached beside it (ckpt-qat_length/), so a rerun
with another criterion only evaluates.

`w4_vs_fp`: whether quick can decide `asq-w4-vs-fp` (4-bit ASQ against the float model it was fine-tuned from,
paired over a run's training seeds). Per development seed: the float model and 4-bit ASQ and LSQ (the control)
at quick; the summary gives the mean and SD over the seeds of ASQ - FP and LSQ - FP, the power of one run of 3
training seeds (a one-sided 95 % paired t bound excluding 0, noncentral t at the development mean and SD), and
the training seeds per run at which all three reported runs decide (power ** 3 >= 0.9; None: no n up to 30).
Results: results/asq/dev/w4_vs_fp.json, shown by the README's `dev w4_vs_fp` block; the claim's note cites it.

`w2_finding`: the README's two quick findings (ASQ's gain over LSQ at quick is a learning-rate effect; 4-bit ASQ
is not better than the float model at quick), which a quick run no longer recomputes (its `qat_grid` is off:
every comparison claim is judged at full). Per development seed, the run a quick run of that seed would make with
its comparison set on (`finding_config`: the quick profile with `qat_grid` on, so `bits`, `sbeta_bits` and
`frozen_bits` of config.PROFILES["quick"]): three training replicates drawing from the streams rooted at the seed,
each the float model, LSQ and ASQ at W2 and W4, the scalar-beta null at W2 and ASQ W2 with beta frozen; the same
per-replicate lists and differences the finding tables showed per run (`FIGURES`, from notebook 02's
`grid_metrics`), and the adapter's beta statistics of replicate 0 at each width (notebook 04's `beta_metrics`).
The summary pools the training replicates of every seed: mean, SD and the two-sided 95 % t half-width of each
paired difference (`summarise_w2_finding`). Results: results/asq/dev/w2_finding.json, shown by the README's
`dev w2_finding` blocks; the models are cached beside it (ckpt-w2_finding/), so a rerun only evaluates.
"""
from __future__ import annotations

import argparse
import statistics

from common import devseeds
from common.errors import user_errors_exit

LADDER = (2, 5, 10, 20)      # QAT epochs at quick's sizes (78 steps each)
TOL = 0.01                   # first criterion: largest relative change of any layer's step to the next length
REL_TOL = 0.1                # the criterion used: change to the next length / change from initialisation
COMPARE = (2, 10)            # lengths at which ASQ and the scalar-beta null are trained too
BITS = 2
STEPS_PER_EPOCH = 78         # quick: 10 000 images // batch 128


def steps_of(qmodel) -> list[float]:
    """The learned activation step s of every quantized layer, in module order."""
    from .convert import quant_layers

    return [float(layer.act_q.s.detach()) for _, layer in quant_layers(qmodel)]


def max_rel_change(a, b) -> float:
    """max_l |a_l / b_l - 1|: the largest relative difference between two lists of steps."""
    return max(abs(x / y - 1.0) for x, y in zip(a, b))


def converged_length(per_seed: dict, ladder=LADDER, tol: float = TOL, rel: float | None = REL_TOL) -> int | None:
    """The shortest length of `ladder` (but the last) at which LSQ's steps have converged on every seed; None
    when none has. With `rel`: the change to the next length (`per_seed[seed]["change_to_next"][str(L)]`) below
    `rel` x the change from initialisation (`["change_from_init"][str(L)]`); with rel=None: the change to the
    next length below `tol` (the first criterion, which a stalled step meets)."""
    for L in ladder[:-1]:
        if rel is None:
            ok = all(r["change_to_next"][str(L)] < tol for r in per_seed.values())
        else:
            ok = all(r["change_to_next"][str(L)] < rel * r["change_from_init"][str(L)] for r in per_seed.values())
        if ok:
            return int(L)
    return None


def dev_grid(seed: int):
    """The quick profile's grid of development seed `seed` (one training replicate, 0, drawing from the streams
    rooted at `seed`), cached beside the development records (ckpt-qat_length/, shared by both tunings)."""
    from common.seed import Streams

    from .config import get_config
    from .qat_grid import QATGrid

    cfg = get_config("quick", seeds=[0])
    cfg.ckpt_dir = str(devseeds.result_path("asq", "qat_length").with_name("ckpt-qat_length"))
    return QATGrid(cfg, cfg.ckpt_dir, Streams(seed))


def tune_qat_length(seed: int) -> dict:
    """One development seed at the quick profile's sizes: LSQ's steps and accuracy at every length of `LADDER`,
    ASQ's and the scalar-beta null's accuracy at the lengths of `COMPARE`."""
    from .convert import quant_layers
    from .train import make_qat

    grid = dev_grid(seed)
    fmodel, fp_acc = grid.float_model(0)
    init = make_qat(fmodel, grid.train, method="lsq", w_bits=BITS, a_bits=BITS, grid="uniform",
                    first_last=grid.cfg.first_last, streams=grid.replicate(0))
    s0 = steps_of(init)
    steps, acc = {}, {"fp": fp_acc}
    for L in LADDER:
        model, acc[f"lsq_e{L}"] = grid.qat_model(0, "lsq", BITS, "uniform", epochs=L)
        steps[L] = steps_of(model)
    for L in COMPARE:
        for m in ("asq", "sbeta"):
            _, acc[f"{m}_e{L}"] = grid.qat_model(0, m, BITS, "uniform", epochs=L)
    return {"layers": [n for n, _ in quant_layers(init)], "steps_init": s0,
            "steps": {str(L): v for L, v in steps.items()}, "acc": acc,
            "change_from_init": {str(L): max_rel_change(steps[L], s0) for L in LADDER},
            "change_to_next": {str(a): max_rel_change(steps[a], steps[b]) for a, b in zip(LADDER, LADDER[1:])},
            "gain_asq_lsq": {str(L): acc[f"asq_e{L}"] - acc[f"lsq_e{L}"] for L in COMPARE},
            "gain_sbeta_lsq": {str(L): acc[f"sbeta_e{L}"] - acc[f"lsq_e{L}"] for L in COMPARE},
            "gain_asq_sbeta": {str(L): acc[f"asq_e{L}"] - acc[f"sbeta_e{L}"] for L in COMPARE}}


def summarise_qat_length(results: dict) -> dict:
    """The chosen length and the mean gains over the seeds at each compared length."""
    per_seed = {k: v for k, v in results.items() if isinstance(v, dict) and "change_to_next" in v}
    L = converged_length(per_seed)
    out = {"converged_epochs": L, "converged_after_epochs": LADDER[-1] if L is None else L,
           "converged_after_steps": (LADDER[-1] if L is None else L) * STEPS_PER_EPOCH,
           "converged_epochs_abs": converged_length(per_seed, rel=None), "tol": TOL, "rel_tol": REL_TOL,
           "ladder": list(LADDER)}
    for name in ("gain_asq_lsq", "gain_sbeta_lsq", "gain_asq_sbeta"):
        for c in COMPARE:
            out[f"mean_{name}_e{c}"] = statistics.mean(r[name][str(c)] for r in per_seed.values())
    for L in LADDER[:-1]:
        out[f"max_change_to_next_e{L}"] = max(r["change_to_next"][str(L)] for r in per_seed.values())
        out[f"min_change_ratio_e{L}"] = min(r["change_to_next"][str(L)] / r["change_from_init"][str(L)]
                                            for r in per_seed.values())
    for L in LADDER:
        out[f"mean_acc_lsq_e{L}"] = statistics.mean(r["acc"][f"lsq_e{L}"] for r in per_seed.values())
    return out


W4_CONFIDENCE = 0.95        # the claims engine's one-sided bound
W4_ALL_RUNS = 0.9           # wanted: the probability that all three reported runs reach the same verdict
W4_MAX_N = 30


def tune_w4_vs_fp(seed: int) -> dict:
    """One development training seed at the quick profile: the float model and 4-bit ASQ and LSQ (uniform weights)
    fine-tuned from it, the measurements of `asq-w4-vs-fp` (ASQ - FP) and of its control (LSQ - FP). The models are
    cached beside the qat_length ones (`dev_grid`). The recorded run (seeds 100-108) predates the keyed streams of
    issue 44 (its seeds then rooted integer-keyed generators); a rerun draws the same quantities from new streams."""
    grid = dev_grid(seed)
    _, fp = grid.float_model(0)
    _, asq = grid.qat_model(0, "asq", 4, "uniform")
    _, lsq = grid.qat_model(0, "lsq", 4, "uniform")
    return {"acc_fp": fp, "acc_asq_w4": asq, "acc_lsq_w4": lsq, "delta_asq_fp": asq - fp, "delta_lsq_fp": lsq - fp}


def paired_power(mean: float, sd: float, n: int, confidence: float = W4_CONFIDENCE) -> float:
    """The probability that a one-sided `confidence` paired-t bound over n replicates excludes 0, when the true
    mean difference is `mean` and its SD `sd` (noncentral t)."""
    from scipy import stats

    if n < 2 or sd <= 0:
        return float("nan")
    crit = stats.t.ppf(confidence, n - 1)
    return float(stats.nct.sf(crit, n - 1, abs(mean) * n ** 0.5 / sd))


def n_for_all_runs(mean: float, sd: float, runs: int = 3, want: float = W4_ALL_RUNS, max_n: int = W4_MAX_N):
    """The smallest number of training seeds per run at which all `runs` runs decide the sign (power ** runs >=
    `want`); None when no n up to `max_n` does."""
    for n in range(2, max_n + 1):
        if paired_power(mean, sd, n) ** runs >= want:
            return n
    return None


def summarise_w4_vs_fp(results: dict) -> dict:
    """Mean and SD over the development training seeds of ASQ - FP and LSQ - FP; the power of one reported run
    (3 training seeds) and the training seeds per run at which all three reported runs decide both."""
    per_seed = [v for v in results.values() if isinstance(v, dict) and "delta_asq_fp" in v]
    out = {"n_seeds": len(per_seed), "confidence": W4_CONFIDENCE, "want_all_runs": W4_ALL_RUNS}
    for name in ("delta_asq_fp", "delta_lsq_fp"):
        xs = [r[name] for r in per_seed]
        mean, sd = statistics.mean(xs), statistics.stdev(xs)
        out[f"{name}_mean"], out[f"{name}_sd"] = mean, sd
        out[f"{name}_power_n3"] = paired_power(mean, sd, 3)
        out[f"{name}_all_runs_n3"] = paired_power(mean, sd, 3) ** 3
        out[f"{name}_n_all_runs"] = n_for_all_runs(mean, sd)
    return out


#: the per-run figures of the W2 / W4 findings (notebook 02's `grid_metrics` of quick's comparison set)
FIGURES = ("acc_fp_per_seed", "acc_lsq_w2_per_seed", "acc_asq_w2_per_seed", "acc_sbeta_w2_per_seed",
           "acc_asq_frozen_w2_per_seed", "acc_lsq_w4_per_seed", "acc_asq_w4_per_seed", "delta_asq_lsq_w2_per_seed",
           "delta_sbeta_lsq_w2_per_seed", "delta_asq_sbeta_w2_per_seed", "delta_asq_fp_w4", "qat_steps_over_converged_min")
#: paired differences pooled over every development replicate: name -> (config A, config B), A - B per replicate
PAIRS = {"asq_lsq_w2": ("acc_asq_w2_per_seed", "acc_lsq_w2_per_seed"),
         "sbeta_lsq_w2": ("acc_sbeta_w2_per_seed", "acc_lsq_w2_per_seed"),
         "asq_sbeta_w2": ("acc_asq_w2_per_seed", "acc_sbeta_w2_per_seed"),
         "frozen_asq_w2": ("acc_asq_frozen_w2_per_seed", "acc_asq_w2_per_seed"),
         "asq_fp_w4": ("acc_asq_w4_per_seed", "acc_fp_per_seed"),
         "lsq_fp_w4": ("acc_lsq_w4_per_seed", "acc_fp_per_seed"),
         "asq_lsq_w4": ("acc_asq_w4_per_seed", "acc_lsq_w4_per_seed")}


def finding_config(ckpt_dir: str | None = None):
    """The quick profile with its comparison set trained (`qat_grid` on), checkpoints in `ckpt_dir` (default:
    ckpt-w2_finding/ beside the development records)."""
    from .config import get_config

    cfg = get_config("quick", qat_grid=True)
    cfg.ckpt_dir = ckpt_dir or str(devseeds.result_path("asq", "w2_finding").with_name("ckpt-w2_finding"))
    return cfg


def tune_w2_finding(seed: int, ckpt_dir: str | None = None) -> dict:
    """One development seed: the grid a quick run of `seed` trains with `qat_grid` on (`QATGrid.run_grid` on the
    streams rooted at `seed`), its `FIGURES`, and beta's statistics of replicate 0's ASQ model at each width."""
    from common.seed import Streams

    from .betas import collect_betas
    from .qat_grid import QATGrid
    from .studies.adapter import N_EXAMPLES, beta_metrics
    from .studies.qat_comparison import grid_metrics

    cfg = finding_config(ckpt_dir)
    grid = QATGrid(cfg, cfg.ckpt_dir, Streams(seed))
    metrics = grid_metrics(cfg, grid.run_grid(), grid.info["n_train"])["metrics"]
    out = {k: metrics[k] for k in FIGURES}
    n = min(N_EXAMPLES, len(grid.test))
    for b in cfg.bits:
        qmodel, _ = grid.qat_model(cfg.seeds[0], "asq", b, "uniform")
        betas = collect_betas(qmodel, grid.test, n=n)
        betas["bits"] = b
        out.update(beta_metrics(betas, [b]))
    return out


def summarise_w2_finding(results: dict) -> dict:
    """Pooled over the training replicates of every development seed: per `PAIRS` difference its mean, SD, the
    two-sided 95 % t half-width and the number of replicates; the mean accuracy per configuration; the mean
    over seeds of beta's statistics."""
    from scipy import stats

    per_seed = [v for v in results.values() if isinstance(v, dict) and "acc_fp_per_seed" in v]
    out: dict = {"n_dev_seeds": len(per_seed)}
    for name, (a, b) in PAIRS.items():
        d = [x - y for r in per_seed for x, y in zip(r[a], r[b])]
        mean, sd = statistics.mean(d), statistics.stdev(d)
        out[f"delta_{name}_mean"], out[f"delta_{name}_sd"] = mean, sd
        out[f"delta_{name}_ci95"] = float(stats.t.ppf(0.975, len(d) - 1) * sd / len(d) ** 0.5)
        out[f"delta_{name}_n"] = len(d)
    for key in FIGURES:
        if key.startswith("acc_"):
            out[key.replace("_per_seed", "_mean")] = statistics.mean(x for r in per_seed for x in r[key])
    for key in sorted(k for k in per_seed[0] if k.startswith("beta_")):
        out[f"mean_{key}"] = statistics.mean(r[key] for r in per_seed)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("qat_length", "w4_vs_fp", "w2_finding"))
    ap.add_argument("--seeds", type=int, nargs="+", default=list(devseeds.DEFAULT))
    args = ap.parse_args(argv)
    with user_errors_exit():
        tune, summarise = {"qat_length": (tune_qat_length, summarise_qat_length),
                           "w4_vs_fp": (tune_w4_vs_fp, summarise_w4_vs_fp),
                           "w2_finding": (tune_w2_finding, summarise_w2_finding)}[args.what]
        devseeds.run_seeds("asq", args.what, args.seeds, tune, summarise=summarise)


if __name__ == "__main__":
    main()
