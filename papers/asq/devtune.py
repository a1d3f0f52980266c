"""Development-seed runs that set asq's QAT length for the adapter-vs-scalar-beta comparison (never seeds 0-2).

Paper: "Precision Neural Network Quantization via Learnable Adaptive Modules",
arXiv:2504.17263, https://arxiv.org/abs/2504.17263

    python -m papers.asq.devtune qat_length [--seeds 100 101 102]

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


def tune_qat_length(seed: int) -> dict:
    """One development seed at the quick profile's sizes: LSQ's steps and accuracy at every length of `LADDER`,
    ASQ's and the scalar-beta null's accuracy at the lengths of `COMPARE`."""
    from .config import get_config
    from .convert import quant_layers
    from .qat_grid import QATGrid
    from .train import make_qat

    cfg = get_config("quick")
    cfg.seeds = [seed]
    cfg.ckpt_dir = str(devseeds.result_path("asq", "qat_length").with_name("ckpt-qat_length"))
    grid = QATGrid(cfg, cfg.ckpt_dir)
    fmodel, fp_acc = grid.float_model(seed)
    init = make_qat(fmodel, grid.train, method="lsq", w_bits=BITS, a_bits=BITS, grid="uniform",
                    first_last=cfg.first_last, seed=seed)
    s0 = steps_of(init)
    steps, acc = {}, {"fp": fp_acc}
    for L in LADDER:
        model, acc[f"lsq_e{L}"] = grid.qat_model(seed, "lsq", BITS, "uniform", epochs=L)
        steps[L] = steps_of(model)
    for L in COMPARE:
        for m in ("asq", "sbeta"):
            _, acc[f"{m}_e{L}"] = grid.qat_model(seed, m, BITS, "uniform", epochs=L)
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("qat_length",))
    ap.add_argument("--seeds", type=int, nargs="+", default=list(devseeds.DEFAULT))
    args = ap.parse_args(argv)
    with user_errors_exit():
        devseeds.run_seeds("asq", args.what, args.seeds, tune_qat_length, summarise=summarise_qat_length)


if __name__ == "__main__":
    main()
