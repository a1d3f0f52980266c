"""How much of the gap to the Zen 3 class is the vector instruction set, measured on an AVX-512 machine.

    python benchmarks/isa_share.py [--papers diffusion nlm] [--pairs 1]

`benchmarks/speed_vs_zen3.py` measures how many times faster this machine runs each paper's quick profile
than the 2-core Zen 3 class (AVX2, no AVX-512). Part of that ratio is the width of the vectors the kernels
use, the rest is the machine (clock, caches, memory) and the libraries' vendor paths. This script runs the
current code's quick profile at seed 0 here twice per pair, interleaved: as built, and with every library
held to AVX2 (`AVX2_ONLY`: PyTorch's kernel dispatch, MKL's and OpenBLAS's), and writes
`results/bench/isa_share.json`: per paper the seconds of each side, the slowdown `avx2_s / native_s` (its
range over the pairs) and, where `speed_vs_zen3.json` of this CPU model has it, the paper's measured ratio to
Zen 3 beside it. A slowdown well below that ratio says that most of the class gap is not the instruction
set, so that only a Zen 3 host can find where it is. Numba's kernels are compiled for this host either way.
It runs only where there is something to hold back (a CPU with AVX-512); run it alone on an idle machine.
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
from common.machine import machine, same_cpu  # noqa: E402
from common.runner.registry import papers as registered_papers  # noqa: E402
from common.paths import results_root  # noqa: E402

# every library that dispatches on the CPU, held to the Zen 3 class's widest vectors
AVX2_ONLY = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "OPENBLAS_CORETYPE": "Haswell"}
DEFAULT_PAPERS = ("diffusion", "nlm")   # the shortest, and the one furthest from Zen 3: about 12 minutes here


def side_env(side: str, base: dict | None = None) -> dict:
    """The environment of one side: "native" drops every AVX2_ONLY variable, "avx2" sets them all."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in AVX2_ONLY}
    if side == "avx2":
        env.update(AVX2_ONLY)
    elif side != "native":
        raise ValueError(f"side must be 'native' or 'avx2', got {side!r}")
    return env


def share(native_s: list[float], avx2_s: list[float], zen3_ratio: float | None) -> dict:
    """The figures of one paper: both sides' seconds, the slowdown per pair (avx2 / native, pairs in run order)
    and its range, and the measured ratio to Zen 3 when known."""
    per_pair = [round(a / n, 3) for n, a in zip(native_s, avx2_s)]
    return {"native_s": native_s, "avx2_s": avx2_s, "slowdown": per_pair,
            "slowdown_min": min(per_pair) if per_pair else None, "slowdown_max": max(per_pair) if per_pair else None,
            "zen3_ratio": zen3_ratio}


def zen3_ratios(speed: dict | None, here: dict) -> dict:
    """Each paper's measured ratio to Zen 3 from `speed_vs_zen3.json`, only when it was measured on this CPU."""
    if not speed:
        return {}
    if not same_cpu(speed.get("machine") or {}, here):
        return {}
    return {p: v.get("ratio") for p, v in ((speed.get("results") or {}).get("papers") or {}).items()}


def run_side(paper: str, side: str) -> float | None:
    """Seconds of `paper`'s quick profile at seed 0 on `side` (the run's own wall time; None when it failed)."""
    with tempfile.TemporaryDirectory(prefix=f"isa-{side}-") as tmp:
        env = dict(side_env(side), REPRO_RESULTS=tmp)
        subprocess.run([sys.executable, "-m", "common.reproduce", paper, "--profile", "quick", "--quiet"],
                       cwd=paths.REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        man = read_json(Path(tmp) / paper / "quick" / "manifest.json", default=None)
        return man.get("wall_s") if man and man.get("status", "ok") == "ok" else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python benchmarks/isa_share.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--papers", nargs="+", default=list(DEFAULT_PAPERS), choices=registered_papers())
    ap.add_argument("--pairs", type=int, default=1, help="interleaved (as built, AVX2 only) pairs per paper")
    args = ap.parse_args(argv)
    here = machine()
    if "avx512f" not in (here.get("simd") or []):
        print("error: this CPU has no AVX-512, so there is nothing to hold back; run it on an AVX-512 machine "
              "(benchmarks/speed_vs_zen3.py measures the ratio itself)", file=sys.stderr)
        return 2
    if args.pairs < 1:
        print(f"error: --pairs must be at least 1, got {args.pairs}", file=sys.stderr)
        return 2
    ratios = zen3_ratios(read_json(results_root() / "bench" / "speed_vs_zen3.json", default=None), here)
    load = list(os.getloadavg())
    papers = {}
    for p in args.papers:
        sides = {"native": [], "avx2": []}
        for i in range(args.pairs):
            for side in ("native", "avx2") if i % 2 == 0 else ("avx2", "native"):   # alternate which goes first
                print(f"{p}: pair {i + 1}/{args.pairs}, {side} ...", file=sys.stderr, flush=True)
                sides[side].append(run_side(p, side))
        if None in sides["native"] + sides["avx2"]:
            print(f"error: a quick run of {p} failed; run `make reproduce-{p}` to see why", file=sys.stderr)
            return 1
        papers[p] = share(sides["native"], sides["avx2"], ratios.get(p))
        print(f"{p}: AVX2 only x{papers[p]['slowdown_min']}-{papers[p]['slowdown_max']} slower here; "
              f"Zen 3 x{papers[p]['zen3_ratio'] or 'not measured on this CPU'}", file=sys.stderr, flush=True)
    write_benchmark("isa_share", {"avx2_only": AVX2_ONLY, "pairs": args.pairs, "papers": papers,
                                  "load_average_before": load, "load_average_after": list(os.getloadavg())})
    return 0


if __name__ == "__main__":
    sys.exit(main())
