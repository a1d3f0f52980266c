"""The local path: each chosen paper, and each of its seeds, one after another in kernels on this machine."""
from __future__ import annotations

import os
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


def machine_busy_seconds() -> float | None:
    """CPU seconds every process on this machine (and the hypervisor's steal) has taken since boot: the first line
    of /proc/stat, all but idle and iowait; None where it cannot be read. Its change over a run, less the run's own
    CPU seconds, is the work that shared the machine with the run."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
        user, nice, system, _idle, _iowait, irq, softirq, steal = fields
        return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return None


class Usage:
    """The CPU a run's seed takes from its start: its own (`cpu_seconds`) and the machine's (`machine_busy_seconds`),
    with the load average at the start."""

    def __init__(self):
        self.cpu0, self.busy0 = cpu_seconds(), machine_busy_seconds()
        self.load_before = [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None

    def now(self) -> dict:
        """{'cpu': own CPU seconds, 'busy': the machine's busy CPU seconds (None: unreadable), 'load_before'}."""
        busy = machine_busy_seconds()
        return {"cpu": cpu_seconds() - self.cpu0, "busy": None if busy is None or self.busy0 is None else busy - self.busy0,
                "load_before": self.load_before}


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
                started, t0, usage = now(), time.perf_counter(), Usage()
                executed: list = []
                try:
                    executed, run.failure = execute.run_notebooks(paper, profile, run.run_params(seed), declared, device, run.timeout,
                                                          quiet, out, run.label(seed), executed)
                except KeyboardInterrupt:
                    run.record(seed, out, executed, started, time.perf_counter() - t0, "interrupted", usage.now())
                    raise
                if run.failure is not None and run.failure.ename == "UserError":
                    raise run.drop(run.failure.evalue)
                run.record(seed, out, executed, started, time.perf_counter() - t0, "ok" if run.failure is None else "failed",
                           usage.now())
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
