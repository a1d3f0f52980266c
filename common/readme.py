"""README tables from runs: `make readme` rewrites the generated blocks of the READMEs.

    python -m common.readme [<id> ...] [--check]

A block is a pair of HTML comments that Markdown does not show; what lies between them is replaced:

    <!-- generated: claims quick -->          the claims table of results/<id>/quick/ (every seed)
    <!-- /generated -->
    <!-- generated: metrics quick fid_ae fid_gauss -->   those metrics.json keys, one column per seed
    <!-- /generated -->
    <!-- generated: overview quick -->        (top README) every paper's verdict counts and wall time
    <!-- /generated -->
    <!-- generated: bench nlm a.b.median -->  figures of results/bench/nlm.json (`make bench`), by dotted key
    <!-- /generated -->
    <!-- generated: dev explore 100.x.y -->  the same of results/<id>/dev/explore.json (devtune)
    <!-- /generated -->
    <!-- generated: decidability quick -->   the checks of the development run (`python -m common.decidability <id>`)
    <!-- /generated -->
    <!-- generated: cost quick -->            where each notebook's time goes in that run (`common.costs`)
    <!-- /generated -->
    <!-- generated: tuned -->                 the paper's `config.TUNED`: each setting chosen on development
    <!-- /generated -->                       seeds, its value per profile, and the figures that chose it
    <!-- generated: profiles -->              every profile key, what it sets and its values (`common.readme_config`)
    <!-- /generated -->
    <!-- generated: claimlist -->             every claim of claims.yaml: kind, nature, profiles, control
    <!-- /generated -->
    <!-- cfg: quick.lr -->0.005<!-- /cfg -->  inline, in a sentence: a value of config.PROFILES (`<id>.quick.lr`
                                              outside the paper's README)

Each block is stamped with the run's git revision, its claims file's sha256 and when it finished,
and says so in bold when the code or the claims changed after the run (`common.stamp`). A block
whose run is absent is left as it is (a fresh clone keeps the committed tables), with a notice.
`--check` writes nothing and exits 1 when a block would change or is stale.
"""
from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

from . import paths
from .claims import AGREEMENT, IDENTITY, INCONCLUSIVE, NOT_REPRODUCED, NOT_RUN, PHENOMENON, PROJECTION, REPRODUCED, format_control, \
    format_measured, headline, load_paper, read_claims_table, reproduced_of, summary
from .errors import user_errors_exit
from .io import atomic_write_text, read_json, sha256_file
from .machine import describe_machine
from .readme_config import render as render_declared, rewrite_inline
from .runner.registry import papers as registered_papers
from .stamp import changed_since, code_paths, stamp, staleness

BLOCK = re.compile(r"(<!-- generated: (?P<spec>[^>]*?) -->\n)(?P<body>.*?)(<!-- /generated -->)", re.S)


def _cell(x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, float):
        return f"{x:.4g}"
    if isinstance(x, (list, tuple)):
        nums = [v for v in x if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
        if len(nums) != len(x) or not nums:
            return ", ".join(map(str, x)) or "–"
        mean = sum(nums) / len(nums)
        sd = math.sqrt(sum((v - mean) ** 2 for v in nums) / (len(nums) - 1)) if len(nums) > 1 else 0.0
        return f"{mean:.4g} ± {sd:.2g} (n={len(nums)})"
    return str(x).replace("|", "\\|").replace("\n", " ")


class Run:
    """A complete run of a paper at a profile, as the blocks read it (None fields when it is absent)."""

    def __init__(self, paper: str, profile: str, root: Path | None = None):
        """`root`: the results folder the run lies in (default `paths.results_root()`)."""
        self.paper, self.profile = paper, profile
        self.dir = root / paper / profile if root is not None else paths.run_dir(paper, profile)
        top = read_json(self.dir / "manifest.json", default=None)
        self.ok = bool(top) and top.get("status", "ok") == "ok" and (self.dir / "claims.csv").exists()
        if not self.ok:
            return
        self.seeds = top.get("seeds")
        self.dirs = {s: self.dir / f"seed-{s}" for s in self.seeds} if self.seeds else {None: self.dir}
        first = read_json(next(iter(self.dirs.values())) / "manifest.json", default={}) or {}
        self.manifest = dict(first, claims_sha256=top.get("claims_sha256") or first.get("claims_sha256"),
                             rejudged=top.get("rejudged") or first.get("rejudged"), wall_s=top.get("wall_s"))
        self.table = read_claims_table(self.dir / "claims.csv")
        self.walls = {s: (read_json(d / "manifest.json", default={}) or {}).get("wall_s") for s, d in self.dirs.items()}

    def metrics(self) -> dict:
        return {s: read_json(d / "metrics.json", default={}) or {} for s, d in self.dirs.items()}

    def header(self) -> list[str]:
        seeds = f", seeds {', '.join(map(str, self.seeds))}" if self.seeds else ""
        lines = [f"*Generated by `make readme` from `results/{self.paper}/{self.profile}/`{seeds} ({stamp(self.manifest)}). "
                 "Do not edit by hand.*"]
        for why in staleness(self.manifest, self.paper):
            lines.append(f"**Stale:** {why}.")
        return lines + [""]


def claims_block(run: Run) -> list[str]:
    t = run.table
    seeds = [str(s) for s in run.seeds] if run.seeds else []
    lines = [f"{headline(summary(t))}" + (f", over seeds {', '.join(seeds)}" if seeds else ""), ""]
    heads = ["claim", "criterion"] + ([f"seed {s}" for s in seeds] or ["measured"]) + ["control"] + \
        (["pooled over seeds"] if "pooled" in t else []) + ["verdict"]
    lines += ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for _, r in t.iterrows():
        if seeds:
            measured = [f"{_cell(r[f'measured_seed_{s}'])}: {_cell(r[f'verdict_seed_{s}'])}" for s in seeds]
            what = _cell(r.get("control_is"))
            per = "; ".join(f"s{s} {_cell(r.get(f'control_seed_{s}')).split(' (')[0]}" for s in seeds
                            if _cell(r.get(f"control_seed_{s}")) != "–")
            control = f"{what}" + (f": {per}" if per and r.get("control_verdict") != "uncontrolled" else "")
        else:
            measured = [_cell(format_measured(r))]
            control = _cell(format_control(r))
        pooled = [f"{_cell(r.get('pooled'))}" + (f"; control {_cell(r.get('pooled_control')).split(' (')[0]}"
                                                 if _cell(r.get("pooled_control")) != "–" else "")] if "pooled" in t else []
        decide = r.get("decide")
        verdict = f"**{r['verdict']}**" + (f"; what would decide it: {_cell(decide)}" if isinstance(decide, str) and decide else "")
        lines.append("| " + " | ".join([f"`{r['id']}`: {_cell(r['statement'])}", _cell(r["criterion"]), *measured, control,
                                        *pooled, verdict]) + " |")
    return lines


def metrics_block(run: Run, keys: list[str]) -> list[str]:
    per = run.metrics()
    cols = [f"seed {s}" for s in per] if run.seeds else ["value"]
    lines = ["| metric | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    for k in keys:
        lines.append(f"| `{k}` | " + " | ".join(_cell(m.get(k)) for m in per.values()) + " |")
    return lines


def _kept_rows(old: str) -> dict[str, str]:
    """The old block's row of each paper that had a run then: {id: row}."""
    rows = {}
    for line in old.splitlines():
        m = re.match(r"\| [^|]* \| `([\w-]+)` \| (?!no complete run)", line)
        if m:
            rows[m.group(1)] = line
    return rows


def _widened(row: str) -> str:
    """A kept row written before the phenomena/agreements columns, with those two cells as '–'."""
    cells = row.split(" | ")
    return " | ".join(cells[:3] + ["–", "–"] + cells[3:]) if row.count(" | ") == 10 else row


def _share(s: dict) -> str:
    """' (12 %)': the inconclusive claims' share of those judged at this profile (not those not run here)."""
    judged = s["total"] - s[NOT_RUN]
    return f" ({100 * s[INCONCLUSIVE] / judged:.0f} %)" if judged else ""


def _apart(s: dict) -> str:
    """'2 (2) / 0': identities (how many hold) and projections, shown but never counted."""
    held, ids = s.get(IDENTITY, (0, 0))
    return f"{ids} ({held}) / {s[PROJECTION]}"


def overview_block(profile: str, old: str = "") -> list[str]:
    """Every paper's row from its run here; a paper without one keeps its row of `old` (the block's
    previous text, whose stamp says which run it came from) or says it has none."""
    lines = ["| paper | id | claims (" + profile + ") | phenomena reproduced | agreements reproduced | not reproduced | "
             "inconclusive (share of those judged here) | not run here | identities (hold) / projections, shown apart | uncontrolled | "
             "seeds | wall time per seed | run |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    notes, total, kept = [], [], []
    previous = _kept_rows(old)
    for paper in registered_papers():
        meta, _ = load_paper(paths.PAPERS / paper / "claims.yaml")
        title = f"[{meta.get('title', paper)}]({meta.get('url', '')})" if meta.get("url") else meta.get("title", paper)
        run = Run(paper, profile)
        if not run.ok:
            if paper in previous:
                kept.append(paper)
                rev = re.search(r"\| git ([0-9a-f]{7,40})\b", previous[paper])
                changed = changed_since(rev.group(1), paper) if rev else None
                if changed is None or changed:
                    notes.append(f"- `{paper}`: **stale:** " + ("its row names no revision known here" if changed is None else
                                 f"the code changed after that run in {len(changed)} file{'s' * (len(changed) > 1)} "
                                 f"({', '.join(changed[:3])}{', …' if len(changed) > 3 else ''}): rerun it") + ".")
            lines.append(_widened(previous[paper]) if paper in previous else f"| {title} | `{paper}` | no complete run | | | | | | | | | | |")
            continue
        s = summary(run.table)
        walls = [w for w in run.walls.values() if isinstance(w, (int, float))]
        total.append(sum(walls) / len(walls) if walls else math.nan)
        wall = (f"{min(walls):.0f}–{max(walls):.0f} s" if len(walls) > 1 else f"{walls[0]:.0f} s") if walls else "–"
        seeds = ", ".join(map(str, run.seeds)) if run.seeds else str(run.manifest.get("seed", "–"))
        lines.append(f"| {title} | `{paper}` | {s[REPRODUCED]}/{s['total']} reproduced | {reproduced_of(s, PHENOMENON)} | "
                     f"{reproduced_of(s, AGREEMENT)} | {s[NOT_REPRODUCED]} | "
                     f"{s[INCONCLUSIVE]}{_share(s)} | {s[NOT_RUN]} | {_apart(s)} | {s['uncontrolled']} | {seeds} | {wall} | "
                     f"{stamp(run.manifest)} |")
        notes += [f"- `{paper}`: **stale:** {why}." for why in staleness(run.manifest, paper)]
    if total and all(math.isfinite(t) for t in total):
        which = f"the {len(total)} paper{'s' * (len(total) != 1)} run here" if kept or len(total) < len(registered_papers()) else f"all {len(total)} papers"
        lines.append(f"| {which} | | | | | | | | | | | {sum(total) / 60:.1f} min (sum of the means per seed) | |")
    if kept:
        notes.append(f"- Rows kept from the previous text (no run in this `results/`): {', '.join(f'`{p}`' for p in kept)}; "
                     "their stamps name the runs they came from.")
    return ["*Generated by `make readme` from `results/<id>/" + profile + "/`. Do not edit by hand.*", ""] + lines + \
        ([""] + notes if notes else [])


def _dotted(tree: dict, key: str):
    for part in key.split("."):
        if not isinstance(tree, dict) or part not in tree:
            return None
        tree = tree[part]
    return tree


def _bench_cell(v) -> str:
    """A figure of a benchmark: a {median, min, max} summary as 'median (min–max)'."""
    if isinstance(v, dict) and {"median", "min", "max"} <= set(v):
        return f"{_cell(v['median'])} ({_cell(v['min'])}–{_cell(v['max'])})"
    if isinstance(v, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
        return ", ".join(_cell(float(x)) for x in v) or "–"
    return _cell(v)


def dev_command(paper: str, name: str) -> str:
    """The command that reruns a development record: a paper's `investigations` when it defines `name`
    there (runs that tune nothing), else its `devtune`."""
    inv = paths.PAPERS / paper / "investigations.py"
    module = "investigations" if inv.exists() and re.search(rf"[\"']{re.escape(name)}[\"']", inv.read_text()) else "devtune"
    return f"python -m papers.{paper}.{module} {name}"


def bench_block(name: str, keys: list[str], paper: str | None, dev: bool = False, rows: str | None = None) -> list[str] | None:
    """Figures of `results/bench/<name>.json` (`make bench`), or with `dev` of the development-seed run
    `results/<paper>/dev/<name>.json` (`python -m papers.<paper>.devtune <name>`), by dotted key; None
    when the file is absent (the block is kept). Stamped with the revision that measured them, when, and
    (benchmarks) the load average before and after. With `rows` (a dotted key of a mapping, e.g. `papers`):
    one table row per entry of that mapping and one column per key of `keys`, read inside each entry."""
    rel = f"{paper}/dev/{name}.json" if dev else f"bench/{name}.json"
    bench = read_json(paths.results_root() / rel, default=None)
    if not bench:
        return None
    res = bench.get("results") or {}
    load = lambda k: ", ".join(f"{x:.2f}" for x in res[k]) if isinstance(res.get(k), list) else "not recorded"  # noqa: E731
    st = stamp({"git": bench.get("git"), "finished": bench.get("when")}, claims=False) + f"; {describe_machine(bench.get('machine'))}"
    if not dev:
        st += f"; load average before {load('load_average_before')}, after {load('load_average_after')}"
    lines = [f"*Generated by `make readme` from `results/{rel}` ({st}). Do not edit by hand.*"]
    if paper is not None:
        specs = code_paths(paper, tuning=dev) + ([] if dev else [f"benchmarks/bench_{name}.py"])
        changed = changed_since((bench.get("git") or {}).get("sha"), paper, specs)
        if changed:
            lines.append(f"**Stale:** the code changed after this {'development run' if dev else 'benchmark'} in "
                         f"{', '.join(changed[:3])}{', …' if len(changed) > 3 else ''}: rerun "
                         f"{f'`{dev_command(paper, name)}`' if dev else '`make bench`'}.")
    if rows is not None:
        group = _dotted(res, rows) or {}
        lines += ["", f"| {rows} | " + " | ".join(f"`{k}`" for k in keys) + " |", "|---|" + "---|" * len(keys)]
        lines += [f"| `{name_}` | " + " | ".join(_bench_cell(_dotted(entry, k)) for k in keys) + " |"
                  for name_, entry in group.items() if isinstance(entry, dict)]
        return lines
    lines += ["", "| figure | value |", "|---|---|"]
    lines += [f"| `{k}` | {_bench_cell(_dotted(res, k))} |" for k in keys]
    return lines


def _setting(v) -> str:
    """A configuration value as it is written in the config (lists compact)."""
    import json

    return "–" if v is None else f"`{json.dumps(v, separators=(', ', ': ')) if isinstance(v, (list, tuple, dict)) else v}`"


def tuned_block(paper: str) -> list[str] | None:
    """The settings of `papers/<paper>/config.py` chosen on development seeds (`config.TUNED`: keyed by a
    profile key, or by a claim id when what was chosen is that claim's criterion), each with its value in
    every profile and the figures of the development run that chose it
    (`results/<paper>/dev/<result>.json`, read through `common.devseeds`); None when none of those runs is
    here (the block is kept). A run whose code changed since is flagged."""
    from .devseeds import read_result, result_path
    from .runner.registry import config

    cfg = config(paper)
    tuned = getattr(cfg, "TUNED", {}) or {}
    records = {spec["result"]: read_result(paper, spec["result"]) for spec in tuned.values()}
    if tuned and not any(records.values()):
        return None
    profiles = list(cfg.PROFILES)
    claims_file = paths.PAPERS / paper / "claims.yaml"
    claims = {c.id: c for c in load_paper(claims_file)[1]} if claims_file.exists() else {}
    lines = [f"*Generated by `make readme` from `papers/{paper}/config.py` (`TUNED`) and the development runs in "
             f"`results/{paper}/dev/`. Do not edit by hand.*", ""]
    if not tuned:
        return lines + ["No setting of this paper was chosen on development seeds."]
    lines += ["| setting | " + " | ".join(profiles) + " | chosen by | development seeds | what the development run found | why |",
              "|---|" + "---|" * len(profiles) + "---|---|---|---|"]
    for key, spec in tuned.items():
        rec = records[spec["result"]]
        found = "not run here" if rec is None else "; ".join(
            f"`{k}` = {_bench_cell(_dotted(rec, k))}"
            for k in spec.get("show", [])) or "–"
        seeds = "–" if rec is None else ", ".join(map(str, rec.get("seeds") or [])) or "–"
        if key in claims:                         # a claim's criterion chosen on development seeds
            c = claims[key]
            cells = [_setting(c.value if c.tolerance is None else {"value": c.value, "tolerance": c.tolerance})
                     if p in c.profiles else "–" for p in profiles]
            label = f"claim `{key}` (its criterion)"
        else:
            cells, label = [_setting(cfg.PROFILES[p].get(key)) for p in profiles], f"`{key}`"
        lines.append(f"| {label} | " + " | ".join(cells)
                     + f" | `python -m papers.{paper}.devtune {spec['result']}` | {seeds} | {found} | "
                     + _cell(spec.get("why", "")) + " |")
    lines.append("")
    for name, rec in records.items():
        if rec is None:
            continue
        rel = result_path(paper, name).relative_to(paths.results_root())
        line = (f"- `results/{rel.as_posix()}`: {stamp({'git': rec.get('git'), 'finished': rec.get('when')}, claims=False)}"
                f"; {describe_machine(rec.get('machine'))}")
        changed = changed_since((rec.get("git") or {}).get("sha"), paper, code_paths(paper, tuning=True))
        if changed:
            line += (f". **Stale:** the code changed after this development run in {', '.join(changed[:3])}"
                     f"{', …' if len(changed) > 3 else ''}: rerun `python -m papers.{paper}.devtune {name}`")
        lines.append(line + ".")
    return lines


def render(spec: str, paper: str | None, old: str = "") -> list[str] | None:
    """The block's new lines, or None when its run is absent (the block is kept)."""
    declared = render_declared(spec, paper)        # profiles, claimlist: from config.py and claims.yaml, no run
    if declared is not None:
        return declared
    if spec.split() == ["tuned"]:
        if paper is None:
            raise ValueError("a 'tuned' block belongs in papers/<id>/README.md")
        return tuned_block(paper)
    kind, profile, *keys = spec.split()
    if kind == "overview":
        return overview_block(profile, old)
    if kind in ("bench", "dev"):
        if not keys:
            raise ValueError(f"a {kind} block lists the dotted keys of its results file it shows")
        if kind == "dev" and paper is None:
            raise ValueError("a 'dev' block belongs in papers/<id>/README.md")
        return bench_block(profile, keys, paper, dev=kind == "dev")
    if kind == "benchrows":                       # benchrows <name> <mapping key> <column keys ...>
        if len(keys) < 2:
            raise ValueError("a benchrows block names the mapping of its results file and the keys it shows per row")
        return bench_block(profile, keys[1:], paper, rows=keys[0])
    if paper is None:
        raise ValueError(f"a '{kind}' block belongs in papers/<id>/README.md")
    if kind == "decidability":                    # the checks of the development run (`common.decidability`)
        from .decidability import block

        return block(paper, profile)
    run = Run(paper, profile)
    if not run.ok:
        return None
    if kind == "claims":
        return run.header() + claims_block(run)
    if kind == "metrics":
        if not keys:
            raise ValueError("a metrics block lists the metrics.json keys it shows")
        return run.header() + metrics_block(run, keys)
    if kind == "cost":                            # where each notebook's time goes (`common.costs`)
        from .costs import block

        lines = block(list(run.dirs.values()))
        return run.header() + lines if lines else None
    raise ValueError(f"unknown generated block {kind!r}; use claims, metrics, cost, bench, benchrows, dev, decidability, tuned or overview")


KEPT_STALE = "**Stale (kept block):**"


def kept_body(body: str, paper: str | None) -> str:
    """A kept block's text, with one line saying so when the code changed since the run its stamp names
    (the stamp's `git <sha>`, or a decidability block's `run at git <sha>`), or the claims file since the one it
    was judged or checked with; a block without a stamp is kept as it is."""
    lines = [line for line in body.splitlines(keepends=True) if not line.startswith(KEPT_STALE)]
    rev = re.search(r"(?:\(git|run at git) ([0-9a-f]{7,40})\b", body)
    if paper is None or rev is None:
        return "".join(lines)
    changed = changed_since(rev.group(1), paper)
    recorded = re.search(r"claims\.yaml sha256 ([0-9a-f]{12})", body)
    claims = paths.PAPERS / paper / "claims.yaml"
    claims_changed = bool(recorded and claims.exists() and not sha256_file(claims).startswith(recorded.group(1)))
    if not recorded and "run at git" in body:   # a decidability check records no hash in its stamp: its claims file
        claims_changed = bool(changed_since(rev.group(1), paper, [f"papers/{paper}/claims.yaml"]))   # then and now
    why = []
    if changed is None:
        why.append("its run's revision is not one of this checkout")
    else:
        if changed:
            why.append(f"the code changed after that run in {len(changed)} file{'s' * (len(changed) > 1)} "
                       f"({', '.join(changed[:3])}{', …' if len(changed) > 3 else ''})")
        if claims_changed:
            why.append(f"papers/{paper}/claims.yaml is not the one it was judged with")
    if not why:
        return "".join(lines)
    at = 1 if lines and lines[0].startswith("*Generated") else 0
    note = f"{KEPT_STALE} no run of this block in this `results/`; {'; '.join(why)}: rerun it.\n"
    return "".join(lines[:at] + [note] + lines[at:])


def rewrite(path: Path, paper: str | None) -> tuple[str, list[str]]:
    """(the file's new text, notices)."""
    notices = []
    old = path.read_text()

    def sub(m: re.Match) -> str:
        try:
            lines = render(m.group("spec"), paper, m.group(0))
        except ValueError as err:
            raise ValueError(f"{path}: {err}") from None
        if lines is None:
            notices.append(f"{_show(path)}: no complete run for '{m.group('spec')}'; block kept")
            return m.group(1) + kept_body(m.group("body"), paper) + m.group(4)
        return m.group(1) + "\n".join(lines) + "\n" + m.group(4)

    try:
        return rewrite_inline(BLOCK.sub(sub, old), paper), notices
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None


def _show(path: Path) -> str:
    return str(path.relative_to(paths.REPO)) if path.is_relative_to(paths.REPO) else str(path)


def targets(papers: list[str] | None) -> list[tuple[Path, str | None]]:
    chosen = papers or registered_papers()
    out = [(paths.PAPERS / p / "README.md", p) for p in chosen if (paths.PAPERS / p / "README.md").exists()]
    if not papers:
        out.append((paths.REPO / "README.md", None))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m common.readme", description=__doc__.split("\n\n")[0])
    ap.add_argument("papers", nargs="*", help="paper ids (default: every paper and the top README)")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if a block would change or is stale")
    args = ap.parse_args(argv)
    with user_errors_exit():
        from .errors import UserError
        unknown = [p for p in args.papers if p not in registered_papers()]
        if unknown:
            raise UserError(f"unknown paper {unknown[0]!r}; choose from {', '.join(registered_papers())}")
        changed, stale = [], []
        for path, paper in targets(args.papers):
            try:
                new, notices = rewrite(path, paper)
            except ValueError as err:
                raise UserError(str(err)) from None
            for n in notices:
                print(n)
            stale += [path] if "**Stale:**" in new or "**stale:**" in new or KEPT_STALE in new else []
            if new != path.read_text():
                changed.append(path)
                if not args.check:
                    atomic_write_text(path, new)
        for p in changed:
            print(("would rewrite " if args.check else "rewrote ") + _show(p))
        for p in stale:
            print(f"stale: {_show(p)} shows a run older than the code or claims")
        return 1 if args.check and (changed or stale) else 0


if __name__ == "__main__":
    sys.exit(main())
