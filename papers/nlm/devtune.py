"""How quick's measurement lengths were chosen: development seeds (100 and up) only, never the
reported seeds 0-2.

Paper: Yu, Huang & Huang, "Neural Langevin Machine", https://arxiv.org/abs/2506.23546

    python -m papers.nlm.devtune explore --seeds 100 101 102   # exploration: chains x chain length
    python -m papers.nlm.devtune ooe --seeds 100 101 102       # out of equilibrium: Rdm-k training length

`explore`: trains the main model of notebook 01 once per seed (quick settings), then runs
`experiments.exploration` with each variant of (explore_chains, explore_steps) and reports the
trained model's transitions (mean, SE over chains), its median classes, and the nulls' values.
`ooe`: runs `experiments.out_of_equilibrium` with each Rdm-k training length and reports the window
differences and their bootstrap SEs. A variant is judged by its margin over the claim's threshold in
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


def tune_ooe(seed: int) -> dict:
    from . import experiments as ex

    out = {}
    for name, over in OOE_VARIANTS.items():
        t0 = time.perf_counter()
        m = ex.out_of_equilibrium(_cfg(**over), seed)["metrics"]
        row = {"seconds": time.perf_counter() - t0}
        for key in ("rdm_late_minus_near_k", "pcd_late_minus_near_k", "rdm_minus_pcd_late_rise",
                    "rdm_late_minus_mid", "pcd_late_minus_mid"):
            row[key], row[key + "_se"] = m.get(key), m.get(key + "_se")
        row["margin_se"] = row["rdm_late_minus_near_k"] / row["rdm_late_minus_near_k_se"]
        out[name] = row
        print(f"seed {seed} ooe {name}:", json.dumps(row), flush=True)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("explore", "ooe"))
    ap.add_argument("--seeds", type=int, nargs="+", default=[100, 101, 102])
    args = ap.parse_args(argv)
    with user_errors_exit():
        if min(args.seeds) < 100:
            raise UserError("development seeds are 100 and up (0-2 are the reported seeds); pass --seeds 100 101 ...")
        torch.set_num_threads(1)
        fn = {"explore": tune_explore, "ooe": tune_ooe}[args.what]
        res = {str(s): fn(s) for s in args.seeds}
        atomic_write_json(paths.results_root() / "nlm" / "dev" / f"{args.what}.json", {"seeds": args.seeds, "git": git_state(), "when": now(), "results": res})


if __name__ == "__main__":
    main()
