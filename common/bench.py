"""Benchmarks: timing helpers and `results/bench/<name>.json` (never timing assertions in tests)."""
from __future__ import annotations

import time
from pathlib import Path

from . import paths
from .io import atomic_write_json
from .machine import machine
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
    out = paths.results_root() / "bench" / f"{name}.json"
    atomic_write_json(out, {"name": name, "when": now(), "git": git_state(), "versions": versions(),
                            "machine": machine(), "results": results})
    print(f"wrote {out}")
    return out


def load_benchmark(name: str):
    """The module `benchmarks/<name>.py` (the benchmarks folder is not a package), loaded from its file and
    registered in `sys.modules` while it runs (dataclasses and pickling look their module up there)."""
    import importlib.util
    import sys

    path = paths.REPO / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def slice_cli(full_slice, doc: str, argv=None, **int_options) -> int:
    """The command line of a `benchmarks/gpu_slice_<id>.py`: `--device` (default cuda), `--dry-run`, and an
    integer option per keyword (its default), passed through to `full_slice`; prints the result as JSON."""
    import argparse
    import json

    ap = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dry-run", action="store_true", help="the same code on the CPU at tiny sizes")
    for key, default in int_options.items():
        ap.add_argument(f"--{key.replace('_', '-')}", type=int, default=default)
    args = vars(ap.parse_args(argv))
    device, dry = args.pop("device"), args.pop("dry_run")
    print(json.dumps(full_slice(device, dry, **args), indent=1, default=str))
    return 0
