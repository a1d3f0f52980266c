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
COMPARISONS = ("at_least", "at_most", "within", "interval")
KINDS = ("exact", "statistical", "comparison")
CONFIDENCE = 0.95  # one-sided; `within`/`interval` use the matching two-sided 90 % interval
NOT_MEASURED = "not measured"

_REQUIRED = ("id", "kind", "statement", "paper_value", "source", "metric", "compare", "profiles")
_OPTIONAL = ("value", "tolerance", "rel_tolerance", "interval", "se", "baseline", "when", "note")
COLUMNS = ["id", "kind", "statement", "source", "paper_value", "metric", "measured", "se", "ci_low", "ci_high", "n",
           "criterion", "verdict", "note"]


@dataclass(frozen=True)
class Claim:
    id: str
    kind: str
    statement: str
    paper_value: str
    source: str
    metric: str
    compare: str
    profiles: tuple[str, ...]
    value: Any = None  # number, or the name of another metric
    tolerance: Any = None  # number or {"metric": name}
    rel_tolerance: float | None = None
    interval: tuple | None = None
    se: Any = None  # statistical: number or metric name
    baseline: str | None = None  # comparison: metric holding B's per-seed values
    when: tuple = ()  # ((metric, value), ...): the run configuration the claim needs, e.g. dataset = imagenet
    note: str = ""

    def criterion(self, metrics: dict | None = None) -> str:
        """The criterion as numbers where `metrics` can resolve the names it refers to."""
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


def _as_claim(raw: dict, where: str) -> Claim:
    cid = raw.get("id", "?")
    missing = [k for k in _REQUIRED if k not in raw]
    if missing:
        raise ValueError(f"{where}: claim {cid!r} lacks {', '.join(missing)}")
    if raw["kind"] not in KINDS:
        raise ValueError(f"{where}: claim {cid!r}: kind must be one of {KINDS}")
    if raw["compare"] not in COMPARISONS:
        raise ValueError(f"{where}: claim {cid!r}: compare must be one of {COMPARISONS}")
    if raw["compare"] == "interval" and len(raw.get("interval") or ()) != 2:
        raise ValueError(f"{where}: claim {cid!r}: interval needs [low, high]")
    if raw["compare"] in ("at_least", "at_most") and raw.get("value") is None:
        raise ValueError(f"{where}: claim {cid!r}: {raw['compare']} needs a value")
    if raw["compare"] == "within" and (raw.get("value") is None or (raw.get("tolerance") is None) == (raw.get("rel_tolerance") is None)):
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
        source=str(raw["source"]), metric=str(raw["metric"]), compare=raw["compare"], profiles=tuple(raw["profiles"]),
        value=raw.get("value"), tolerance=raw.get("tolerance"), rel_tolerance=raw.get("rel_tolerance"),
        interval=tuple(raw["interval"]) if raw.get("interval") else None, se=raw.get("se"),
        baseline=raw.get("baseline"), when=tuple((raw.get("when") or {}).items()), note=str(raw.get("note", "")),
    )


def load_paper(path: str | Path) -> tuple[dict, list[Claim]]:
    """Read a `claims.yaml`: (paper metadata, claims)."""
    path = Path(path)
    doc = yaml.safe_load(path.read_text()) or {}
    claims = [_as_claim(c, str(path)) for c in doc.get("claims", [])]
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


def _accepted_region(claim: Claim, metrics: dict) -> tuple[float, float] | str:
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


def judge(claim: Claim, metrics: dict, profile: str) -> Outcome:
    """The verdict of one claim on one run's metrics, with the estimate and its uncertainty."""
    if claim.kind == "comparison":
        a = _series(claim.metric, metrics)
        b = _series(claim.baseline, metrics) if claim.baseline else None
        stats = None
        if a is not None and (claim.baseline is None or (b is not None and len(b) == len(a))):
            stats = paired(a, b)
        measured = stats["mean"] if stats else None
    else:
        stats, measured = None, _number(claim.metric, metrics)
    if profile not in claim.profiles:
        return Outcome(NOT_RUN, measured, note=f"testable at {', '.join(claim.profiles)}")
    if any(metrics.get(k) != v for k, v in claim.when):  # e.g. the full profile run on CIFAR, not ImageNet
        return Outcome(NOT_RUN, measured, note="testable when " + ", ".join(f"{k} = {v}" for k, v in claim.when))
    if measured is None:
        what = f"{claim.metric!r}" if claim.kind != "comparison" else f"per-seed {claim.metric!r}" + (f" paired with {claim.baseline!r}" if claim.baseline else "")
        return Outcome(NOT_REPRODUCED, note=f"{NOT_MEASURED}: {what}")
    region = _accepted_region(claim, metrics)
    if isinstance(region, str):
        return Outcome(NOT_REPRODUCED, measured, note=f"{NOT_MEASURED}: {region}")
    lo, hi = region
    if claim.kind == "exact":
        return Outcome(REPRODUCED if lo <= measured <= hi else NOT_REPRODUCED, measured)
    two_sided = math.isfinite(lo) and math.isfinite(hi)
    if claim.kind == "statistical":
        se = _number(claim.se, metrics)
        if se is None or se < 0:
            return Outcome(NOT_REPRODUCED, measured, note=f"{NOT_MEASURED}: standard error {claim.se!r}")
        q = _normal_quantile(CONFIDENCE)
        low, high = measured - q * se, measured + q * se
        return Outcome(_three_way(low, high, region), measured, se, low, high, None,
                       "90% interval" if two_sided else "one-sided 95% bound")
    if stats["se"] is None:
        return Outcome(INCONCLUSIVE, measured, n=stats["n"], note="one seed: no confidence interval")
    return Outcome(_three_way(stats["low"], stats["high"], region), measured, stats["se"], stats["low"], stats["high"],
                   stats["n"], f"paired over {stats['n']} seeds, Student t")


def verdict(claim: Claim, metrics: dict, profile: str) -> tuple[str, float | None, str]:
    """(verdict, measured value, why) for one claim."""
    o = judge(claim, metrics, profile)
    return o.verdict, o.measured, o.note


def evaluate(claims: list[Claim], metrics: dict, profile: str) -> pd.DataFrame:
    """One row per claim (columns `COLUMNS`): the estimate, its uncertainty, the criterion in numbers, the verdict."""
    rows = []
    for c in claims:
        o = judge(c, metrics, profile)
        note = "; ".join(x for x in (o.note, c.note) if x)
        rows.append({
            "id": c.id, "kind": c.kind, "statement": c.statement, "source": c.source, "paper_value": c.paper_value,
            "metric": c.metric, "measured": o.measured, "se": o.se, "ci_low": o.ci_low, "ci_high": o.ci_high,
            "n": o.n, "criterion": c.criterion(metrics), "verdict": o.verdict, "note": note,
        })
    return pd.DataFrame(rows, columns=COLUMNS)


def summary(df: pd.DataFrame) -> dict:
    counts = df["verdict"].value_counts().to_dict() if len(df) else {}
    return {"total": int(len(df)), **{v: int(counts.get(v, 0)) for v in VERDICTS}}


def headline(s: dict) -> str:
    """'3/5 claims reproduced (1 not reproduced, 1 inconclusive at this scale, 0 not run at this scale)'."""
    return (f"{s[REPRODUCED]}/{s['total']} claims reproduced ({s[NOT_REPRODUCED]} not reproduced, "
            f"{s[INCONCLUSIVE]} inconclusive at this scale, {s[NOT_RUN]} not run at this scale)")


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


def _fmt(x) -> str:
    if _missing(x):
        return "–"
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x).replace("|", "\\|").replace("\n", " ")


def to_markdown(df: pd.DataFrame, columns=("id", "kind", "statement", "source", "paper_value", "measured", "criterion", "verdict")) -> str:
    head = "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns) + "\n"
    body = "".join("| " + " | ".join(_fmt(format_measured(row)) if c == "measured" else _fmt(row[c]) for c in columns) + " |\n"
                   for _, row in df.iterrows())
    return head + body


def write_claims_table(df: pd.DataFrame, run_dir: str | Path) -> None:
    run_dir = Path(run_dir)
    atomic_write_text(run_dir / "claims.csv", df.to_csv(index=False))
    atomic_write_text(run_dir / "claims.md", headline(summary(df)) + "\n\n" + to_markdown(df))


def read_claims_table(path: str | Path) -> pd.DataFrame:
    """A `claims.csv` back as a frame with None for missing numbers."""
    df = pd.read_csv(path, keep_default_na=False, na_values=[""])
    for c in ("measured", "se", "ci_low", "ci_high", "n"):
        if c in df:
            df[c] = df[c].astype(object).where(df[c].notna(), None)
    return df


def combine_seeds(tables: dict[int, pd.DataFrame]) -> pd.DataFrame:
    """One row per claim over several seeds: each seed's verdict and estimate, and an overall verdict.

    Overall: the common verdict when every seed agrees; otherwise inconclusive at this scale, with
    the per-seed verdicts in the note (a claim that flips between seeds is not reproduced as stable).
    """
    seeds = sorted(tables)
    first = tables[seeds[0]]
    rows = []
    for i, base in first.iterrows():
        row = {k: base[k] for k in ("id", "kind", "statement", "source", "paper_value", "metric", "criterion")}
        verdicts = []
        for s in seeds:
            r = tables[s].iloc[i]
            row[f"verdict_seed_{s}"] = r["verdict"]
            row[f"measured_seed_{s}"] = format_measured(r)
            verdicts.append(r["verdict"])
        if len(set(verdicts)) == 1:
            row["verdict"], row["note"] = verdicts[0], f"same verdict at seeds {', '.join(map(str, seeds))}"
        else:
            row["verdict"] = INCONCLUSIVE
            row["note"] = "verdict differs between seeds: " + ", ".join(f"seed {s}: {v}" for s, v in zip(seeds, verdicts))
        rows.append(row)
    return pd.DataFrame(rows)


def write_seed_table(df: pd.DataFrame, seeds: list[int], run_dir: str | Path) -> None:
    """`claims.csv` (overall) and `claims.md` with a column per seed."""
    run_dir = Path(run_dir)
    atomic_write_text(run_dir / "claims.csv", df.to_csv(index=False))
    cols = ["id", "kind", "statement", "criterion"] + [f"measured_seed_{s}" for s in seeds] + [f"verdict_seed_{s}" for s in seeds] + ["verdict"]
    head = "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n"
    body = "".join("| " + " | ".join(_fmt(row[c]) for c in cols) + " |\n" for _, row in df.iterrows())
    atomic_write_text(run_dir / "claims.md", f"Seeds {', '.join(map(str, seeds))}: " + headline(summary(df)) + "\n\n" + head + body)
