"""What `devtune` (tuning) and `investigations` (questions that tune nothing) share: quick's configuration
with overrides, claims as claims.yaml states them, a claim's margin in SEs, and the command line that runs
one of them on development seeds and writes its record.

Development seeds are `common.devseeds`' (100 and up); the record goes to `results/nlm/dev/<what>.json`
(`common.devseeds.result_path`) as `{"seeds", "git", "when", "results"}`, with `git_at_end` when the tree
changed under the run (both states are recorded) and whatever the command adds (`extra`).
"""
from __future__ import annotations

import argparse

import torch

from common.devseeds import DEFAULT, run_seeds
from common.errors import user_errors_exit

# notebook 03's window claims; their metric, comparison, threshold and control are read from claims.yaml
WINDOW_CLAIMS = ("rdm-best-at-finite-time", "rdm-degrades-at-long-times", "pcd-does-not-degrade", "rdm-degrades-more-than-pcd")


def dev_run(seed: int):
    """What a study's `measure(cfg, run)` reads of a run, for a development seed run outside the runner: the seed,
    its keyed streams (`common.seed.Streams`), the CPU, no folder (nothing cached)."""
    from types import SimpleNamespace

    from common.seed import Streams

    streams = Streams(int(seed))
    return SimpleNamespace(seed=int(seed), streams=streams, rng=streams.rng, device=torch.device("cpu"), dir=None)


def quick(**over):
    """The quick profile with `over` applied (`config.get_config`)."""
    from .config import get_config

    return get_config("quick", **over)


def margin(v, se, compare, value):
    """(v − threshold) / SE on the claim's side (positive: the claim holds by that many SEs); NaN without an SE."""
    return ((v - value) if compare == "at_least" else (value - v)) / se if se else float("nan")


def claim_numbers(claim, m) -> dict:
    """A claim's value, SE and margin from its threshold in SEs (positive on the claim's side), from metrics m."""
    v, se = m[claim.metric], m[claim.se]
    return {"value": v, "se": se, "margin_se": margin(v, se, claim.compare, claim.value)}


def claims(ids) -> dict:
    """These claims as claims.yaml states them (criterion and control), testable at quick for judging."""
    from dataclasses import replace
    from pathlib import Path

    from common.claims import load_claims

    every = {c.id: c for c in load_claims(Path(__file__).with_name("claims.yaml"))}
    return {cid: replace(every[cid], profiles=("quick",)) for cid in ids}


def window_claims() -> dict:
    """Notebook 03's window claims (WINDOW_CLAIMS) as claims.yaml states them."""
    return claims(WINDOW_CLAIMS)


def sweep_ends() -> list:
    """Notebook 02's smallest and largest P at quick."""
    sizes = quick().sweep_sizes
    return [min(sizes), max(sizes)]


def main(doc: str, commands: dict, argv=None, extra=None) -> None:
    """`<what> --seeds ...`: run `commands[what](seed)` on each development seed (a reported seed is refused,
    exit 2, nothing written) and write the record; `extra(what, results)` adds top-level entries."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("what", choices=tuple(commands))
    ap.add_argument("--seeds", type=int, nargs="+", default=list(DEFAULT))
    args = ap.parse_args(argv)
    with user_errors_exit():
        torch.set_num_threads(1)
        run_seeds("nlm", args.what, args.seeds, commands[args.what],
                  extra=(lambda res: extra(args.what, res)) if extra else None)
