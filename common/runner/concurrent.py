"""`--jobs N`: several papers at once on this machine, each in its own runner process.

A paper's quick run leaves part of the machine idle (the manifest's `cores_used`, CPU over wall seconds: a
run that keeps 1.2 of 2 cores busy leaves 40 % of them to another paper). With `all --jobs 2` the runner starts
each paper as `python -m common.reproduce <id> ...` (the same options), up to N at a time, the longest first
(the wall time of the paper's last complete run), and waits for them. Each child keeps the whole local path:
its lock, staging, judging, its table, and its exit status; the threads of each process are what a lone run
uses, so every number but a timing is the same bitwise as with one job at a time.

Measured on a 2-core machine (Intel Xeon 6/167), two papers at once are far slower than one after the other:
acl and asq each keep 1.9 cores busy alone, and beside each other asq's notebook 01 took 584 s against 39 s alone
(acl's 434 s against 174 s): threads and pool workers of both contend for two cores. `--jobs` is for a machine with
cores to spare (at least 2 per paper); `make reproduce` keeps JOBS=1.

A paper whose numbers are timings declares it in its cost model (`papers/<id>/cost.py`,
`RUNS_ALONE = "why"`): it runs after the others, alone. Ctrl-C or SIGTERM stops every child: each gets SIGTERM
and keeps what ran as `<profile>-failed/`, as a lone run does; after `STOP_GRACE_S` seconds whatever is left of the
child's process group (the child, its notebook kernel, the kernel's pool workers) is killed, so an interrupted
`--jobs` run leaves no process behind. Each child starts a session of its own for that (`start_new_session`).
"""
from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
import time

from .. import paths
from ..io import read_json

STOP_GRACE_S = 20.0   # how long a child has to put its run away after SIGTERM before its process group is killed


def runs_alone(paper: str) -> str | None:
    """Why `paper` must have the machine to itself (its cost model's `RUNS_ALONE`), or None."""
    try:
        reason = getattr(importlib.import_module(f"papers.{paper}.cost"), "RUNS_ALONE", None)
    except ModuleNotFoundError:
        return None
    return str(reason) if reason else None


def last_wall(paper: str, profile: str) -> float:
    """The wall seconds of the paper's last complete run at `profile` (0 when there is none)."""
    man = read_json(paths.run_dir(paper, profile) / "manifest.json", default={}) or {}
    return float(man.get("wall_s") or 0.0)


def schedule(papers: list[str], profile: str) -> tuple[list[str], list[str]]:
    """(papers that may share the machine, longest first; papers that run alone, in their order)."""
    alone = [p for p in papers if runs_alone(p)]
    shared = sorted((p for p in papers if p not in alone), key=lambda p: -last_wall(p, profile))
    return shared, alone


def child_argv(argv: list[str], paper: str, accepts: set[str] | None = None) -> list[str]:
    """This command's arguments for one paper: `all` replaced by `paper`, `--jobs` dropped, and each `-p key=value`
    whose key the paper does not take (`accepts`; None: all of them) left out, as `all` one at a time ignores it."""
    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        if a == "--jobs" or a in ("-p", "--param"):
            value = argv[i + 1] if i + 1 < len(argv) else ""
            if a != "--jobs" and (accepts is None or value.partition("=")[0].strip() in accepts):
                out += [a, value]
            i += 2
            continue
        if a.startswith("--jobs="):
            i += 1
            continue
        glued = a[len("--param="):] if a.startswith("--param=") else a[2:] if a.startswith("-p") and len(a) > 2 else None
        if glued is None:
            out.append(paper if a == "all" else a)
        elif accepts is None or glued.partition("=")[0].strip() in accepts:    # -pkey=value, --param=key=value
            out.append(a)
        i += 1
    return out


def run_concurrent(papers: list[str], profile: str, argv: list[str], jobs: int,
                   accepts: dict[str, set[str]] | None = None) -> int:
    """Each paper in its own `python -m common.reproduce` process, up to `jobs` at once, then the papers that run
    alone one by one; 0 when every run ran, else 1 (as `all` one at a time: a paper's user error or failure is
    printed by its own process and the others still run)."""
    shared, alone = schedule(papers, profile)
    for p in alone:
        print(f"[{p}/{profile}] runs alone after the others: {runs_alone(p)}", file=sys.stderr, flush=True)
    waves = [(shared, jobs)] + [([p], 1) for p in alone]
    codes: dict[str, int] = {}
    running: dict[str, subprocess.Popen] = {}
    try:
        for queue, width in waves:
            queue = list(queue)
            while queue or running:
                while queue and len(running) < width:
                    p = queue.pop(0)
                    cmd = child_argv(argv, p, None if accepts is None else accepts.get(p))
                    running[p] = subprocess.Popen([sys.executable, "-m", "common.reproduce", *cmd],
                                                  start_new_session=True)
                for p, proc in list(running.items()):
                    if proc.poll() is not None:
                        codes[p] = proc.returncode
                        del running[p]
                time.sleep(0.2)
    except BaseException:
        stop_children(list(running.values()))
        raise
    return 0 if all(c == 0 for c in codes.values()) else 1


def stop_children(procs: list[subprocess.Popen], grace: float = STOP_GRACE_S) -> None:
    """SIGTERM each child (it puts its run away as failed: SIGTERM is Ctrl-C there), wait up to `grace` seconds in
    all, then SIGKILL what is left of each child's process group: a kernel busy in a long cell, and its pool workers,
    would otherwise outlive the child and keep the cores busy."""
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for proc in procs:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for proc in procs:
        try:
            os.killpg(proc.pid, signal.SIGKILL)   # the child's session: its group id is its pid
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()
