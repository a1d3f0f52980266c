"""The one device check: every paper on a GPU, in one call sized for a lent one-GPU machine (9 minutes).

    python benchmarks/device_check.py [--device cuda] [--papers acl asq ...] [--out DIR]
    python benchmarks/device_check.py --dry-run        # the same steps on the CPU at smoke sizes (the tests run it)

Steps, none stopping at another's failure (each in its own process, with a time limit):

1. **smoke on the device**: every notebook of each paper at the smoke profile, its code executed in a process
   with `device` set (no papermill or kernel: the GPU machine has neither), judged with the paper's claims;
   then the same on the CPU, and the verdicts compared (`verdicts_equal_cpu`, the claims that differ). The
   peak GPU memory of the device run says the paper actually used the GPU (0 means a silent CPU fallback).
2. **the CUDA tests**: `pytest -m cuda` with `REPRO_TEST_DEVICE` set to the device (every paper has some).
3. **a timed slice of every full profile** at its real sizes, `benchmarks/gpu_slice_<id>.py:full_slice`, which
   projects the whole full profile's GPU-hours from the slice and the profile's counts.

One summary, `results/bench/device_check.json` (`device_check_dry.json` for a dry run), also copied to
`--out`: device, date, revision, per paper pass/fail, the CUDA tests' counts, projected full cost. The top
README's "GPU check" block shows it (`make readme`).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# seconds per step on the device (smoke per paper and device, the CUDA tests, a slice per paper)
LIMITS = {"smoke": 150, "tests": 240, "slice": 90}
DRY_LIMITS = {"smoke": 300, "tests": 300, "slice": 120}
NEEDED = ("numpy", "scipy", "pandas", "matplotlib", "seaborn", "sklearn", "yaml", "tqdm", "PIL", "torch")


def papers() -> list[str]:
    """The papers with claims and notebooks (the runner's registry, read without importing the runner)."""
    return sorted(p.parent.name for p in (REPO / "papers").glob("*/claims.yaml")
                  if list((REPO / "notebooks" / p.parent.name).glob("[0-9]*.ipynb")))


def run_notebook(nb: Path, parameters: dict) -> None:
    """Execute a notebook's code cells in this process, `parameters` injected after its parameters cell."""
    from common.stamp import code_cells

    cells = json.loads(nb.read_text())["cells"]
    tags = [c.get("metadata", {}).get("tags", []) for c in cells if c.get("cell_type") == "code"]
    scope: dict = {"__name__": "__main__"}
    try:
        for src, tag in zip(code_cells(nb), tags):
            exec(compile(src, f"{nb.name}", "exec"), scope)
            if "parameters" in tag:
                scope.update(parameters)
    finally:
        import matplotlib.pyplot as plt

        plt.close("all")


def smoke(paper: str, device: str) -> dict:
    """Every notebook of `paper` at smoke on `device`, judged; the peak GPU memory it took."""
    import torch

    from common.claims import evaluate, load_claims, summary
    from common.io import read_json

    cuda = device.startswith("cuda") and torch.cuda.is_available()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    out = {"paper": paper, "device": device, "ok": False}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"devcheck-{paper}-") as tmp:
        os.environ["REPRO_RESULTS"] = tmp
        run_dir = Path(tmp) / paper / "smoke"
        for nb in sorted((REPO / "notebooks" / paper).glob("[0-9]*.ipynb")):
            try:
                run_notebook(nb, {"profile": "smoke", "device": device, "run_dir": str(run_dir), "seed": 0})
            except Exception as err:  # noqa: BLE001 - recorded, the next paper still runs
                out["error"] = f"{nb.name}: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"[:400]
                break
        else:
            metrics = read_json(run_dir / "metrics.json", default={}) or {}
            table = evaluate(load_claims(REPO / "papers" / paper / "claims.yaml"), metrics, "smoke")
            s = summary(table)
            out.update(ok=True, verdicts=dict(zip(table["id"], table["verdict"])),
                       counts={k: v for k, v in s.items() if not isinstance(v, tuple)})
    out["seconds"] = round(time.perf_counter() - t0, 2)
    out["peak_gpu_mem_gb"] = round(torch.cuda.max_memory_allocated() / 1e9, 4) if cuda else None
    return out


def gpu_slice(paper: str, device: str, dry_run: bool) -> dict:
    from common.bench import load_benchmark

    if not (REPO / "benchmarks" / f"gpu_slice_{paper}.py").exists():
        return {"ok": False, "error": f"no benchmarks/gpu_slice_{paper}.py"}
    mod = load_benchmark(f"gpu_slice_{paper}")
    t0 = time.perf_counter()
    res = dict(mod.full_slice(device, dry_run))
    res.setdefault("seconds", round(time.perf_counter() - t0, 2))
    return res


def _child(args: list[str], limit: float, env: dict | None = None) -> dict:
    """Run this script's sub-step in a fresh process; its JSON answer, or why there is none."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        answer = Path(f.name)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, __file__, *args, "--answer", str(answer)], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=limit)
        res = json.loads(answer.read_text()) if answer.stat().st_size else \
            {"ok": False, "error": (proc.stderr.strip().splitlines() or ["no answer"])[-1][:400]}
    except subprocess.TimeoutExpired:
        res = {"ok": False, "error": f"over its {limit:.0f} s limit"}
    finally:
        answer.unlink(missing_ok=True)
    res.setdefault("wall_s", round(time.perf_counter() - t0, 1))
    return res


def cuda_tests(device: str, limit: float) -> dict:
    """`pytest -m cuda` with the session's device set: the counts from its closing line."""
    env = dict(os.environ, REPRO_TEST_DEVICE=device)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "pytest", "-m", "cuda", "-q", "-p", "no:cacheprovider", "-rs", "tests"],
                              cwd=REPO, env=env, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"over its {limit:.0f} s limit"}
    tail = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr.strip()[-300:]
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|deselected|errors?)", tail)}
    return {"ok": proc.returncode in (0, 5) and not counts.get("failed") and not counts.get("error") and not counts.get("errors"),
            "counts": counts, "closing_line": tail[-300:], "seconds": round(time.perf_counter() - t0, 1)}


def environment() -> dict:
    import importlib.util

    missing = [m for m in NEEDED if importlib.util.find_spec(m) is None]
    info = {"python": sys.version.split()[0], "missing_modules": missing}
    try:
        import torch

        info["torch"] = torch.__version__
        info["cuda_runtime"] = torch.version.cuda
        if torch.cuda.is_available():
            p = torch.cuda.get_device_properties(0)
            info["gpu"] = p.name
            info["gpu_mem_gb"] = round(p.total_memory / 1e9, 1)
    except ImportError:
        pass
    return info


def check(device: str, dry_run: bool, which: list[str], out_dir: Path | None) -> dict:
    limits = DRY_LIMITS if dry_run else LIMITS
    env = dict(os.environ, PYTHONUNBUFFERED="1", REPRO_PROGRESS="0", MPLBACKEND="Agg")
    summary = {"device": device, "dry_run": dry_run, "environment": environment(), "papers": {}}
    for paper in which:
        row = {}
        on_device = _child(["_smoke", paper, "--device", device], limits["smoke"], env)
        row["smoke"] = "pass" if on_device.get("ok") else "fail"
        row["smoke_error"] = on_device.get("error", "")
        row["smoke_s"] = on_device.get("seconds")
        row["smoke_counts"] = on_device.get("counts")
        row["peak_gpu_mem_gb"] = on_device.get("peak_gpu_mem_gb")
        if not dry_run and on_device.get("ok"):
            on_cpu = _child(["_smoke", paper, "--device", "cpu"], limits["smoke"], env)
            if on_cpu.get("ok"):
                differ = sorted(k for k, v in on_device["verdicts"].items() if on_cpu["verdicts"].get(k) != v)
                row["verdicts_equal_cpu"], row["verdicts_differ"] = not differ, differ
        sl = _child(["_slice", paper, "--device", device] + (["--dry-run"] if dry_run else []), limits["slice"], env)
        row["slice"] = "pass" if sl.get("ok") else "fail"
        row["slice_error"] = sl.get("error", "")
        for k in ("seconds", "projected_gpu_hours", "basis", "peak_mem_gb", "notes"):
            if k in sl:
                row[f"slice_{k}" if k in ("seconds", "peak_mem_gb") else k] = sl[k]
        summary["papers"][paper] = row
        print(f"[device check] {paper}: smoke {row['smoke']}, slice {row['slice']}"
              + (f", projected {row['projected_gpu_hours']:.3g} GPU-h" if isinstance(row.get("projected_gpu_hours"), (int, float)) else ""),
              flush=True)
    summary["cuda_tests"] = cuda_tests(device, limits["tests"])
    print(f"[device check] CUDA tests: {summary['cuda_tests'].get('closing_line') or summary['cuda_tests'].get('error')}", flush=True)
    hours = [r.get("projected_gpu_hours") for r in summary["papers"].values()]
    summary["projected_gpu_hours_total"] = round(sum(hours), 3) if all(isinstance(h, (int, float)) for h in hours) and hours else None
    summary["all_pass"] = all(r["smoke"] == "pass" and r["slice"] == "pass" for r in summary["papers"].values()) \
        and summary["cuda_tests"].get("ok", False)
    from common.bench import write_benchmark

    path = write_benchmark("device_check_dry" if dry_run else "device_check", summary)
    if out_dir:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / path.name).write_text(path.read_text())
    return summary


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("step", nargs="?", default="all", choices=["all", "_smoke", "_slice"], help=argparse.SUPPRESS)
    ap.add_argument("paper", nargs="?", help=argparse.SUPPRESS)
    ap.add_argument("--device", default=None, help="the device (default cuda; cpu with --dry-run)")
    ap.add_argument("--dry-run", action="store_true", help="the same steps on the CPU at smoke sizes")
    ap.add_argument("--papers", nargs="*", default=None, help="only these papers (default: every paper)")
    ap.add_argument("--out", default=os.environ.get("OUT"), help="also copy the summary here (default $OUT)")
    ap.add_argument("--answer", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    device = args.device or ("cpu" if args.dry_run else "cuda")
    if args.step != "all":
        res = smoke(args.paper, device) if args.step == "_smoke" else gpu_slice(args.paper, device, args.dry_run)
        Path(args.answer).write_text(json.dumps(res, default=str))
        return 0
    if device.startswith("cuda") and not args.dry_run:
        import torch

        if not torch.cuda.is_available():
            print("error: no CUDA device visible to torch; run this on a GPU machine, or pass --dry-run", file=sys.stderr)
            return 2
    known = papers()
    bad = [p for p in args.papers or [] if p not in known]
    if bad:
        print(f"error: unknown paper {bad[0]!r}; choose from {', '.join(known)}", file=sys.stderr)
        return 2
    s = check(device, args.dry_run, args.papers or known, Path(args.out) if args.out else None)
    return 0 if s["all_pass"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
