"""Profiles of paperid: the paper's whole contract with the runner (common/README.md, "Adding a paper").

TEMPLATE: replace the toy's keys with your paper's. smoke: seconds, for the tests; quick (the default): minutes on
2 CPU cores; full: the paper's sizes. All three run the same code with the same keys; only the sizes differ.
"""
from __future__ import annotations

import sys
from types import SimpleNamespace

from common.profiles import configure

_SHARED = {
    "near_miss": 0.02,      # the agreement's near miss: the integrand exp((1 + near_miss) u) (claims.yaml)
}

# Small dicts of plain values (int, float, str, bool, lists of them), the same keys in every profile.
PROFILES = {
    "smoke": dict(_SHARED, n_draws=200_000),
    "quick": dict(_SHARED, n_draws=4_000_000),
    "full": dict(_SHARED, n_draws=20_000_000),
}

# Every value check is a bound (common.profiles.check_bounds: min, max, above, below, choices; lists element-wise).
BOUNDS = {
    "n_draws": {"min": 4},                    # two antithetic pairs at least: a variance needs two values
    "near_miss": {"above": 0, "max": 1},
}

# Settings chosen on development seeds (common/README.md, "Development tuning"): {} until a devtune.py chooses one.
TUNED: dict = {}


def get_config(profile: str, **params) -> SimpleNamespace:
    """The resolved profile (as `common.study.open_run` resolves it): a bad value is a one-line `UserError`."""
    return configure(sys.modules[__name__], profile, **params)


def preflight(cfg) -> None:
    """What a bound cannot say, before anything is written (a missing dataset: raise
    `common.errors.UserError("... run `make data DATASETS=<name>`")`). The toy needs nothing."""
