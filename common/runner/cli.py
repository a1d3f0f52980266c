"""The command line `python -m common.reproduce`: its options, the checks made before anything is
written, and the choice of path (`--rejudge`, the local path, or the Dask fan-out with `--cluster`).

Exit status: 0 when every run ran (a claim that does not reproduce is reported, not a crash), 1 when
a notebook failed, 2 on a user error (one line, nothing written), 130 when interrupted.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from pathlib import Path

from .. import paths
from ..devseeds import FIRST as DEV_FIRST
from ..errors import UserError, user_errors_exit
from ..profiles import PROFILE_NAMES
from . import registry
from .concurrent import run_concurrent
from .fanout import run_fanout
from .judge import print_table, rejudge
from .local import run_papers
from .params import accepted_names, check_params, check_seeds, check_values, parse_params, preflight
from .staging import check_writable

DESCRIPTION = "Run a paper's notebooks headlessly and judge its claims."


def parser(papers: list[str]) -> argparse.ArgumentParser:
    """The options of `python -m common.reproduce`."""
    ap = argparse.ArgumentParser(prog="python -m common.reproduce", description=DESCRIPTION)
    ap.add_argument("paper", help=f"one of: {', '.join(papers + ['all'])}")
    ap.add_argument("--profile", default="quick", help="smoke | quick | full (default quick)")
    ap.add_argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE", help="notebook parameter override")
    ap.add_argument("--device", default=None, help="auto | cpu | cuda[:i] | rocm | xpu | mps")
    ap.add_argument("--timeout", type=int, default=None, help="per-cell timeout in seconds")
    ap.add_argument("--quiet", action="store_true", help="no papermill progress bar")
    ap.add_argument("--seeds", type=int, nargs="+", default=None, metavar="K",
                    help="run once per seed into <profile>/seed-<k>/ and judge every claim at each seed")
    ap.add_argument("--results", default=None, metavar="DIR", help="results folder (default $REPRO_RESULTS, else results/)")
    ap.add_argument("--cluster", default=None, metavar="ADDRESS",
                    help="a Dask scheduler (e.g. tcp://scheduler:8786; default $REPRO_CLUSTER): independent runs "
                         "(all, --seeds) become its tasks, a single run's parallel tasks go to it")
    ap.add_argument("--development", action="store_true",
                    help="a development run (seeds >= 100 only), written under <results>/development/ apart from the "
                         "reported runs; `python -m common.decidability <id>` checks its claims before they are frozen")
    ap.add_argument("--jobs", type=int, default=1, metavar="N",
                    help="with all: up to N papers at once, each in its own runner process (a paper whose numbers are "
                         "timings runs alone after them); every number but a timing is the same as with 1 (default 1)")
    ap.add_argument("--rejudge", action="store_true",
                    help="judge the complete run again with the current claims.yaml, from its metrics; runs no notebook")
    return ap


def check_choice(paper: str, profile: str, papers: list[str]) -> None:
    """A known paper (or `all`) and a known profile, else a UserError listing the choices."""
    if paper != "all" and paper not in papers:
        raise UserError(f"unknown paper {paper!r}; choose one of {', '.join(papers + ['all'])}")
    if profile not in PROFILE_NAMES:
        raise UserError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILE_NAMES)}")


def main(argv: list[str] | None = None) -> int:
    """`python -m common.reproduce ...`: the exit status (a user error exits 2 through SystemExit)."""
    papers = registry.papers()
    args = parser(papers).parse_args(argv)
    with user_errors_exit():
        if args.results:
            os.environ["REPRO_RESULTS"] = str(Path(args.results).resolve())  # the kernels inherit it
        check_choice(args.paper, args.profile, papers)
        if args.jobs < 1:
            raise UserError(f"--jobs must be at least 1, got {args.jobs}")
        if args.development:
            development_results(args)
        chosen = papers if args.paper == "all" else [args.paper]
        if args.rejudge:
            if args.param or args.seeds or args.device or args.cluster:
                raise UserError("--rejudge runs no notebook: it takes no -p, --seeds, --device or --cluster")
            for paper in chosen:
                if args.paper == "all" and not (paths.run_dir(paper, args.profile) / "claims.csv").exists():
                    continue
                print_table(rejudge(paper, args.profile))
            return 0
        if args.device is not None or os.environ.get("REPRO_DEVICE", "").strip():
            from ..device import select_device

            select_device(args.device)  # fail before anything is written (also for $REPRO_DEVICE)
        params = parse_params(args.param)
        check_seeds(params, args.seeds, development=args.development)
        declared = check_params(chosen, params)
        if len(chosen) == 1:
            check_values(chosen[0], args.profile, params, declared[chosen[0]])
            preflight(chosen[0], args.profile, params)
        from ..cluster import address, connect

        client, addr = None, address(args.cluster)
        if addr is not None:  # reachable before anything is written
            client = connect(addr)
            os.environ["REPRO_CLUSTER"] = addr  # a single run's kernels send their pmap tasks there
        check_writable(paths.results_root())
        with sigterm_as_interrupt(), closing(client):
            set_kernel_env(args.profile)
            if client is not None and (len(chosen) > 1 or len(args.seeds or []) > 1):
                return run_fanout(client, chosen, args, params, declared)
            if args.jobs > 1 and len(chosen) > 1:
                accepts = {p: accepted_names(p, nbs) for p, nbs in declared.items()}
                return run_concurrent(chosen, args.profile, sys.argv[1:] if argv is None else list(argv), args.jobs, accepts)
            return run_papers(chosen, args, params, declared)


def development_results(args) -> None:
    """A development run: seeds given with --seeds, all development seeds, and results under
    `<results>/development/`, so that it never replaces or mixes with a reported run."""
    from ..devseeds import require_development

    if args.rejudge:
        raise UserError("--development runs notebooks; re-judge a development run with --rejudge --results <results>/development")
    if not args.seeds:
        raise UserError(f"--development needs --seeds with development seeds (>= {DEV_FIRST}), e.g. --seeds {DEV_FIRST}")
    require_development(args.seeds)
    os.environ["REPRO_RESULTS"] = str(paths.development_root())


@contextlib.contextmanager
def closing(client):
    """The cluster's clients closed when the run ends (nothing to do without one)."""
    try:
        yield
    finally:
        if client is not None:
            from ..cluster import close_all

            close_all()


def set_kernel_env(profile: str) -> None:
    """What the notebooks' kernels inherit: this interpreter first on PATH, and the profile."""
    bindir = str(Path(sys.executable).parent)  # the kernel must see this interpreter first
    os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    os.environ["REPRO_PROFILE"] = profile


class Interrupted(KeyboardInterrupt):
    """SIGTERM, turned into an exception so that the run is put away before the process ends."""


def _raise_interrupted(signum, frame):
    raise Interrupted()


@contextlib.contextmanager
def sigterm_as_interrupt():
    """While running, SIGTERM (a `kill`) unwinds like Ctrl-C, so the run is put away as failed."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGTERM, _raise_interrupted)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)
