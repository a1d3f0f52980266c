"""How fast this machine is against the 2-core Zen 3 class, on the same papers' own code.

    python benchmarks/speed_vs_zen3.py [--papers diffusion hetero] [--from-runs DIR]

The `make reproduce` budget is stated for a 2-core machine without AVX-512 (an AMD EPYC of the Zen 3
class, family 25 model 1). A machine of another class can only judge it through a measured ratio. The
reference is `make budget` at commit `REFERENCE["commit"]` on that Zen 3 machine (idle, load average
0.02 before): each paper's quick wall time at seed 0 (`REFERENCE["papers"]`, as its stamped README
block recorded). This script checks that commit out into a temporary git worktree, runs the same papers at
quick, seed 0, here (the current venv; `--from-runs DIR`: read the manifests of such runs already made
into DIR instead), and writes `results/bench/speed_vs_zen3.json`: per paper the ratio
`zen3_s / here_s` (how many times faster this machine is), and their range. Run it alone on an idle
machine: a timing on a loaded machine is not a result.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import paths  # noqa: E402
from common.bench import write_benchmark  # noqa: E402
from common.io import read_json  # noqa: E402

REFERENCE = {"commit": "3ba984e", "machine": "2 CPUs, AMD EPYC (25/1; avx2)", "load_average_before": 0.02,
             "papers": {"acl": 630.5, "asq": 535.5, "diffusion": 209.8, "hetero": 321.6, "netrecon": 421.1,
                        "nlm": 459.6}}
DEFAULT_PAPERS = ("diffusion", "hetero")   # the two shortest: about 5 minutes here


def wall_of(results: Path, paper: str) -> float | None:
    """Seed 0's wall time of a quick run of `paper` under `results` (None when it is absent or failed)."""
    man = read_json(results / paper / "quick" / "manifest.json", default=None)
    return man.get("wall_s") if man and man.get("status", "ok") == "ok" else None


def ratios(here: dict[str, float | None]) -> dict:
    """The figures of the comparison: per paper Zen 3 seconds, seconds here and their ratio, and the range."""
    per = {p: {"zen3_s": REFERENCE["papers"][p], "here_s": s, "ratio": round(REFERENCE["papers"][p] / s, 3) if s else None}
           for p, s in here.items()}
    got = [v["ratio"] for v in per.values() if v["ratio"]]
    return {"reference": REFERENCE, "papers": per, "ratio_min": min(got) if got else None,
            "ratio_max": max(got) if got else None}


def run_reference(papers: list[str], results: Path) -> None:
    """The reference commit's quick run of each paper at seed 0, into `results`."""
    with tempfile.TemporaryDirectory(prefix="zen3-ref-") as tree:
        subprocess.run(["git", "worktree", "add", "-f", "--detach", tree, REFERENCE["commit"]], cwd=paths.REPO,
                       check=True, capture_output=True)
        try:
            env = dict(os.environ, PYTHONPATH=tree, REPRO_RESULTS=str(results))
            for p in papers:
                print(f"{p} at {REFERENCE['commit']} ...", file=sys.stderr, flush=True)
                subprocess.run([sys.executable, "-m", "common.reproduce", p, "--profile", "quick"], cwd=tree, env=env,
                               stdout=subprocess.DEVNULL)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", tree], cwd=paths.REPO, capture_output=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python benchmarks/speed_vs_zen3.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--papers", nargs="+", default=list(DEFAULT_PAPERS), choices=sorted(REFERENCE["papers"]))
    ap.add_argument("--from-runs", metavar="DIR", help="read the quick runs already made at the reference commit into DIR")
    args = ap.parse_args(argv)
    load = list(os.getloadavg())
    if args.from_runs:
        results = Path(args.from_runs)
        if not results.is_dir():
            print(f"error: {results} is not a folder; name the results folder of runs at {REFERENCE['commit']}", file=sys.stderr)
            return 2
        res = ratios({p: wall_of(results, p) for p in args.papers})
    else:
        with tempfile.TemporaryDirectory(prefix="zen3-runs-") as tmp:
            run_reference(args.papers, Path(tmp))
            res = ratios({p: wall_of(Path(tmp), p) for p in args.papers})
    res |= ({"load_average_before": None, "load_average_after": None, "from_runs": True} if args.from_runs else
            {"load_average_before": load, "load_average_after": list(os.getloadavg()), "from_runs": False})
    write_benchmark("speed_vs_zen3", res)
    print(f"this machine against Zen 3 on the same code: x{res['ratio_min']} to x{res['ratio_max']}")
    return 0 if res["ratio_min"] else 1


if __name__ == "__main__":
    sys.exit(main())
