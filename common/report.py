"""The reproduction report: `results/REPORT.md` and `results/report.html`.

One report covers every profile that has a complete run (`results/<id>/<profile>/claims.csv`):
a first screen with every paper and profile at a glance (verdict counts, seeds, wall time, links),
then per paper and profile the claims (statement, what the paper states and where, the criterion in
numbers, the measurement with its uncertainty, the verdict and why), the figures with their
captions and the claims they support, and the provenance (parameters, the command that reruns it,
git, device, links to the manifest and the executed notebooks). Built from complete run folders
alone: a failed or interrupted run (`<profile>-failed/`) never enters it, it is only flagged.
"""
from __future__ import annotations

import argparse
import html
import math
import shlex
from pathlib import Path

import yaml

from . import paths
from . import evidence
from . import report_findings
from .claims import (AGREEMENT, IDENTITY, INCONCLUSIVE, NOT_MEASURED, NOT_REPRODUCED, NOT_RUN, PHENOMENON, PROJECTION, REPRODUCED,
                     UNCONTROLLED, VERDICTS, format_control, format_measured, headline, load_paper, read_claims_table,
                     reproduced_of, split_by_nature, summary)
from .errors import UserError, user_errors_exit
from .io import atomic_write_text, read_json, sha256_file
from .profiles import PROFILE_NAMES
from .runner.params import param_text
from .runner.registry import papers as registered_papers
from .stamp import stamp, staleness

VERDICT_COLOR = {REPRODUCED: "#1b7837", NOT_REPRODUCED: "#b2182b", INCONCLUSIVE: "#b35806", NOT_RUN: "#6b6b6b",
                 PROJECTION: "#3f5f8f"}
VERDICT_MEANING = {
    REPRODUCED: "the measurement (with its uncertainty) meets the criterion",
    NOT_REPRODUCED: "the measurement misses the criterion beyond its uncertainty, or was not measured",
    INCONCLUSIVE: "the uncertainty straddles the criterion: more samples or seeds would decide",
    NOT_RUN: "this profile is too small to test the claim; a larger profile lists it",
    PROJECTION: "a number computed from assumed inputs: shown with them, never judged, never counted as reproduced",
}
EVIDENCE_MEANING = ("Each claim's measurement (filled dot, coloured by verdict; bar: the bounds it was judged with) and its "
                    "control (hollow dot), on one axis normalised by the claim's criterion: 0 is the criterion's edge, "
                    "right of 0 meets it (1 is a `within` claim's centre; one-sided criteria are in units of their reference, "
                    "or, when the reference is 0, of the row's largest value, which the row's label gives as '1 unit'). "
                    "Each row's label gives the measurement (a comparison's: the mean paired difference), the criterion and "
                    "the control in the claim's own units. A strong claim sits right of 0 with its control left of 0.")
CONTROL_MEANING = ("Every claim is measured again, in the same run, on a named null (a model that learned nothing, data "
                   "without the structure, a broken mechanism, or the competitor); a claim is reproduced only when its "
                   "control, judged by the same criterion, is not: a control that passes too makes it inconclusive.")


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def text(x) -> str:
    """A cell as text: '' for a missing value (never 'nan'), numbers to 4 significant digits."""
    if _missing(x):
        return ""
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)


def _complete(d: Path) -> bool:
    return (d / "claims.csv").exists() and (read_json(d / "manifest.json", default={}) or {}).get("status", "ok") == "ok"


def profiles_with_runs() -> list[str]:
    return [p for p in PROFILE_NAMES if any(_complete(paths.run_dir(paper, p)) for paper in registered_papers())]


def _entry(paper: str, meta: dict, profile: str) -> dict:
    d = paths.run_dir(paper, profile)
    entry = {"paper": paper, "meta": meta, "profile": profile, "dir": d if _complete(d) else None}
    failed = d.with_name(f"{profile}-failed")
    if not entry["dir"]:
        entry["failed"] = failed if failed.is_dir() else None
        return entry
    table = read_claims_table(d / "claims.csv")
    top = read_json(d / "manifest.json", default={}) or {}
    runs = [d / r for r in top.get("runs", [])] or [d]
    first = runs[0]
    manifest = read_json(first / "manifest.json", default={}) or {}
    if first != d:  # a --seeds run: provenance of its first seed, seeds and wall time of the whole
        manifest = dict(manifest, seeds=top.get("seeds"), wall_s=top.get("wall_s"),
                        runner=dict(manifest.get("runner", {}), command=top.get("runner", {}).get("command")))
    # a failed attempt newer than the complete run is flagged, never shown as the result
    newer_failure = failed if (failed / "manifest.json").exists() and \
        (failed / "manifest.json").stat().st_mtime_ns > (d / "manifest.json").stat().st_mtime_ns else None
    captions = read_json(first / "figures.json", default={}) or {}
    figures = [{"path": f, "caption": captions.get(f.stem, {}).get("caption", ""),
                "claims": list(captions.get(f.stem, {}).get("claims", []))} for f in sorted((first / "figures").glob("*.png"))]
    claims_sha = top.get("claims_sha256") or manifest.get("claims_sha256")
    entry.update(table=table, summary=summary(table), manifest=manifest, runs=runs, figures=figures, evidence=None,
                 notebooks=sorted((first / "notebooks").glob("*.ipynb")), failed=newer_failure,
                 claims_changed=_claims_changed(paper, claims_sha),
                 stale=staleness(dict(manifest, claims_sha256=claims_sha, profile=profile), paper))
    return entry


def _claims_changed(paper: str, recorded: str | None) -> bool:
    """The paper's claims file differs from the one the run's verdicts were judged with (runs that
    recorded no hash, from before it was recorded, are not flagged)."""
    path = paths.PAPERS / paper / "claims.yaml"
    return bool(recorded) and path.exists() and sha256_file(path) != recorded


def collect(profiles: list[str] | str | None = None) -> list[dict]:
    """Per registered paper and profile: metadata, run dir (None when there is no complete run), claims, manifest, figures.

    `profiles=None`: every profile that has a complete run of some paper.
    """
    if isinstance(profiles, str):
        profiles = [profiles]
    profiles = profiles_with_runs() if profiles is None else list(profiles)
    out = []
    for paper in registered_papers():
        try:
            meta, _ = load_paper(paths.PAPERS / paper / "claims.yaml")
        except (ValueError, OSError, yaml.YAMLError) as err:  # a paper being edited must not take the others' report down
            meta = {"title": f"(claims.yaml unreadable: {str(err).splitlines()[0]})"}
        out += [_entry(paper, meta, p) for p in profiles]
    return out


def _split(entries: list[dict]) -> tuple[list[dict], list[str]]:
    """Entries of papers with a complete run at some reported profile, and the papers with none (listed once)."""
    ran = {e["paper"] for e in entries if e["dir"]}
    return [e for e in entries if e["paper"] in ran], sorted({e["paper"] for e in entries} - ran)


def _seeds(table) -> list[str]:
    return [c[len("verdict_seed_"):] for c in table.columns if c.startswith("verdict_seed_")]


def _wall(m: dict) -> str:
    w = m.get("wall_s")
    if _missing(w) or not isinstance(w, (int, float)):
        return "not recorded"
    return f"{w / 60:.1f} min" if w >= 120 else f"{w:.0f} s"


def _anchor(*parts: str) -> str:
    return "-".join(str(p).replace(" ", "-") for p in parts)


def make_command(e: dict) -> str:
    """The make command that reruns this paper at this profile with the recorded parameters."""
    m = e["manifest"]
    runner = m.get("runner", {})
    params = {k: v for k, v in (runner.get("parameters") or {}).items() if not (m.get("seeds") and k == "seed")}
    cmd = f"make reproduce-{e['paper']} PROFILE={e['profile']}"
    if params:
        cmd += " P=" + shlex.quote(" ".join(f"{k}={param_text(v)}" for k, v in params.items()))
    if runner.get("device"):
        cmd += f" DEVICE={runner['device']}"
    if m.get("seeds"):
        cmd += " SEEDS=" + shlex.quote(" ".join(map(str, m["seeds"])))
    return cmd


def _provenance(e: dict) -> list[tuple[str, str]]:
    m = e["manifest"]
    git, dev, ver = m.get("git", {}) or {}, m.get("device", {}) or {}, m.get("versions", {}) or {}
    runner = m.get("runner", {}) or {}
    rows = [
        ("rerun", make_command(e)),
        ("same, without make", runner.get("command") or "not recorded"),
        ("parameters", ", ".join(f"{k}={v}" for k, v in sorted((m.get("parameters") or {}).items())) or "profile defaults"),
        ("seed(s)", ", ".join(map(str, m["seeds"])) if m.get("seeds") else text(m.get("seed")) or "not recorded"),
        ("wall time", f"{_wall(m)}; started {m.get('started', 'not recorded')}, finished {m.get('finished', 'not recorded')}"),
        ("git", f"{str(git.get('sha') or 'not recorded')[:12]}{' (uncommitted changes)' if git.get('dirty') else ''}"),
        ("device", f"{dev.get('backend', 'not recorded')} ({dev.get('name', '')}, {dev.get('threads', '?')} threads)"),
        ("versions", ", ".join(f"{k} {ver[k]}" for k in ("python", "torch", "numpy", "pandas", "scipy") if k in ver) or "not recorded"),
    ]
    for i in m.get("inputs", []):
        rows.append(("input", f"{i['path']} (sha256 {str(i.get('sha256'))[:16]}…, {i.get('bytes', '?')} bytes)"))
    return rows


def _rel(p: Path) -> str:
    return p.relative_to(paths.results_root()).as_posix()


def _counts(s: dict) -> str:
    split = split_by_nature(s)
    held, ids = s.get(IDENTITY, (0, 0))
    return (", ".join(f"{s[v]} {v}" for v in VERDICTS) + (f" ({REPRODUCED}: {split})" if split else "")
            + (f"; {ids} identit{'ies' if ids != 1 else 'y'} shown apart ({held} hold)" if ids else ""))


# -- Markdown ------------------------------------------------------------------------------------

def _md(x) -> str:
    return text(x).replace("|", "\\|").replace("\n", " ")


def _claim_rows_md(table) -> list[str]:
    seeds = _seeds(table)
    pooled = "pooled" in table
    head = (["claim", "paper states (source)", "criterion"] + ([f"seed {k}" for k in seeds] or ["measured"]) + ["control"]
            + (["pooled over seeds"] if pooled else []) + ["verdict", "why"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for _, r in table.iterrows():
        measured = [f"{_md(r[f'measured_seed_{k}'])}: {_md(r[f'verdict_seed_{k}'])}" for k in seeds] or [_md(format_measured(r))]
        lines.append("| " + " | ".join([f"**{_md(r['id'])}** ({_md(r['kind'])}): {_md(r['statement'])}",
                                        f"{_md(r['paper_value'])} ({_md(r['source'])})", _md(r["criterion"]), *measured,
                                        _md(_control_text(r, seeds)), *([_md(r.get("pooled"))] if pooled else []),
                                        f"**{_md(r['verdict'])}**", _md(_why(r))]) + " |")
    return lines


def _why(r) -> str:
    """The verdict's note, then what would decide an inconclusive claim."""
    note, decide = text(r.get("note")), text(r.get("decide"))
    return "; ".join(x for x in (note, f"what would decide it: {decide}" if decide else "") if x)


def _control_text(r, seeds: list[str]) -> str:
    """The control: what the null is, then its value and verdict (per seed for a --seeds run)."""
    if not seeds:
        return format_control(r)
    what = text(r.get("control_is"))
    if text(r.get("control_verdict")) == UNCONTROLLED:
        return f"{UNCONTROLLED}: {what}"
    per = "; ".join(f"seed {k}: {text(r.get(f'control_seed_{k}')).split(' (')[0]}" for k in seeds if text(r.get(f"control_seed_{k}")))
    pooled = text(r.get("pooled_control")).split(" (")[0]
    return f"{what}: {per}" + (f"; pooled: {pooled}" if pooled else "") if per else what


def render_markdown(entries: list[dict]) -> str:
    profiles = sorted({e["profile"] for e in entries}, key=PROFILE_NAMES.index)
    entries, pending = _split(entries)
    parts = [f"# Reproduction report ({', '.join(profiles)})", "",
             "| paper | profile | reproduced | phenomena | agreements | not reproduced | inconclusive | not run at this scale | projections | uncontrolled | seeds | wall time |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for e in entries:
        if not e["dir"]:
            parts.append(f"| {e['paper']} | {e['profile']} | no complete run: `make reproduce-{e['paper']} PROFILE={e['profile']}` | | | | | | | | | |")
            continue
        s, m = e["summary"], e["manifest"]
        parts.append(f"| [{e['paper']}](#{_anchor(e['paper'], e['profile'])}) | {e['profile']} | {s[REPRODUCED]}/{s['total']} | "
                     f"{reproduced_of(s, PHENOMENON)} | {reproduced_of(s, AGREEMENT)} | {s[NOT_REPRODUCED]} | {s[INCONCLUSIVE]} | {s[NOT_RUN]} | {s[PROJECTION]} | {s[UNCONTROLLED]} | "
                     f"{', '.join(map(str, m['seeds'])) if m.get('seeds') else text(m.get('seed'))} | {_wall(m)} |")
    if pending:
        parts += ["", f"No complete {'/'.join(profiles)} run yet: {', '.join(pending)} (`make reproduce-<id> PROFILE=...`)."]
    if (root_fig := paths.results_root() / "evidence" / "verdicts.png").exists():
        parts += ["", f"![verdicts by paper, phenomena and agreements apart]({_rel(root_fig)})"]
    parts += ["", "Verdicts: " + "; ".join(f"**{v}**: {VERDICT_MEANING[v]}" for v in VERDICT_MEANING) + ".", "",
              f"Controls: {CONTROL_MEANING}"]
    for e in entries:
        title = e["meta"].get("title", e["paper"])
        parts += ["", f"## {e['paper']} ({e['profile']}): {title}", f"<a id='{_anchor(e['paper'], e['profile'])}'></a>", ""]
        if e["meta"].get("url"):
            parts += [f"Paper: {e['meta'].get('authors', '')} {e['meta']['url']}".replace("  ", " "), ""]
        if not e["dir"]:
            parts.append(f"No complete {e['profile']} run yet: `make reproduce-{e['paper']} PROFILE={e['profile']}`.")
            continue
        seeds = e["manifest"].get("seeds")
        parts += [f"{e['paper']}: {headline(e['summary'])}" + (f" over seeds {', '.join(map(str, seeds))}" if seeds else ""), ""]
        if e.get("failed"):
            parts += [f"Note: a later attempt failed or was interrupted ({_rel(e['failed'])}/); this is the last complete run.", ""]
        parts += [f"Run: {stamp(e['manifest'])}.", ""] + [f"**Stale:** {why}." for why in e["stale"]] + ([""] if e["stale"] else [])
        parts += _claim_rows_md(e["table"])
        if e.get("evidence"):
            parts += ["", f"![evidence: {e['paper']} ({e['profile']})]({_rel(e['evidence'])})", "", f"*Evidence*: {EVIDENCE_MEANING}"]
        if found := report_findings.paper_findings(e["paper"]):
            parts += ["", "### Findings", "", f"*{report_findings.MEANING}*"]
            for block in found:
                parts += [""] + report_findings.quoted(block)
        parts += ["", "### Figures", ""]
        for f in e["figures"]:
            parts.append(f"![{f['path'].stem}]({_rel(f['path'])})")
            parts.append(f"*{f['path'].stem}*: {f['caption'] or 'no caption recorded'}"
                         + (f" Supports: {', '.join(f['claims'])}." if f["claims"] else ""))
            parts.append("")
        parts += ["### Provenance", ""] + [f"- {k}: `{v}`" if k.startswith(("rerun", "same")) else f"- {k}: {v}"
                                           for k, v in _provenance(e)]
        parts.append(f"- files: [manifest.json]({_rel(e['dir'])}/manifest.json), [claims.csv]({_rel(e['dir'])}/claims.csv), "
                     + ", ".join(f"[{nb.name}]({_rel(nb)})" for nb in e["notebooks"]))
    return "\n".join(parts) + "\n"


# -- HTML ----------------------------------------------------------------------------------------

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1200px;margin:1.5em auto;padding:0 1em;color:#222;line-height:1.4}
h1{margin-bottom:.2em}h2{margin-top:2em;border-bottom:2px solid #ddd}h3{margin-top:1.5em}
table{border-collapse:collapse;font-size:14px;margin:.5em 0}td,th{border:1px solid #ccc;padding:4px 7px;vertical-align:top;text-align:left}
th{background:#f3f3f3}td.n{text-align:right;font-variant-numeric:tabular-nums}
.v{display:inline-block;padding:1px 7px;border-radius:4px;color:#fff;font-weight:600;white-space:nowrap;font-size:13px}
.zero{color:#bbb}.small{color:#555;font-size:12.5px}.warn{background:#fff3cd;padding:6px 10px;border-left:4px solid #b35806}
code{background:#f5f5f5;padding:1px 4px;border-radius:3px;font-size:13px}
figure{margin:1.2em 0;max-width:900px}figure img{max-width:100%;border:1px solid #eee}figcaption{font-size:14px;color:#333}
.broken{outline:3px solid #b2182b}dl.prov{display:grid;grid-template-columns:max-content auto;gap:2px 12px;font-size:14px}
dl.prov dt{font-weight:600}dl.prov dd{margin:0}
blockquote.finding{margin:.6em 0;padding:2px 12px;border-left:4px solid #3f5f8f;background:#f6f8fb}
"""

# Marks an image that failed to load, and records "<loaded>/<total>" on <html data-images> and the first table's right
# edge in px on <html data-first-table-right> (both read by the tests).
SCRIPT = """
<script>
window.addEventListener('load', function () {
  var imgs = document.querySelectorAll('img'), ok = 0;
  imgs.forEach(function (im) {
    if (im.complete && im.naturalWidth > 0) { ok++; }
    else { im.classList.add('broken'); im.insertAdjacentHTML('afterend', '<p class="warn">image missing: ' + im.getAttribute('src') + '</p>'); }
  });
  document.documentElement.setAttribute('data-images', ok + '/' + imgs.length);
  var first = document.querySelector('table');
  if (first) { document.documentElement.setAttribute('data-first-table-right', Math.ceil(first.getBoundingClientRect().right)); }
});
</script>
"""


def _badge(verdict: str, short: bool = False) -> str:
    """A verdict as a coloured label (`short`: its first word, for narrow column heads; the full name on hover)."""
    color = VERDICT_COLOR.get(verdict)
    if not color:
        return html.escape(text(verdict))
    label = verdict.replace(" at this scale", "") if short else verdict
    return (f"<span class='v' style='background:{color}' title='{html.escape(verdict)}: {html.escape(VERDICT_MEANING[verdict])}'>"
            f"{html.escape(label)}</span>")


def _count_cell(n: int, verdict: str) -> str:
    style = f" style='color:{VERDICT_COLOR[verdict]};font-weight:600'" if n else " class='zero'"
    return f"<td class='n'><span{style}>{n}</span></td>"


def _overview_html(entries: list[dict]) -> list[str]:
    """The first table: one row per paper and profile, narrow enough for a 1400 px screen (the verdicts' counts,
    the reproduced ones split by nature in one cell, the claims shown apart in another; when a run finished is
    in its section)."""
    esc = html.escape
    out = ["<table class='overview'><tr><th>paper</th><th>profile</th>"
           + "".join(f"<th>{_badge(v, short=True)}</th>" for v in VERDICTS)
           + "<th>reproduced of counted</th><th>shown apart</th><th>seeds</th><th>wall time</th></tr>"]
    for e in entries:
        name = f"<a href='#{_anchor(e['paper'], e['profile'])}'>{esc(e['paper'])}</a>"
        title = f"<br><span class='small'>{esc(e['meta'].get('title', ''))}</span>"
        if not e["dir"]:
            out.append(f"<tr><td>{name}{title}</td><td>{esc(e['profile'])}</td><td colspan='8' class='small'>no complete run: "
                       f"<code>make reproduce-{esc(e['paper'])} PROFILE={esc(e['profile'])}</code></td></tr>")
            continue
        s, m = e["summary"], e["manifest"]
        seeds = ", ".join(map(str, m["seeds"])) if m.get("seeds") else text(m.get("seed"))
        flag = " <span class='small'>(a later attempt failed)</span>" if e.get("failed") else ""
        flag += " <span class='small'>(stale: see below)</span>" if e.get("stale") else ""
        held, ids = s.get(IDENTITY, (0, 0))
        apart = [f"{ids} identit{'ies' if ids != 1 else 'y'} ({held} hold)" if ids else "",
                 f"{s[PROJECTION]} projection{'s' * (s[PROJECTION] != 1)}" if s[PROJECTION] else "",
                 f"{s[UNCONTROLLED]} uncontrolled" if s[UNCONTROLLED] else ""]
        out.append(f"<tr><td>{name}{title}</td><td>{esc(e['profile'])}{flag}</td>" + "".join(_count_cell(s[v], v) for v in VERDICTS)
                   + f"<td class='n'>{s[REPRODUCED]}/{s['total']}<br><span class='small'>phenomena {reproduced_of(s, PHENOMENON)}, "
                   f"agreements {reproduced_of(s, AGREEMENT)}</span></td>"
                   f"<td class='small'>{esc(', '.join(a for a in apart if a)) or '–'}</td>"
                   f"<td>{esc(seeds)}</td><td>{esc(_wall(m))}</td></tr>")
    out.append("</table>")
    if (fig := paths.results_root() / "evidence" / "verdicts.png").exists():
        out.append(f"<figure><img src='{html.escape(_rel(fig))}' alt='verdicts by paper, phenomena and agreements apart' "
                   "loading='eager'><figcaption>Verdicts per paper: phenomena and comparisons (what the paper discovered; "
                   "controls remove what it credits) apart from agreements (two computations that should match; controls "
                   "are near misses).</figcaption></figure>")
    out.append("<p class='small'>" + "<br>".join(f"{_badge(v)} {html.escape(VERDICT_MEANING[v])}" for v in VERDICT_MEANING)
               + f"<br>{html.escape(CONTROL_MEANING)}</p>")
    return out


def _claims_html(e: dict) -> list[str]:
    esc = html.escape
    table = e["table"]
    seeds = _seeds(table)
    pooled = "pooled" in table
    heads = (["claim", "the paper states", "criterion tested here"] + ([f"seed {k}" for k in seeds] or ["measured"])
             + ["control (the same measurement on a null)"] + (["pooled over seeds"] if pooled else []) + ["verdict"])
    out = ["<table><tr>" + "".join(f"<th>{h}</th>" for h in heads) + "</tr>"]
    for _, r in table.iterrows():
        cid = text(r["id"])
        claim = (f"<td id='{_anchor(e['paper'], e['profile'], cid)}'>{esc(text(r['statement']))}<br>"
                 f"<span class='small'><code>{esc(cid)}</code> · {esc(text(r['kind']))}</span></td>")
        paper = f"<td>{esc(text(r['paper_value']))}<br><span class='small'>{esc(text(r['source']))}</span></td>"
        if seeds:
            measured = "".join(f"<td>{esc(text(r[f'measured_seed_{k}']) or NOT_MEASURED)}<br>{_badge(text(r[f'verdict_seed_{k}']))}</td>"
                               for k in seeds)
        else:
            measured = f"<td>{esc(format_measured(r))}</td>"
        note = text(r.get("note"))
        decide = text(r.get("decide"))
        note = note + (f"; what would decide it: {decide}" if note and decide else decide and f"what would decide it: {decide}")
        control = f"<td>{esc(_control_text(r, seeds))}<br>{_badge(text(r.get('control_verdict')))}</td>"
        measured += control + (f"<td>{esc(text(r.get('pooled')))}</td>" if pooled else "")
        out.append(f"<tr>{claim}{paper}<td>{esc(text(r['criterion']))}</td>{measured}"
                   f"<td>{_badge(text(r['verdict']))}{'<br><span class=small>' + esc(note) + '</span>' if note else ''}</td></tr>")
    out.append("</table>")
    return out


def render_html(entries: list[dict]) -> str:
    esc = html.escape
    profiles = sorted({e["profile"] for e in entries}, key=PROFILE_NAMES.index)
    title = f"Reproduction report ({', '.join(profiles)})"
    entries, pending = _split(entries)
    out = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{esc(title)}</title><style>{CSS}</style></head><body>",
           f"<h1>{esc(title)}</h1>"]
    out += _overview_html(entries)
    if pending:
        out.append(f"<p>No complete {esc('/'.join(profiles))} run yet: {esc(', '.join(pending))} "
                   f"(<code>make reproduce-&lt;id&gt; PROFILE=...</code>).</p>")
    for e in entries:
        a = _anchor(e["paper"], e["profile"])
        meta = e["meta"]
        out.append(f"<h2 id='{a}'>{esc(e['paper'])} · {esc(e['profile'])}: {esc(meta.get('title', ''))}</h2>")
        if meta.get("url"):
            out.append(f"<p>{esc(meta.get('authors', ''))} <a href='{esc(meta['url'])}'>{esc(meta['url'])}</a></p>")
        if not e["dir"]:
            out.append(f"<p>No complete {esc(e['profile'])} run yet: <code>make reproduce-{esc(e['paper'])} PROFILE={esc(e['profile'])}</code></p>")
            continue
        seeds = e["manifest"].get("seeds")
        out.append(f"<p><b>{esc(headline(e['summary']))}</b>{esc(f' over seeds {chr(44).join(map(str, seeds))}') if seeds else ''}</p>")
        if e.get("failed"):
            out.append(f"<p class='warn'>A later attempt failed or was interrupted (<a href='{esc(_rel(e['failed']))}/manifest.json'>"
                       f"{esc(_rel(e['failed']))}/</a>); this is the last complete run.</p>")
        out.append(f"<p class='small'>Run: {esc(stamp(e['manifest']))}.</p>")
        out += [f"<p class='warn'><b>Stale:</b> {esc(why)}.</p>" for why in e["stale"]]
        out += _claims_html(e)
        if e.get("evidence"):
            out.append(f"<figure><img src='{esc(_rel(e['evidence']))}' alt='evidence: {esc(e['paper'])}' loading='eager'>"
                       f"<figcaption><b>Evidence</b>. {esc(EVIDENCE_MEANING)}</figcaption></figure>")
        if found := report_findings.paper_findings(e["paper"]):
            out.append(f"<h3>Findings</h3><p class='small'>{esc(report_findings.MEANING)}</p>")
            out += [f"<blockquote class='finding'>{report_findings.to_html(block)}</blockquote>" for block in found]
        if e["figures"]:
            out.append("<h3>Figures</h3>")
        for f in e["figures"]:
            rel = _rel(f["path"])
            supports = ", ".join(f"<a href='#{_anchor(e['paper'], e['profile'], c)}'>{esc(c)}</a>" for c in f["claims"])
            out.append(f"<figure id='{_anchor(a, 'fig', f['path'].stem)}'><img src='{esc(rel)}' alt='{esc(f['caption'] or f['path'].stem)}' loading='eager'>"
                       f"<figcaption><b>{esc(f['path'].stem)}</b>. {esc(f['caption'] or '')}"
                       + (f" <span class='small'>Supports: {supports}.</span>" if supports else "") + "</figcaption></figure>")
        out.append("<h3>Provenance</h3><dl class='prov'>")
        for k, v in _provenance(e):
            out.append(f"<dt>{esc(k)}</dt><dd>{'<code>' + esc(v) + '</code>' if k.startswith(('rerun', 'same')) else esc(v)}</dd>")
        links = [f"<a href='{esc(_rel(e['dir']))}/manifest.json'>manifest.json</a>", f"<a href='{esc(_rel(e['dir']))}/claims.csv'>claims.csv</a>"]
        links += [f"<a href='{esc(_rel(nb))}'>{esc(nb.name)}</a>" for nb in e["notebooks"]]
        out.append(f"<dt>files</dt><dd>{' · '.join(links)}</dd></dl>")
    out.append(SCRIPT + "</body></html>")
    return "\n".join(out)


def draw_evidence(entries: list[dict], root: Path) -> None:
    """`evidence/<paper>-<profile>.png` (the forest plot of each complete run's claims, judged again from its
    metrics with the claims file the run was judged with when unchanged, else today's) and
    `evidence/verdicts.png` (the first screen's counts); sets `entry["evidence"]` and returns nothing."""
    counts = []
    for e in entries:
        if not e["dir"]:
            continue
        counts.append((f"{e['paper']} ({e['profile']})", evidence.count_by_nature(e["table"])))
        try:
            _, claims = load_paper(paths.PAPERS / e["paper"] / "claims.yaml")
        except (ValueError, OSError, yaml.YAMLError):
            continue
        metrics = [read_json(r / "metrics.json", default={}) or {} for r in e["runs"]]
        rows = evidence.rows(claims, metrics, e["profile"])
        if rows:
            e["evidence"] = evidence.save(evidence.forest_figure(rows, e["paper"], e["profile"]),
                                          root / "evidence" / f"{e['paper']}-{e['profile']}.png")
    if counts:
        evidence.save(evidence.verdict_figure(counts), root / "evidence" / "verdicts.png")


def build(profile: str | list[str] | None = None) -> tuple[Path, Path, list[dict]]:
    """Write `REPORT.md` and `report.html` for `profile` (a name, a list, or None: every profile with runs)."""
    wanted = [profile] if isinstance(profile, str) else profile
    for p in wanted or []:
        if p not in PROFILE_NAMES:
            raise UserError(f"unknown profile {p!r}; choose one of {', '.join(PROFILE_NAMES)}")
    root = paths.results_root()
    entries = collect(wanted)
    if not any(e["dir"] for e in entries):
        which = f"{'/'.join(wanted)} " if wanted else ""
        raise UserError(f"no complete {which}run under {root}; run `make reproduce` or `make reproduce-<id> PROFILE=smoke` first")
    draw_evidence(entries, root)
    md = atomic_write_text(root / "REPORT.md", render_markdown(entries))
    page = atomic_write_text(root / "report.html", render_html(entries))
    return md, page, entries


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m common.report", description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", action="append", default=None, choices=PROFILE_NAMES,
                    help="only this profile (repeatable); default: every profile that has a complete run")
    ap.add_argument("--results", default=None, metavar="DIR", help="results folder (default $REPRO_RESULTS, else results/)")
    args = ap.parse_args(argv)
    with user_errors_exit():
        if args.results:
            import os

            os.environ["REPRO_RESULTS"] = str(Path(args.results).resolve())
        md, page, entries = build(args.profile)
        print("Claims summary:")
        shown, pending = _split(entries)
        for e in shown:
            print(f"  {e['paper']} ({e['profile']}): " + (_counts(e["summary"]) if e["dir"] else "no complete run"))
        if pending:
            print(f"  no complete run yet: {', '.join(pending)}")
        print(f"wrote {md} and {page}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
