"""Profiles as small configs: `smoke` (seconds, tests), `quick` (minutes on 2 CPU cores, the
default) and `full` (the paper's scale). A paper keeps a dict `PROFILES = {name: {key: value}}`.
"""
from __future__ import annotations

from types import SimpleNamespace

from .errors import UserError

PROFILE_NAMES = ("smoke", "quick", "full")


def resolve(profiles: dict[str, dict], profile: str, **overrides) -> SimpleNamespace:
    """The profile's settings with every non-None override applied.

    An unknown profile or override key is a `UserError` listing the valid choices. An override is
    converted to the type of the profile's value where that is a plain int/float/bool.
    """
    if profile not in profiles:
        raise UserError(f"unknown profile {profile!r}; choose one of {', '.join(profiles)}")
    cfg = dict(profiles[profile])
    for key, value in overrides.items():
        if value is None:
            continue
        if key not in cfg:
            raise UserError(f"unknown parameter {key!r}; valid: {', '.join(sorted(cfg))}")
        cfg[key] = coerce(key, value, cfg[key])
    cfg["profile"] = profile
    return SimpleNamespace(**cfg)


def coerce(key, value, like):
    """`value` converted to the type of `like` (a profile's value); a `UserError` naming `key` when it cannot be."""
    if like is None or isinstance(value, type(like)):
        return value
    try:
        if isinstance(like, bool):
            if isinstance(value, str):
                if value.lower() in ("1", "true", "yes"):
                    return True
                if value.lower() in ("0", "false", "no"):
                    return False
                raise ValueError
            return bool(value)
        if isinstance(like, int) and not isinstance(value, bool):
            if float(value) != int(float(value)):
                raise ValueError
            return int(float(value))
        if isinstance(like, float):
            return float(value)
        if isinstance(like, (list, tuple)) and isinstance(value, (list, tuple)):
            return type(like)(value)
    except (TypeError, ValueError):
        pass
    else:
        if not isinstance(like, (bool, int, float, list, tuple)):
            return value
    raise UserError(f"parameter {key!r} must be of type {type(like).__name__}, got {value!r}")


def check_overrides(profiles: dict[str, dict], profile: str, overrides: dict) -> None:
    """Check override values against the profiles before anything runs; a bad one is a `UserError`
    naming the parameter.

    A key the profile holds must convert to the profile value's type (as `resolve` does), and a key
    that is a positive integer in every profile (a count, a size, a number of steps) must stay >= 1.
    Keys the profiles do not hold are left to the notebook.
    """
    cfg = profiles.get(profile, {})
    for key, value in overrides.items():
        if value is None or key not in cfg:
            continue
        value = coerce(key, value, cfg[key])
        counts = [p[key] for p in profiles.values() if key in p]
        if all(isinstance(c, int) and not isinstance(c, bool) and c >= 1 for c in counts) and value < 1:
            raise UserError(f"parameter {key!r} counts something and must be >= 1 "
                            f"(the profiles use {min(counts)}..{max(counts)}), got {value!r}")


BOUND_KINDS = ("min", "max", "above", "below", "choices")


def check_bounds(bounds: dict[str, dict], cfg) -> None:
    """Each key of `bounds` ({key: {"min"|"max"|"above"|"below": number, "choices": [...]}}, a paper's
    `config.BOUNDS`) holds in `cfg`: a value outside is a `UserError` naming the key, the bound and the value.
    A list or tuple value is checked element by element; None (the profile's "not set") is never checked."""
    for key, spec in bounds.items():
        unknown = set(spec) - set(BOUND_KINDS)
        if unknown or not hasattr(cfg, key):
            raise KeyError(f"BOUNDS[{key!r}]: " + (f"unknown bound {sorted(unknown)}; use {BOUND_KINDS}" if unknown
                                                  else "not a key of the profiles"))
        value = getattr(cfg, key)
        for v in (value if isinstance(value, (list, tuple)) else [value]):
            if v is None:
                continue
            broken = ("choices" in spec and v not in spec["choices"] and f"one of {', '.join(map(repr, spec['choices']))}") \
                or ("min" in spec and v < spec["min"] and f">= {spec['min']}") \
                or ("max" in spec and v > spec["max"] and f"<= {spec['max']}") \
                or ("above" in spec and not v > spec["above"] and f"> {spec['above']}") \
                or ("below" in spec and not v < spec["below"] and f"< {spec['below']}")
            if broken:
                raise UserError(f"parameter {key!r} must be {broken}, got {value!r}")


def configure(config, profile: str, **overrides) -> SimpleNamespace:
    """The one `get_config` of every paper: `config`'s profile `profile` (`config.PROFILES`) with the non-None
    `overrides` applied (`resolve`: unknown keys and wrong types refused) and checked against the paper's
    declared `config.BOUNDS` (`check_bounds`). `config` is the paper's config module."""
    cfg = resolve(config.PROFILES, profile, **overrides)
    check_bounds(getattr(config, "BOUNDS", {}), cfg)
    return cfg
