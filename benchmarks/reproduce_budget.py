"""The `make reproduce` budget: what `make reproduce` does, timed end to end on this machine.

    make budget        # or: python benchmarks/reproduce_budget.py [--keep DIR] [--no-setup] [--budget-min 30]

Times the set-up (a fresh virtual environment in a temporary folder, the pinned requirements installed by
pip as `make setup` does, with whatever pip cache this machine has; `--no-setup` skips it), then the three
steps of `make reproduce` (data, every paper at the quick profile, the report) as subprocesses, in a fresh
results folder (a temporary one unless `--keep DIR`), so `results/` is not touched. Writes
`results/bench/reproduce.json`: the wall time of each step and in all against the budget (30 minutes on an
idle 2-core machine), each paper's own wall time and verdict counts from its run's manifest, the load
average before and after, and the goal of the front door: set-up included, at most `GOAL_ZEN3_S` seconds on
a 2-core machine without AVX-512 (the Zen 3 class). On a machine of that class `total_s` is judged against
it directly; on another class only through this machine's measured speed against Zen 3 on the same code
(`benchmarks/speed_vs_zen3.py`, `results/bench/speed_vs_zen3.json`): `zen3_equivalent_s` is each paper's
wall time times that paper's measured ratio, plus the rest (set-up, data, report) times the range of the
ratios, judged at the upper end. The 30-minute budget is judged the same way
(`within_budget_zen3`): it must hold on the slowest class, so a total within it here (`within_budget`) says
nothing of Zen 3. A figure from one class is never presented as the other's. A timing on a loaded machine is not a result: run it alone. Not part of `make bench`.
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
from common.io import read_json  # noqa: E402
from common.machine import machine, same_cpu  # noqa: E402
from common.paths import REPO, results_root  # noqa: E402

GOAL_ZEN3_S = 1200.0   # the front door: set-up included, on a 2-core machine without AVX-512

def steps(jobs: int) -> tuple:
    """The steps of `make reproduce` (JOBS=`jobs`)."""
    return (("data", ["-m", "common.download"]),
            ("papers", ["-m", "common.reproduce", "all", "--profile", "quick", "--jobs", str(jobs)]),
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


def machine_class(rec: dict) -> str:
    """"avx512" when the CPU has AVX-512 (the faster class the quick profiles were once sized for), else "zen3"."""
    return "avx512" if "avx512f" in (rec.get("simd") or []) else "zen3"


def goal(total_s: float, rec: dict, speed: dict | None, budget_s: float = 1800.0,
         papers: dict[str, float | None] | None = None) -> dict:
    """The front-door goal (`GOAL_ZEN3_S`) and the budget (`budget_s`) for a run of `total_s` seconds on machine
    `rec`, both for the Zen 3 class: judged directly on it; on the AVX-512 class through `speed` (speed_vs_zen3.json
    of this same CPU), else not judged (None). With `papers` ({paper: its wall seconds in this run, None when it did
    not complete}) each paper's seconds are scaled by that paper's own measured ratio (the papers differ: BLAS-bound
    ones gain more from AVX-512 than start-up- or Python-bound ones) and the rest of the total (set-up, data, report)
    by the range of the ratios, judged at the upper end; a paper without a ratio of its own or without a complete
    run leaves the goal unjudged (None, `why`: its seconds scaled by the range bound nothing). Papers that overlapped
    (JOBS > 1: their walls add up to more than the total) and a call without `papers` scale the whole total by the
    range."""
    cls = machine_class(rec)
    out = {"goal_zen3_s": GOAL_ZEN3_S, "budget_zen3_s": budget_s, "machine_class": cls}
    if cls == "zen3":
        return out | {"zen3_equivalent_s": [round(total_s, 1)] * 2, "within_goal": total_s <= GOAL_ZEN3_S,
                      "within_budget_zen3": total_s <= budget_s}
    res = (speed or {}).get("results") or {}
    if not (speed and res.get("ratio_min") and same_cpu(speed.get("machine") or {}, rec)):
        return out | {"zen3_equivalent_s": None, "within_goal": None, "within_budget_zen3": None,
                      "why": "no speed_vs_zen3.json for this CPU model: run benchmarks/speed_vs_zen3.py"}
    lo, hi = res["ratio_min"], res["ratio_max"]
    ratio = {p: (v or {}).get("ratio") for p, v in (res.get("papers") or {}).items()}
    walls = papers or {}
    scaled = {p: s for p, s in walls.items() if s is not None and ratio.get(p)}
    unscaled = sorted(p for p in walls if p not in scaled)
    if sum(scaled.values()) > total_s:   # the papers overlapped (JOBS > 1): no paper's seconds are its own
        scaled, unscaled = {}, []
    own = sum(s * ratio[p] for p, s in scaled.items())
    rest = total_s - sum(scaled.values())
    eq_hi = own + rest * hi
    out |= {"speed_vs_zen3": [lo, hi], "zen3_equivalent_s": [round(own + rest * lo, 1), round(eq_hi, 1)],
            "within_goal": eq_hi <= GOAL_ZEN3_S, "within_budget_zen3": eq_hi <= budget_s}
    if papers is not None:
        out["scaled_by_own_ratio"] = sorted(scaled)
    if unscaled:
        out |= {"within_goal": None, "within_budget_zen3": None,
                "why": f"no ratio of its own, or no complete run, for {', '.join(unscaled)}: run "
                       f"benchmarks/speed_vs_zen3.py --papers {' '.join(unscaled)} (or rerun the failed paper)"}
    return out


def time_setup() -> float:
    """Seconds to build a fresh venv with the pinned requirements by `make setup` itself (its `VENV` a
    temporary folder), so the timing follows the Makefile's install steps."""
    with tempfile.TemporaryDirectory(prefix="budget-venv-") as tmp:
        t0 = time.perf_counter()
        subprocess.run(["make", "--no-print-directory", "-C", str(REPO), "setup", f"VENV={tmp}",
                        f"PYTHON={sys.executable}"], check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python benchmarks/reproduce_budget.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", metavar="DIR", help="results folder to run into and keep (must not exist)")
    ap.add_argument("--budget-min", type=float, default=30.0, help="the budget in minutes (default 30)")
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("JOBS") or 1),
                    help="papers at once, as `make reproduce JOBS=N` (default $JOBS, else 1)")
    ap.add_argument("--no-setup", action="store_true", help="do not time the set-up (a fresh venv with the pinned requirements)")
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
        if not args.no_setup:
            step_s["setup"] = round(time_setup(), 2)
        for name, cmd in steps(args.jobs):
            t0 = time.perf_counter()
            codes[name] = subprocess.run([sys.executable, *cmd], env=env).returncode
            step_s[name] = round(time.perf_counter() - t0, 2)
        res = summarize(folder, step_s, 60 * args.budget_min)
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    res |= {"jobs": args.jobs, "exit_codes": codes, "load_average_before": load_before, "load_average_after": list(os.getloadavg()),
            "cpu_count": os.cpu_count()}
    res |= goal(res["total_s"], machine(), read_json(results_root() / "bench" / "speed_vs_zen3.json", default=None),
                budget_s=60 * args.budget_min, papers={p: v["wall_s"] for p, v in res["papers"].items()})
    write_benchmark("reproduce", res)
    print(f"make reproduce: {res['total_s'] / 60:.1f} min on this machine against a budget of {args.budget_min:g} "
          f"({'within' if res['within_budget'] else 'over, or a paper did not complete'}); "
          f"load average before {load_before[0]:.2f}")
    eq = res.get("zen3_equivalent_s")
    print(f"front door ({res['machine_class']} class): " + (f"{eq[0] / 60:.1f}-{eq[1] / 60:.1f} min on Zen 3 against "
          f"the goal of {GOAL_ZEN3_S / 60:.0f} ({'within' if res['within_goal'] else 'over'}) and the budget of "
          f"{args.budget_min:g} ({'within' if res['within_budget_zen3'] else 'over'})" if eq else res.get("why", "")))
    return codes.get("papers", 1)   # as `make reproduce`: 1 when a paper's run failed, 2 on a user error


if __name__ == "__main__":
    sys.exit(main())
