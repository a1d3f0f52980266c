"""Profiles for the diffusion notebooks (https://arxiv.org/abs/2405.11932): the paper's contract with the runner.

smoke: seconds, for tests. quick (default): a few minutes on 2 CPU cores. full: the paper's
trajectory counts and step sizes, or more. All three run the same code; `get_config(profile,
**overrides)` resolves one (`common.profiles.configure`: PROFILES' types and the value checks of `BOUNDS`),
`preflight(cfg)` checks its data before anything runs, and `TUNED` says which settings were chosen on
development seeds (`python -m papers.diffusion.devtune`).
"""
from __future__ import annotations

import sys
from types import SimpleNamespace

from common.profiles import configure

_SHARED = {
    # Figs 2, 3, 7, 8: fluctuation theorems (μ = 1, σ² = 1) at T = 1, where ⟨e^{−ΔS_tot}⟩ depends on
    # the dynamics; the paper's T = 10 for information on a fraction of the paths
    "ift_mu": 1.0, "ift_sigma2": 1.0, "ift_T": 1.0, "ift_T_long": 10.0,
    "ift_wrong_noise": 2.0,                   # the nulls' noise variance (paths / the sampler's score)
    "forward_dt": 0.01,                       # the paper's step; the exact OU kernel has no step bias
    "hist_forward_sigma2": 0.1, "hist_forward_T": 1.0,   # Fig 3 (heavy-tailed e^{−ΔS_tot})
    "hist_seeds": 5,
    # detailed fluctuation theorem: forward paths against the reversed protocol (Fig 9-10 data, T = 1)
    "dft_mu": 1.0, "dft_sigma2": 0.4, "dft_T": 1.0,
    # Figs 4-6: landscape and phase diagram
    "potential_times": [1.0, 0.35, 0.1],
    # Figs 9-10: entropy rates (μ = 1, σ² = 0.4, t ∈ [0, 3], 200 points)
    "rates_mu": 1.0, "rates_sigma2": 0.4, "rates_T": 3.0, "rates_points": 200,
    "rates_forward_dt": 0.01, "rates_bins": 30,
    # Fig 11: Franz-Parisi potential (μ = 1, σ² = 0.1)
    "fp_mu": 1.0, "fp_sigma2": 0.1, "fp_times": [0.42, 0.015, 0.01],
    "fp_q_min": 0.075, "fp_q_step": 0.01,
    "fp_threshold_hi": 0.42, "fp_threshold_lo": 0.015, "fp_threshold_tol": 0.004,
    # times above the threshold for the fold fit (information metrics), chosen on development seeds (TUNED below)
    "fp_fold_offsets": [0.02, 0.04, 0.06, 0.08, 0.10],
    # high dimension: cloning (μ = 1_d, σ² = 0.4 as in Figs 9-10, so that ½ ln Λ, the exact crossing
    # and the U-curvature time all differ) and collapse of the empirical score
    "cloning_sigma2": 0.4,
    "collapse_sigma2": 1.0,
    # learned score on real data
    "learned_classes": [0, 1], "learned_hidden": 256, "learned_batch": 128, "learned_lr": 2e-3,
}

PROFILES = {
    "smoke": dict(_SHARED, **{
        "n_forward": 4000, "n_backward": 2000, "backward_dt": 0.02, "n_hist": 2000, "ift_long_fraction": 0.25,
        "n_dft": 4000,
        "phase_grid": 9,
        "n_rates_paths": 2000, "rates_backward_dt": 0.02,
        "fp_samples": 2000, "fp_q_points": 200, "fp_threshold_samples": 1000,
        "cloning_dims": [16, 64], "cloning_samples": 500, "clone_check_d": 8, "clone_check_n": 200,
        "clone_check_dt": 0.05,
        "collapse_dims": [32], "collapse_n": 300, "collapse_test": 100,
        "learned_dataset": "digits", "learned_downsample": 1, "learned_steps": 30,
        "learned_hidden": 32, "learned_clone_starts": 20, "learned_clone_steps": 10, "learned_times": 4,
        "learned_empirical_noise": 4,
    }),
    "quick": dict(_SHARED, **{
        "n_forward": 200_000, "n_backward": 200_000, "backward_dt": 0.005, "n_hist": 10_000,
        "ift_long_fraction": 0.25, "n_dft": 2_000_000,
        "phase_grid": 41,
        "n_rates_paths": 100_000, "rates_backward_dt": 0.005,
        "fp_samples": 100_000, "fp_q_points": 800, "fp_threshold_samples": 20_000,
        "cloning_dims": [16, 256, 1024], "cloning_samples": 4000, "clone_check_d": 16,
        "clone_check_n": 10_000, "clone_check_dt": 0.01,
        "collapse_dims": [32, 64, 128, 256], "collapse_n": 2000, "collapse_test": 1000,
        "learned_dataset": "digits", "learned_downsample": 1, "learned_steps": 10_000,
        "learned_clone_starts": 200, "learned_clone_steps": 50, "learned_times": 16,
        "learned_empirical_noise": 16,
    }),
    "full": dict(_SHARED, **{
        "n_forward": 1_000_000, "n_backward": 1_000_000, "backward_dt": 0.005, "n_hist": 10_000,
        "ift_long_fraction": 0.1, "n_dft": 2_000_000,
        "phase_grid": 121,
        "n_rates_paths": 1_000_000, "rates_backward_dt": 0.002,
        "fp_samples": 100_000, "fp_q_points": 800, "fp_threshold_samples": 100_000,
        "cloning_dims": [16, 256, 1024, 4096], "cloning_samples": 10_000, "clone_check_d": 64,
        "clone_check_n": 10_000, "clone_check_dt": 0.005,
        "collapse_dims": [32, 64, 128, 256, 512], "collapse_n": 20_000, "collapse_test": 2000,
        "learned_dataset": "fashion_mnist", "learned_downsample": 2, "learned_steps": 20_000,
        "learned_classes": [1, 8], "learned_hidden": 512, "learned_batch": 256,
        "learned_clone_starts": 400, "learned_clone_steps": 100, "learned_times": 20,
        "learned_empirical_noise": 16,
    }),
}


TUNED = {
    "n_dft": {
        "result": "dft_paths",
        "show": [f"results.{seed}.{key}" for seed in (100, 101, 102)
                 for key in ("dft_intercept", "dft_intercept_se", "dft_wrong_noise_intercept")]
                + ["results.tolerance_window.lo", "results.tolerance_window.hi", "results.tolerance_window.midpoint"],
        "why": "the detailed fluctuation theorem's paths each way: at 200 000 the doubled-noise null's intercept (about "
               "0.009, SE 0.003) could not be told from 0; at 2 000 000 the window [3.645 SE, null - 3.645 SE] in "
               "which the paper's intercept passes and the null's fails, each with 2 SE to spare, is open, and "
               "dft-intercept's tolerance is its midpoint (claims.yaml)",
    },
    "dft-intercept": {
        "result": "dft_paths",
        "show": ["results.tolerance_window.lo", "results.tolerance_window.hi", "results.tolerance_window.midpoint"],
        "why": "the midpoint of the window in which the paper's intercept (0 by the theorem) passes and the "
               "doubled-noise null's fails, each with 2 standard errors to spare beyond the one-sided bound, at the "
               "development seeds' largest SE and smallest null intercept (rounded to 0.0005)",
    },
    "learned-clones-independent": {
        "result": "learned_late",
        "show": [f"results.{seed}.{key}" for seed in (100, 101, 102)
                 for key in ("learned_late_agreement", "learned_untrained_late_agreement")]
                + ["results.tolerance_window.untrained_gap", "results.tolerance_window.tolerance"],
        "why": "the time (the grid's last, 2.5 x 1/2 ln Lambda, well past speciation) and the tolerance, fixed before "
               "the reported run: half the distance from sum_c w_c^2 (1/2 for two balanced classes) to the untrained "
               "network's smallest late agreement on the development seeds (it keeps the start), rounded down to 0.01",
    },
    "fp_fold_offsets": {
        "result": "fold_window",
        # where the two laws land at each development seed, on the chosen window and the two before it
        "show": [f"results.{seed}.{window}.laws_apart" for seed in (100, 101, 102)
                 for window in ("w005_040", "w010_050", "w020_100")],
        "why": "for information only (no claim: the paper states no threshold time): "
               "the window of times above the Franz-Parisi threshold on which the fold law (t - t_f)^(3/2) is fitted: "
               "the first candidate window, closest to the threshold first, on which the 3/2 law and the linear law "
               "extrapolate the barrier to zero about 2 tolerances (0.02) apart at every development seed",
    },
}


# Value checks (`common.profiles.check_bounds`, element-wise on lists): counts of paths, samples, steps and grid points
# at least what their estimators need (an SE needs 2, a bisection or a curve 2 points), variances, horizons, steps and
# learning rates positive, the nulls' noise variance different from the paper's 1, fractions in (0, 1]
_COUNTS_2 = ("n_forward", "n_backward", "n_hist", "n_dft", "n_rates_paths", "fp_samples", "fp_threshold_samples",
             "cloning_samples", "clone_check_n", "collapse_n", "collapse_test", "learned_clone_starts", "learned_times",
             "phase_grid", "rates_points", "fp_q_points", "learned_empirical_noise")
_COUNTS_1 = ("hist_seeds", "rates_bins", "cloning_dims", "clone_check_d", "collapse_dims", "learned_downsample",
             "learned_hidden", "learned_batch", "learned_steps", "learned_clone_steps")
_POSITIVE = ("ift_sigma2", "ift_T", "ift_T_long", "forward_dt", "backward_dt", "hist_forward_sigma2", "hist_forward_T",
             "dft_sigma2", "dft_T", "potential_times", "rates_sigma2", "rates_T", "rates_forward_dt", "rates_backward_dt",
             "fp_sigma2", "fp_times", "fp_q_min", "fp_q_step", "fp_threshold_hi", "fp_threshold_lo", "fp_threshold_tol",
             "fp_fold_offsets", "cloning_sigma2", "collapse_sigma2", "learned_lr", "ift_wrong_noise")
BOUNDS = {
    **{k: {"min": 2} for k in _COUNTS_2},
    **{k: {"min": 1} for k in _COUNTS_1},
    **{k: {"above": 0} for k in _POSITIVE},
    "ift_long_fraction": {"above": 0, "max": 1},
    "learned_dataset": {"choices": ["digits", "mnist", "fashion_mnist"]},
    "learned_classes": {"min": 0, "max": 9},
}


def get_config(profile: str, **params) -> SimpleNamespace:
    """The resolved profile (`common.profiles.configure`, as `common.study.open_run` does): `profile`'s settings
    with every non-None override in `params` applied and checked against `BOUNDS`; a bad value is a `UserError`."""
    return configure(sys.modules[__name__], profile, **params)


def preflight(cfg) -> None:
    """A missing dataset for the learned score (Fashion-MNIST at full) ends here in one line, before
    any notebook runs; the other notebooks need no data. `cfg` is `get_config(...)`'s result."""
    from common.data import available, folder
    from common.errors import UserError

    name = cfg.learned_dataset
    if not available(name):
        raise UserError(f"the {cfg.profile} profile's learned score needs {name} (data/{folder(name)}/); "
                        f"run `make data` or set REPRO_DATA to the folder that holds it")
