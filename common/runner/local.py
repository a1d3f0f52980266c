"""The local path: each chosen paper, and each of its seeds, one after another in kernels on this machine."""
from __future__ import annotations

import resource
import sys
import time
from pathlib import Path

from ..errors import UserError
from ..runs import now
from . import execute
from .judge import print_table
from .params import check_values, preflight
from .staging import StagedRun, locked


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and of its children that have ended (a paper's kernel and its pool
    workers, once the kernel is shut down): a run's cores in use are its CPU seconds over its wall seconds. A lower
    bound: a worker process its parent never waits for (a pool left to die with the kernel) is not counted."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def run_paper(paper: str, profile: str, params: dict, declared: dict[Path, dict], device: str | None, timeout: int | None,
              quiet: bool = False, seeds: list[int] | None = None) -> dict:
    """Execute the notebooks in `declared` (notebook -> its parameters); returns {'paper', 'ok', 'summary', 'wall_s', 'dir', 'table'}.

    With `seeds`, the paper runs once per seed into `<profile>/seed-<k>/`, and `<profile>/claims.csv`
    holds each seed's verdict and the overall verdict (`combine_seeds`). Holds the paper/profile lock
    throughout; an interruption (Ctrl-C, SIGTERM) keeps what ran as `<profile>-failed/` and re-raises.
    """
    with locked(paper, profile):
        run = StagedRun(paper, profile, params, declared, device, timeout, seeds)
        try:
            for seed in list(run.waiting):
                out = run.out(seed)
                started, t0, cpu0 = now(), time.perf_counter(), cpu_seconds()
                executed: list = []
                try:
                    executed, run.failure = execute.run_notebooks(paper, profile, run.run_params(seed), declared, device, run.timeout,
                                                          quiet, out, run.label(seed), executed)
                except KeyboardInterrupt:
                    run.record(seed, out, executed, started, time.perf_counter() - t0, "interrupted", cpu_seconds() - cpu0)
                    raise
                if run.failure is not None and run.failure.ename == "UserError":
                    raise run.drop(run.failure.evalue)
                run.record(seed, out, executed, started, time.perf_counter() - t0, "ok" if run.failure is None else "failed",
                           cpu_seconds() - cpu0)
                if run.failure is not None:
                    break
        except BaseException:  # Ctrl-C, SIGTERM, anything unexpected: keep what ran as <profile>-failed, leave no staging
            run.keep_interrupted()
            raise
        return run.conclude()


def run_papers(chosen: list[str], args, params: dict, declared: dict[str, dict[Path, dict]]) -> int:
    """Run each chosen paper and print its table; 0 when all ran, 1 when one failed (with `all`, one paper's
    user error is printed and the others still run)."""
    ok = True
    for paper in chosen:
        if len(chosen) == 1:
            result = run_paper(paper, args.profile, params, declared[paper], args.device, args.timeout, args.quiet, args.seeds)
        else:  # `all`: one paper's user error must not stop the others
            try:
                check_values(paper, args.profile, params, declared[paper])
                preflight(paper, args.profile, params)
                result = run_paper(paper, args.profile, params, declared[paper], args.device, args.timeout, args.quiet, args.seeds)
            except UserError as err:
                print(f"error: {paper}: {err}", file=sys.stderr)
                ok = False
                continue
        print_table(result)
        ok = ok and result["ok"]
    return 0 if ok else 1
