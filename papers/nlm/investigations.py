"""Investigations: questions asked of quick on development seeds (100 and up, `common.devseeds`) that chose
no setting. Nothing in `config.PROFILES` was tuned from them (no `config.TUNED` entry); the README quotes
their records, results/nlm/dev/<what>.json, as generated blocks. Tuning proper is `papers.nlm.devtune`.

Paper: Yu, Huang & Huang, "Neural Langevin Machine", https://arxiv.org/abs/2506.23546

    python -m papers.nlm.investigations precision --seeds 100 101 102      # the P-sweep with fp32 and with bf16 products
    python -m papers.nlm.investigations replicates --seeds 100 101 102     # out of equilibrium: quick's trained replicates
    python -m papers.nlm.investigations generalization --seeds 100 101 102 # the P-sweep's largest P: more training?
    python -m papers.nlm.investigations noise_length --seeds 100 101 102   # chains from noise: the paper's 5e4 steps?
    python -m papers.nlm.investigations binary --seeds 100 101 102         # the P-sweep on the digits with every pixel saturated
    python -m papers.nlm.investigations relative --seeds 100 101 102       # the P-sweep's claims judged against new data

`precision`: runs notebook 02's sweep (`studies.memorization_sweep.measure`) with gemm_dtype float32 and
bfloat16 and reports each sweep claim's metric, its SE, and the bf16 minus fp32 difference in SEs (`z`):
whether the faster bf16 products change what the sweep measures (quick keeps float32; bf16 is an option,
`-p gemm_dtype=bfloat16`). `replicates`: notebook 03 at quick as it runs (ooe_replicates trained models of each
mode) and, for each window claim, the replicates' values, the bootstrap and between-replicate parts of its SE
and its margin in SEs, the same for its control, and the claim's whole verdict (control included) as
claims.yaml judges it: how much of the uncertainty is the variation between trained models, and whether
quick's verdict is the same on every development seed (ooe_replicates = 3 is what quick's budget affords).
`generalization`: the P-sweep of notebook 02 at its smallest and largest P (one replicate, where quick pools
two) with quick's settings and with longer training, a slower rate, more chains, or every training digit as
the largest P, and each large-P claim's value, SE and margin (claims.yaml's threshold), and whether the
largest-P model stopped learning at `sweep_freeze_at` (`frozen_at`, -1 if not): whether more of any of these
brings quick's largest P nearer to generalizing. `noise_length`: the P-sweep of notebook 02 at its smallest
and largest P (quick's two replicates) with the chains from noise run quick's 3000 Langevin steps, 1.5*10^4,
and the paper's 5*10^4, and `memorization-small-p-from-noise`'s value, SE and margin with where those chains
sit (`sweep.basin_diagnostics`): whether the paper's generation length lets chains from noise find the
memorized basins at quick. `binary`: the P-sweep of notebook 02 at its smallest and largest P (quick's two
replicates) on quick's digits and on the same images with every pixel thresholded at 1/2 (`digits_binary`:
saturated strokes), each sweep claim's value, SE and margin and where the largest-P samples sit: whether the
grey levels of the 8x8 digits are what keeps the claims from the paper's regime (quick keeps `digits`).
`relative`: notebook 02 at quick as it runs, and each claim of the sweep judged against new data (issue #41:
held-out images used as the samples give the level) with its value, SE, margin, its control's and the
claim's whole verdict as claims.yaml judges it, beside the levels and the split null (new data against new
data): whether those criteria decide the same way on every development seed before the reported seeds run.
"""
from __future__ import annotations

import json
import time

from .devtune_runs import claim_numbers, claims, dev_run, margin, quick, sweep_ends, window_claims
from .devtune_runs import main as run_cli

GENERALIZATION_VARIANTS = {  # name: overrides of notebook 02 (trained at its smallest and largest P only)
    "quick": {},
    "updates4x": dict(sweep_updates=8000),
    "updates4x_lr5e-4": dict(sweep_updates=8000, sweep_lr=5e-4),
    "updates16x_lr5e-4": dict(sweep_updates=32_000, sweep_lr=5e-4),
    "chains4x": dict(n_chains=400),
    "every_digit": dict(largest_p="all"),       # every training image (none of the held-out ones) as the largest P
}
GENERALIZATION_CLAIMS = ("generalization-large-p", "test-aai-large-p")
NOISE_LENGTHS = {"quick": 3000, "steps15k": 15_000, "paper50k": 50_000}   # sweep_gen_steps of notebook 02
BINARY_DATASETS = ("digits", "digits_binary")   # notebook 02's dataset: quick's, and its pixels thresholded at 1/2
BINARY_CLAIMS = ("memorization-small-p", "memorization-small-p-from-noise", "generalization-large-p", "test-aai-large-p")
BINARY_DIAGNOSTICS = ("large_p_pcd_acc_s_test", "large_p_pcd_acc_t_test", "large_p_pcd_d_train_median",
                      "large_p_test_d_train_median", "large_p_pcd_d_other_sample_median", "large_p_test_d_other_test_median",
                      "large_p_energy_pcd", "large_p_energy_train", "large_p_energy_test", "energy_equipartition",
                      "small_p_noise_d_train_median", "small_p_pcd_d_train_median")
NOISE_DIAGNOSTICS = ("small_p_noise_d_train_median", "small_p_pcd_d_train_median", "small_p_test_d_train_median",
                     "small_p_energy_noise", "small_p_noise_d_other_sample_median")


def investigate_generalization(seed: int) -> dict:
    """Notebook 02's sweep at its smallest and largest P, one replicate, per variant: each large-P claim's
    value, SE and margin in SEs (positive on the claim's side), the held-out accuracies of the samples
    (persistent chains continued at the final J, b) and the largest-P model's spectral norm."""
    from .encoding import load
    from .studies import memorization_sweep

    base = quick()
    n_train = len(load(base.dataset, base.n_test).x_train)
    out = {}
    for name, over in GENERALIZATION_VARIANTS.items():
        over = dict(over)
        largest = over.pop("largest_p", max(base.sweep_sizes))
        sizes = [min(base.sweep_sizes), n_train if largest == "all" else largest]
        t0 = time.perf_counter()
        m = memorization_sweep.measure(quick(sweep_sizes=sizes, sweep_replicates=1, **over), dev_run(seed))["metrics"]
        row = {"seconds": time.perf_counter() - t0, "sizes": sizes,
               "acc_s_test": m["sweep_pcd_acc_s_test"][-1], "acc_t_test": m["sweep_pcd_acc_t_test"][-1],
               "spectral_norm": m["sweep_spectral_norm"][-1], "euler_stability": m["sweep_euler_stability"][-1],
               "frozen_at": m["sweep_frozen_at"][-1]}   # -1: the largest-P model learned to the end (no freeze)
        for cid, claim in claims(GENERALIZATION_CLAIMS).items():
            row[cid] = claim_numbers(claim, m)
        out[name] = row
        print(f"seed {seed} generalization {name}:", json.dumps(row), flush=True)
    return out


def investigate_noise_length(seed: int) -> dict:
    """Notebook 02's sweep at its smallest and largest P with the chains from noise (and, as many steps,
    the persistent chains and the untrained null) run each length of NOISE_LENGTHS."""
    from .studies import memorization_sweep

    sizes = sweep_ends()
    claim = claims(["memorization-small-p-from-noise"])["memorization-small-p-from-noise"]
    out = {}
    for name, steps in NOISE_LENGTHS.items():
        t0 = time.perf_counter()
        m = memorization_sweep.measure(quick(sweep_sizes=sizes, sweep_gen_steps=steps), dev_run(seed))["metrics"]
        row = {"seconds": time.perf_counter() - t0, "steps": steps, **claim_numbers(claim, m),
               "pcd_value": m["mem_acc_small_p_pcd"], **{key: m[key] for key in NOISE_DIAGNOSTICS}}
        out[name] = row
        print(f"seed {seed} noise_length {name}:", json.dumps(row), flush=True)
    return out


def investigate_binary(seed: int) -> dict:
    """Notebook 02's sweep at its smallest and largest P (quick's replicates) on each of BINARY_DATASETS: the
    sweep claims' values, SEs and margins in SEs, and where the samples sit."""
    from common.claims import judge

    from .studies import memorization_sweep

    sizes = sweep_ends()
    out = {}
    for name in BINARY_DATASETS:
        t0 = time.perf_counter()
        m = memorization_sweep.measure(quick(sweep_sizes=sizes, dataset=name), dev_run(seed))["metrics"]
        row = {"seconds": time.perf_counter() - t0, "sizes": sizes, **{key: m[key] for key in BINARY_DIAGNOSTICS}}
        for cid, claim in claims(BINARY_CLAIMS).items():
            row[cid] = claim_numbers(claim, m) | {"control_value": m[claim.control], "verdict": judge(claim, m, "quick").verdict}
        out[name] = row
        print(f"seed {seed} binary {name}:", json.dumps(row), flush=True)
    return out


def investigate_replicates(seed: int) -> dict:
    """Notebook 03 at quick; each window claim's numbers and its whole verdict, control included (the rule
    that keeps a window claim at quick asks the same verdict on every development seed)."""
    from common.claims import judge

    from .studies import out_of_equilibrium

    t0 = time.perf_counter()
    cfg = quick()
    m = out_of_equilibrium.measure(cfg, dev_run(seed))["metrics"]
    row = {"seconds": time.perf_counter() - t0, "replicates": cfg.ooe_replicates}
    for cid, claim in window_claims().items():
        key, compare, value = claim.metric, claim.compare, claim.value
        o = judge(claim, m, "quick")
        ctl = claim.control
        row[cid] = {"value": m[key], "se": m[claim.se], "boot_se": m[key + "_boot_se"],
                    "between_se": m[key + "_between_se"], "reps": m[key + "_reps"],
                    "margin_se": margin(m[key], m[claim.se], compare, value),
                    "margin_boot_se": margin(m[key], m[key + "_boot_se"], compare, value),
                    "control_value": m[ctl], "control_se": m[claim.control_se],
                    "control_margin_se": margin(m[ctl], m[claim.control_se], compare, value),
                    "control_verdict": o.control.verdict, "verdict": o.verdict}
    print(f"seed {seed} replicates:", json.dumps(row), flush=True)
    return row


SWEEP_KEYS = ("mem_acc_small_p_pcd", "gen_acc_dev_large_p_pcd", "e_aai_test_large_p_pcd", "mem_acc_small_p",
              "gen_acc_dev_large_p", "e_aai_test_large_p")  # statistical sweep claims (with _se keys)


def investigate_precision(seed: int) -> dict:
    from .studies import memorization_sweep

    out = {}
    for gemm in ("float32", "bfloat16"):
        t0 = time.perf_counter()
        m = memorization_sweep.measure(quick(gemm_dtype=gemm), dev_run(seed))["metrics"]
        row = {"seconds": time.perf_counter() - t0, "p_star_pcd_inside": m.get("p_star_pcd_inside"),
               "mem_spearman": m.get("mem_spearman")}
        for key in SWEEP_KEYS:
            row[key], row[key + "_se"] = m.get(key), m.get(key + "_se")
        out[gemm] = row
        print(f"seed {seed} precision {gemm}:", json.dumps(row), flush=True)
    a, b = out["float32"], out["bfloat16"]
    out["z"] = {key: (b[key] - a[key]) / (a[key + "_se"] ** 2 + b[key + "_se"] ** 2) ** 0.5 for key in SWEEP_KEYS
                if a.get(key) is not None and b.get(key) is not None and (a[key + "_se"] or b[key + "_se"])}
    out["max_abs_z"] = max(abs(v) for v in out["z"].values()) if out["z"] else None
    out["speedup"] = a["seconds"] / b["seconds"]
    return out


RELATIVE_CLAIMS = ("memorization-small-p", "memorization-small-p-from-noise", "transition-in-range", "memorization-falls-with-p")
RELATIVE_KEYS = ("mem_acc_small_p_pcd", "mem_acc_small_p_heldout", "mem_gap_small_p_heldout_split", "mem_gap_small_p_heldout_split_se",
                 "p_star_pcd_inside", "p_star_heldout_inside", "rel_acc_mean_small_p_pcd", "rel_acc_mean_large_p_pcd",
                 "mem_small_p", "mem_large_p", "mem_spearman", "mem_spearman_heldout", "cross_margin_rel_pcd", "cross_margin_rel_pcd_se",
                 "cross_margin_rel_heldout_split", "cross_margin_rel_heldout_split_se")


def investigate_relative(seed: int) -> dict:
    from common.claims import judge

    from .studies import memorization_sweep

    t0 = time.perf_counter()
    m = memorization_sweep.measure(quick(), dev_run(seed))["metrics"]
    row = {"seconds": time.perf_counter() - t0, **{key: m.get(key) for key in RELATIVE_KEYS}}
    for cid, claim in claims(RELATIVE_CLAIMS).items():
        o = judge(claim, m, "quick")
        se = m.get(claim.se) if claim.se else None
        row[cid] = {"value": m[claim.metric], "se": se, "margin_se": margin(m[claim.metric], se, claim.compare, claim.value),
                    "control_value": m[claim.control], "control_verdict": o.control.verdict, "verdict": o.verdict}
    print(f"seed {seed} relative:", json.dumps(row), flush=True)
    return row


COMMANDS = {"relative": investigate_relative, "precision": investigate_precision, "replicates": investigate_replicates, "generalization": investigate_generalization,
            "noise_length": investigate_noise_length, "binary": investigate_binary}


def main(argv=None):
    run_cli(__doc__, COMMANDS, argv)


if __name__ == "__main__":
    main()
