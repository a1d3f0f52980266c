"""Benchmarks: timing helpers and `results/bench/<name>.json` (never timing assertions in tests)."""
from __future__ import annotations

import platform
import time
from pathlib import Path

from . import paths
from .io import atomic_write_json
from .runs import git_state, now, versions


class Timer:
    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.start


def time_call(fn, repeat: int = 3, warmup: int = 1) -> float:
    """Best wall time of `repeat` calls after `warmup` calls, in seconds."""
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def write_benchmark(name: str, results: dict) -> Path:
    import os

    out = paths.results_root() / "bench" / f"{name}.json"
    atomic_write_json(out, {"name": name, "when": now(), "git": git_state(), "versions": versions(),
                            "machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine()},
                            "results": results})
    print(f"wrote {out}")
    return out
