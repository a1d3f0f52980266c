"""Benchmark of paperid (`make bench`): the study at the quick profile's size on this machine's CPU.

TEMPLATE: time what your README's speed claims rest on, against a reference where the paper released one, with the
load average beside the numbers (timings on a loaded machine are inflated). Writes results/bench/paperid.json,
shown in the README by a `<!-- generated: bench paperid key ... -->` block.

    python benchmarks/bench_paperid.py
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common.bench import time_call, write_benchmark  # noqa: E402
from common.runs import Run  # noqa: E402
from common.study import get_config, measure  # noqa: E402


def main() -> None:
    cfg = get_config("paperid", "quick")
    before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        run = Run.open("paperid", "quick", run_dir=tmp, seed=0, device="cpu")
        timing = time_call(lambda: measure("paperid", "estimate", cfg, run), repeat=3)
    print(f"study at n_draws = {cfg.n_draws}: best of 3 {timing:.3f} s")
    write_benchmark("paperid", {"n_draws": cfg.n_draws, "study_s": timing,
                                "load_average_before": [round(x, 2) for x in before],
                                "load_average_after": [round(x, 2) for x in os.getloadavg()]})


if __name__ == "__main__":
    main()
