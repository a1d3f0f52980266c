"""The `make reproduce` budget: what `make reproduce` does, timed end to end on this machine.

    make budget                      # or: python benchmarks/reproduce_budget.py [--keep DIR] [--budget-min 30]

Runs the three steps of `make reproduce` (data, every paper at the quick profile, the report) as
subprocesses, in a fresh results folder (a temporary one unless `--keep DIR`), so `results/` is not
touched. Writes `results/bench/reproduce.json`: the wall time of each step and in all against the
budget (30 minutes on an idle 2-core machine), each paper's own wall time and verdict counts from its
run's manifest, and the load average before and after. A timing on a loaded machine is not a result:
run it alone. Not part of `make bench`: it takes as long as `make reproduce`.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common.bench import write_benchmark  # noqa: E402

STEPS = (("data", ["-m", "common.download"]), ("papers", ["-m", "common.reproduce", "all", "--profile", "quick"]),
         ("report", ["-m", "common.report"]))


def summarize(results: Path, step_s: dict, budget_s: float, profile: str = "quick") -> dict:
    """The figures of one timed `make reproduce` whose runs lie in `results`: per paper, the wall time its
    manifest records and its verdict counts (None for a paper without a complete run); the steps' and
    the total wall time against `budget_s`; `outside_papers_s`, what the total spends beyond the
    papers' own runs (data, report, start-up of each paper's run)."""
    from common.claims import summary
    from common.readme import Run
    from common.runner.registry import papers

    runs = {paper: Run(paper, profile, root=results) for paper in papers()}
    papers = {p: {"wall_s": r.manifest["wall_s"], "verdicts": summary(r.table)} if r.ok else {"wall_s": None, "verdicts": None}
              for p, r in runs.items()}
    total = sum(step_s.values())
    papers_s = sum(p["wall_s"] for p in papers.values() if p["wall_s"] is not None)
    complete = all(r.ok for r in runs.values())
    return {"profile": profile, "budget_s": budget_s, "total_s": round(total, 2), "steps_s": step_s,
            "papers": papers, "all_papers_complete": complete, "papers_s": round(papers_s, 2),
            "outside_papers_s": round(total - papers_s, 2), "within_budget": complete and total <= budget_s}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python benchmarks/reproduce_budget.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", metavar="DIR", help="results folder to run into and keep (must not exist)")
    ap.add_argument("--budget-min", type=float, default=30.0, help="the budget in minutes (default 30)")
    args = ap.parse_args(argv)
    if args.keep and Path(args.keep).exists():
        print(f"error: {args.keep} exists; name a new folder for --keep", file=sys.stderr)
        return 2
    folder = Path(args.keep).resolve() if args.keep else Path(tempfile.mkdtemp(prefix="reproduce-budget-"))
    folder.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, REPRO_RESULTS=str(folder))
    load_before = list(os.getloadavg())
    step_s, codes = {}, {}
    try:
        for name, cmd in STEPS:
            t0 = time.perf_counter()
            codes[name] = subprocess.run([sys.executable, *cmd], env=env).returncode
            step_s[name] = round(time.perf_counter() - t0, 2)
        res = summarize(folder, step_s, 60 * args.budget_min)
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    res |= {"exit_codes": codes, "load_average_before": load_before, "load_average_after": list(os.getloadavg()),
            "cpu_count": os.cpu_count()}
    write_benchmark("reproduce", res)
    print(f"make reproduce: {res['total_s'] / 60:.1f} min against a budget of {args.budget_min:g} "
          f"({'within' if res['within_budget'] else 'over, or a paper did not complete'}); "
          f"load average before {load_before[0]:.2f}")
    return codes.get("papers", 1)   # as `make reproduce`: 1 when a paper's run failed, 2 on a user error


if __name__ == "__main__":
    sys.exit(main())
