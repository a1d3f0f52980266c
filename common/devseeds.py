"""Development seeds: the one place that says which seeds tune and which seeds report.

Settings are chosen on development seeds (100 and up) and development data, frozen in a paper's
`config.py`, and only then judged on the reported seeds (0, 1, 2; any seed below 100 is a reported
run). The runner refuses a development seed for a reported run (`require_reported`), and a paper's
`devtune` refuses a reported seed (`require_development`). What a development run chose is written
to `results/<id>/dev/<name>.json` (`run_seeds`), where the README generator reads it through the
paper's `config.TUNED` table, so the figures beside a frozen setting are generated, never copied.
"""
from __future__ import annotations

from pathlib import Path

from . import paths
from .errors import UserError
from .io import atomic_write_json, read_json

FIRST = 100                   # seeds >= FIRST tune; seeds below it are reported
DEFAULT = (100, 101, 102)     # the development seeds a devtune uses unless told
REPORTED = (0, 1, 2)          # the seeds every README's verdicts come from


def is_development(seed: int) -> bool:
    return int(seed) >= FIRST


def require_reported(seeds) -> None:
    """A reported run (the runner) may not use a development seed: one line naming the fix."""
    dev = sorted(int(s) for s in seeds if is_development(s))
    if dev:
        raise UserError(f"seed{'s' * (len(dev) > 1)} {', '.join(map(str, dev))} {'are' if len(dev) > 1 else 'is a'} "
                        f"development seed{'s' * (len(dev) > 1)} (>= {FIRST}), kept for tuning; report on seeds below "
                        f"{FIRST} (the READMEs use {', '.join(map(str, REPORTED))}), tune with `python -m papers.<id>.devtune`")


def require_development(seeds) -> None:
    """A development run (a paper's devtune) may not use a reported seed: one line naming the fix."""
    rep = sorted(int(s) for s in seeds if not is_development(s))
    if rep:
        raise UserError(f"seed{'s' * (len(rep) > 1)} {', '.join(map(str, rep))} {'are' if len(rep) > 1 else 'is a'} "
                        f"reported seed{'s' * (len(rep) > 1)}; development runs use seeds >= {FIRST} "
                        f"(e.g. --seeds {' '.join(map(str, DEFAULT))})")


def result_path(paper: str, name: str) -> Path:
    """`results/<paper>/dev/<name>.json`: one development run's record."""
    return paths.results_root() / paper / "dev" / f"{name}.json"


def run_seeds(paper: str, name: str, seeds, tune, summarise=None, extra=None) -> dict:
    """`tune(seed)` on each development seed, recorded as `results/<paper>/dev/<name>.json` with the
    revision at the start (and `git_at_end` when the code changed while it ran, so the record never
    passes for a run of one revision) and the CPU it ran on (`machine.machine`: a tuned budget or step count is
    a choice for that CPU class); `summarise(results)` adds entries to the results (e.g. the value
    chosen), `extra(results)` entries beside them. Returns the record."""
    from .machine import machine
    from .runs import git_state, now

    seeds = [int(s) for s in seeds]
    require_development(seeds)
    start = git_state()
    results = {str(s): tune(s) for s in seeds}
    if summarise is not None:
        results.update(summarise(results))
    record = {"seeds": seeds, "git": start, "when": now(), "machine": machine(), "results": results}
    record.update(extra(results) if extra is not None else {})
    end = git_state()
    if end != start:
        record["git_at_end"] = end
    atomic_write_json(result_path(paper, name), record)
    return record


def read_result(paper: str, name: str) -> dict | None:
    """The recorded development run, or None when it has not been run here."""
    return read_json(result_path(paper, name), default=None)
