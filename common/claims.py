"""A paper's claims and their verdicts.

Each claim in `papers/<id>/claims.yaml` names the metric that tests it, its kind, a comparison and
the profiles able to test it. `evaluate` turns a run's metrics into a table with one of four
verdicts:

- **reproduced** / **not reproduced**: the measurement decides;
- **inconclusive at this scale**: the measurement's uncertainty straddles the criterion;
- **not run at this scale**: the running profile is not one the claim lists.

A claim whose profile is listed but whose measurement is missing or not finite is **not
reproduced** ("not measured"): a failed search or a NaN never hides as "not run".

Three kinds of claim:

- `exact`: an analytic identity or closed form checked numerically; a plain comparison.
- `statistical`: a Monte Carlo estimate `metric` with its standard error `se`; the one-sided 95 %
  normal bounds m -/+ 1.645 se are compared with the criterion.
- `comparison`: "A beats B", judged on paired per-seed differences d_i = A_i - B_i (`metric` and
  `baseline` are lists, paired by position; without `baseline`, `metric` holds the differences).
  Mean, SE = sd / sqrt(n) and a one-sided 95 % Student-t bound are compared with the margin.

For the last two, against a criterion "at_least v": reproduced when the lower bound is >= v, not
reproduced when the upper bound is < v (the estimate lies on the wrong side beyond its
uncertainty), inconclusive in between. `at_most` mirrors it; `within` and `interval` are judged
as two one-sided tests: the 90 % interval inside the accepted region reproduces, entirely outside
it does not, anything else is inconclusive.

**Controls.** Every claim names a `control`: the metric holding the same measurement on a named
null (`control_is`), computed in the same run: a model that learned nothing, data without the
structure, a deliberately broken mechanism, or the competitor the paper claims to beat. The
control is judged by the same criterion, with its own uncertainty (`control_se`; for comparisons,
a per-seed list paired with `control_baseline`, default the claim's `baseline`). A claim is
reproduced only when its measurement is reproduced and its control is not reproduced; when the
control passes too (or cannot be excluded) the claim is inconclusive at this scale, since the
measurement cannot tell the paper's effect from the null. A control that is missing or not finite
is "not measured", like the metric. `control: none` with `why:` marks the rare claim for which no
null exists; it is listed as uncontrolled.

A fourth kind, `projection`, is a number computed from assumed `inputs`: it is shown with them and
never judged, so it is never counted among reproduced claims.

**What a claim is** (`nature`, apart from how it is judged). An `agreement` shows that two computations
match (a closed form against quadrature, theory against simulation, an integer path against float); its
control is a near-miss variant whose failure shows the check's resolution. A `phenomenon` is what the
paper discovered (something happens, A beats B); its control removes exactly what the paper credits for
the effect, or is the simplest competing explanation, and could pass if the paper were wrong. Summaries
count the two apart ("P of Q phenomena, A of B agreements"). An `identity` checks arithmetic, bookkeeping or a
theorem's sign (a level set's error, a LUT's size, a positivity that holds for any process): it is judged and
shown, like any claim, but never counted among the verdicts (like projections); summaries say how many identities
hold, apart.

**What would decide it.** Every inconclusive claim carries, in `decide`, the sample at which its observed effect
and spread would decide it (`common.decide`: the number of paired replicates for a comparison, the factor by which
the sample must grow for a statistical estimate, the per-seed sample when seeds disagree), or "no n decides it"
with the reason: a control that passes (its estimate lies on the passing side, so more data only confirm that it
passes), a degenerate control, an estimate on the criterion's edge.

**Degenerate controls.** A control that is the metric negated, a fixed multiple of it or the metric plus
a fixed offset, across a claim's replicates (or, in `combine_seeds`, across seeds), or the competitor
swapped with the claim's own side (control = baseline, control_baseline = metric), cannot fail on its
own: `degenerate_control` says so, and the claim is inconclusive at this scale ("control degenerate"),
whatever its metric.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from .io import atomic_write_text

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive at this scale"
NOT_RUN = "not run at this scale"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_RUN)
PROJECTION = "projection"  # not a verdict: a number from assumed inputs, shown apart from the verdicts
COMPARISONS = ("at_least", "at_most", "within", "interval")
KINDS = ("exact", "statistical", "comparison", "projection")
AGREEMENT, PHENOMENON, IDENTITY = "agreement", "phenomenon", "identity"
NATURES = (AGREEMENT, PHENOMENON, IDENTITY)
COUNTED = (AGREEMENT, PHENOMENON)  # identities are judged and shown, never counted among the verdicts
NO_CONTROL = "none"
MISSING_CONTROL = "no control named in claims.yaml"
CONFIDENCE = 0.95  # one-sided; `within`/`interval` use the matching two-sided 90 % interval
NOT_MEASURED = "not measured"

_REQUIRED = ("id", "kind", "statement", "paper_value", "source", "metric", "profiles")
_OPTIONAL = ("control", "compare", "value", "tolerance", "rel_tolerance", "interval", "se", "baseline", "when", "note",
             "control_is", "control_se", "control_baseline", "why", "inputs", "nature")
CONTROL_COLUMNS = ["control", "control_is", "control_measured", "control_se", "control_ci_low", "control_ci_high",
                   "control_n", "control_verdict"]
COLUMNS = ["id", "kind", "nature", "statement", "source", "paper_value", "metric", "measured", "se", "ci_low", "ci_high", "n",
           "criterion", *CONTROL_COLUMNS, "verdict", "note", "decide"]


@dataclass(frozen=True)
class Claim:
    id: str
    kind: str
    statement: str
    paper_value: str
    source: str
    metric: str
    compare: str | None
    profiles: tuple[str, ...]
    control: str = NO_CONTROL  # metric of the same measurement on the null, or "none" (then `why`)
    control_is: str = ""  # one line: what the null is
    control_se: Any = None  # statistical: the control's standard error (number or metric name)
    control_baseline: str | None = None  # comparison: what the control's list is paired with (default `baseline`)
    why: str = ""  # control: none -- why no null exists
    inputs: tuple = ()  # projection: the assumed inputs (metric names or short texts)
    value: Any = None  # number, or the name of another metric
    tolerance: Any = None  # number or {"metric": name}
    rel_tolerance: float | None = None
    interval: tuple | None = None
    se: Any = None  # statistical: number or metric name
    baseline: str | None = None  # comparison: metric holding B's per-seed values
    when: tuple = ()  # ((metric, value), ...): the run configuration the claim needs, e.g. dataset = imagenet
    note: str = ""
    nature: str = ""  # agreement | phenomenon | identity ("" for a projection)

    @property
    def controlled(self) -> bool:
        return self.control != NO_CONTROL

    def criterion(self, metrics: dict | None = None) -> str:
        """The criterion as numbers where `metrics` can resolve the names it refers to."""
        if self.compare is None:
            return "none: a projection is not judged"
        ref = _describe(self.value, metrics)
        lhs = "mean(A - B)" if self.kind == "comparison" and self.baseline else ("mean" if self.kind == "comparison" else "")
        lhs = f"{lhs} " if lhs else ""
        if self.compare == "at_least":
            return f"{lhs}>= {ref}"
        if self.compare == "at_most":
            return f"{lhs}<= {ref}"
        if self.compare == "interval":
            lo, hi = self.interval
            return f"{lhs}in [{_describe(lo, metrics)}, {_describe(hi, metrics)}]"
        if self.rel_tolerance is not None:
            return f"{lhs}= {ref} ± {self.rel_tolerance:g} × |{ref}|"
        return f"{lhs}= {ref} ± {_describe(self.tolerance, metrics)}"


def _describe(v, metrics: dict | None = None) -> str:
    if isinstance(v, dict) and "metric" in v:
        v = v["metric"]
    if isinstance(v, str) and metrics is not None:
        x = _number(v, metrics)
        return f"{x:.4g} ({v})" if x is not None else f"{v} (not measured)"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def as_claim(raw: dict, where: str) -> Claim:
    cid = raw.get("id", "?")
    missing = [k for k in _REQUIRED if k not in raw]
    if missing:
        raise ValueError(f"{where}: claim {cid!r} lacks {', '.join(missing)}")
    if raw["kind"] not in KINDS:
        raise ValueError(f"{where}: claim {cid!r}: kind must be one of {KINDS}")
    _check_control(raw, where)
    if raw["kind"] == "projection":
        if not raw.get("inputs") or not isinstance(raw["inputs"], list):
            raise ValueError(f"{where}: claim {cid!r}: a projection lists its assumed `inputs`")
    elif raw.get("inputs") is not None:
        raise ValueError(f"{where}: claim {cid!r}: `inputs` belong to projections")
    nature = raw.get("nature")
    if raw["kind"] == "projection" and nature is not None:
        raise ValueError(f"{where}: claim {cid!r}: a projection is neither an agreement nor a phenomenon; drop `nature`")
    if nature is not None and nature not in NATURES:
        raise ValueError(f"{where}: claim {cid!r}: nature must be one of {NATURES}")
    compare = raw.get("compare")
    if compare is None and raw["kind"] != "projection":
        raise ValueError(f"{where}: claim {cid!r} lacks compare")
    if compare is not None and compare not in COMPARISONS:
        raise ValueError(f"{where}: claim {cid!r}: compare must be one of {COMPARISONS}")
    if compare == "interval" and len(raw.get("interval") or ()) != 2:
        raise ValueError(f"{where}: claim {cid!r}: interval needs [low, high]")
    if compare in ("at_least", "at_most") and raw.get("value") is None:
        raise ValueError(f"{where}: claim {cid!r}: {compare} needs a value")
    if compare == "within" and (raw.get("value") is None or (raw.get("tolerance") is None) == (raw.get("rel_tolerance") is None)):
        raise ValueError(f"{where}: claim {cid!r}: within needs a value and exactly one of tolerance, rel_tolerance")
    if raw["kind"] == "statistical" and raw.get("se") is None:
        raise ValueError(f"{where}: claim {cid!r}: a statistical claim needs `se` (its standard error)")
    if raw["kind"] != "statistical" and raw.get("se") is not None:
        raise ValueError(f"{where}: claim {cid!r}: `se` belongs to statistical claims")
    if raw["kind"] != "comparison" and raw.get("baseline") is not None:
        raise ValueError(f"{where}: claim {cid!r}: `baseline` belongs to comparison claims")
    if raw.get("when") is not None and not isinstance(raw["when"], dict):
        raise ValueError(f"{where}: claim {cid!r}: `when` maps configuration metrics to the values the claim needs")
    unknown = set(raw) - set(_REQUIRED) - set(_OPTIONAL)
    if unknown:  # a misspelt key would otherwise be silently ignored
        raise ValueError(f"{where}: claim {cid!r}: unknown keys {', '.join(sorted(unknown))}")
    return Claim(
        id=str(raw["id"]), kind=raw["kind"], statement=str(raw["statement"]), paper_value=str(raw["paper_value"]),
        source=str(raw["source"]), metric=str(raw["metric"]), compare=raw.get("compare"), profiles=tuple(raw["profiles"]),
        control=str(raw["control"]), control_is=str(raw.get("control_is") or ""), control_se=raw.get("control_se"),
        control_baseline=raw.get("control_baseline"), why=str(raw.get("why") or ""),
        inputs=tuple(str(i) for i in raw.get("inputs") or ()),
        value=raw.get("value"), tolerance=raw.get("tolerance"), rel_tolerance=raw.get("rel_tolerance"),
        interval=tuple(raw["interval"]) if raw.get("interval") else None, se=raw.get("se"),
        baseline=raw.get("baseline"), when=tuple((raw.get("when") or {}).items()), note=str(raw.get("note", "")),
        nature=str(raw.get("nature") or ""),
    )


def _check_control(raw: dict, where: str) -> None:
    """A control metric with `control_is` (and `control_se` for a statistical claim), or `none` with `why`."""
    cid, ctl = raw.get("id", "?"), raw.get("control")
    if ctl is None:  # judged as uncontrolled; `tests/common/test_claims.py` requires a control in every claims file
        raw["control"], raw["why"] = NO_CONTROL, MISSING_CONTROL
        return
    if str(ctl).strip() == "":
        raise ValueError(f"{where}: claim {cid!r}: `control` names the metric of the same measurement on a null, "
                         "or is `none` with `why`")
    if str(ctl).strip().lower() == NO_CONTROL:
        if not str(raw.get("why") or "").strip():
            raise ValueError(f"{where}: claim {cid!r}: `control: none` needs `why` (why no null exists)")
        extra = [k for k in ("control_is", "control_se", "control_baseline") if raw.get(k) is not None]
        if extra:
            raise ValueError(f"{where}: claim {cid!r}: {', '.join(extra)} given with `control: none`")
        raw["control"] = NO_CONTROL
        return
    if raw["kind"] == "projection":
        raise ValueError(f"{where}: claim {cid!r}: a projection is not judged, so it has `control: none` with `why`")
    if not str(raw.get("control_is") or "").strip():
        raise ValueError(f"{where}: claim {cid!r}: `control_is` says in one line what the null {ctl!r} is")
    if raw.get("why") is not None:
        raise ValueError(f"{where}: claim {cid!r}: `why` belongs to `control: none`")
    if raw["kind"] == "statistical" and raw.get("control_se") is None:
        raise ValueError(f"{where}: claim {cid!r}: a statistical claim's control needs `control_se`")
    if raw["kind"] != "statistical" and raw.get("control_se") is not None:
        raise ValueError(f"{where}: claim {cid!r}: `control_se` belongs to statistical claims")
    if raw["kind"] != "comparison" and raw.get("control_baseline") is not None:
        raise ValueError(f"{where}: claim {cid!r}: `control_baseline` belongs to comparison claims")


def load_paper(path: str | Path) -> tuple[dict, list[Claim]]:
    """Read a `claims.yaml`: (paper metadata, claims)."""
    path = Path(path)
    doc = yaml.safe_load(path.read_text()) or {}
    claims = [as_claim(c, str(path)) for c in doc.get("claims", [])]
    ids = [c.id for c in claims]
    if len(ids) != len(set(ids)):
        raise ValueError(f"{path}: duplicate claim ids")
    return doc.get("paper", {}), claims


def load_claims(path: str | Path) -> list[Claim]:
    return load_paper(path)[1]


def _finite(x) -> float | None:
    if isinstance(x, bool):
        return float(x)
    if isinstance(x, (int, float)) and math.isfinite(x):
        return float(x)
    return None


def _number(x, metrics: dict):
    """A number, or the value of a metric named by a string or {"metric": name}; None if missing."""
    if isinstance(x, dict) and "metric" in x:
        x = x["metric"]
    if isinstance(x, str):
        x = metrics.get(x)
    return _finite(x)


def _series(name: str, metrics: dict) -> list[float] | None:
    """A metric holding a list of finite numbers; None if missing or any entry is not finite."""
    raw = metrics.get(name)
    if not isinstance(raw, (list, tuple)) or not raw:
        return None
    out = [_finite(v) for v in raw]
    return None if any(v is None for v in out) else out


@dataclass(frozen=True)
class Outcome:
    verdict: str
    measured: float | None = None
    se: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int | None = None
    note: str = ""
    control: "Outcome | None" = None  # the same measurement on the claim's null, judged by the same criterion


def paired(a: list[float], b: list[float] | None = None, confidence: float = CONFIDENCE) -> dict:
    """Mean paired difference a_i - b_i, its SE, n and the one-sided Student-t bounds (mean -/+ t se)."""
    d = [x - y for x, y in zip(a, b)] if b is not None else list(a)
    n = len(d)
    mean = sum(d) / n
    if n < 2:
        return {"mean": mean, "se": None, "n": n, "low": None, "high": None}
    from scipy.stats import t

    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
    se = sd / math.sqrt(n)
    q = float(t.ppf(confidence, n - 1))
    return {"mean": mean, "se": se, "n": n, "low": mean - q * se, "high": mean + q * se}


def _normal_quantile(confidence: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(confidence)


def accepted_region(claim: Claim, metrics: dict) -> tuple[float, float] | str:
    """[lo, hi] of values that satisfy the criterion, or the name of what was not measured."""
    if claim.compare == "interval":
        lo, hi = (_number(b, metrics) for b in claim.interval)
        if lo is None or hi is None:
            return "interval bound"
        return lo, hi
    ref = _number(claim.value, metrics)
    if ref is None:
        return "reference value"
    if claim.compare == "at_least":
        return ref, math.inf
    if claim.compare == "at_most":
        return -math.inf, ref
    tol = claim.rel_tolerance * abs(ref) if claim.rel_tolerance is not None else _number(claim.tolerance, metrics)
    if tol is None:
        return "tolerance"
    tol = tol * (1 + 1e-9) + 1e-15  # slack for decimal round-off only
    return ref - tol, ref + tol


def _three_way(low: float, high: float, region: tuple[float, float]) -> str:
    lo, hi = region
    if lo <= low and high <= hi:
        return REPRODUCED
    if high < lo or low > hi:
        return NOT_REPRODUCED
    return INCONCLUSIVE


def _measure(claim: Claim, metrics: dict, metric: str, se, baseline: str | None) -> Outcome:
    """`metric` (with `se` / paired with `baseline`) judged against the claim's criterion, ignoring profiles."""
    if claim.kind == "comparison":
        a = _series(metric, metrics)
        b = _series(baseline, metrics) if baseline else None
        stats = None
        if a is not None and (baseline is None or (b is not None and len(b) == len(a))):
            stats = paired(a, b)
        measured = stats["mean"] if stats else None
    else:
        stats, measured = None, _number(metric, metrics)
    if measured is None:
        what = f"{metric!r}" if claim.kind != "comparison" else f"per-seed {metric!r}" + (f" paired with {baseline!r}" if baseline else "")
        return Outcome(NOT_REPRODUCED, note=f"{NOT_MEASURED}: {what}")
    if claim.kind == "projection":
        return Outcome(PROJECTION, measured, note="projection from assumed inputs: " + ", ".join(_describe(i, metrics) if i in metrics else i for i in claim.inputs))
    region = accepted_region(claim, metrics)
    if isinstance(region, str):
        return Outcome(NOT_REPRODUCED, measured, note=f"{NOT_MEASURED}: {region}")
    lo, hi = region
    if claim.kind == "exact":
        return Outcome(REPRODUCED if lo <= measured <= hi else NOT_REPRODUCED, measured)
    two_sided = math.isfinite(lo) and math.isfinite(hi)
    if claim.kind == "statistical":
        se_value = _number(se, metrics)
        if se_value is None or se_value < 0:
            return Outcome(NOT_REPRODUCED, measured, note=f"{NOT_MEASURED}: standard error {se!r}")
        se = se_value
        q = _normal_quantile(CONFIDENCE)
        low, high = measured - q * se, measured + q * se
        return Outcome(_three_way(low, high, region), measured, se, low, high, None,
                       "90% interval" if two_sided else "one-sided 95% bound")
    if stats["se"] is None:
        return Outcome(INCONCLUSIVE, measured, n=stats["n"], note="one seed: no confidence interval")
    return Outcome(_three_way(stats["low"], stats["high"], region), measured, stats["se"], stats["low"], stats["high"],
                   stats["n"], f"paired over {stats['n']} seeds, Student t")


DEGENERATE = "control degenerate"
RELATIVE = 1e-6  # how exactly a control must track its metric to count as the metric transformed


def _differences(name: str | None, baseline: str | None, metrics: dict) -> list[float] | None:
    a = _series(name, metrics) if name else None
    if a is None or not baseline:
        return a
    b = _series(baseline, metrics)
    return [x - y for x, y in zip(a, b)] if b is not None and len(b) == len(a) else None


def transform_of(a: list[float], b: list[float]) -> str | None:
    """How `b` follows `a` exactly, replicate by replicate: 'the metric negated', 'a fixed multiple of the metric
    (x k)' or 'the metric offset by a constant (+ c)'; None when it does not, or when that cannot be told from
    chance: fewer than three replicates, either list constant, or `b` equal to `a` (a null that changes nothing
    is a control that passes too, which the verdict says already)."""
    if len(a) != len(b) or len(a) < 3:
        return None
    scale = max(abs(x) for x in (*a, *b))
    tol = RELATIVE * scale
    if max(a) - min(a) <= tol or max(b) - min(b) <= tol:
        return None
    off = [y - x for x, y in zip(a, b)]
    if max(off) - min(off) <= tol:
        c = sum(off) / len(off)
        return None if abs(c) <= tol else f"the metric offset by a constant ({c:+.4g})"
    if all(abs(x) > tol for x in a):
        ratio = [y / x for x, y in zip(a, b)]
        k = sum(ratio) / len(ratio)
        if max(ratio) - min(ratio) <= RELATIVE * max(1.0, abs(k)):
            return "the metric negated" if abs(k + 1) <= RELATIVE else f"a fixed multiple of the metric (x {k:.4g})"
    return None


def degenerate_control(claim: Claim, metrics: dict) -> str | None:
    """Why `claim`'s control cannot fail on its own in this run (see the module's docstring), or None."""
    if not claim.controlled or claim.kind == "projection":
        return None
    if claim.control == claim.metric:
        return f"{DEGENERATE}: the control is the metric itself"
    if claim.baseline and claim.control == claim.baseline and (claim.control_baseline or claim.baseline) == claim.metric:
        return f"{DEGENERATE}: the competitor swapped with the claim's side (the control is the metric negated)"
    a = _differences(claim.metric, claim.baseline, metrics)
    b = _differences(claim.control, claim.control_baseline or claim.baseline, metrics)
    how = transform_of(a, b) if a is not None and b is not None else None
    return f"{DEGENERATE}: across {len(a)} replicates the control is {how}" if how else None


CONTROL_PASSES = "control passes too: {what}"
CONTROL_NOT_EXCLUDED = "control not excluded (inconclusive): {what}"


def judge(claim: Claim, metrics: dict, profile: str) -> Outcome:
    """The verdict of one claim on one run's metrics, with the estimate, its uncertainty and its control.

    The measurement decides only against a failing control: reproduced needs the metric reproduced
    and the control not reproduced; a control that passes too, or cannot be excluded, makes the
    claim inconclusive at this scale; a control not measured makes it not reproduced.
    """
    o = _measure(claim, metrics, claim.metric, claim.se, claim.baseline)
    c = None
    if claim.controlled:
        c = _measure(claim, metrics, claim.control, claim.control_se, claim.control_baseline or claim.baseline)
        if c.note.startswith(NOT_MEASURED):
            c = Outcome(NOT_REPRODUCED, c.measured, note=f"{NOT_MEASURED}: control {c.note[len(NOT_MEASURED) + 2:]}")
    # a claim not run at this scale judges no control either (its value, where measured, is kept)
    unjudged = None if c is None else Outcome(NOT_RUN, c.measured, c.se, c.ci_low, c.ci_high, c.n)
    if profile not in claim.profiles:
        return Outcome(NOT_RUN, o.measured, note=f"testable at {', '.join(claim.profiles)}", control=unjudged)
    if any(metrics.get(k) != v for k, v in claim.when):  # e.g. the full profile run on CIFAR, not ImageNet
        return Outcome(NOT_RUN, o.measured, note="testable when " + ", ".join(f"{k} = {v}" for k, v in claim.when),
                       control=unjudged)
    if claim.kind == "projection" or c is None:
        return o
    what = claim.control_is or claim.control
    if o.verdict == NOT_REPRODUCED:
        return Outcome(**{**o.__dict__, "control": c})
    degenerate = degenerate_control(claim, metrics)
    if degenerate:
        return Outcome(**{**o.__dict__, "verdict": INCONCLUSIVE, "note": _join(degenerate, o.note), "control": c})
    if c.note.startswith(NOT_MEASURED):
        return Outcome(**{**o.__dict__, "verdict": NOT_REPRODUCED, "note": _join(c.note, o.note), "control": c})
    if o.verdict == REPRODUCED and c.verdict == REPRODUCED:
        return Outcome(**{**o.__dict__, "verdict": INCONCLUSIVE, "note": _join(CONTROL_PASSES.format(what=what), o.note), "control": c})
    if o.verdict == REPRODUCED and c.verdict == INCONCLUSIVE:
        return Outcome(**{**o.__dict__, "verdict": INCONCLUSIVE, "note": _join(CONTROL_NOT_EXCLUDED.format(what=what), o.note),
                          "control": c})
    return Outcome(**{**o.__dict__, "control": c})


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def verdict(claim: Claim, metrics: dict, profile: str) -> tuple[str, float | None, str]:
    """(verdict, measured value, why) for one claim."""
    o = judge(claim, metrics, profile)
    return o.verdict, o.measured, o.note


UNCONTROLLED = "uncontrolled"


NO_N = "no n decides it: "
CONTROL_INSIDE = "the control passes whatever the sample (its estimate lies inside the accepted region)"


def _needed(claim: Claim, o: Outcome, region: tuple[float, float]) -> tuple[float | None, str]:
    """(size, what): the sample at which outcome `o` (a metric's or a control's) clears the criterion's edge
    nearest to it -- n pairs for a comparison, a sample factor for a statistical estimate -- or (None, why not)."""
    from .decide import nearest_edge, paired_n, sample_factor

    if o.measured is None:
        return None, "not measured"
    edge = nearest_edge(o.measured, region)
    if edge is None:
        return None, "no finite criterion"
    if claim.kind == "comparison":
        if o.se is None or not o.n:
            return None, "one replicate: at least two paired replicates are needed for a bound"
        sd = o.se * math.sqrt(o.n)
        n = paired_n(o.measured, sd, edge)
        return (None, "the mean difference lies on the criterion's edge") if n is None else \
            (float(n), f"n = {n} paired replicates (now {o.n}; paired t at the observed mean {o.measured:.3g} and SD {sd:.3g})")
    if claim.kind == "statistical" and o.se is not None:
        k = sample_factor(o.measured, o.se, edge)
        return (None, "the estimate lies on the criterion's edge") if k is None else \
            (k, f"{max(k, 1.0):.3g} x the present sample (SE {o.se:.2g} -> {o.se / math.sqrt(max(k, 1.0)):.2g})")
    return None, "an exact check has no sample to grow"


def what_would_decide(claim: Claim, o: Outcome, metrics: dict) -> str:
    """`decision`'s words: the sample that would decide an inconclusive outcome, or 'no n decides it: <why>'."""
    return decision(claim, o, metrics)[1]


def decision(claim: Claim, o: Outcome, metrics: dict) -> tuple[float | None, str]:
    """For an inconclusive outcome of `judge`: the sample that would decide it, or 'no n decides it: <why>'.

    The metric is measured again without its control. Its estimate outside the accepted region: the sample at
    which it is not reproduced. Inside: the sample at which the metric is reproduced and, when its control is not
    yet excluded, the sample at which the control fails too (the larger of the two); a control whose estimate lies
    inside the region passes whatever the sample."""
    if o.verdict != INCONCLUSIVE:
        return None, ""
    if o.note.startswith(DEGENERATE):
        return None, NO_N + "the control cannot fail on its own (" + o.note.split(";")[0] + ")"
    region = accepted_region(claim, metrics)
    if isinstance(region, str):
        return None, ""
    from .decide import inside

    m = _measure(claim, metrics, claim.metric, claim.se, claim.baseline)
    if m.measured is None:
        return None, ""
    if not inside(m.measured, region):
        size, what = _needed(claim, m, region)
        return (size, what + " (toward not reproduced)") if size is not None else (None, NO_N + what)
    c = o.control
    if c is not None and c.measured is not None and inside(c.measured, region):
        return None, NO_N + CONTROL_INSIDE
    sizes = []
    if m.verdict == INCONCLUSIVE:
        sizes.append(_needed(claim, m, region))
    if c is not None and c.verdict == INCONCLUSIVE:
        sizes.append(_needed(claim, c, region) if c.measured is not None else (None, "control not measured"))
    if not sizes:
        return None, ""
    if any(size is None for size, _ in sizes):
        return None, NO_N + "; ".join(what for size, what in sizes if size is None)
    size, what = max(sizes, key=lambda x: x[0])
    return size, what + (" (for the control to fail)" if len(sizes) > 1 and what == sizes[-1][1] else "")


def between_seeds(claim: Claim, rows: list, metrics: dict) -> str:
    """What would decide a claim whose verdict differs between seeds: the seeds' spread is a seed's real
    uncertainty, so each seed's sample must grow until that spread clears the criterion's edge from the mean over
    seeds, by (z sd / |mean - edge|)^2; 'no n decides it' when the controls' mean lies inside the accepted region."""
    from statistics import NormalDist

    from .decide import inside, nearest_edge

    region = accepted_region(claim, metrics)
    values = [_finite(r.get("measured")) for r in rows]
    if isinstance(region, str) or len(values) < 2 or any(v is None for v in values):
        return ""
    controls = [_finite(r.get("control_measured")) for r in rows]
    mean = sum(values) / len(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
    if inside(mean, region) and claim.controlled and all(v is not None for v in controls) \
            and inside(sum(controls) / len(controls), region):
        return NO_N + CONTROL_INSIDE
    edge = nearest_edge(mean, region)
    if edge is None or mean == edge:
        return NO_N + "the mean over seeds lies on the criterion's edge"
    k = (NormalDist().inv_cdf(CONFIDENCE) * sd / abs(mean - edge)) ** 2
    return (f"a per-seed sample {max(k, 1.0):.3g} x the present one (the seeds' spread, SD {sd:.3g}, against the distance "
            f"{abs(mean - edge):.3g} of their mean {mean:.4g} from the edge {edge:.4g})")


def _row(c: Claim, o: Outcome, metrics: dict) -> dict:
    ctl = o.control or Outcome("")
    if c.kind == "projection":
        control_verdict, control_is = "", c.why
    elif not c.controlled:
        control_verdict, control_is = UNCONTROLLED, c.why
    else:
        control_verdict, control_is = ctl.verdict, c.control_is
    return {
        "id": c.id, "kind": c.kind, "nature": c.nature, "statement": c.statement, "source": c.source, "paper_value": c.paper_value,
        "metric": c.metric, "measured": o.measured, "se": o.se, "ci_low": o.ci_low, "ci_high": o.ci_high,
        "n": o.n, "criterion": c.criterion(metrics), "control": c.control, "control_is": control_is,
        "control_measured": ctl.measured, "control_se": ctl.se, "control_ci_low": ctl.ci_low,
        "control_ci_high": ctl.ci_high, "control_n": ctl.n, "control_verdict": control_verdict,
        "verdict": o.verdict, "note": _join(o.note, c.note),
        "decide": what_would_decide(c, o, metrics) if c.kind != "projection" else "",
    }


def evaluate(claims: list[Claim], metrics: dict, profile: str) -> pd.DataFrame:
    """One row per claim (columns `COLUMNS`): the estimate, its uncertainty, the criterion in numbers, the
    control (what it is, its value, its verdict by the same criterion), the verdict."""
    return pd.DataFrame([_row(c, judge(c, metrics, profile), metrics) for c in claims], columns=COLUMNS)


def summary(df: pd.DataFrame) -> dict:
    """Counts of each verdict over the counted claims (`total` leaves projections and identities out), of
    projections and of uncontrolled claims, and per nature the claims and those reproduced (`phenomenon`:
    (reproduced, total), `agreement` and `identity` likewise; claims without a nature, as in tables written before
    natures, are counted but in no nature)."""
    identities = df[df["nature"] == IDENTITY] if "nature" in df and len(df) else df.iloc[:0]
    counted = df.drop(identities.index) if len(identities) else df
    counts = counted["verdict"].value_counts().to_dict() if len(counted) else {}
    projections = int(counts.get(PROJECTION, 0))
    uncontrolled = int((counted["control_verdict"] == UNCONTROLLED).sum()) if "control_verdict" in counted else 0
    out = {"total": int(len(counted)) - projections, **{v: int(counts.get(v, 0)) for v in VERDICTS},
           PROJECTION: projections, UNCONTROLLED: uncontrolled}
    for nature in NATURES:
        mine = df[df["nature"] == nature] if "nature" in df else df.iloc[:0]
        out[nature] = (int((mine["verdict"] == REPRODUCED).sum()), int(len(mine)))
    return out


def reproduced_of(s: dict, nature: str) -> str:
    """'2/3': the claims of `nature` reproduced, of those judged ('–' when there are none)."""
    rep, tot = s.get(nature, (0, 0))
    return f"{rep}/{tot}" if tot else "–"


def split_by_nature(s: dict) -> str:
    """'2 of 3 phenomena, 1 of 2 agreements' (reproduced of judged), or '' when no claim has a nature."""
    parts = []
    for nature, plural in ((PHENOMENON, "phenomena"), (AGREEMENT, "agreements")):
        rep, tot = s.get(nature, (0, 0))
        if tot:
            parts.append(f"{rep} of {tot} {plural if tot != 1 else nature}")
    return ", ".join(parts)


def headline(s: dict) -> str:
    """'3/5 claims reproduced: 2 of 3 phenomena, 1 of 2 agreements (1 not reproduced, 1 inconclusive at this
    scale, 0 not run at this scale)', then projections and uncontrolled claims when there are any."""
    split = split_by_nature(s)
    text = (f"{s[REPRODUCED]}/{s['total']} claims reproduced{': ' + split if split else ''} ({s[NOT_REPRODUCED]} not reproduced, "
            f"{s[INCONCLUSIVE]} inconclusive at this scale, {s[NOT_RUN]} not run at this scale)")
    if s.get(PROJECTION):
        text += f"; {s[PROJECTION]} projection{'s' * (s[PROJECTION] > 1)} (not judged)"
    held, ids = s.get(IDENTITY, (0, 0))
    if ids:
        text += f"; {ids} identit{'ies' if ids > 1 else 'y'} shown apart, not counted ({held} hold{'s' * (held == 1)})"
    if s.get(UNCONTROLLED):
        text += f"; {s[UNCONTROLLED]} uncontrolled"
    return text


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def format_measured(row) -> str:
    """'0.123 ± 0.004' (statistical: ± SE), '0.12 [0.05, 0.19], n=3' (comparison), 'not measured'."""
    m = row.get("measured")
    if _missing(m):
        return NOT_MEASURED if row.get("verdict") != NOT_RUN else "–"
    text = f"{m:.4g}"
    se = row.get("se")
    if not _missing(se):
        text += f" ± {se:.2g}"
    lo, hi, n = row.get("ci_low"), row.get("ci_high"), row.get("n")
    if row.get("kind") == "comparison" and not _missing(lo):
        text += f" (95% bounds {lo:.3g}, {hi:.3g}; n={int(n)})"
    return text


def format_control(row) -> str:
    """'0.5 ± 0.01: not reproduced (untrained network)', 'uncontrolled: <why>', '' for a projection."""
    verdict = row.get("control_verdict")
    if _missing(verdict) or verdict == "":
        return ""
    what = "" if _missing(row.get("control_is")) else str(row.get("control_is"))
    if verdict == UNCONTROLLED:
        return f"{UNCONTROLLED}: {what}"
    measured = format_measured({"measured": row.get("control_measured"), "se": row.get("control_se"),
                                "ci_low": row.get("control_ci_low"), "ci_high": row.get("control_ci_high"),
                                "n": row.get("control_n"), "kind": row.get("kind"), "verdict": verdict})
    return f"{measured}: {verdict} ({what})"


def _fmt(x) -> str:
    if _missing(x):
        return "–"
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x).replace("|", "\\|").replace("\n", " ")


def to_markdown(df: pd.DataFrame, columns=("id", "kind", "statement", "source", "paper_value", "measured", "criterion",
                                           "control", "verdict", "note", "decide")) -> str:
    def cell(row, c):
        if c == "measured":
            return _fmt(format_measured(row))
        if c == "control":
            return _fmt(format_control(row))
        return _fmt(row.get(c))

    head = "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns) + "\n"
    body = "".join("| " + " | ".join(cell(row, c) for c in columns) + " |\n" for _, row in df.iterrows())
    return head + body


def write_claims_table(df: pd.DataFrame, run_dir: str | Path) -> None:
    run_dir = Path(run_dir)
    atomic_write_text(run_dir / "claims.csv", df.to_csv(index=False))
    atomic_write_text(run_dir / "claims.md", headline(summary(df)) + "\n\n" + to_markdown(df))


def read_claims_table(path: str | Path) -> pd.DataFrame:
    """A `claims.csv` back as a frame with None for missing numbers."""
    df = pd.read_csv(path, keep_default_na=False, na_values=[""])
    for c in ("measured", "se", "ci_low", "ci_high", "n", "control_measured", "control_se", "control_ci_low",
              "control_ci_high", "control_n"):
        if c in df:
            df[c] = df[c].astype(object).where(df[c].notna(), None)
    return df


def pooled_metrics(claim: Claim, per_seed: list[dict]) -> dict:
    """The metrics of several runs with the comparison claim's per-replicate lists (metric, baseline, control
    and its baseline) concatenated in seed order, for one paired test over every seed's replicates; scalars
    (reference values, configuration) come from the first run. A list missing in any run is missing."""
    out = dict(per_seed[0])
    for name in {claim.metric, claim.baseline, claim.control, claim.control_baseline} - {None, NO_CONTROL}:
        lists = [m.get(name) for m in per_seed]
        out[name] = [v for x in lists for v in x] if all(isinstance(x, (list, tuple)) and x for x in lists) else None
    return out


def combine_seeds(tables: dict[int, pd.DataFrame], claims: list[Claim] | None = None,
                  metrics: dict[int, dict] | None = None, profile: str | None = None) -> pd.DataFrame:
    """One row per claim over several seeds: each seed's verdict, estimate and control, and an overall verdict.

    Overall, for a comparison claim (given `claims`, each seed's `metrics` and the `profile`): the verdict
    of the pooled paired differences of every seed's replicates (`pooled_metrics`), so that runs that cannot
    decide alone can decide together; the per-seed verdicts stay beside it. For every other claim: the common
    verdict when every seed agrees; otherwise inconclusive at this scale, with the per-seed verdicts in the
    note (a claim that flips between seeds is not reproduced as stable).
    """
    seeds = sorted(tables)
    first = tables[seeds[0]]
    by_id = {c.id: c for c in claims or []}
    rows = []
    for i, base in first.iterrows():
        row = {k: base[k] for k in ("id", "kind", "nature", "statement", "source", "paper_value", "metric", "criterion",
                                    "control", "control_is") if k in base}
        verdicts, controls = [], []
        for s in seeds:
            r = tables[s].iloc[i]
            row[f"verdict_seed_{s}"] = r["verdict"]
            row[f"measured_seed_{s}"] = format_measured(r)
            row[f"control_seed_{s}"] = format_control(r)
            verdicts.append(r["verdict"])
            controls.append(r.get("control_verdict", ""))
        per_seed = ", ".join(f"seed {s}: {v}" for s, v in zip(seeds, verdicts))
        claim = by_id.get(base["id"])
        row["control_verdict"] = controls[0] if len(set(controls)) == 1 else "differs between seeds"
        if claim is not None and claim.kind == "comparison" and metrics is not None and profile is not None:
            pooled = _row(claim, judge(claim, pooled_metrics(claim, [metrics[s] for s in seeds]), profile), metrics[seeds[0]])
            row["pooled"] = format_measured(pooled)
            row["pooled_control"] = format_control(pooled)
            row["control_verdict"] = pooled["control_verdict"]
            row["verdict"] = pooled["verdict"]
            n = f"n = {pooled['n']}" if pooled["n"] is not None else "n/a"
            row["note"] = _join(f"overall verdict: pooled paired differences over seeds {', '.join(map(str, seeds))} ({n})",
                                pooled["note"], f"per seed: {per_seed}")
            row["decide"] = pooled["decide"]
        elif set(verdicts) != {NOT_REPRODUCED} and (how := _degenerate_over_seeds([tables[s].iloc[i] for s in seeds])):
            row["verdict"] = INCONCLUSIVE   # the metric may pass, but its control cannot fail on its own
            row["note"] = _join(f"{DEGENERATE}: across seeds {', '.join(map(str, seeds))} the control is {how}", f"per seed: {per_seed}")
            row["decide"] = NO_N + "the control cannot fail on its own (degenerate across seeds)"
        elif len(set(verdicts)) == 1:
            row["verdict"], row["note"] = verdicts[0], f"same verdict at seeds {', '.join(map(str, seeds))}"
            row["decide"] = _largest_need([tables[s].iloc[i] for s in seeds], claim, metrics, seeds, profile) \
                if verdicts[0] == INCONCLUSIVE else ""
        else:
            row["verdict"] = INCONCLUSIVE
            row["note"] = "verdict differs between seeds: " + per_seed
            row["decide"] = (between_seeds(claim, [tables[s].iloc[i] for s in seeds], metrics[seeds[0]])
                             if claim is not None and metrics is not None else "")
        rows.append(row)
    return pd.DataFrame(rows)


def _largest_need(rows: list, claim: Claim | None, metrics: dict | None, seeds: list, profile: str | None) -> str:
    """Of seeds that are all inconclusive, the largest sample any one of them needs ('no n' when any needs none)."""
    if claim is None or metrics is None or profile is None:
        return next((str(r.get("decide")) for r in rows if isinstance(r.get("decide"), str) and r.get("decide")), "")
    needs = [decision(claim, judge(claim, metrics[s], profile), metrics[s]) for s in seeds]
    none = [what for size, what in needs if size is None and what]
    if none:
        return none[0]
    sized = [(size, what) for size, what in needs if size is not None]
    return max(sized, key=lambda x: x[0])[1] + " (the seed that needs the most)" if sized else ""


def _degenerate_over_seeds(rows: list) -> str | None:
    """`transform_of` over the seeds' measurements and controls (one value each), or None."""
    a = [_finite(r.get("measured")) for r in rows]
    b = [_finite(r.get("control_measured")) for r in rows]
    if any(v is None for v in a + b):
        return None
    return transform_of(a, b)


def write_seed_table(df: pd.DataFrame, seeds: list[int], run_dir: str | Path) -> None:
    """`claims.csv` (overall) and `claims.md` with a column per seed."""
    run_dir = Path(run_dir)
    atomic_write_text(run_dir / "claims.csv", df.to_csv(index=False))
    cols = (["id", "kind", "statement", "criterion"] + [f"measured_seed_{s}" for s in seeds] + [f"verdict_seed_{s}" for s in seeds]
            + [f"control_seed_{s}" for s in seeds] + [c for c in ("pooled", "pooled_control") if c in df] + ["verdict", "note"]
            + (["decide"] if "decide" in df else []))
    head = "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n"
    body = "".join("| " + " | ".join(_fmt(row[c]) for c in cols) + " |\n" for _, row in df.iterrows())
    atomic_write_text(run_dir / "claims.md", f"Seeds {', '.join(map(str, seeds))}: " + headline(summary(df)) + "\n\n" + head + body)
