"""The reproduction report: `results/REPORT.md` and `results/report.html`.

At the top one line per paper (reproduced / total claims); then, per paper, the verdict table,
the figures, wall time and a manifest summary. Built from the run directories alone.
"""
from __future__ import annotations

import argparse
import html
from pathlib import Path

import pandas as pd

from . import paths
from .claims import (INCONCLUSIVE, NOT_REPRODUCED, NOT_RUN, REPRODUCED, format_measured, headline, load_paper,
                     read_claims_table, summary, to_markdown)
from .errors import UserError, user_errors_exit
from .io import atomic_write_text, read_json
from .profiles import PROFILE_NAMES
from .reproduce import registered_papers

VERDICT_COLOR = {REPRODUCED: "#1b7837", NOT_REPRODUCED: "#b2182b", INCONCLUSIVE: "#b35806", NOT_RUN: "#777777"}


def collect(profile: str) -> list[dict]:
    """Per registered paper: metadata, run dir (or None), claims table, manifest, figures."""
    out = []
    for paper in registered_papers():
        meta, _ = load_paper(paths.PAPERS / paper / "claims.yaml")
        d = paths.run_dir(paper, profile)
        entry = {"paper": paper, "meta": meta, "dir": d if (d / "claims.csv").exists() else None}
        if entry["dir"]:
            table = read_claims_table(d / "claims.csv")
            manifest = read_json(d / "manifest.json", default={}) or {}
            first = d / manifest["runs"][0] if manifest.get("runs") else d  # a --seeds run: figures of its first seed
            if first != d:
                manifest = dict(read_json(first / "manifest.json", default={}) or {}, seeds=manifest.get("seeds"),
                                wall_s=manifest.get("wall_s"))
            entry.update(table=table, summary=summary(table), manifest=manifest,
                         figures=sorted((first / "figures").glob("*.png")))
        out.append(entry)
    return out


def _columns(table) -> tuple[str, ...]:
    """Claim table columns; a --seeds run shows each seed's estimate and verdict before the overall one."""
    seeds = [c[len("verdict_seed_"):] for c in table.columns if c.startswith("verdict_seed_")]
    if seeds:
        return ("id", "kind", "statement", "source", "paper_value", "criterion", *[f"measured_seed_{k}" for k in seeds],
                *[f"verdict_seed_{k}" for k in seeds], "verdict")
    return ("id", "kind", "statement", "source", "paper_value", "measured", "criterion", "verdict")


def _manifest_lines(m: dict) -> list[str]:
    git = m.get("git", {})
    dev = m.get("device", {})
    ver = m.get("versions", {})
    lines = [
        f"wall time {m.get('wall_s', float('nan')):.0f} s; started {m.get('started', '?')}, finished {m.get('finished', '?')}",
        f"git {str(git.get('sha'))[:12]}{' (dirty)' if git.get('dirty') else ''}; seed {m.get('seed', '?')}; "
        f"device {dev.get('backend', '?')} ({dev.get('name', '?')}, {dev.get('threads', '?')} threads)",
        "python {python}, torch {torch}, numpy {numpy}".format(**{k: ver.get(k, "?") for k in ("python", "torch", "numpy")}),
    ]
    for i in m.get("inputs", []):
        lines.append(f"input {i['path']} sha256 {str(i.get('sha256'))[:16]}…")
    return lines


def _headline(e: dict, profile: str) -> str:
    if not e["dir"]:
        return f"{e['paper']}: no {profile} run yet (`make reproduce-{e['paper']} PROFILE={profile}`)"
    s = e["summary"]
    seeds = e["manifest"].get("seeds")
    return f"{e['paper']}: {headline(s)}" + (f" over seeds {', '.join(map(str, seeds))}" if seeds else "")


def render_markdown(entries: list[dict], profile: str) -> str:
    parts = [f"# Reproduction report (profile `{profile}`)\n"]
    parts += [f"- {_headline(e, profile)}" for e in entries]
    for e in entries:
        title = e["meta"].get("title", e["paper"])
        url = e["meta"].get("url", "")
        parts.append(f"\n## {e['paper']}: {title}\n")
        if url:
            parts.append(f"Paper: {url}\n")
        if not e["dir"]:
            parts.append(_headline(e, profile))
            continue
        parts.append(_headline(e, profile) + "\n")
        parts.append(to_markdown(e["table"], _columns(e["table"])))
        parts.append("\n" + "\n".join(f"- {line}" for line in _manifest_lines(e["manifest"])) + "\n")
        for fig in e["figures"]:
            rel = fig.relative_to(paths.results_root())
            parts.append(f"![{fig.stem}]({rel.as_posix()})\n")
    return "\n".join(parts) + "\n"


def render_html(entries: list[dict], profile: str) -> str:
    esc = html.escape
    out = [f"<!doctype html><html><head><meta charset='utf-8'><title>Reproduction report ({esc(profile)})</title>",
           "<style>body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
           "table{border-collapse:collapse;font-size:90%}td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top}"
           "img{max-width:100%;border:1px solid #eee;margin:4px 0}.m{color:#555;font-size:90%}</style></head><body>",
           f"<h1>Reproduction report (profile <code>{esc(profile)}</code>)</h1><ul>"]
    out += [f"<li><a href='#{esc(e['paper'])}'>{esc(_headline(e, profile))}</a></li>" for e in entries]
    out.append("</ul>")
    for e in entries:
        out.append(f"<h2 id='{esc(e['paper'])}'>{esc(e['paper'])}: {esc(e['meta'].get('title', ''))}</h2>")
        if e["meta"].get("url"):
            out.append(f"<p><a href='{esc(e['meta']['url'])}'>{esc(e['meta']['url'])}</a></p>")
        out.append(f"<p>{esc(_headline(e, profile))}</p>")
        if not e["dir"]:
            continue
        cols = _columns(e["table"])
        out.append("<table><tr>" + "".join(f"<th>{c}</th>" for c in cols) + "</tr>")
        for _, row in e["table"].iterrows():
            cells = []
            for c in cols:
                v = format_measured(row) if c == "measured" else row.get(c)
                text = "–" if v is None or v != v else (f"{v:.4g}" if isinstance(v, float) else str(v))
                style = f" style='color:{VERDICT_COLOR.get(text, '#000')};font-weight:bold'" if c.startswith("verdict") else ""
                cells.append(f"<td{style}>{esc(text)}</td>")
            out.append("<tr>" + "".join(cells) + "</tr>")
        out.append("</table><ul class='m'>" + "".join(f"<li>{esc(line)}</li>" for line in _manifest_lines(e["manifest"])) + "</ul>")
        for fig in e["figures"]:
            rel = fig.relative_to(paths.results_root()).as_posix()
            out.append(f"<figure><img src='{esc(rel)}' alt='{esc(fig.stem)}'><figcaption>{esc(fig.stem)}</figcaption></figure>")
    out.append("</body></html>")
    return "\n".join(out)


def build(profile: str = "quick") -> tuple[Path, Path, list[dict]]:
    if profile not in PROFILE_NAMES:
        raise UserError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILE_NAMES)}")
    entries = collect(profile)
    root = paths.results_root()
    md = atomic_write_text(root / "REPORT.md", render_markdown(entries, profile))
    page = atomic_write_text(root / "report.html", render_html(entries, profile))
    return md, page, entries


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m common.report", description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="quick")
    args = ap.parse_args(argv)
    with user_errors_exit():
        md, page, entries = build(args.profile)
        print("Claims summary:")
        for e in entries:
            print(f"  {_headline(e, args.profile)}")
        print(f"wrote {md} and {page}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
