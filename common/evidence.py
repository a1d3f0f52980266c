"""The evidence at a glance: a forest plot per paper and a verdict-count chart for the report's first screen.

Every judged claim is drawn on one axis, normalised by its criterion so that claims of any unit share it:
the **margin** z of a value x is how far x lies inside the accepted region, in units of the criterion's
own scale, positive inside and negative outside:

| criterion | z(x) | scale |
|---|---|---|
| `at_least v` | (x - v) / s | s = abs(v), or the largest abs of the claim's values when v = 0 |
| `at_most v` | (v - x) / s | as above |
| `within v ± t` | (t - abs(x - v)) / t | t: 1 at v, 0 at the edge |
| `interval [a, b]` | (h - abs(x - c)) / h | c, h: the interval's centre and half-width |

A claim's row shows its measurement (dot) with its uncertainty (bar: the one-sided bounds the verdict was
judged with, mapped through z) and, below it, its control (hollow dot, same criterion). Its label says the
numbers in the claim's own units ("+0.30 vs >= 0; control +0.35"), so that a 0.1 pp effect is told from a
10 pp one and a point pinned at the clip or at 1 still says its value; where the criterion's reference is 0, so that
its scale is the largest value drawn, the label also gives that unit ("...; 1 unit = 0.35"). The axis says what z is
once, under the panels (`NORMALISATION`), wrapped to the figure's width. A claim that clears
its control by a wide margin has its dot far right of 0 and its control's bar far left of 0. Phenomena
and agreements (and identities, shown but never counted) are drawn in separate panels. Values beyond ±`CLIP` are drawn at the edge with an arrow.
"""
from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from pathlib import Path

from .claims import (AGREEMENT, IDENTITY, INCONCLUSIVE, NATURES, NOT_REPRODUCED, NOT_RUN, PHENOMENON, PROJECTION,
                     REPRODUCED, Claim, accepted_region, judge, pooled_metrics)

CLIP = 3.0
AXIS = "margin inside the criterion, in units of its scale (0: the edge; > 0 meets it)"
NORMALISATION = ("Axis: z = how far a value lies inside the criterion, in units of the criterion's scale: (x - v) / |v| for "
                 ">= v and (v - x) / |v| for <= v (when v = 0, the unit is the largest |value| of that row, and the row's "
                 "label gives it); (t - |x - v|) / t for = v ± t (1 at v, 0 at the edge); the same with the half-width for "
                 "an interval. Points beyond ±3 are drawn at the edge with an arrow. Each row's label gives the measurement "
                 "(a comparison's: the mean paired difference), the criterion and the control in the claim's own units.")
COLORS = {REPRODUCED: "#1b7837", NOT_REPRODUCED: "#b2182b", INCONCLUSIVE: "#b35806", NOT_RUN: "#9a9a9a"}


@dataclass(frozen=True)
class Mark:
    """One judged value on the normalised axis: the point and its interval (None when exact)."""
    z: float
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class Row:
    claim: str
    nature: str
    verdict: str
    metric: list[Mark]    # one per seed (or one pooled, for a comparison)
    control: list[Mark]
    label: str = ""       # the numbers in the claim's own units: "+0.3 vs >= 0; control -0.35"


def _decimals(text: str) -> int:
    """Decimals shown by a number's text ('0.3865' -> 4, '1e-05' -> 5, '12' -> 0)."""
    mantissa, _, exponent = text.lower().partition("e")
    shown = len(mantissa.partition(".")[2])
    return max(0, shown - int(exponent)) if exponent else shown


def resolution(region: tuple[float, float]) -> int | None:
    """The decimals a value needs beside a two-sided criterion so that its distance from the edge shows: one more
    than the half-width's first significant decimal (half-width 0.015 -> 3, 1e-05 -> 6); None when one-sided."""
    lo, hi = region
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return None
    return max(0, 1 - math.floor(math.log10((hi - lo) / 2)))


def _num(x: float, decimals: int | None = None, sign: bool = True) -> str:
    """A value to 3 significant digits, or to `decimals` where those show more (0 stays '0')."""
    if x == 0:
        return "0"
    text = f"{x:+.3g}" if sign else f"{x:.4g}"
    if decimals is not None and _decimals(text) < decimals:
        text = f"{x:+.{decimals}f}" if sign else f"{x:.{decimals}f}"
    return text


def short_criterion(c: Claim, metrics: dict, region: tuple[float, float]) -> str:
    """The criterion in the claim's own units, compactly: '>= 0', '<= 0.5', '= 1 ± 0.015', 'in [0.1, 0.2]'
    (a two-sided criterion's numbers to the decimals its width needs: '= 0.386490 ± 1e-05')."""
    lo, hi = region
    if c.compare == "at_least":
        return f">= {lo:.3g}"
    if c.compare == "at_most":
        return f"<= {hi:.3g}"
    d = resolution(region)
    if c.compare == "interval":
        return f"in [{_num(lo, d, sign=False)}, {_num(hi, d, sign=False)}]"
    return f"= {_num((lo + hi) / 2, d, sign=False)} ± {(hi - lo) / 2:.2g}"


def row_label(c: Claim, outcomes: list, region: tuple[float, float], metrics: dict, scale: float | None = None) -> str:
    """'+0.30 vs >= 0; control +0.35': the measurement (mean over the marks), the criterion and the control's value
    in the claim's own units (a comparison's values are mean paired differences). When the criterion's reference is 0
    its scale is read from the values drawn, so `scale` is stated too: '...; 1 unit = 0.35'."""
    ms = [o.measured for o in outcomes if o.measured is not None and math.isfinite(o.measured)]
    cs = [o.control.measured for o in outcomes if o.control is not None and o.control.measured is not None
          and math.isfinite(o.control.measured)]
    d = resolution(region)
    text = (_num(sum(ms) / len(ms), d) if ms else "not measured") + f" vs {short_criterion(c, metrics, region)}"
    text += f"; control {_num(sum(cs) / len(cs), d)}" if cs else ""
    lo, hi = region
    one_sided_at_zero = math.isinf(lo) != math.isinf(hi) and (hi if math.isinf(lo) else lo) == 0
    return text + (f"; 1 unit = {scale:.3g}" if scale is not None and one_sided_at_zero else "")


def margin(x: float, region: tuple[float, float], scale: float) -> float:
    """z(x): how far x lies inside `region`, in units of `scale` (see the module's table)."""
    lo, hi = region
    if math.isinf(lo) and math.isinf(hi):
        return math.inf
    if math.isinf(hi):
        return (x - lo) / scale
    if math.isinf(lo):
        return (hi - x) / scale
    c, h = (lo + hi) / 2, (hi - lo) / 2
    return (h - abs(x - c)) / h if h > 0 else (0.0 if x == c else -math.inf)


def criterion_scale(region: tuple[float, float], values: list[float]) -> float:
    """The `s` of a one-sided criterion: abs of its reference, else the largest abs of the values drawn."""
    lo, hi = region
    ref = hi if math.isinf(lo) else lo
    if math.isfinite(lo) and math.isfinite(hi):
        return (hi - lo) / 2 or 1.0
    if ref != 0:
        return abs(ref)
    return max([abs(v) for v in values if v is not None and math.isfinite(v)] + [1e-12])


def mark(x: float | None, low: float | None, high: float | None, region, scale: float) -> Mark | None:
    """The value and its bounds mapped through z; a two-sided region maps the interval to its worst and best z."""
    if x is None or not math.isfinite(x):
        return None
    z = margin(x, region, scale)
    if low is None or high is None:
        return Mark(z)
    ends = [margin(low, region, scale), margin(high, region, scale)]
    lo, hi = region
    inside_centre = math.isfinite(lo) and math.isfinite(hi) and low <= (lo + hi) / 2 <= high
    return Mark(z, min(ends), 1.0 if inside_centre else max(ends))


def rows(claims: list[Claim], per_seed: list[dict], profile: str) -> list[Row]:
    """The forest plot's rows: every claim judged at `profile` (not projections, not 'not run at this scale'),
    with one mark per seed's run (`per_seed`: each seed's metrics), or the pooled test for a comparison."""
    out = []
    for c in claims:
        if c.kind == "projection" or profile not in c.profiles:
            continue
        runs = [pooled_metrics(c, per_seed)] if c.kind == "comparison" and len(per_seed) > 1 else per_seed
        outcomes = [judge(c, m, profile) for m in runs]
        if all(o.verdict == NOT_RUN for o in outcomes):
            continue
        region = accepted_region(c, runs[0])
        if isinstance(region, str):
            continue
        values = [v for o in outcomes for v in (o.measured, o.control.measured if o.control else None) if v is not None]
        s = criterion_scale(region, values)
        metric = [m for o in outcomes if (m := mark(o.measured, o.ci_low, o.ci_high, region, s))]
        control = [m for o in outcomes if o.control and (m := mark(o.control.measured, o.control.ci_low, o.control.ci_high, region, s))]
        verdicts = {o.verdict for o in outcomes}
        out.append(Row(c.id, c.nature, verdicts.pop() if len(verdicts) == 1 else INCONCLUSIVE, metric, control,
                       row_label(c, outcomes, region, runs[0], s)))
    return out


def _clip(z: float) -> float:
    return max(-CLIP, min(CLIP, z))


def _draw_panel(ax, rows: list[Row], title: str, n_rows: int | None = None) -> None:
    """One panel's rows, top down; `n_rows` (the longest panel's) gives every panel the same row height, so a short
    panel's per-seed marks stay beside their label."""
    y = 0.0
    ticks, labels = [], []
    for r in rows:
        color = COLORS.get(r.verdict, "#555")
        for i, m in enumerate(r.metric):
            yy = y + 0.12 * (i - (len(r.metric) - 1) / 2) * 0.5
            if m.low is not None:
                ax.plot([_clip(m.low), _clip(m.high)], [yy, yy], color=color, lw=2)
            ax.plot(_clip(m.z), yy, "o", color=color, ms=5, zorder=3)
            if abs(m.z) > CLIP:
                ax.annotate("", xy=(math.copysign(CLIP, m.z), yy), xytext=(math.copysign(CLIP - 0.35, m.z), yy),
                            arrowprops=dict(arrowstyle="->", color=color))
        for i, m in enumerate(r.control):
            yy = y + 0.35 + 0.12 * (i - (len(r.control) - 1) / 2) * 0.5
            if m.low is not None:
                ax.plot([_clip(m.low), _clip(m.high)], [yy, yy], color="#555", lw=1.2)
            ax.plot(_clip(m.z), yy, "o", mfc="white", mec="#555", ms=5, zorder=3)
            if abs(m.z) > CLIP:
                ax.annotate("", xy=(math.copysign(CLIP, m.z), yy), xytext=(math.copysign(CLIP - 0.35, m.z), yy),
                            arrowprops=dict(arrowstyle="->", color="#555"))
        ticks.append(y + 0.17)
        labels.append(f"{r.claim}\n{r.label}" if r.label else r.claim)
        y += 1.0
    ax.axvspan(0, CLIP + 0.3, color="#1b7837", alpha=0.07)
    ax.axvline(0, color="#333", lw=1)
    ax.set_xlim(-CLIP - 0.3, CLIP + 0.3)
    ax.set_ylim(max(y, n_rows or 0) - 0.4, -0.6)
    ax.set_yticks(ticks, labels, fontsize=7)
    ax.set_xlabel(AXIS, fontsize=7)
    ax.set_title(title, fontsize=10)


def forest_figure(rows_: list[Row], paper: str, profile: str):
    """Two panels (phenomena, agreements): each claim's measurement (filled, coloured by verdict) and its
    control (hollow) with their intervals, on the criterion-normalised axis."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    groups = [(n, [r for r in rows_ if r.nature == n]) for n in (PHENOMENON, AGREEMENT, IDENTITY)] + \
        [("", [r for r in rows_ if r.nature not in NATURES])]
    groups = [(n, g) for n, g in groups if g]
    width = 7.0 * len(groups)
    note = textwrap.fill(NORMALISATION, width=int(width * 16))   # ~16 characters an inch at 7 pt
    note_in = 0.13 * (note.count("\n") + 1) + 0.1                # the footnote's height, inches
    height = max(2.8, 0.42 * max(len(g) for _, g in groups) + 1.8) + note_in
    fig, axes = plt.subplots(1, len(groups), figsize=(width, height), squeeze=False)
    names = {PHENOMENON: "phenomena and comparisons", AGREEMENT: "agreements", IDENTITY: "identities (shown, not counted)",
             "": "nature not declared"}
    for ax, (n, g) in zip(axes[0], groups):
        rep = sum(r.verdict == REPRODUCED for r in g)
        _draw_panel(ax, g, f"{paper} ({profile}): {names[n]}, {rep} of {len(g)} {'hold' if n == IDENTITY else 'reproduced'}",
                    max(len(g_) for _, g_ in groups))
    handles = [Line2D([], [], marker="o", ls="", color=COLORS[v], label=v) for v in (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE)]
    handles.append(Line2D([], [], marker="o", ls="", mfc="white", mec="#555", color="#555", label="control (same criterion)"))
    fig.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, note_in / height), ncol=4, fontsize=8,
               frameon=False)
    fig.text(0.5, 0.05 / height, note, ha="center", va="bottom", fontsize=7, color="#333")
    fig.tight_layout(rect=(0, (note_in + 0.3) / height, 1, 1))
    return fig


def verdict_figure(counts: list[tuple[str, dict]]):
    """The first screen's picture: per paper (and profile) a stacked bar of verdict counts for phenomena and
    for agreements. `counts`: (label, {nature: {verdict: n}})."""
    import matplotlib.pyplot as plt

    order = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_RUN)
    fig, axes = plt.subplots(1, 2, figsize=(11, 0.45 * len(counts) + 1.6), sharey=True, squeeze=False)
    for ax, nature, name in zip(axes[0], (PHENOMENON, AGREEMENT), ("phenomena and comparisons", "agreements")):
        for i, (label, by_nature) in enumerate(counts):
            left = 0
            for v in order:
                n = by_nature.get(nature, {}).get(v, 0)
                if n:
                    ax.barh(i, n, left=left, color=COLORS[v], label=v if i == 0 else None)
                    ax.text(left + n / 2, i, str(n), ha="center", va="center", color="white", fontsize=8)
                    left += n
        ax.set_yticks(range(len(counts)), [c[0] for c in counts])
        ax.invert_yaxis()
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("claims", fontsize=8)
    handles = [plt.Rectangle((0, 0), 1, 1, color=COLORS[v]) for v in order]
    fig.legend(handles, order, loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


def count_by_nature(table) -> dict:
    """{nature: {verdict: n}} of a claims table (projections left out)."""
    out: dict = {}
    for _, r in table.iterrows():
        if r.get("verdict") == PROJECTION:
            continue
        nature = r.get("nature") if r.get("nature") in NATURES else ""
        out.setdefault(nature, {}).setdefault(r["verdict"], 0)
        out[nature][r["verdict"]] += 1
    return out


def save(fig, path: Path) -> Path:
    """The figure as a PNG, written atomically; the figure closed."""
    import io

    import matplotlib.pyplot as plt

    from .io import atomic_write_bytes

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight", pad_inches=0.1)   # no label cut at an edge
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())
    return path
