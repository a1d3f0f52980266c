"""How quick's measurement lengths were chosen: development seeds (100 and up) only, never the
reported seeds 0-2.

Paper: Yu, Huang & Huang, "Neural Langevin Machine", https://arxiv.org/abs/2506.23546

    python -m papers.nlm.devtune explore --seeds 100 101 102   # exploration: chains x chain length
    python -m papers.nlm.devtune ooe --seeds 100 101 102       # out of equilibrium: Rdm-k training length
    python -m papers.nlm.devtune frames --seeds 100 101 102    # out of equilibrium: snapshot frames per window
    python -m papers.nlm.devtune precision --seeds 100 101 102 # the P-sweep with fp32 and with bf16 products
    python -m papers.nlm.devtune replicates --seeds 100 101 102 # out of equilibrium: quick's trained replicates
    python -m papers.nlm.devtune generalization --seeds 100 101 102 # the P-sweep's largest P: more training?
    python -m papers.nlm.devtune noise_length --seeds 100 101 102 # chains from noise: the paper's 5e4 steps?
    python -m papers.nlm.devtune binary --seeds 100 101 102      # the P-sweep on the digits with every pixel saturated
    python -m papers.nlm.devtune dwell --seeds 100 101 102       # exploration: windows a class visit must last

`explore`: trains the main model of notebook 01 once per seed (quick settings), then runs
`experiments.exploration` with each variant of (explore_chains, explore_steps) and reports the
trained model's transitions (mean, SE over chains), its median classes, and the nulls' values.
`ooe`: runs `experiments.out_of_equilibrium` with each Rdm-k training length and reports the window
differences and their bootstrap SEs. `frames`: the same with extra snapshot times inside each window
(`ooe_window_frames`), and each window claim's margin from its threshold in SEs (signed: positive on
the claim's side); the count is the smallest whose mean SE over the four window claims is within 15 %
of 16 frames' on every development seed (the power of the measurement, not a verdict, picks it).
`ooe` and `frames` measure one trained model per mode (ooe_replicates=1), as when they were chosen.
`replicates`: notebook 03 at quick as it runs (ooe_replicates trained models of each mode) and, for each
window claim, the replicates' values, the bootstrap and between-replicate parts of its SE and its margin
in SEs, the same for its control, and the claim's whole verdict (control included) as claims.yaml judges it:
how much of the uncertainty is the variation between trained models, and whether quick's verdict is the same
on every development seed. `generalization`: the P-sweep of notebook 02 at its smallest and largest P (one
replicate, where quick pools two) with quick's settings and with longer training, a slower rate, more chains, or every training digit as
the largest P, and each large-P claim's value, SE and margin (claims.yaml's threshold), and whether the
largest-P model stopped learning at `sweep_freeze_at` (`frozen_at`, -1 if not): whether more of any of
these brings quick's largest P nearer to generalizing (nothing in config.py was chosen from it). `precision`: runs `experiments.memorization_sweep` (notebook
02) with gemm_dtype float32 and bfloat16 and reports each sweep claim's metric, its SE, and the bf16
minus fp32 difference in SEs (`z`): whether the faster bf16 products change what the sweep measures
(quick keeps float32; bf16 is an option, `-p gemm_dtype=bfloat16`). `noise_length`: the P-sweep of
notebook 02 at its smallest and largest P (quick's two replicates) with the chains from noise run quick's
3000 Langevin steps, 1.5*10^4, and the paper's 5*10^4, and `memorization-small-p-from-noise`'s value, SE
and margin with where those chains sit (`basin_diagnostics`): whether the paper's generation length lets
chains from noise find the memorized basins at quick (nothing in config.py was chosen from it). `binary`: the
P-sweep of notebook 02 at its smallest and largest P (quick's two replicates) on quick's digits and on the
same images with every pixel thresholded at 1/2 (`digits_binary`: saturated strokes), each sweep claim's
value, SE and margin and where the largest-P samples sit (`basin_diagnostics`): whether the grey levels of
the 8x8 digits are what keeps the claims from the paper's regime (quick keeps `digits`). `dwell`: notebook 04
at quick, once per seed, and for each dwell of DWELLS (successive data-like windows a class visit must last)
the trained model's transitions (mean, SE, margin over the claim's 3), median classes, and the quench null's
(the trained J, b at T = 0 from the same persistent states) with the data-like fraction of every model. The
rule, declared before the runs: the smallest dwell from which one more window changes the trained model's
mean transitions by less than 20 % on every development seed (the count has stopped falling: what remains
are visits that last, not a label flickering at a class boundary). A variant is judged by its margin over the claim's threshold in
standard errors (`margin_se`) on every development seed, and by its cost (`seconds`); the choice is
written in papers/nlm/README.md. Results: results/nlm/dev/<what>.json.
"""
from __future__ import annotations

import argparse
import json
import time

import torch

from common import paths
from common.errors import UserError, user_errors_exit
from common.io import atomic_write_json
from common.runs import git_state, now

EXPLORE_VARIANTS = {  # name: profile overrides of notebook 04
    "8x50k": dict(explore_chains=8, explore_steps=50_000),
    "16x50k": dict(explore_chains=16, explore_steps=50_000),
    "8x100k": dict(explore_chains=8, explore_steps=100_000),
}
OOE_VARIANTS = {  # name: profile overrides of notebook 03
    "rdm600": dict(ooe_rdm_updates=600),
    "rdm1200": dict(ooe_rdm_updates=1200),
    "rdm2400": dict(ooe_rdm_updates=2400),
}
FRAME_VARIANTS = {"frames0": 0, "frames8": 8, "frames16": 16}   # ooe_window_frames of notebook 03
# notebook 03's window claims; their metric, comparison, threshold and control are read from claims.yaml
WINDOW_CLAIMS = ("rdm-best-at-finite-time", "rdm-degrades-at-long-times", "pcd-does-not-degrade", "rdm-degrades-more-than-pcd")
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
DWELLS = (1, 2, 3, 4, 6)   # explore_dwell of notebook 04, in windows of avg_steps Langevin steps
DWELL_PLATEAU = 0.2        # the dwell rule: one more window changes the mean transitions by less than this
EXPLORE_THRESHOLD = 3.0   # claim exploration-transitions: mean transitions >= 3


def _cfg(**over):
    from common.profiles import resolve

    from .config import PROFILES

    return resolve(PROFILES, "quick", **over)


def tune_explore(seed: int) -> dict:
    from . import experiments as ex

    model = ex.main_model(_cfg(), seed)
    out = {}
    for name, over in EXPLORE_VARIANTS.items():
        t0 = time.perf_counter()
        m = ex.exploration(_cfg(**over), seed, model)["metrics"]
        mean, se = m["explore_trained_transitions_mean"], m["explore_trained_transitions_se"]
        out[name] = {"seconds": time.perf_counter() - t0, "transitions_mean": mean, "transitions_se": se,
                     "margin_se": (mean - EXPLORE_THRESHOLD) / se if se > 0 else float("nan"),
                     "classes_median": m["explore_trained_classes_median"], "data_like": m["explore_trained_data_like"],
                     "untrained_transitions_mean": m["explore_untrained_transitions_mean"],
                     "j0_transitions_mean": m["explore_j0_transitions_mean"]}
        print(f"seed {seed} explore {name}:", json.dumps(out[name]), flush=True)
    return out


def tune_dwell(seed: int) -> dict:
    from . import experiments as ex

    model = ex.main_model(_cfg(), seed)
    t0 = time.perf_counter()
    res = ex.exploration(_cfg(), seed, model)
    out = {"seconds": time.perf_counter() - t0,
           "data_like": {n: res["metrics"][f"explore_{n}_data_like"] for n in ex.EXPLORE_MODELS}}
    for d in DWELLS:
        row = {}
        for name in ex.EXPLORE_MODELS:
            per = [ex.visits(c, d) for c in res["window_classes_all"][name]]
            tr = [v["transitions"] for v in per]
            mean, se = sum(tr) / len(tr), float(torch.tensor(tr, dtype=torch.float64).std() / len(tr) ** 0.5)
            row[name] = {"transitions_mean": mean, "transitions_se": se,
                         "classes_median": float(torch.tensor([v["classes"] for v in per], dtype=torch.float64).median())}
        row["margin_se"] = _margin(row["trained"]["transitions_mean"], row["trained"]["transitions_se"], "at_least", EXPLORE_THRESHOLD)
        out[f"dwell{d}"] = row
    means = [out[f"dwell{d}"]["trained"]["transitions_mean"] for d in DWELLS]
    out["rel_change_next"] = {f"dwell{d}": (abs(b - a) / a if a else float("nan")) for d, a, b in zip(DWELLS, means, means[1:])}
    print(f"seed {seed} dwell:", json.dumps(out), flush=True)
    return out


def chosen_dwell(results: dict) -> int | None:
    """The dwell rule over development seeds' `tune_dwell` results: the smallest dwell whose change to the next
    (in DWELLS) is below DWELL_PLATEAU on every seed; None when no dwell qualifies."""
    for d in DWELLS[:-1]:
        if all(r["rel_change_next"][f"dwell{d}"] < DWELL_PLATEAU for r in results.values()):
            return d
    return None


def tune_ooe(seed: int) -> dict:
    from . import experiments as ex

    out = {}
    for name, over in OOE_VARIANTS.items():
        t0 = time.perf_counter()
        m = ex.out_of_equilibrium(_cfg(ooe_replicates=1, **over), seed)["metrics"]
        row = {"seconds": time.perf_counter() - t0}
        for key in ("rdm_late_minus_near_k", "pcd_late_minus_near_k", "rdm_minus_pcd_late_rise",
                    "rdm_late_minus_mid", "pcd_late_minus_mid"):
            row[key], row[key + "_se"] = m.get(key), m.get(key + "_se")
        row["margin_se"] = row["rdm_late_minus_near_k"] / row["rdm_late_minus_near_k_se"]
        out[name] = row
        print(f"seed {seed} ooe {name}:", json.dumps(row), flush=True)
    return out


def tune_frames(seed: int) -> dict:
    from . import experiments as ex

    out = {}
    for name, frames in FRAME_VARIANTS.items():
        t0 = time.perf_counter()
        m = ex.out_of_equilibrium(_cfg(ooe_window_frames=frames, ooe_replicates=1), seed)["metrics"]
        row = {"seconds": time.perf_counter() - t0}
        for cid, claim in _window_claims().items():
            row[cid] = _claim_numbers(claim, m)
        row["min_abs_margin_se"] = min(abs(r["margin_se"]) for c, r in row.items() if c in WINDOW_CLAIMS)
        row["mean_se"] = sum(row[c]["se"] for c in WINDOW_CLAIMS) / len(WINDOW_CLAIMS)
        out[name] = row
        print(f"seed {seed} frames {name}:", json.dumps(row), flush=True)
    return out


def _margin(v, se, compare, value):
    return ((v - value) if compare == "at_least" else (value - v)) / se if se else float("nan")


def _claim_numbers(claim, m) -> dict:
    """A claim's value, SE and margin from its threshold in SEs (positive on the claim's side), from metrics m."""
    v, se = m[claim.metric], m[claim.se]
    return {"value": v, "se": se, "margin_se": _margin(v, se, claim.compare, claim.value)}


def _sweep_ends() -> list:
    """Notebook 02's smallest and largest P at quick."""
    sizes = _cfg().sweep_sizes
    return [min(sizes), max(sizes)]


def _claims(ids) -> dict:
    """These claims as claims.yaml states them (criterion and control), testable at quick for judging."""
    from dataclasses import replace
    from pathlib import Path

    from common.claims import load_claims

    claims = {c.id: c for c in load_claims(Path(__file__).with_name("claims.yaml"))}
    return {cid: replace(claims[cid], profiles=("quick",)) for cid in ids}


def _window_claims() -> dict:
    return _claims(WINDOW_CLAIMS)


def tune_generalization(seed: int) -> dict:
    """Notebook 02's sweep at its smallest and largest P, one replicate, per variant: each large-P claim's
    value, SE and margin in SEs (positive on the claim's side), the held-out accuracies of the samples
    (persistent chains continued at the final J, b) and the largest-P model's spectral norm."""
    from . import experiments as ex

    from .encoding import load

    base = _cfg()
    n_train = len(load(base.dataset, base.n_test, seed).x_train)
    out = {}
    for name, over in GENERALIZATION_VARIANTS.items():
        over = dict(over)
        largest = over.pop("largest_p", max(base.sweep_sizes))
        sizes = [min(base.sweep_sizes), n_train if largest == "all" else largest]
        t0 = time.perf_counter()
        m = ex.memorization_sweep(_cfg(sweep_sizes=sizes, sweep_replicates=1, **over), seed)["metrics"]
        row = {"seconds": time.perf_counter() - t0, "sizes": sizes,
               "acc_s_test": m["sweep_pcd_acc_s_test"][-1], "acc_t_test": m["sweep_pcd_acc_t_test"][-1],
               "spectral_norm": m["sweep_spectral_norm"][-1], "euler_stability": m["sweep_euler_stability"][-1],
               "frozen_at": m["sweep_frozen_at"][-1]}   # -1: the largest-P model learned to the end (no freeze)
        for cid, claim in _claims(GENERALIZATION_CLAIMS).items():
            row[cid] = _claim_numbers(claim, m)
        out[name] = row
        print(f"seed {seed} generalization {name}:", json.dumps(row), flush=True)
    return out


def tune_noise_length(seed: int) -> dict:
    """Notebook 02's sweep at its smallest and largest P with the chains from noise (and, as many steps,
    the persistent chains and the untrained null) run each length of NOISE_LENGTHS."""
    from . import experiments as ex

    sizes = _sweep_ends()
    claim = _claims(["memorization-small-p-from-noise"])["memorization-small-p-from-noise"]
    out = {}
    for name, steps in NOISE_LENGTHS.items():
        t0 = time.perf_counter()
        m = ex.memorization_sweep(_cfg(sweep_sizes=sizes, sweep_gen_steps=steps), seed)["metrics"]
        row = {"seconds": time.perf_counter() - t0, "steps": steps, **_claim_numbers(claim, m),
               "pcd_value": m["mem_acc_small_p_pcd"], **{key: m[key] for key in NOISE_DIAGNOSTICS}}
        out[name] = row
        print(f"seed {seed} noise_length {name}:", json.dumps(row), flush=True)
    return out


def tune_binary(seed: int) -> dict:
    """Notebook 02's sweep at its smallest and largest P (quick's replicates) on each of BINARY_DATASETS: the
    sweep claims' values, SEs and margins in SEs, and where the samples sit."""
    from common.claims import judge

    from . import experiments as ex

    sizes = _sweep_ends()
    out = {}
    for name in BINARY_DATASETS:
        t0 = time.perf_counter()
        m = ex.memorization_sweep(_cfg(sweep_sizes=sizes, dataset=name), seed)["metrics"]
        row = {"seconds": time.perf_counter() - t0, "sizes": sizes, **{key: m[key] for key in BINARY_DIAGNOSTICS}}
        for cid, claim in _claims(BINARY_CLAIMS).items():
            row[cid] = _claim_numbers(claim, m) | {"control_value": m[claim.control], "verdict": judge(claim, m, "quick").verdict}
        out[name] = row
        print(f"seed {seed} binary {name}:", json.dumps(row), flush=True)
    return out


def tune_replicates(seed: int) -> dict:
    """Notebook 03 at quick; each window claim's numbers and its whole verdict, control included (the rule
    that keeps a window claim at quick asks the same verdict on every development seed)."""
    from common.claims import judge

    from . import experiments as ex

    t0 = time.perf_counter()
    cfg = _cfg()
    m = ex.out_of_equilibrium(cfg, seed)["metrics"]
    row = {"seconds": time.perf_counter() - t0, "replicates": cfg.ooe_replicates}
    for cid, claim in _window_claims().items():
        key, compare, value = claim.metric, claim.compare, claim.value
        o = judge(claim, m, "quick")
        ctl = claim.control
        row[cid] = {"value": m[key], "se": m[claim.se], "boot_se": m[key + "_boot_se"],
                    "between_se": m[key + "_between_se"], "reps": m[key + "_reps"],
                    "margin_se": _margin(m[key], m[claim.se], compare, value),
                    "margin_boot_se": _margin(m[key], m[key + "_boot_se"], compare, value),
                    "control_value": m[ctl], "control_se": m[claim.control_se],
                    "control_margin_se": _margin(m[ctl], m[claim.control_se], compare, value),
                    "control_verdict": o.control.verdict, "verdict": o.verdict}
    print(f"seed {seed} replicates:", json.dumps(row), flush=True)
    return row


SWEEP_KEYS = ("mem_acc_small_p_pcd", "gen_acc_dev_large_p_pcd", "e_aai_test_large_p_pcd", "mem_acc_small_p",
              "gen_acc_dev_large_p", "e_aai_test_large_p")  # statistical sweep claims (with _se keys)


def tune_precision(seed: int) -> dict:
    from . import experiments as ex

    out = {}
    for gemm in ("float32", "bfloat16"):
        t0 = time.perf_counter()
        m = ex.memorization_sweep(_cfg(gemm_dtype=gemm), seed)["metrics"]
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("explore", "dwell", "ooe", "frames", "precision", "replicates", "generalization", "noise_length", "binary"))
    ap.add_argument("--seeds", type=int, nargs="+", default=[100, 101, 102])
    args = ap.parse_args(argv)
    with user_errors_exit():
        if min(args.seeds) < 100:
            raise UserError("development seeds are 100 and up (0-2 are the reported seeds); pass --seeds 100 101 ...")
        torch.set_num_threads(1)
        fn = {"explore": tune_explore, "dwell": tune_dwell, "ooe": tune_ooe, "frames": tune_frames, "precision": tune_precision,
              "replicates": tune_replicates, "generalization": tune_generalization,
              "noise_length": tune_noise_length, "binary": tune_binary}[args.what]
        git = git_state()                    # the code that runs: the tree as it is at the start
        res = {str(s): fn(s) for s in args.seeds}
        end = git_state()
        out = {"seeds": args.seeds, "git": git, "when": now(), "results": res}
        if args.what == "dwell":
            out["chosen_dwell"] = chosen_dwell(res)
        if end != git:                       # the tree changed under the run: both states are recorded
            out["git_at_end"] = end
        atomic_write_json(paths.results_root() / "nlm" / "dev" / f"{args.what}.json", out)


if __name__ == "__main__":
    main()
