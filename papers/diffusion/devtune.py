"""Development-seed runs behind the settings frozen in config.py (`common.devseeds`: seeds 100 and up tune,
the seeds below are reported).

    python -m papers.diffusion.devtune fold_window|dft_paths|learned_late [--seeds 100 101 102]

`fold_window`: the window of times above the Franz-Parisi threshold on which `fp-threshold-time` fits the
fold law B ∝ (t − t_f)^{3/2} against the competing linear law (Sec. VII, Fig. 11). At each seed: the
bisection threshold and the barriers at OFFSETS above it (quick's samples and q grid), then, for each
candidate window, where the 3/2 law and the linear law extrapolate the barrier to zero. The rule that chose
`fp_fold_offsets` (`config.TUNED`, where the README shows the figures that chose it): the first of the
candidate windows, closest to the threshold first, on which the two laws land about 2 tolerances (0.02)
apart on the development seeds; the verdict played no part. The window now serves the information metrics
only (`fp_fold_exponent`, `fp_threshold_minus_fold*`): the fold law is not a claim (the paper states no threshold).

`dft_paths`: the detailed fluctuation theorem at quick's `n_dft` paths each way (`dft-intercept`): the paper's
intercept and the doubled-noise null's, with standard errors. The rule that fixed the claim's tolerance: the
midpoint of the window in which the paper's intercept (0 by the theorem) passes and the null's fails, each with
2 standard errors to spare beyond the one-sided 1.645-SE bound, [3.645 SE, null − 3.645 SE], at the largest SE
and the smallest null intercept of the development seeds (`tolerance_window`, rounded to 0.0005).

`learned_late`: the learned score's clone agreement past speciation (the grid's last time, 2.5 × ½ ln Λ) for
the trained network, the untrained one and the exact empirical score, beside Σ_c w_c² (`learned-clones-independent`),
and the crossings of the speciation value (the finding: the untrained network crosses as close to ½ ln Λ). The
rule that fixed the claim's tolerance: half the distance from Σ_c w_c² to the untrained network's smallest late
agreement over the development seeds, rounded down to 0.01 (`tolerance_window`): the trained network's spread
between seeds (training's randomness) then sits as far inside it as the null sits outside.

Each writes results/diffusion/dev/<name>.json.
"""
from __future__ import annotations

import argparse
import math

import numpy as np

from common import devseeds
from common.errors import user_errors_exit
from common.seed import Streams

from . import franz_parisi as fp
from .config import get_config
from .mixture import GaussianMixture

OFFSETS = [0.005, 0.01, 0.02, 0.03, 0.04, 0.06, 0.08, 0.10, 0.12]
WINDOWS = {"w005_040": [0.005, 0.01, 0.02, 0.03, 0.04], "w010_050": [0.01, 0.02, 0.03, 0.04],
           "w020_100": [0.02, 0.04, 0.06, 0.08, 0.10], "w040_120": [0.04, 0.06, 0.08, 0.10, 0.12]}


def tune_fold_window(seed: int) -> dict:
    """At one development seed (the run's streams `Streams(seed)`): the bisection threshold, the barriers at
    OFFSETS above it, and per candidate window where the 3/2 (fold) and the linear law put t_f, with the log-log
    exponent."""
    cfg = get_config("quick")
    mix = GaussianMixture.two_gaussians(cfg.fp_mu, cfg.fp_sigma2)
    q = cfg.fp_q_min + cfg.fp_q_step * np.arange(int(cfg.fp_q_points))
    small = fp.draw_samples(mix, cfg.fp_threshold_samples, Streams(seed).child("fp-threshold"))  # as the study does
    thr = fp.threshold_time(mix, q, small, cfg.fp_threshold_hi, cfg.fp_threshold_lo, tol=cfg.fp_threshold_tol)
    b = fp.fold_threshold(mix, q, small, thr + np.asarray(OFFSETS))["barriers"]
    out = {"threshold": float(thr), "barriers": [float(x) for x in b]}
    for name, offs in WINDOWS.items():
        idx = [OFFSETS.index(o) for o in offs]
        ts, bb = thr + np.asarray(offs), b[idx]
        t32 = fp.fold_fit(ts, bb)[0]
        t1 = fp.fold_fit(ts, bb, exponent=1.0)[0]
        out[name] = {"minus_fold": float(thr - t32), "minus_linear": float(thr - t1), "laws_apart": float(t1 - t32),
                     "exponent": fp.fold_exponent(ts, bb, thr)}
    return out


def tune_dft_paths(seed: int) -> dict:
    """At one development seed: the detailed-FT fit at quick's n_dft (`studies.fluctuation_theorems`)."""
    import time

    from .studies.fluctuation_theorems import detailed_fluctuation_theorem

    start = time.perf_counter()
    m = detailed_fluctuation_theorem(get_config("quick"), Streams(seed))["metrics"]
    keys = ("dft_n", "dft_slope", "dft_slope_se", "dft_intercept", "dft_intercept_se", "dft_wrong_noise_slope",
            "dft_wrong_noise_intercept", "dft_wrong_noise_intercept_se")
    return {**{k: m[k] for k in keys}, "wall_s": time.perf_counter() - start}


def dft_tolerance(results: dict) -> dict:
    """The rule behind `dft-intercept`'s tolerance (module docstring): the window [3.645 SE, null − 3.645 SE]
    at the largest SE and smallest null intercept of the seeds, and its midpoint rounded to 0.0005."""
    ses = [max(r["dft_intercept_se"], r["dft_wrong_noise_intercept_se"]) for r in results.values()]
    null = min(abs(r["dft_wrong_noise_intercept"]) for r in results.values())
    lo, hi = 3.645 * max(ses), null - 3.645 * max(ses)
    return {"tolerance_window": {"lo": lo, "hi": hi, "midpoint": round((lo + hi) / 2 / 0.0005) * 0.0005}}


def tune_learned_late(seed: int) -> dict:
    """At one development seed: quick's learned-score section (`studies.high_dimension`), its clone agreement
    past speciation and its crossings."""
    from .studies.high_dimension import learned_speciation

    m = learned_speciation(get_config("quick"), Streams(seed))["metrics"]
    keys = ("learned_late_time", "learned_independent_agreement", "learned_late_agreement",
            "learned_late_agreement_se", "learned_untrained_late_agreement", "learned_untrained_late_agreement_se",
            "learned_empirical_late_agreement", "learned_t_s_theory", "learned_crossing", "learned_untrained_crossing",
            "learned_empirical_crossing")
    return {k: m[k] for k in keys}


def learned_tolerance(results: dict) -> dict:
    """The rule behind `learned-clones-independent`'s tolerance (module docstring): half the distance from
    Σ_c w_c² to the untrained network's smallest late agreement over the seeds, rounded down to 0.01."""
    gap = min(r["learned_untrained_late_agreement"] - r["learned_independent_agreement"] for r in results.values())
    return {"tolerance_window": {"untrained_gap": gap, "tolerance": math.floor(gap / 2 / 0.01) * 0.01}}


TASKS = {"fold_window": (tune_fold_window, None), "dft_paths": (tune_dft_paths, dft_tolerance),
         "learned_late": (tune_learned_late, learned_tolerance)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=tuple(TASKS))
    ap.add_argument("--seeds", type=int, nargs="+", default=list(devseeds.DEFAULT))
    args = ap.parse_args(argv)
    with user_errors_exit():
        tune, summarise = TASKS[args.what]
        devseeds.run_seeds("diffusion", args.what, args.seeds, tune, summarise)


if __name__ == "__main__":
    main()
