"""Tuning: how quick's measurement settings were chosen, on development seeds (100 and up, `common.devseeds`)
only, never the reported seeds 0-2. Each command here chose a key of `config.PROFILES`, named in
`config.TUNED` with the record it wrote; questions that chose nothing are in `papers.nlm.investigations`.

Paper: Yu, Huang & Huang, "Neural Langevin Machine", https://arxiv.org/abs/2506.23546

    python -m papers.nlm.devtune explore --seeds 100 101 102   # exploration: chains x chain length (explore_chains, explore_steps)
    python -m papers.nlm.devtune dwell --seeds 100 101 102     # exploration: windows a class visit must last (explore_dwell)
    python -m papers.nlm.devtune ooe --seeds 100 101 102       # out of equilibrium: Rdm-k training length (ooe_rdm_updates)
    python -m papers.nlm.devtune frames --seeds 100 101 102    # out of equilibrium: snapshot frames per window (ooe_window_frames)
    python -m papers.nlm.devtune models --seeds 100 101        # exploration: trained models per seed (explore_models)
    python -m papers.nlm.devtune memorization --seeds 100 101  # notebook 02's memorization criteria, checked

`models` and `memorization` run nothing: they read the development run of the whole paper
(`python -m common.reproduce nlm --profile quick --seeds 100 101 --development`, its metrics.json per seed).
`models`: the trained models' mean transitions of exploration-transitions, their SE between models with all the
run's models and with the first three (the design before), and the fewest models whose SE at that seed's spread
puts the one-sided 95 % bound above the claim's 3, at the spread of the first three (`models_needed_first3`, what
the choice was made on) and of all of them (`models_needed`); the rule: at least the largest
`models_needed_first3` over the development seeds (the record's `chosen_models`; `chosen_models_all` beside it). `memorization`: the three memorization
claims' values, SEs and margins from their criteria in SEs (positive on the claim's side) beside their
controls', at every development seed: the criteria (gap <= 0 against new data, crossing in >= 95 % of the
replicates, a fall >= 0.2) were declared before the development run; the record shows each can come out
either way there (the metric on the claim's side, the control on the other).

`explore`: trains the main model of notebook 01 once per seed (quick settings), then runs
`studies.exploration.explore` once with the longest chains and reports, for each chain length (explore_steps, read
from the first windows of that run), the trained model's transitions (mean, SE over chains, margin over the
claim's 3 in SEs), its median classes, and the restart and quench nulls' values.
`ooe`: runs `studies.out_of_equilibrium.measure` with each Rdm-k training length and reports the window
differences and their bootstrap SEs. `frames`: the same with extra snapshot times inside each window
(`ooe_window_frames`), and each window claim's margin from its threshold in SEs (signed: positive on
the claim's side); the count is the smallest whose mean SE over the four window claims is within 15 %
of 16 frames' on every development seed (the power of the measurement, not a verdict, picks it).
`ooe` and `frames` measure one trained model per mode (ooe_replicates=1), as when they were chosen.
`dwell`: notebook 04 at quick (its main model alone), once per seed, and for each dwell of DWELLS (successive
data-like windows a class visit must last) every model's transitions (mean, SE, margin over the claim's 3) and
median classes, with the data-like fraction of every model. The rule (issue #41), declared before the runs: the
smallest dwell at which the restart null (the trained J, b at T = 1 put back to the chains' starting states at
every window) makes under one transition per chain on average over the development seeds: a label flickering
at a class boundary no longer counts; the record's `chosen_dwell`. (The rule before, logged as `rel_change_next`:
the smallest dwell from which one more window changes the trained count by < 20 %; it found none.)
A variant is judged by its margin over the claim's threshold in standard errors (`margin_se`) on every
development seed, and by its cost (`seconds`). Results: results/nlm/dev/<what>.json.
"""
from __future__ import annotations

import json
import time

import torch

from .devtune_runs import WINDOW_CLAIMS, claim_numbers, dev_run, margin, quick, window_claims
from .devtune_runs import main as run_cli

EXPLORE_VARIANTS = {  # name: chain length of notebook 04 (8 chains); every length is the first part of the longest run
    "8x100k": 100_000,
    "8x150k": 150_000,
    "8x200k": 200_000,
}
OOE_VARIANTS = {  # name: profile overrides of notebook 03
    "rdm600": dict(ooe_rdm_updates=600),
    "rdm1200": dict(ooe_rdm_updates=1200),
    "rdm2400": dict(ooe_rdm_updates=2400),
}
FRAME_VARIANTS = {"frames0": 0, "frames8": 8, "frames16": 16}   # ooe_window_frames of notebook 03
DWELLS = (1, 2, 3, 4, 6)   # explore_dwell of notebook 04, in windows of avg_steps Langevin steps
DWELL_PLATEAU = 0.2        # the dwell rule before issue #41 (logged): one more window changes the mean transitions by less
FLICKER_MAX = 1.0          # the dwell rule: the restart null's mean transitions per chain, over the seeds, below this
EXPLORE_THRESHOLD = 3.0   # claim exploration-transitions: mean transitions >= 3


def tune_explore(seed: int) -> dict:
    """Notebook 04 at quick with the longest chains of EXPLORE_VARIANTS, each shorter length read from the first
    windows of the same run (the chains, their noise and the burn-in are the same): the trained model's mean
    transitions (SE over chains) and margin over the claim's 3 in SEs, the restart null's (the claims' control)
    and the data-like fractions."""
    from .mainmodel import main_model
    from .studies.exploration import chain_metrics, explore

    cfg = quick(explore_steps=max(EXPLORE_VARIANTS.values()))
    model = main_model(cfg, dev_run(seed).streams)
    t0 = time.perf_counter()
    res = explore(cfg, dev_run(seed).streams, model)
    seconds = time.perf_counter() - t0
    out = {"seconds_longest": seconds}
    for name, steps in EXPLORE_VARIANTS.items():
        n_win = (steps - int(cfg.explore_burn)) // int(cfg.avg_steps)
        row = {"steps": steps, "windows": n_win}
        for null in ("trained", "restart", "quench"):
            m = chain_metrics(null, [c[:n_win] for c in res["window_classes_all"][null]], int(cfg.explore_dwell))
            mean, se = m[f"explore_{null}_transitions_mean"], m[f"explore_{null}_transitions_se"]
            row[null] = {"transitions_mean": mean, "transitions_se": se, "classes_median": m[f"explore_{null}_classes_median"],
                         "data_like": m[f"explore_{null}_data_like"],
                         "margin_se": margin(mean, se, "at_least", EXPLORE_THRESHOLD)}
        row["margin_se"] = row["trained"]["margin_se"]
        out[name] = row
        print(f"seed {seed} explore {name}:", json.dumps(row), flush=True)
    return out


def tune_dwell(seed: int) -> dict:
    from .mainmodel import main_model
    from .studies.exploration import explore
    from .visits import EXPLORE_MODELS, visits

    model = main_model(quick(), dev_run(seed).streams)
    t0 = time.perf_counter()
    res = explore(quick(), dev_run(seed).streams, model)
    out = {"seconds": time.perf_counter() - t0,
           "data_like": {n: res["metrics"][f"explore_{n}_data_like"] for n in EXPLORE_MODELS}}
    for d in DWELLS:
        row = {}
        for name in EXPLORE_MODELS:
            per = [visits(c, d) for c in res["window_classes_all"][name]]
            tr = [v["transitions"] for v in per]
            mean, se = sum(tr) / len(tr), float(torch.tensor(tr, dtype=torch.float64).std() / len(tr) ** 0.5)
            row[name] = {"transitions_mean": mean, "transitions_se": se,
                         "classes_median": float(torch.tensor([v["classes"] for v in per], dtype=torch.float64).median())}
        row["margin_se"] = margin(row["trained"]["transitions_mean"], row["trained"]["transitions_se"], "at_least", EXPLORE_THRESHOLD)
        out[f"dwell{d}"] = row
    means = [out[f"dwell{d}"]["trained"]["transitions_mean"] for d in DWELLS]
    out["rel_change_next"] = {f"dwell{d}": (abs(b - a) / a if a else float("nan")) for d, a, b in zip(DWELLS, means, means[1:])}
    print(f"seed {seed} dwell:", json.dumps(out), flush=True)
    return out


def chosen_dwell(results: dict) -> int | None:
    """The dwell rule over development seeds' `tune_dwell` results (issue #41): the smallest dwell of DWELLS at which
    the restart null's mean transitions per chain, averaged over the seeds, is below FLICKER_MAX (what a label
    flickering at a class boundary makes no longer counts as a transition); None when no dwell qualifies."""
    for d in DWELLS:
        flicker = [r[f"dwell{d}"]["restart"]["transitions_mean"] for r in results.values()]
        if sum(flicker) / len(flicker) < FLICKER_MAX:
            return d
    return None


def tune_ooe(seed: int) -> dict:
    from .studies import out_of_equilibrium

    out = {}
    for name, over in OOE_VARIANTS.items():
        t0 = time.perf_counter()
        m = out_of_equilibrium.measure(quick(ooe_replicates=1, **over), dev_run(seed))["metrics"]
        row = {"seconds": time.perf_counter() - t0}
        for key in ("rdm_late_minus_near_k", "pcd_late_minus_near_k", "rdm_minus_pcd_late_rise",
                    "rdm_late_minus_mid", "pcd_late_minus_mid"):
            row[key], row[key + "_se"] = m.get(key), m.get(key + "_se")
        row["margin_se"] = row["rdm_late_minus_near_k"] / row["rdm_late_minus_near_k_se"]
        out[name] = row
        print(f"seed {seed} ooe {name}:", json.dumps(row), flush=True)
    return out


def tune_frames(seed: int) -> dict:
    from .studies import out_of_equilibrium

    out = {}
    for name, frames in FRAME_VARIANTS.items():
        t0 = time.perf_counter()
        m = out_of_equilibrium.measure(quick(ooe_window_frames=frames, ooe_replicates=1), dev_run(seed))["metrics"]
        row = {"seconds": time.perf_counter() - t0}
        for cid, claim in window_claims().items():
            row[cid] = claim_numbers(claim, m)
        row["min_abs_margin_se"] = min(abs(r["margin_se"]) for c, r in row.items() if c in WINDOW_CLAIMS)
        row["mean_se"] = sum(row[c]["se"] for c in WINDOW_CLAIMS) / len(WINDOW_CLAIMS)
        out[name] = row
        print(f"seed {seed} frames {name}:", json.dumps(row), flush=True)
    return out


Z95 = 1.645   # one-sided 95 % normal bound, as common.claims judges a statistical claim


def development_metrics(seed: int) -> dict:
    """metrics.json of the paper's development run at quick, seed `seed` (a UserError naming the run when absent)."""
    from common import paths
    from common.errors import UserError
    from common.io import read_json

    path = paths.development_root() / "nlm" / "quick" / f"seed-{int(seed)}" / "metrics.json"
    if not path.exists():
        raise UserError(f"{path} not found; run `python -m common.reproduce nlm --profile quick --seeds {seed} --development` first")
    return read_json(path)


def models_needed(means, threshold: float = EXPLORE_THRESHOLD, z: float = Z95, cap: int = 100) -> int | None:
    """The fewest models K whose SE between models at the spread of `means` (sd / sqrt(K)) puts the one-sided bound
    mean - z·SE at or above `threshold`; None when the mean is not above it or K would exceed `cap`."""
    import math

    mean = sum(means) / len(means)
    if mean <= threshold:
        return None
    sd = math.sqrt(sum((v - mean) ** 2 for v in means) / (len(means) - 1))
    k = max(2, math.ceil((z * sd / (mean - threshold)) ** 2))
    return k if k <= cap else None


def model_numbers(means) -> dict:
    """Mean, SE between models (sd / sqrt(K)) and margin over the claim's 3 in SEs of per-model mean transitions."""
    import math

    k = len(means)
    mean = sum(means) / k
    se = math.sqrt(sum((v - mean) ** 2 for v in means) / (k - 1)) / math.sqrt(k)
    return {"models": k, "mean": mean, "se": se, "margin_se": margin(mean, se, "at_least", EXPLORE_THRESHOLD)}


def tune_models(seed: int) -> dict:
    """exploration-transitions at the development run's design (every model) and with its first three models
    (the design before, the same models), and `models_needed` at this seed's spread."""
    means = development_metrics(seed)["explore_trained_transitions_models"]
    out = {"all": model_numbers(means), "first3": model_numbers(means[:3]), "transitions_models": means,
           "models_needed": models_needed(means), "models_needed_first3": models_needed(means[:3])}
    print(f"seed {seed} models:", json.dumps(out), flush=True)
    return out


def chosen_models(results: dict, key: str = "models_needed_first3") -> int | None:
    """The rule over `tune_models` results: the largest `key` over the development seeds (None if any is None). The
    choice was made at the spread of the design before, three models (`models_needed_first3`); `models_needed`, at
    the spread of every model the development run trained, is recorded beside it (`chosen_models_all`)."""
    need = [r[key] for r in results.values()]
    return None if any(n is None for n in need) else max(need)


MEMORIZATION_CLAIMS = ("memorization-small-p", "transition-in-range", "memorization-falls-with-p")


def tune_memorization(seed: int) -> dict:
    """The memorization claims at the development run: value, SE and margin in SEs of the metric and of the control
    (statistical claims), or the value of both (the exact transition claim)."""
    from .devtune_runs import claims

    m = development_metrics(seed)
    out = {}
    for cid, c in claims(MEMORIZATION_CLAIMS).items():
        if c.se is None:
            out[cid] = {"value": m[c.metric], "control": m[c.control], "threshold": c.value}
        else:
            ctrl = {"value": m[c.control], "se": m[c.control_se],
                    "margin_se": margin(m[c.control], m[c.control_se], c.compare, c.value)}
            out[cid] = {**claim_numbers(c, m), "control": ctrl, "threshold": c.value}
    print(f"seed {seed} memorization:", json.dumps(out), flush=True)
    return out


COMMANDS = {"explore": tune_explore, "dwell": tune_dwell, "ooe": tune_ooe, "frames": tune_frames, "models": tune_models,
            "memorization": tune_memorization}


def _extra(what: str, res: dict) -> dict:
    if what == "dwell":
        return {"chosen_dwell": chosen_dwell(res)}
    if what == "models":
        return {"chosen_models": chosen_models(res), "chosen_models_all": chosen_models(res, "models_needed")}
    return {}


def main(argv=None):
    run_cli(__doc__, COMMANDS, argv, extra=_extra)


if __name__ == "__main__":
    main()
