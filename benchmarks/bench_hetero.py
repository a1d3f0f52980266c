"""Benchmark: papers.hetero links on this machine (CPU emulation, gloo over loopback).

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007

* tokens/s of the emulated two-stage pipeline (2 processes, one per core) per link, in interleaved
  windows (rotating order), with min/median/max and the ratio to the direct (homogeneous) link;
* point-to-point one-way GB/s against message size for direct, device-direct and CPU-forwarding
  with k = 1, 2, 4 channels.

Writes results/bench/hetero.json (`load_average_before`/`_after`: the 1, 5 and 15 minute load averages,
shown in the README's generated bench block with the CPU model). Timings on a loaded machine are
inflated.

    python benchmarks/bench_hetero.py [--repeats N] [--window-steps S]

`--repeats` is the number of interleaved windows per link (default 8); an unknown or bad argument
ends in one line and exit 2.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common.bench import write_benchmark  # noqa: E402
from papers.hetero.config import get_config  # noqa: E402
from papers.hetero.studies.throughput import links_benchmark  # noqa: E402


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return n


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="bench_hetero.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=_positive, default=8, help="interleaved windows per link (default 8)")
    ap.add_argument("--window-steps", type=_positive, default=None, help="steps per window (default: the quick profile's)")
    return ap.parse_args(argv)  # unknown arguments: usage + one error line, exit 2


def main(argv=None) -> None:
    args = parse_args(argv)
    over = {"tput_windows": args.repeats}
    if args.window_steps:
        over["tput_window_steps"] = args.window_steps
    cfg = get_config("quick", **over)
    before = os.getloadavg()
    bench = links_benchmark(cfg, seed=0)
    tp, pp = bench["throughput"], bench["p2p"]
    ratios = {k: {"median": statistics.median(v), "min": min(v), "max": max(v)} for k, v in tp["ratios"].items()}
    gbps = {k: {s: {"median": statistics.median(v), "min": min(v), "max": max(v)} for s, v in d.items()}
            for k, d in pp["gbps"].items()}
    results = {"load_avg_1min_at_start": before[0], "load_average_before": [round(x, 2) for x in before],
               "load_average_after": [round(x, 2) for x in os.getloadavg()], "tokens_per_s": tp["summary"], "ratio_to_direct": ratios,
               "tokens_per_step": tp["tokens_per_step"], "p2p_gbps": gbps,
               "p2p_direct_fit": {"alpha_s": pp["fit"][0], "beta_Bps": pp["fit"][1]},
               "setup": {"processes": 2, "windows": cfg.tput_windows, "window_steps": cfg.tput_window_steps,
                         "model": cfg.model, "partition": cfg.partition, "n_micro": cfg.n_micro,
                         "repeats": args.repeats}}
    for k, r in ratios.items():
        print(f"{k:>16}: {tp['summary'][k]['median']:8.0f} tok/s  ratio to direct {r['median']:.3f} [{r['min']:.3f}, {r['max']:.3f}]")
    for k, d in gbps.items():
        print(f"{k:>16}: " + "  ".join(f"{int(s) >> 10}KiB {v['median']:.2f}" for s, v in sorted(d.items(), key=lambda kv: int(kv[0]))) + " GB/s")
    write_benchmark("hetero", results)


if __name__ == "__main__":
    main()
