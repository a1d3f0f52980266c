"""Bytecode for what a run imports, written once at set-up (`make setup`), on every core.

A fresh venv holds ~15 000 source files (237 MB with torch, scipy, pandas, sympy and their test
suites). A run imports about a quarter of them; compiling every file (`compileall`) cost 26 s of
set-up on a 2-core Xeon, most of it for files no run imports. Here the modules a run imports are
imported once, in two processes with bytecode writing on (also where PYTHONDONTWRITEBYTECODE is
set, as in CI images), so each is compiled and cached: torch and its compiler front-end
(`torch._dynamo`, which every optimizer step imports) in one process, the rest (every module of
the packages named on the command line, which import the scientific and Jupyter stacks) in the
other. A module imported later that is not here is compiled at its first import, as Python always does.

    python -m common.bytecode common papers      # what `make setup` runs

A module that does not import (an optional dependency absent) is skipped: warming never fails a set-up.
"""
from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys

# one process: torch and its compiler front-end, the largest tree a run imports (~2 000 modules)
TORCH = ("torch", "torch._dynamo")
# the other: what the runner and its kernels import before any paper module does
STACK = ("numpy", "scipy", "pandas", "matplotlib.pyplot", "papermill", "ipykernel.kernelapp", "nbformat")


def modules_of(package: str) -> list[str]:
    """`package` and every module below it (importing the package to find them)."""
    pkg = importlib.import_module(package)
    names = [package]
    if hasattr(pkg, "__path__"):
        names += [m.name for m in pkgutil.walk_packages(pkg.__path__, package + ".", onerror=lambda _: None)]
    return names


def import_all(names: list[str], walk: list[str]) -> list[str]:
    """Import `names`, then every module of the packages `walk`; the names that failed to import."""
    failed = []
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:   # noqa: BLE001 - an optional dependency: skipped, never fatal
            failed.append(name)
    for package in walk:
        try:
            below = modules_of(package)
        except Exception:   # noqa: BLE001
            failed.append(package)
            continue
        for name in below:
            try:
                importlib.import_module(name)
            except Exception:   # noqa: BLE001
                failed.append(name)
    return failed


def warm(packages: list[str]) -> list[int]:
    """Two processes, bytecode writing on: TORCH in one, STACK and every module of `packages` in the other;
    their exit codes (each 0: a module that does not import is skipped)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    me = [sys.executable, "-m", "common.bytecode", "--child"]
    procs = [subprocess.Popen([*me, *TORCH], env=env, stdout=subprocess.DEVNULL),
             subprocess.Popen([*me, *STACK, "--walk", *packages], env=env, stdout=subprocess.DEVNULL)]
    return [p.wait() for p in procs]


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        rest = argv[1:]
        cut = rest.index("--walk") if "--walk" in rest else len(rest)
        sys.dont_write_bytecode = False
        import_all(rest[:cut], rest[cut + 1:])
        return 0
    failed = [code for code in warm(argv) if code]
    if failed:   # an optimisation only: a module that did not get its bytecode here compiles at its first import
        print(f"bytecode: a warm-up process ended with exit code {failed[0]}; the modules it did not reach compile "
              "at their first import instead", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
