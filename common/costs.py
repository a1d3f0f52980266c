"""Where a run's time goes: a sampling profiler inside each notebook the runner executes, and its summary.

    python -m common.costs <id> [--profile quick]     # the table of the paper's last complete run

The runner starts every notebook with a cell of its own (`common.runner.kernel.fresh`) that starts `Sampler`
in the notebook's kernel: a daemon thread that looks at the notebook's main thread every `INTERVAL` seconds (`sys._current_frames`) and
adds the wall time since its last look to the place the main thread is in. A place is the chain of the
outermost `PLACE_DEPTH` functions of the paper's own code on the stack (`papers/<id>/...`), e.g.
`studies.autoencoder_generator.measure > acl.train_acl`; with no paper frame, the outermost `common` function
(`common.runs.Run.save_figure`); with neither, `notebook` (top-level cell code or the kernel between cells).
An import anywhere on the stack makes the place `imports`. Figure rendering (matplotlib or seaborn anywhere on
the stack) is also counted apart, and so is the kernel's start before the first cell (from the process's start
time).

Sampling costs one look every 20 ms (tens of microseconds each), well under 1 % of the run, and changes no
computation: the numbers a run measures are the same with or without it. The record is flushed to
`<run_dir>/cost/sampling-<pid>.json` every `FLUSH_S` seconds and when the kernel exits; the runner
renames it after the notebook it belongs to (`collect`). Nothing runs it outside the runner: a notebook opened
in JupyterLab is not sampled. The figures are
wall-clock seconds of one machine: the stamp names its CPU.
"""
from __future__ import annotations

import argparse
import atexit
import functools
import os
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

from . import paths
from .machine import describe_machine, machine
from .io import atomic_write_json, read_json

INTERVAL = 0.02          # seconds between looks at the main thread
FLUSH_S = 2.0            # seconds between writes of the record
PLACE_DEPTH = 2          # paper functions kept in a place, from the outermost
IMPORTING = "importlib._bootstrap"   # an import on the stack (`<frozen importlib._bootstrap>`)
FIGURE_LIBS = (f"{os.sep}matplotlib{os.sep}", f"{os.sep}seaborn{os.sep}")

SAMPLING = "sampling-"    # prefix of a record not yet named after its notebook
_active: "Sampler | None" = None


def module_of(filename: str) -> tuple[str, str] | None:
    """("papers"|"common", dotted module below the top package) of a source file of this repository, else None:
    `.../papers/acl/studies/fid.py` -> ("papers", "studies.fid"); the paper's id is dropped (one paper per run).
    Cached per file: the sampler asks for every frame of the stack 50 times a second."""
    return _module_of(filename, paths.REPO)


@functools.lru_cache(maxsize=4096)
def _module_of(filename: str, repo: Path) -> tuple[str, str] | None:
    try:
        rel = Path(filename).resolve().relative_to(repo)
    except (ValueError, OSError):
        return None
    parts = rel.with_suffix("").parts
    if len(parts) >= 3 and parts[0] == "papers":
        return "papers", ".".join(parts[2:])
    if len(parts) >= 2 and parts[0] == "common":
        return "common", ".".join(parts)
    return None


def place(frames: list, depth: int = PLACE_DEPTH) -> tuple[str, bool]:
    """The place of a stack given outermost first as (filename, function name) pairs, and whether figure
    rendering is on it. See the module docstring for the rule."""
    ours, common, figure = [], None, False
    if any(IMPORTING in filename for filename, _ in frames):
        return "imports", False
    for filename, func in frames:
        if not figure and any(lib in filename for lib in FIGURE_LIBS):
            figure = True
        mod = module_of(filename)
        if mod is None:
            continue
        if mod[0] == "papers":
            if len(ours) < depth:
                ours.append(f"{mod[1]}.{func}")
        elif common is None:
            common = f"{mod[1]}.{func}"
    if ours:
        return " > ".join(ours), figure
    return (common or "notebook"), figure


def stack_of(frame) -> list:
    """(filename, function) pairs of a frame's stack, outermost first."""
    out = []
    while frame is not None:
        out.append((frame.f_code.co_filename, getattr(frame.f_code, "co_qualname", frame.f_code.co_name)))
        frame = frame.f_back
    out.reverse()
    return out


def process_age_s() -> float | None:
    """Seconds since this process started (Linux `/proc`), or None where that cannot be read."""
    try:
        start_ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


class Sampler(threading.Thread):
    """Wall time per place of the main thread, written to `path` (see the module docstring)."""

    def __init__(self, path: Path, interval: float = INTERVAL, flush_s: float = FLUSH_S):
        super().__init__(daemon=True, name="repro-cost-sampler")
        self.path, self.interval, self.flush_s = Path(path), interval, flush_s
        self.places: dict[str, float] = defaultdict(float)
        self.figures_s = 0.0
        self.before_s = process_age_s()
        self.machine = machine()
        self.t0 = time.perf_counter()
        self._halt = threading.Event()
        self.stopped = False
        self._lock = threading.Lock()
        self._main = threading.main_thread().ident

    def run(self) -> None:
        last = last_flush = time.perf_counter()
        while not self._halt.wait(self.interval):
            now = time.perf_counter()
            frame = sys._current_frames().get(self._main)
            where, figure = place(stack_of(frame)) if frame is not None else ("notebook", False)
            with self._lock:
                self.places[where] += now - last
                if figure:
                    self.figures_s += now - last
            last = now
            if now - last_flush >= self.flush_s:
                self.flush()
                last_flush = now

    def record(self) -> dict:
        with self._lock:
            places = dict(sorted(self.places.items(), key=lambda kv: -kv[1]))
            return {"machine": self.machine, "sampled_s": round(time.perf_counter() - self.t0, 3), "kernel_start_s": self.before_s,
                    "figures_s": round(self.figures_s, 3), "interval_s": self.interval,
                    "places": {k: round(v, 3) for k, v in places.items()}}

    def flush(self) -> None:
        if self.stopped:
            return
        try:
            atomic_write_json(self.path, self.record())
        except OSError:
            pass

    def stop(self) -> None:
        """Stop looking and write the record one last time (later flushes do nothing: the runner may have
        renamed the file already)."""
        if self.stopped:
            return
        self._halt.set()
        self.join(timeout=1.0)
        self.flush()
        self.stopped = True


def start(run_dir: Path) -> Sampler | None:
    """Start sampling this kernel into `run_dir/cost/` (from the runner's first cell); a sampler already
    running in this kernel (an earlier notebook in the same kernel) is stopped first."""
    global _active
    reused = _active is not None
    if reused:
        _active.stop()
    folder = Path(run_dir) / "cost"
    folder.mkdir(parents=True, exist_ok=True)
    _active = Sampler(folder / f"{SAMPLING}{os.getpid()}.json")
    if reused:
        _active.before_s = 0.0          # the kernel and its imports were counted with its first notebook
    _active.start()
    return _active


def stop() -> None:
    """End this kernel's sampling (the runner's last cell of every notebook), so that the record is complete
    before the runner names it; also at the kernel's exit, for a notebook that stopped early."""
    if _active is not None:
        _active.stop()


atexit.register(stop)


def collect(run_dir: Path, notebook: str, seconds: float) -> dict | None:
    """After the runner executed `notebook` into `run_dir`: name the sampler's record after it
    (`cost/<notebook stem>.json`), with the notebook's wall time added; None when nothing was sampled."""
    folder = Path(run_dir) / "cost"
    fresh = list(folder.glob(f"{SAMPLING}*.json")) if folder.is_dir() else []
    if not fresh:
        return None
    newest = max(fresh, key=lambda p: p.stat().st_mtime)
    rec = read_json(newest, default=None) or {}
    for p in fresh:
        p.unlink(missing_ok=True)
    rec["notebook_s"] = round(seconds, 2)
    atomic_write_json(folder / f"{Path(notebook).stem}.json", rec)
    return rec


# -- the summary --------------------------------------------------------------------------------

def records(run_dirs: list[Path]) -> dict[str, list[dict]]:
    """{notebook stem: [its record per run folder]} over the folders that have one."""
    out: dict[str, list[dict]] = {}
    for d in run_dirs:
        for p in sorted((Path(d) / "cost").glob("*.json")):
            if p.name.startswith(SAMPLING):
                continue
            rec = read_json(p, default=None)
            if rec:
                out.setdefault(p.stem, []).append(rec)
    return out


def summarize(per_notebook: dict[str, list[dict]], top: int = 3) -> list[dict]:
    """One row per notebook, means over the run folders: its wall time, the kernel's start and the imports
    (`start_s`), figure rendering (`figures_s`, also inside the places), and its `top` places other than the
    imports with their seconds (the rest of the sampled time is `other_s`)."""
    rows = []
    for nb, recs in sorted(per_notebook.items()):
        n = len(recs)
        mean = lambda key: sum((r.get(key) or 0.0) for r in recs) / n  # noqa: E731
        places: dict[str, float] = defaultdict(float)
        for r in recs:
            for k, v in r.get("places", {}).items():
                places[k] += v / n
        imports = places.pop("imports", 0.0)
        ranked = sorted(places.items(), key=lambda kv: -kv[1])
        rows.append({"notebook": nb, "runs": n, "notebook_s": mean("notebook_s"), "start_s": mean("kernel_start_s") + imports,
                     "figures_s": mean("figures_s"), "top": ranked[:top],
                     "other_s": sum(v for _, v in ranked[top:])})
    return rows


def table(rows: list[dict]) -> list[str]:
    """Markdown lines of `summarize`'s rows, with a total line."""
    lines = ["| notebook | wall s | kernel start + imports s | figures s | where the rest goes (s) |", "|---|---|---|---|---|"]
    for r in rows:
        where = "; ".join(f"`{k}` {v:.1f}" for k, v in r["top"]) + (f"; other {r['other_s']:.1f}" if r["other_s"] >= 0.05 else "")
        lines.append(f"| {r['notebook']} | {r['notebook_s']:.1f} | {r['start_s']:.1f} | {r['figures_s']:.1f} | {where} |")
    total = sum(r["notebook_s"] for r in rows)
    start = sum(r["start_s"] for r in rows)
    figs = sum(r["figures_s"] for r in rows)
    lines.append(f"| **all** | **{total:.1f}** | {start:.1f} | {figs:.1f} | |")
    return lines


def block(run_dirs: list[Path]) -> list[str] | None:
    """The README block's lines for the run folders of one run (one per seed): the CPU, then `table` of the
    means over the seeds; None when no folder has a record (a run made before the sampler existed)."""
    per = records(run_dirs)
    if not per:
        return None
    first = next(iter(per.values()))[0]
    n = max(len(v) for v in per.values())
    return [f"Wall-clock seconds on {describe_machine(first.get('machine'))}, mean over {n} seed{'s' * (n > 1)}; "
            "sampled every 20 ms by `common.costs` (places: the outermost paper functions on the stack; "
            "`notebook`: top-level cell code and the kernel between cells). Other CPUs take other times."
            + cores_line(run_dirs), ""] + table(summarize(per))


SHARED_CORES = 0.2   # other work beside a run, in cores, above which its walls are not a timing


def cores_line(run_dirs: list[Path]) -> str:
    """" The runs kept ... cores busy ..." from the runs' manifests (`cores_used`, CPU over wall seconds), then
    what other work took beside them (`other_cores`, the runner's record; not recorded in runs made before it),
    or "" where no manifest says either."""
    mans = [read_json(Path(d) / "manifest.json", default={}) or {} for d in run_dirs]
    used = [m["cores_used"] for m in mans if m.get("cores_used") is not None]
    if not used:
        return ""
    line = (f" The runs kept {min(used):.2f}-{max(used):.2f} of the machine's cores busy on average "
            "(the kernel's and its workers' CPU seconds over the wall seconds; at least that: a worker never waited "
            "for is not counted).")
    other = [m.get("other_cores") for m in mans]
    if any(o is None for o in other):
        return line + (" What other work took beside them was not recorded (runs made before the runner recorded "
                       "it, or seeds run as cluster tasks): these walls may not be a timing.")
    line += (f" Other work took {min(other):.2f}-{max(other):.2f} cores beside them (the machine's busy CPU seconds "
             "from /proc/stat less the runs' own, over the wall seconds; at most that).")
    if max(other) > SHARED_CORES:
        line += (f" **Not a timing:** above {SHARED_CORES} cores, the machine was shared; rerun alone on an idle "
                 "machine to time it.")
    return line


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m common.costs", description=__doc__.split("\n\n")[0])
    ap.add_argument("paper")
    ap.add_argument("--profile", default="quick")
    args = ap.parse_args(argv)
    root = paths.run_dir(args.paper, args.profile)
    dirs = sorted(root.glob("seed-*")) or [root]
    rows = summarize(records(dirs))
    if not rows:
        print(f"no cost records under {root}: run `python -m common.reproduce {args.paper} --profile {args.profile}` first",
              file=sys.stderr)
        return 2
    print("\n".join(table(rows)))
    if cores_line(dirs):
        print(cores_line(dirs).strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
