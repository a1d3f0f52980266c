"""What each paper's FULL profile costs on one H100: an estimate from the profile's own counts.

    .venv/bin/python benchmarks/full_cost.py [--papers <id> ...]   # -> results/bench/full_cost.json (`common.bench.write_benchmark`)

For every paper of the registry (`common.runner.registry.papers`) the full profile is read at run time
(`common.study.get_config(paper, "full")`: `papers/<id>/config.py`'s PROFILES and BOUNDS) and
handed to the paper's own cost model, `papers/<id>/cost.py: estimate(cfg) -> common.costmodel.Estimate`
(common/README.md, the contract; `common.costmodel` holds the arithmetic and the assumed hardware). Every
number is an ESTIMATE from assumed inputs (each paper lists them under "assumptions"); none is a measurement.
Where the device check has run (`results/bench/device_check.json`, `benchmarks/device_check.py`), its
projected GPU-hours per paper are preferred and the source says "device check". One run of
`make reproduce-<id> PROFILE=full` is one seed; `SEEDS="0 1 2"` costs three times as much.
"""
from __future__ import annotations

import importlib
import json
import math
import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common.costmodel import CPU, H100, UTIL, round3  # noqa: E402
from common.runner.registry import papers as registered_papers  # noqa: E402

DEVICE_CHECK = "device check"


def full_profile(paper: str):
    """The paper's resolved full profile (`common.study.get_config`, the one every run uses)."""
    from common.study import get_config

    return get_config(paper, "full")


def cost_model(paper: str) -> ModuleType:
    """The paper's cost model, `papers/<id>/cost.py` (its `estimate(cfg)`)."""
    return importlib.import_module(f"papers.{paper}.cost")


# ------------------------------------------------------------------------------------------------
# the device check, when it has run
# ------------------------------------------------------------------------------------------------
def device_check_summary(root: Path | None = None) -> dict | None:
    """`results/bench/device_check.json` (`$REPRO_RESULTS` moves it), its summary; None when absent or unreadable."""
    from common import paths

    path = (root or paths.results_root()) / "bench" / "device_check.json"
    try:
        rec = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    summary = rec.get("results", rec) if isinstance(rec, dict) else None
    return summary if isinstance(summary, dict) and isinstance(summary.get("papers"), dict) else None


def _finite_positive(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def paper_cost(paper: str, check: dict | None = None) -> dict:
    """One paper's record: the estimate, with the device check's projected GPU-hours in its place when present. A full
    profile whose estimate has no GPU part (it computes on the CPU whatever the machine, e.g. an emulation) keeps it:
    a slice that timed some other GPU path of that paper is noted beside it, never billed (issue 42)."""
    rec = cost_model(paper).estimate(full_profile(paper)).record()
    row = (check or {}).get("papers", {}).get(paper) or {}
    hours = row.get("projected_gpu_hours")
    if _finite_positive(hours) and not rec["gpu_hours_estimate"] > 0:
        rec["device_check"] = {"projected_gpu_hours_not_billed": hours, "device": check.get("device"),
                               "note": "the full profile takes no GPU (its estimate has no GPU part): the device "
                                       "check's projection is not its cost"}
    elif _finite_positive(hours):
        rec["estimated_gpu_hours"] = rec["gpu_hours_estimate"]
        rec["gpu_hours_estimate"] = round3(float(hours))
        rec["source"] = DEVICE_CHECK
        rec["device_check"] = {k: row.get(k) for k in ("basis", "slice_peak_mem_gb", "notes") if row.get(k) is not None}
        rec["device_check"]["device"] = check.get("device")
        rec["device_check"]["when"] = check.get("when") or check.get("date")
    return rec


def full_cost(papers=None, check: dict | None | bool = True) -> dict:
    """{"papers": {id: record}, "total_gpu_hours_estimate": sum} over `papers` (default: every registered paper);
    `check=True` reads the device check's summary."""
    papers = registered_papers() if papers is None else papers
    if check is True:
        check = device_check_summary()
    out = {pid: paper_cost(pid, check or None) for pid in papers}
    return {"papers": out, "total_gpu_hours_estimate": round3(sum(r["gpu_hours_estimate"] for r in out.values())),
            "total_cpu_core_hours_estimate": round3(sum(r["cpu_core_hours_estimate"] for r in out.values())),
            "hardware_assumed": {"gpu": H100, "cpu": CPU, "utilisation": UTIL},
            "note": "estimates from the full profiles' counts and assumed throughputs (per paper: assumptions); one seed "
                    "per paper; 'device check' rows are the device check's projections"}


def main(argv=None) -> int:
    import argparse

    from common.bench import write_benchmark

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--papers", nargs="+", choices=registered_papers(), default=registered_papers())
    args = ap.parse_args(argv)
    results = full_cost(tuple(args.papers))
    for pid, r in results["papers"].items():
        print(f"{pid:9s} {r['gpu_hours_estimate']:>9.3g} GPU-h  {r['gpu_memory_gb_estimate']:>6.3g} GB  "
              f"{r['flops']:.3g} FLOP  CPU {r['cpu_core_hours_estimate']:.3g} core-h  ({r['source']})")
    print(f"total     {results['total_gpu_hours_estimate']:>9.3g} GPU-h")
    write_benchmark("full_cost", results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
