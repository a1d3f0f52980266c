"""A paper's claims and their verdicts.

Each claim names the metric that tests it, a comparison and the profiles able to test it.
`evaluate` turns a run's metrics into a table with one of three verdicts. A claim whose metric is
missing (or not finite), or whose profile cannot test it, is "not run at this scale", never
"reproduced".
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
NOT_RUN = "not run at this scale"
COMPARISONS = ("at_least", "at_most", "within", "interval")


@dataclass(frozen=True)
class Claim:
    id: str
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
    note: str = ""

    def criterion(self) -> str:
        ref = _describe(self.value)
        if self.compare == "at_least":
            return f">= {ref}"
        if self.compare == "at_most":
            return f"<= {ref}"
        if self.compare == "interval":
            lo, hi = self.interval
            return f"in [{_describe(lo)}, {_describe(hi)}]"
        if self.rel_tolerance is not None:
            return f"= {ref} +- {self.rel_tolerance:g} rel"
        return f"= {ref} +- {_describe(self.tolerance)}"


def _describe(v) -> str:
    if isinstance(v, dict) and "metric" in v:
        return v["metric"]
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _as_claim(raw: dict, where: str) -> Claim:
    required = ("id", "statement", "paper_value", "source", "metric", "compare", "profiles")
    missing = [k for k in required if k not in raw]
    if missing:
        raise ValueError(f"{where}: claim {raw.get('id', '?')!r} lacks {', '.join(missing)}")
    if raw["compare"] not in COMPARISONS:
        raise ValueError(f"{where}: claim {raw['id']!r}: compare must be one of {COMPARISONS}")
    if raw["compare"] == "interval" and len(raw.get("interval") or ()) != 2:
        raise ValueError(f"{where}: claim {raw['id']!r}: interval needs [low, high]")
    if raw["compare"] in ("at_least", "at_most") and raw.get("value") is None:
        raise ValueError(f"{where}: claim {raw['id']!r}: {raw['compare']} needs a value")
    if raw["compare"] == "within" and (raw.get("value") is None or (raw.get("tolerance") is None) == (raw.get("rel_tolerance") is None)):
        raise ValueError(f"{where}: claim {raw['id']!r}: within needs a value and exactly one of tolerance, rel_tolerance")
    unknown = set(raw) - set(required) - {"value", "tolerance", "rel_tolerance", "interval", "note"}
    if unknown:  # a misspelt key would otherwise be silently ignored
        raise ValueError(f"{where}: claim {raw['id']!r}: unknown keys {', '.join(sorted(unknown))}")
    return Claim(
        id=str(raw["id"]), statement=str(raw["statement"]), paper_value=str(raw["paper_value"]), source=str(raw["source"]),
        metric=str(raw["metric"]), compare=raw["compare"], profiles=tuple(raw["profiles"]), value=raw.get("value"),
        tolerance=raw.get("tolerance"), rel_tolerance=raw.get("rel_tolerance"),
        interval=tuple(raw["interval"]) if raw.get("interval") else None, note=str(raw.get("note", "")),
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


def _number(x, metrics: dict):
    """A number, or the value of a metric named by a string or {"metric": name}; None if missing."""
    if isinstance(x, dict) and "metric" in x:
        x = x["metric"]
    if isinstance(x, str):
        x = metrics.get(x)
    if isinstance(x, bool):
        return float(x)
    if isinstance(x, (int, float)) and math.isfinite(x):
        return float(x)
    return None


def verdict(claim: Claim, metrics: dict, profile: str) -> tuple[str, float | None, str]:
    """(verdict, measured value, why) for one claim."""
    measured = _number(claim.metric, metrics)
    if profile not in claim.profiles:
        return NOT_RUN, measured, f"testable at {', '.join(claim.profiles)}"
    if measured is None:
        return NOT_RUN, None, f"metric {claim.metric!r} not measured"
    if claim.compare == "interval":
        lo, hi = (_number(b, metrics) for b in claim.interval)
        if lo is None or hi is None:
            return NOT_RUN, measured, "interval bound not measured"
        ok = lo <= measured <= hi
    else:
        ref = _number(claim.value, metrics)
        if ref is None:
            return NOT_RUN, measured, "reference value not measured"
        if claim.compare == "at_least":
            ok = measured >= ref
        elif claim.compare == "at_most":
            ok = measured <= ref
        else:
            tol = claim.rel_tolerance * abs(ref) if claim.rel_tolerance is not None else _number(claim.tolerance, metrics)
            if tol is None:
                return NOT_RUN, measured, "tolerance not measured"
            ok = abs(measured - ref) <= tol * (1 + 1e-9) + 1e-15  # slack for decimal round-off only
    return (REPRODUCED if ok else NOT_REPRODUCED), measured, ""


def evaluate(claims: list[Claim], metrics: dict, profile: str) -> pd.DataFrame:
    """One row per claim: id, statement, source, paper value, metric, measured, criterion, verdict."""
    rows = []
    for c in claims:
        v, measured, why = verdict(c, metrics, profile)
        rows.append({
            "id": c.id, "statement": c.statement, "source": c.source, "paper_value": c.paper_value,
            "metric": c.metric, "measured": measured, "criterion": c.criterion(), "verdict": v, "note": why,
        })
    return pd.DataFrame(rows, columns=["id", "statement", "source", "paper_value", "metric", "measured", "criterion", "verdict", "note"])


def summary(df: pd.DataFrame) -> dict:
    counts = df["verdict"].value_counts().to_dict() if len(df) else {}
    return {"total": int(len(df)), REPRODUCED: int(counts.get(REPRODUCED, 0)),
            NOT_REPRODUCED: int(counts.get(NOT_REPRODUCED, 0)), NOT_RUN: int(counts.get(NOT_RUN, 0))}


def _fmt(x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x).replace("|", "\\|").replace("\n", " ")


def to_markdown(df: pd.DataFrame, columns=("id", "statement", "source", "paper_value", "measured", "criterion", "verdict")) -> str:
    head = "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns) + "\n"
    body = "".join("| " + " | ".join(_fmt(row[c]) for c in columns) + " |\n" for _, row in df.iterrows())
    return head + body


def write_claims_table(df: pd.DataFrame, run_dir: str | Path) -> None:
    run_dir = Path(run_dir)
    atomic_write_text(run_dir / "claims.csv", df.to_csv(index=False))
    s = summary(df)
    text = f"{s[REPRODUCED]}/{s['total']} claims reproduced ({s[NOT_REPRODUCED]} not reproduced, {s[NOT_RUN]} not run at this scale)\n\n"
    atomic_write_text(run_dir / "claims.md", text + to_markdown(df))
