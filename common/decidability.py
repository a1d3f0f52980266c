"""Can each claim come out either way? The checks made on a development run before a claim's criterion is frozen.

    python -m common.reproduce <id> --profile quick --seeds 100 101 --development   # the development run
    python -m common.decidability <id> [--profile quick]                          # its checks, recorded

The development run lies in `<results>/development/<id>/<profile>/` (never among the reported runs). Each claim the
profile lists is judged there with the current `claims.yaml`, and checked for what makes a claim undecidable:

- `control`: the control fails at every development seed (a control that passes, or cannot be excluded, cannot
  tell the paper's effect from the null); a comparison is checked, as the reported run judges it, on the paired
  differences pooled over the development seeds, so a development run with as many seeds as the reported one
  checks it at the reported sample;
- `resolution` (agreements): the near miss lies outside the accepted region by at least two of its standard errors
  (`MIN_SE`), so the check resolves a miss of that size at this n;
- `fixed criterion`: every metric the criterion reads (value, tolerance, interval) is the same at every development
  seed: a reference computed from the run's own random data is not fixed before the run;
- `no tie`: a comparison against margin 0 whose mean lies within two standard errors of 0 is a tie, to be stated as
  non-inferiority with a margin;
- `stable`: the verdict is the same at every development seed;
- and the engine's `what would decide it` for a claim left inconclusive.

An `identity` is recorded as such and not checked: it is shown, never counted. The record is
`results/<id>/dev/decidability-<profile>.json` (`common.devseeds.result_path`), with the revision, the seeds and the
claims file's sha256, so the README's `decidability` block says when the claims changed after it.
"""
from __future__ import annotations

import argparse
import math

from . import paths
from .claims import (IDENTITY, INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Claim, accepted_region, combine_seeds, evaluate,
                     load_paper, pooled_metrics)
from .decide import inside
from .devseeds import result_path
from .errors import UserError, user_errors_exit
from .io import atomic_write_json, read_json, sha256_file

MIN_SE = 2.0   # a near miss must lie this many of its standard errors outside the accepted region
CHECKS = ("control", "resolution", "fixed criterion", "no tie", "stable")


def _referenced(claim: Claim) -> list[str]:
    """The metric names a claim's criterion reads from the run (value, tolerance, interval bounds)."""
    refs = [claim.value, claim.tolerance, *(claim.interval or ())]
    names = [r["metric"] if isinstance(r, dict) and "metric" in r else r for r in refs]
    return [n for n in names if isinstance(n, str)]


def _finite(x):
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def check_claim(claim: Claim, rows: dict, metrics: dict, pooled: dict | None = None) -> dict:
    """The checks of one claim over the development seeds: {check: 'ok' | 'fails: why' | 'n/a: why'}. `rows`
    and `metrics` are each seed's table row and metrics; `pooled`, for a comparison, is the row of the paired
    differences pooled over the seeds (`claims.pooled_metrics`), which is how the reported run judges it: its
    control, tie and verdict are checked there, at the sample the reported run pools."""
    seeds = sorted(rows)
    fixed_seeds, fixed_metrics = seeds, metrics
    if pooled is not None:
        rows, metrics, seeds = {"pooled": pooled}, {"pooled": metrics[seeds[0]]}, ["pooled"]
    out = {}
    controls = [rows[s]["control_verdict"] for s in seeds]
    if not claim.controlled:
        out["control"] = f"fails: uncontrolled ({claim.why})"
    elif all(v == NOT_REPRODUCED for v in controls):
        out["control"] = "ok"
    else:
        out["control"] = "fails: the control " + ", ".join(f"{v} at seed {s}" for s, v in zip(seeds, controls)
                                                             if v != NOT_REPRODUCED)
    if claim.nature != "agreement" or not claim.controlled:
        out["resolution"] = "n/a: not an agreement"
    else:
        gaps = []
        for s in seeds:
            region = accepted_region(claim, metrics[s])
            c, se = _finite(rows[s].get("control_measured")), _finite(rows[s].get("control_se"))
            if isinstance(region, str) or c is None:
                gaps.append(None)
                continue
            dist = 0.0 if inside(c, region) else min(abs(c - e) for e in region if math.isfinite(e))
            gaps.append(math.inf if se in (None, 0.0) and dist > 0 else (dist / se if se else 0.0))
        worst = min((g for g in gaps if g is not None), default=None)
        out["resolution"] = ("n/a: the near miss was not measured" if worst is None else "ok" if worst >= MIN_SE
                             else f"fails: the near miss lies {worst:.2g} SE outside the accepted region (< {MIN_SE:g})")
    refs = _referenced(claim)
    varying = [r for r in refs if len({repr(fixed_metrics[s].get(r)) for s in fixed_seeds}) > 1]
    if not refs:
        out["fixed criterion"] = "ok"
    elif len(fixed_seeds) < 2:
        out["fixed criterion"] = f"n/a: one development seed cannot show whether {', '.join(refs)} is fixed"
    else:
        out["fixed criterion"] = ("ok" if not varying else
                                  f"fails: the criterion reads {', '.join(varying)}, which varies between development seeds")
    if claim.kind == "comparison" and claim.compare in ("at_least", "at_most") and claim.value == 0:
        per = [(_finite(rows[s].get("measured")), _finite(rows[s].get("se"))) for s in seeds]
        tie = [s for s, (mean, se) in zip(seeds, per) if mean is not None and se and abs(mean) < MIN_SE * se]
        out["no tie"] = ("ok" if not tie else f"fails: at seed {', '.join(map(str, tie))} the mean difference lies within "
                         f"{MIN_SE:g} SE of 0: a tie is non-inferiority with a stated margin")
    else:
        out["no tie"] = "n/a: not a comparison against margin 0"
    verdicts = {rows[s]["verdict"] for s in seeds}
    if pooled is not None:
        out["stable"] = "n/a: judged on the differences pooled over the seeds, as the reported run judges it"
        return out
    out["stable"] = "ok" if len(verdicts) == 1 else "fails: " + ", ".join(f"{rows[s]['verdict']} at seed {s}" for s in seeds)
    return out


def check(paper: str, profile: str = "quick") -> dict:
    """The decidability record of the development run of `paper` at `profile` (see the module docstring)."""
    root = paths.development_root() / paper / profile
    top = read_json(root / "manifest.json", default=None)
    if not top or top.get("status") != "ok" or not top.get("seeds"):
        raise UserError(f"no complete development run of {paper} at {profile} under {root.parent}; run "
                        f"`python -m common.reproduce {paper} --profile {profile} --seeds 100 101 --development` first")
    seeds = [int(s) for s in top["seeds"]]
    claims_file = paths.PAPERS / paper / "claims.yaml"
    _, claims = load_paper(claims_file)
    metrics = {s: read_json(root / f"seed-{s}" / "metrics.json", default={}) or {} for s in seeds}
    tables = {s: evaluate(claims, metrics[s], profile) for s in seeds}
    combined = combine_seeds(tables, claims, metrics, profile)
    rows = []
    for i, claim in enumerate(claims):
        if profile not in claim.profiles:
            continue
        per = {s: tables[s].iloc[i] for s in seeds}
        entry = {"id": claim.id, "nature": claim.nature, "kind": claim.kind,
                 "verdicts": {str(s): per[s]["verdict"] for s in seeds}, "verdict": combined.iloc[i]["verdict"]}
        if claim.nature == IDENTITY:
            entry.update(checks={}, decidable=None, note="an identity: shown, never counted, so not checked")
        else:
            pooled = (evaluate([claim], pooled_metrics(claim, [metrics[s] for s in seeds]), profile).iloc[0]
                      if claim.kind == "comparison" else None)
            checks = check_claim(claim, per, metrics, pooled)
            entry.update(checks=checks, decidable=not any(v.startswith("fails") for v in checks.values()))
        decide = combined.iloc[i].get("decide")
        entry["decide"] = decide if isinstance(decide, str) else ""
        rows.append(entry)
    from .runs import git_state, now

    counted = [r for r in rows if r["decidable"] is not None]
    run_git = (read_json(root / f"seed-{seeds[0]}" / "manifest.json", default={}) or {}).get("git") or {}
    return {"paper": paper, "profile": profile, "seeds": seeds, "git": git_state(), "when": now(),
            "run_git": run_git, "run_finished": top.get("finished"),
            "claims_sha256": sha256_file(claims_file), "run": f"development/{paper}/{profile}",
            "results": {"claims": rows, "listed": len(counted), "decidable": sum(bool(r["decidable"]) for r in counted),
                        "inconclusive": sum(r["verdict"] == INCONCLUSIVE for r in counted),
                        "reproduced": sum(r["verdict"] == REPRODUCED for r in counted),
                        "identities": len(rows) - len(counted)}}


def record_name(profile: str) -> str:
    return f"decidability-{profile}"


def write(paper: str, profile: str = "quick") -> dict:
    rec = check(paper, profile)
    atomic_write_json(result_path(paper, record_name(profile)), rec)
    return rec


def block(paper: str, profile: str) -> list[str] | None:
    """The README's `decidability <profile>` block: one row per claim with its failed checks and what would decide
    it; None when no record is here (the block is kept)."""
    from .stamp import stamp

    rec = read_json(result_path(paper, record_name(profile)), default=None)
    if not rec:
        return None
    res = rec["results"]
    lines = [f"*Generated by `make readme` from `results/{paper}/dev/{record_name(profile)}.json` (development seeds "
             f"{', '.join(map(str, rec['seeds']))}, run at {stamp({'git': rec.get('run_git'), 'finished': rec.get('run_finished')}, claims=False)}; "
             f"checked at {stamp({'git': rec.get('git'), 'finished': rec.get('when')}, claims=False)}). "
             "Do not edit by hand.*"]
    claims_file = paths.PAPERS / paper / "claims.yaml"
    if claims_file.exists() and sha256_file(claims_file) != rec.get("claims_sha256"):
        lines.append(f"**Stale:** papers/{paper}/claims.yaml changed after these checks: rerun "
                     f"`python -m common.decidability {paper} --profile {profile}`.")
    lines += ["", f"{res['decidable']} of {res['listed']} claims listed at {profile} pass every check on development seeds; "
              f"{res['inconclusive']} inconclusive there; {res['identities']} identities (not checked).", "",
              "| claim | nature | verdict (development seeds) | failed checks | what would decide it |", "|---|---|---|---|---|"]
    for r in res["claims"]:
        failed = "; ".join(f"{k}: {v[len('fails: '):]}" for k, v in r["checks"].items() if v.startswith("fails")) \
            or ("–" if r["decidable"] is not None else r.get("note", ""))
        verdicts = ", ".join(f"{s}: {v}" for s, v in r["verdicts"].items())
        lines.append(f"| `{r['id']}` | {r['nature'] or '–'} | {verdicts} | {failed} | {r['decide'] or '–'} |")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m common.decidability", description=__doc__.splitlines()[0])
    ap.add_argument("paper")
    ap.add_argument("--profile", default="quick")
    args = ap.parse_args(argv)
    with user_errors_exit():
        from .runner.registry import papers

        if args.paper not in papers():
            raise UserError(f"unknown paper {args.paper!r}; choose one of {', '.join(papers())}")
        rec = write(args.paper, args.profile)
        res = rec["results"]
        print(f"{args.paper} ({args.profile}, development seeds {', '.join(map(str, rec['seeds']))}): {res['decidable']} of "
              f"{res['listed']} claims pass every check, {res['inconclusive']} inconclusive, {res['identities']} identities")
        for r in res["claims"]:
            failed = [f"{k}: {v[len('fails: '):]}" for k, v in r["checks"].items() if v.startswith("fails")]
            if failed:
                print(f"  {r['id']}: " + "; ".join(failed))
        print(f"recorded in {result_path(args.paper, record_name(args.profile))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
