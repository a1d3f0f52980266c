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
from .claims import NOT_REPRODUCED, NOT_RUN, REPRODUCED, load_paper, summary, to_markdown
from .errors import UserError, user_errors_exit
from .io import atomic_write_text, read_json
from .profiles import PROFILE_NAMES
from .reproduce import registered_papers

VERDICT_COLOR = {REPRODUCED: "#1b7837", NOT_REPRODUCED: "#b2182b", NOT_RUN: "#777777"}


def collect(profile: str) -> list[dict]:
    """Per registered paper: metadata, run dir (or None), claims table, manifest, figures."""
    out = []
    for paper in registered_papers():
        meta, _ = load_paper(paths.PAPERS / paper / "claims.yaml")
        d = paths.run_dir(paper, profile)
        entry = {"paper": paper, "meta": meta, "dir": d if (d / "claims.csv").exists() else None}
        if entry["dir"]:
            table = pd.read_csv(d / "claims.csv")
            table["measured"] = table["measured"].astype(object).where(table["measured"].notna(), None)
            entry.update(table=table, summary=summary(table), manifest=read_json(d / "manifest.json", default={}) or {},
                         figures=sorted((d / "figures").glob("*.png")))
        out.append(entry)
    return out


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
    return f"{e['paper']}: {s[REPRODUCED]}/{s['total']} claims reproduced ({s[NOT_REPRODUCED]} not reproduced, {s[NOT_RUN]} not run at this scale)"


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
        parts.append(to_markdown(e["table"]))
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
    cols = ("id", "statement", "source", "paper_value", "measured", "criterion", "verdict")
    for e in entries:
        out.append(f"<h2 id='{esc(e['paper'])}'>{esc(e['paper'])}: {esc(e['meta'].get('title', ''))}</h2>")
        if e["meta"].get("url"):
            out.append(f"<p><a href='{esc(e['meta']['url'])}'>{esc(e['meta']['url'])}</a></p>")
        out.append(f"<p>{esc(_headline(e, profile))}</p>")
        if not e["dir"]:
            continue
        out.append("<table><tr>" + "".join(f"<th>{c}</th>" for c in cols) + "</tr>")
        for _, row in e["table"].iterrows():
            cells = []
            for c in cols:
                v = row[c]
                text = "–" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v))
                style = f" style='color:{VERDICT_COLOR.get(text, '#000')};font-weight:bold'" if c == "verdict" else ""
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
