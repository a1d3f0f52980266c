"""Development-seed runs behind the settings frozen in config.py (`common.devseeds`: seeds 100 and up tune,
the seeds below are reported).

    python -m papers.diffusion.devtune fold_window [--seeds 100 101 102]

`fold_window`: the window of times above the Franz-Parisi threshold on which `fp-threshold-time` fits the
fold law B ∝ (t − t_f)^{3/2} against the competing linear law (Sec. VII, Fig. 11). At each seed: the
bisection threshold and the barriers at OFFSETS above it (quick's samples and q grid), then, for each
candidate window, where the 3/2 law and the linear law extrapolate the barrier to zero. The rule that chose
`fp_fold_offsets` (`config.TUNED`, where the README shows the figures that chose it): the first of the
candidate windows, closest to the threshold first, on which the two laws land about 2 tolerances (0.02)
apart on the development seeds; the verdict played no part. Writes results/diffusion/dev/fold_window.json.
"""
from __future__ import annotations

import argparse

import numpy as np

from common import devseeds
from common.errors import user_errors_exit

from . import franz_parisi as fp
from .config import get_config
from .mixture import GaussianMixture

OFFSETS = [0.005, 0.01, 0.02, 0.03, 0.04, 0.06, 0.08, 0.10, 0.12]
WINDOWS = {"w005_040": [0.005, 0.01, 0.02, 0.03, 0.04], "w010_050": [0.01, 0.02, 0.03, 0.04],
           "w020_100": [0.02, 0.04, 0.06, 0.08, 0.10], "w040_120": [0.04, 0.06, 0.08, 0.10, 0.12]}


def tune_fold_window(seed: int) -> dict:
    """At one development seed: the bisection threshold, the barriers at OFFSETS above it, and per
    candidate window where the 3/2 (fold) and the linear law put t_f, with the log-log exponent."""
    cfg = get_config("quick")
    mix = GaussianMixture.two_gaussians(cfg.fp_mu, cfg.fp_sigma2)
    q = cfg.fp_q_min + cfg.fp_q_step * np.arange(int(cfg.fp_q_points))
    small = fp.draw_samples(mix, cfg.fp_threshold_samples, seed + 1)      # as studies.franz_parisi draws them
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("fold_window",))
    ap.add_argument("--seeds", type=int, nargs="+", default=list(devseeds.DEFAULT))
    args = ap.parse_args(argv)
    with user_errors_exit():
        devseeds.run_seeds("diffusion", args.what, args.seeds, tune_fold_window)


if __name__ == "__main__":
    main()
