"""The one device check: every paper on a GPU, in one call sized for a lent one-GPU machine had for 15 minutes
(start-up included): its steps' time limits sum to at most 8 minutes (`BUDGET_S`).

    python benchmarks/device_check.py [--device cuda] [--papers acl asq ...] [--out DIR]
    python benchmarks/device_check.py --dry-run        # the same steps on the CPU at smoke sizes (the tests run it)
    python benchmarks/device_check.py --import PATH    # a device run's summary (or the folder its $OUT came back
                                                       # to), brought back, into results/bench/ for `make readme`

Steps, most valuable first, none stopping at another's failure (each in its own process group, killed at its
limit), the summary written after every step, so that a check cut short keeps what it measured:

1. **smoke on the device** (one phase, papers side by side on the machine's cores): every study of each
   paper at the smoke profile, called as its notebook calls it (`common.study.run_all`: `open_run`,
   `measure(cfg, run)`, `log_metrics`; no papermill or kernel, no figures) in a process with `device` set,
   judged with the paper's claims. The peak GPU memory says the paper used the GPU (0 is a silent CPU
   fallback, a failure, except where `CPU_AT_SMOKE` says why the smoke computes on the CPU). Where the smoke
   profile judges claims and computes on the GPU, the same smoke on the CPU runs beside it and the verdicts of
   the judged claims are compared (`verdicts_equal_cpu`, `verdicts_differ`, and `verdicts_decided`: how many
   of them the CPU decided); a failed CPU smoke fails the paper.
2. **the CUDA tests**: `pytest -m cuda` over the files that hold them, with `REPRO_TEST_DEVICE` set to the
   device; their per-test outcomes, also of a run cut short at its limit.
3. **a timed slice of every full profile** at its real sizes, `benchmarks/gpu_slice_<id>.py:full_slice`,
   projecting the full profile's GPU-hours, and apart from them the hours of its CPU part where the slice
   reports one (never added into the GPU-hours).

One summary, `results/bench/device_check.json` (`device_check_dry.json` for a dry run), also copied to
`--out`: device, environment, per step its outcome, per paper pass/fail, the CUDA tests' counts, the
projected costs. On a lent machine that keeps only `$OUT`, bring it back with `--import`. The top README's
"GPU check" block shows it (`make readme`).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

BUDGET_S = 480            # the steps' limits together: 8 of the 15 minutes a lent machine is had for
# seconds per step: the smoke phase (every paper, side by side), the CUDA tests, the slices (one after another,
# each at most `slice_each`, together at most `slices`)
LIMITS = {"smoke": 150, "tests": 180, "slices": 150, "slice_each": 60}
DRY_LIMITS = {"smoke": 240, "tests": 120, "slices": 120, "slice_each": 60}
NEEDED = ("numpy", "scipy", "pandas", "matplotlib", "seaborn", "sklearn", "yaml", "tqdm", "PIL", "torch")
# carried as wheels (benchmarks/device_wheels.sh): the notebook stack (CUDA tests that go through the runner
# use it where present) and acl's metrics; the check runs without them and says what is missing
WANTED = ("papermill", "nbformat", "nbclient", "jupyter_client", "ipykernel", "prdc")
# -p overrides of a paper's smoke run in the device check (on the device and on the CPU alike), where the smoke
# profile itself judges too little for the GPU's verdicts to be compared with the CPU's; the paper's smoke
# profile is not changed (`smoke_overrides` records them in the summary). None is needed now: every paper's smoke
# judges claims on the CPU (dry run at 1421cc5: acl 2, asq 6, diffusion 7, hetero 12, netrecon 1, nlm 4). acl's two,
# the C2ST comparisons, come out not reproduced with room at seed 0 (ACL's G_c after 40 code steps against the MMD
# null: +0.33 of accuracy, 95 % interval [0.15, 0.52] over 2 pairs); more code steps made them inconclusive on the CPU
# (400 steps, 4 pairs: +0.03 [-0.002, 0.06]; 1500: +0.04 [-0.03, 0.10]), verdicts that rounding on a GPU could flip
SMOKE_OVERRIDES: dict[str, dict] = {}
# papers whose smoke computes on the CPU whatever the device (no GPU memory is expected of them)
CPU_AT_SMOKE = {"hetero": "its smoke notebooks run the CPU emulation of the ranks whatever the device"}
# GPU-hours and CPU-hours of a slice, by the keys the slices report them under (first present wins)
GPU_KEYS = ("gpu_hours", "adam_gpu_hours", "projected_gpu_hours")
CPU_KEYS = ("cpu_hours", "cpu_core_hours")


def papers() -> list[str]:
    """The papers with claims and notebooks (the runner's registry, read without importing the runner)."""
    return sorted(p.parent.name for p in (REPO / "papers").glob("*/claims.yaml")
                  if list((REPO / "notebooks" / p.parent.name).glob("[0-9]*.ipynb")))


def plan(which: list[str], dry_run: bool) -> list[dict]:
    """The steps in the order they run, each with its time limit (their sum is at most BUDGET_S)."""
    limits = DRY_LIMITS if dry_run else LIMITS
    return [{"step": "smoke", "papers": list(which), "limit_s": limits["smoke"]},
            {"step": "cuda_tests", "limit_s": limits["tests"]},
            {"step": "slices", "papers": list(which), "limit_s": limits["slices"], "each_s": limits["slice_each"]}]


def cuda_test_files() -> list[str]:
    """The test files that hold tests marked `cuda`: the device files first, the end-to-end ones last."""
    marked = re.compile(r"^\s*(@pytest\.mark\.cuda\b|\w+ = pytest\.mark\.cuda\b)|marks=pytest\.mark\.cuda\b", re.M)
    found = [p for p in sorted((REPO / "tests").rglob("test_*.py")) if marked.search(p.read_text())]
    found.sort(key=lambda p: (not p.stem.endswith("_device"), "full_profile" in p.stem, str(p)))
    return [str(p.relative_to(REPO)) for p in found]


def smoke_judges(paper: str) -> bool:
    """Whether the smoke profile judges any of the paper's claims (else comparing verdicts compares nothing)."""
    from common.claims import load_claims

    return any("smoke" in c.profiles for c in load_claims(REPO / "papers" / paper / "claims.yaml"))


# ---- the children: one smoke, one slice (run in their own processes) --------------------------------------

def check_smoke_overrides(which: list[str]) -> None:
    """`SMOKE_OVERRIDES` of the papers checked, against each paper's profiles and bounds (a UserError, before any step)."""
    from common.study import get_config

    for paper in which:
        if paper in SMOKE_OVERRIDES:
            get_config(paper, "smoke", **SMOKE_OVERRIDES[paper])


def smoke(paper: str, device: str) -> dict:
    """Every notebook of `paper` at smoke (with `SMOKE_OVERRIDES`) on `device`, judged; the peak GPU memory it took."""
    import torch

    from common.claims import NOT_RUN, evaluate, load_claims, summary
    from common.io import read_json

    cuda = device.startswith("cuda") and torch.cuda.is_available()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    out = {"paper": paper, "device": device, "ok": False}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"devcheck-{paper}-") as tmp:
        os.environ["REPRO_RESULTS"] = tmp
        run_dir = Path(tmp) / paper / "smoke"
        done = []
        try:   # every study as its notebook runs it (common.study.run_all: open_run, measure(cfg, run), log_metrics)
            from common.study import run_all

            run_all(paper, "smoke", run_dir, seed=0, device=device, overrides=SMOKE_OVERRIDES.get(paper), done=done)
        except Exception as err:  # noqa: BLE001 - recorded, the next paper still runs
            where = f"study {len(done) + 1}" if not done else f"after {done[-1]}"
            out["error"] = f"{where}: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"[:400]
        else:
            metrics = read_json(run_dir / "metrics.json", default={}) or {}
            table = evaluate(load_claims(REPO / "papers" / paper / "claims.yaml"), metrics, "smoke")
            s = summary(table)
            verdicts = dict(zip(table["id"], table["verdict"]))
            out.update(ok=True, verdicts=verdicts, judged=sorted(k for k, v in verdicts.items() if v != NOT_RUN),
                       counts={k: v for k, v in s.items() if not isinstance(v, tuple)})
        rec = (read_json(run_dir / "manifest.json", default={}) or {}).get("device")
        out["manifest_device"] = rec.get("device") if isinstance(rec, dict) else rec   # where the run says it computed
    out["seconds"] = round(time.perf_counter() - t0, 2)
    out["peak_gpu_mem_gb"] = round(torch.cuda.max_memory_allocated() / 1e9, 4) if cuda else None
    return out


def gpu_slice(paper: str, device: str, dry_run: bool) -> dict:
    from common.bench import load_benchmark

    if not (REPO / "benchmarks" / f"gpu_slice_{paper}.py").exists():
        return {"ok": False, "error": f"no benchmarks/gpu_slice_{paper}.py"}
    mod = load_benchmark(f"gpu_slice_{paper}")
    t0 = time.perf_counter()
    res = dict(mod.full_slice(device, dry_run))
    res.setdefault("seconds", round(time.perf_counter() - t0, 2))
    return res


# ---- running children under limits ------------------------------------------------------------------------

def _kill(proc: subprocess.Popen) -> None:
    """The child and everything it started (its own process group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


class Child:
    """One sub-step in its own process group: its answer (JSON), its output kept for the step log."""

    def __init__(self, label: str, args: list[str], env: dict):
        self.label, self.t0 = label, time.perf_counter()
        fd, name = tempfile.mkstemp(suffix=".json", prefix="devcheck-answer-")
        os.close(fd)
        self.answer = Path(name)
        self.log = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([sys.executable, __file__, *args, "--answer", str(self.answer)], cwd=REPO,
                                     env=env, stdout=self.log, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def result(self, killed_at: float | None = None) -> tuple[dict, str]:
        """Its answer, or why there is none; and its output."""
        if killed_at is not None:
            _kill(self.proc)
        self.log.seek(0)
        text = self.log.read()
        self.log.close()
        try:
            if killed_at is not None:
                res = {"ok": False, "error": f"over its {killed_at:.0f} s limit"}
            elif self.answer.stat().st_size:
                res = json.loads(self.answer.read_text())
            else:
                res = {"ok": False, "error": (text.strip().splitlines() or ["no answer"])[-1][:400]}
        finally:
            self.answer.unlink(missing_ok=True)
        res["wall_s"] = round(self.elapsed(), 1)
        return res, text


def run_children(specs: list[tuple[str, list[str]]], limit: float, jobs: int, env: dict, done,
                 each: float | None = None) -> None:
    """Run the children of `specs` ((label, args) in order of value), `jobs` at a time, all within `limit`
    seconds and each within `each`; `done(label, result, output)` as each ends (a child not started in time:
    its result says so)."""
    deadline = time.perf_counter() + limit
    waiting, running = list(specs), []
    while waiting or running:
        while waiting and len(running) < jobs and time.perf_counter() < deadline:
            label, args = waiting.pop(0)
            running.append(Child(label, args, env))
        for child in list(running):
            if child.proc.poll() is not None:
                running.remove(child)
                done(child.label, *child.result())
            elif each and child.elapsed() > each:
                running.remove(child)
                done(child.label, *child.result(killed_at=each))
        if time.perf_counter() >= deadline:
            for child in running:
                done(child.label, *child.result(killed_at=limit))
            for label, _ in waiting:
                done(label, {"ok": False, "error": f"not started: the step's {limit:.0f} s limit ran out"}, "")
            return
        time.sleep(0.2)


def parse_outcomes(text: str) -> dict[str, str]:
    """Per test id its outcome, from pytest's verbose lines (plain and pytest-xdist's)."""
    out = {}
    for m in re.finditer(r"^(?:\[gw\d+\] \[ *\d+%\] )?(PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS) (\S+::\S+)"
                         r"|^(\S+::\S+) (PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS)", text, re.M):
        test, outcome = (m.group(2), m.group(1)) if m.group(1) else (m.group(3), m.group(4))
        out[test] = outcome.lower()
    return out


def cuda_tests(device: str, limit: float, log: Path | None) -> dict:
    """`pytest -m cuda` over the files that hold such tests, with the session's device set: per-test outcomes
    (also of a run cut short at its limit), the counts, the reasons of the skips."""
    import importlib.util

    env = dict(os.environ, REPRO_TEST_DEVICE=device)
    files = cuda_test_files()
    jobs = ["-n", "4", "--dist", "load"] if importlib.util.find_spec("xdist") and (os.cpu_count() or 1) >= 8 else []
    cmd = [sys.executable, "-m", "pytest", "-m", "cuda", "-v", "-rs", "-p", "no:cacheprovider", "-p", "no:nbval",
           *jobs, *files]
    t0 = time.perf_counter()
    with tempfile.TemporaryFile(mode="w+") as f:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=f, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        try:
            proc.wait(timeout=limit)
            timed_out = False
        except subprocess.TimeoutExpired:
            _kill(proc)
            timed_out = True
        f.seek(0)
        text = f.read()
    if log:
        log.write_text(text)
    outcomes = parse_outcomes(text)
    counts: dict = {}
    for v in outcomes.values():
        counts[v] = counts.get(v, 0) + 1
    lines = text.strip().splitlines()
    closing = next((ln.strip("= ") for ln in reversed(lines) if re.search(r"\d+ (passed|failed|skipped|errors?|deselected)", ln)), "")
    reasons = sorted({m.group(1) for m in re.finditer(r"^SKIPPED \[\d+\] \S+: (.*)$", text, re.M)})
    selected = re.search(r"(\d+) selected|workers \[(\d+) items?\]", text)
    res = {"files": files, "counts": counts, "closing_line": closing[-300:], "skip_reasons": reasons,
           "seconds": round(time.perf_counter() - t0, 1), "failed_tests": sorted(t for t, v in outcomes.items() if v in ("failed", "error"))}
    if selected:
        res["selected"] = int(selected.group(1) or selected.group(2))
    if timed_out:
        res.update(ok=False, error=f"over its {limit:.0f} s limit after {len(outcomes)} tests")
    else:
        res["ok"] = proc.returncode == 0 and bool(outcomes) and not res["failed_tests"]
        if not res["ok"]:
            res["error"] = closing or (lines[-1][:300] if lines else f"pytest exit {proc.returncode}")
    return res


def environment() -> dict:
    import importlib.util

    def missing(names):
        out = []
        for m in names:
            try:
                if importlib.util.find_spec(m) is None:
                    out.append(m)
            except (ImportError, ValueError):
                out.append(m)
        return out

    info = {"python": sys.version.split()[0], "missing_modules": missing(NEEDED), "missing_wanted": missing(WANTED),
            "cpus": os.cpu_count(), "wheels": os.environ.get("DEVICE_WHEELS_STATUS", "not reported")}
    try:
        import torch

        info["torch"] = torch.__version__
        info["cuda_runtime"] = torch.version.cuda
        if torch.cuda.is_available():
            p = torch.cuda.get_device_properties(0)
            info["gpu"] = p.name
            info["gpu_mem_gb"] = round(p.total_memory / 1e9, 1)
    except ImportError:
        pass
    return info


# ---- the check ---------------------------------------------------------------------------------------------

def _first(d: dict, keys: tuple[str, ...]):
    return next((d[k] for k in keys if isinstance(d.get(k), (int, float))), None)


def _sig(x: float) -> float:
    """Four significant figures."""
    return float(f"{x:.4g}")


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


class Check:
    """The summary, and its writing after every step (results/bench, the --out copy, optional snapshots)."""

    def __init__(self, device: str, dry_run: bool, which: list[str], out_dir: Path | None, snapshots: Path | None):
        self.dry_run, self.out_dir, self.snapshots, self.writes = dry_run, out_dir, snapshots, 0
        self.steps = plan(which, dry_run)
        from common.runs import git_state

        # the revision checked: git's, or DEVICE_CHECK_REV where the machine got a copy without .git
        self.s = {"device": device, "dry_run": dry_run, "revision": git_state().get("sha") or os.environ.get("DEVICE_CHECK_REV"),
                  "environment": environment(), "budget_s": BUDGET_S,
                  "limits_s_total": sum(st["limit_s"] for st in self.steps), "steps": [],
                  "papers": {p: {"smoke": "not run", "slice": "not run"} for p in which},
                  "cuda_tests": {"ok": False, "error": "not run"}}
        self.cuda = device.startswith("cuda") and not dry_run

    def write(self, step: str) -> None:
        self.s["steps"].append({"step": step, "at_s": round(time.perf_counter() - self.t0, 1)})
        self.finish()
        from common.bench import write_benchmark

        path = write_benchmark("device_check_dry" if self.dry_run else "device_check", self.s)
        text = path.read_text()
        if self.out_dir:
            _write_atomic(self.out_dir / path.name, text)
        self.writes += 1
        if self.snapshots:
            _write_atomic(self.snapshots / f"{self.writes:03d}.json", text)

    def log(self, label: str, text: str) -> None:
        if self.out_dir and text:
            with open(self.out_dir / "steps.log", "a") as f:
                f.write(f"===== {label}\n{text}\n")

    def finish(self) -> None:
        """Totals and the verdict of the whole check, from what has run so far."""
        rows = self.s["papers"].values()
        gpu = [r.get("projected_gpu_hours") for r in rows]
        cpu = [r.get("projected_cpu_hours") for r in rows if r.get("projected_cpu_hours") is not None]
        self.s["projected_gpu_hours_total"] = _sig(sum(gpu)) if gpu and all(isinstance(h, (int, float)) for h in gpu) else None
        self.s["projected_cpu_hours_total"] = _sig(sum(cpu)) if cpu else None
        self.s["all_pass"] = bool(rows) and all(r.get("pass") is True for r in rows) \
            and self.s["cuda_tests"].get("ok", False) and not self.s["environment"]["missing_modules"] \
            and not str(self.s["environment"].get("wheels", "")).startswith("failed")

    def paper_pass(self, paper: str) -> None:
        r = self.s["papers"][paper]
        r["pass"] = (r["smoke"] == "pass" and r.get("gpu_used") is not False and r.get("cpu_smoke") != "fail"
                     and r.get("verdicts_equal_cpu") is not False and r["slice"] == "pass"
                     and r.get("slice_gpu_used") is not False)

    def smoke_done(self, label: str, res: dict, text: str) -> None:
        paper, on = label.split("@")
        row = self.s["papers"][paper]
        self.log(f"smoke {paper} on {on}", text)
        if on == "cpu" and self.cuda:                   # the CPU reference of a GPU smoke
            row["cpu_smoke"] = "pass" if res.get("ok") else "fail"
            row["cpu_smoke_error"] = res.get("error", "")
            row["cpu_verdicts"] = res.get("verdicts")
        else:
            row["smoke"] = "pass" if res.get("ok") else "fail"
            row["smoke_error"] = res.get("error", "")
            if paper in SMOKE_OVERRIDES:
                row["smoke_overrides"] = SMOKE_OVERRIDES[paper]
            row["smoke_s"] = res.get("seconds", res.get("wall_s"))
            row["smoke_counts"] = res.get("counts")
            row["smoke_judged"] = len(res.get("judged") or [])
            row["gpu_verdicts"] = res.get("verdicts") if self.cuda else None
            row["judged"] = res.get("judged")
            row["peak_gpu_mem_gb"] = res.get("peak_gpu_mem_gb")
            row["manifest_device"] = res.get("manifest_device")
            if self.cuda and res.get("ok"):
                if paper in CPU_AT_SMOKE:
                    row["gpu_used"], row["gpu_note"] = None, CPU_AT_SMOKE[paper]
                else:
                    row["gpu_used"] = bool(res.get("peak_gpu_mem_gb"))
                    if not row["gpu_used"]:
                        row["gpu_note"] = "no GPU memory taken: the smoke fell back to the CPU"
        if self.cuda and row.get("cpu_smoke") == "pass" and row.get("smoke") == "pass":
            self.compare_verdicts(row)
        self.paper_pass(paper)
        print(f"[device check] smoke {paper} on {on}: {'pass' if res.get('ok') else 'fail ' + res.get('error', '')}"
              + (f", peak GPU memory {res['peak_gpu_mem_gb']:.3g} GB" if res.get("peak_gpu_mem_gb") is not None else ""), flush=True)
        self.write(f"smoke {paper} on {on}")

    @staticmethod
    def compare_verdicts(row: dict) -> None:
        """The GPU smoke's verdicts against the CPU's, over the claims either run judged; how many of them the CPU
        decided (reproduced or not reproduced: an agreement of two inconclusive verdicts says less)."""
        from common.claims import NOT_REPRODUCED, NOT_RUN, REPRODUCED

        cpu, gpu = row.get("cpu_verdicts") or {}, row.get("gpu_verdicts") or {}
        judged = sorted({k for k, v in cpu.items() if v != NOT_RUN} | {k for k, v in gpu.items() if v != NOT_RUN})
        differ = [k for k in judged if cpu.get(k) != gpu.get(k)]
        row["verdicts_compared"] = len(judged)
        row["verdicts_decided"] = sum(cpu.get(k) in (REPRODUCED, NOT_REPRODUCED) for k in judged)
        row["verdicts_differ"] = differ
        row["verdicts_equal_cpu"] = not differ if judged else None
        if not judged:
            row["verdicts_note"] = "neither run judged a claim: nothing compared"
        elif not row["verdicts_decided"]:
            row["verdicts_note"] = "every compared verdict is inconclusive on the CPU"

    def smoke_specs(self, papers: list[str]) -> list[tuple[str, list[str]]]:
        """The smoke runs, on the device first, then the CPU references (where they compare anything)."""
        device = self.s["device"]
        specs = [(f"{p}@{device}", ["_smoke", p, "--device", device]) for p in papers]
        if self.cuda:
            for p in papers:
                if p in CPU_AT_SMOKE:                    # the same computation twice: nothing to compare
                    self.s["papers"][p]["verdicts_equal_cpu"] = None
                    self.s["papers"][p]["verdicts_note"] = f"not compared: {CPU_AT_SMOKE[p]}"
                elif smoke_judges(p):
                    specs.append((f"{p}@cpu", ["_smoke", p, "--device", "cpu"]))
                else:
                    self.s["papers"][p]["verdicts_equal_cpu"] = None
                    self.s["papers"][p]["verdicts_note"] = "the smoke profile judges none of its claims"
        return specs

    def run(self, jobs: int) -> dict:
        self.t0 = time.perf_counter()
        device = self.s["device"]
        env = dict(os.environ, PYTHONUNBUFFERED="1", REPRO_PROGRESS="0", MPLBACKEND="Agg")
        self.write("start")
        for st in self.steps:
            if st["step"] == "smoke":
                specs = self.smoke_specs(st["papers"])
                child_env = env
                if jobs > 1:                             # side by side: the cores shared out
                    per = str(max(1, (os.cpu_count() or 1) // jobs))
                    child_env = dict(env, OMP_NUM_THREADS=per, MKL_NUM_THREADS=per, OPENBLAS_NUM_THREADS=per)
                run_children(specs, st["limit_s"], jobs, child_env, self.smoke_done)
            elif st["step"] == "cuda_tests":
                self.s["cuda_tests"] = cuda_tests(device, st["limit_s"], self.out_dir / "cuda_tests.log" if self.out_dir else None)
                t = self.s["cuda_tests"]
                print(f"[device check] CUDA tests: {t.get('closing_line') or t.get('error')}", flush=True)
                self.write("cuda_tests")
            else:
                dry = ["--dry-run"] if self.dry_run else []
                specs = [(p, ["_slice", p, "--device", device, *dry]) for p in st["papers"]]
                run_children(specs, st["limit_s"], 1, env, self.slice_done, each=st["each_s"])
        return self.s

    def slice_done(self, paper: str, sl: dict, text: str) -> None:
        row = self.s["papers"][paper]
        self.log(f"slice {paper}", text)
        row["slice"] = "pass" if sl.get("ok") else "fail"
        row["slice_error"] = sl.get("error", "")
        row["projected_gpu_hours"] = _first(sl, GPU_KEYS)
        row["projected_cpu_hours"] = _first(sl, CPU_KEYS)
        if isinstance(sl.get("machine_hours"), (int, float)):
            row["projected_machine_hours"] = sl["machine_hours"]
        for k in ("seconds", "peak_mem_gb", "basis", "notes"):
            if k in sl:
                row[f"slice_{k}" if k in ("seconds", "peak_mem_gb") else k] = sl[k]
        if self.cuda and sl.get("ok"):
            row["slice_gpu_used"] = bool(sl.get("peak_mem_gb"))
        self.paper_pass(paper)
        hours = row["projected_gpu_hours"]
        print(f"[device check] {paper}: smoke {row['smoke']}, slice {row['slice']}"
              + (f", projected {hours:.3g} GPU-h" if isinstance(hours, (int, float)) else "")
              + (f" and {row['projected_cpu_hours']:.3g} CPU-h" if row["projected_cpu_hours"] is not None else ""), flush=True)
        self.write(f"slice {paper}")


LOGS = ("device_check.log", "steps.log", "cuda_tests.log", "wheels.log", "gpu.txt")   # what the check leaves in $OUT


def find_summary(path: Path) -> Path:
    """The device run's summary at `path`: the file itself, or the one `device_check.json` in the folder the run's
    `$OUT` came back to (searched three levels down); a UserError saying what is there otherwise."""
    from common.errors import UserError

    if path.is_file():
        return path
    if not path.is_dir():
        raise UserError(f"{path} does not exist; pass the device_check.json that the device run left in $OUT, or its folder")
    found = sorted(p for depth in ("", "*/", "*/*/", "*/*/*/") for p in path.glob(f"{depth}device_check.json"))
    if len(found) != 1:
        what = "no device_check.json" if not found else f"{len(found)} of them ({', '.join(map(str, found[:3]))})"
        raise UserError(f"{path} holds {what}; pass the device_check.json of the device run to import")
    return found[0]


def import_summary(path: Path) -> int:
    """A device run's summary (its `$OUT/device_check.json`, or the folder `$OUT` came back to) into results/bench/,
    where `make readme` and the cost table read it; the logs beside it go to results/bench/device_check_logs/."""
    import shutil

    from common import paths
    from common.errors import UserError
    from common.io import atomic_write_json

    try:
        path = find_summary(path)
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        data = json.loads(path.read_text())
        res = data["results"]
        ok = data.get("name") == "device_check" and res.get("dry_run") is False and isinstance(res.get("papers"), dict)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        ok = False
    if not ok:
        print(f"error: {path} is not the summary of a device run (device_check.json from `make device-check` "
              "on a GPU machine)", file=sys.stderr)
        return 2
    if not (data.get("git") or {}).get("sha"):          # a copy without .git: the revision the run was given, or none
        data["git"] = {"sha": res.get("revision"), "dirty": None,
                       "note": "the device machine had no git; the revision is DEVICE_CHECK_REV's" if res.get("revision")
                       else "the device machine had no git and no DEVICE_CHECK_REV: revision unknown"}
    dest = paths.results_root() / "bench" / "device_check.json"
    atomic_write_json(dest, data)
    logs = [p for p in (path.with_name(n) for n in LOGS) if p.is_file()]
    if logs:
        (dest.parent / "device_check_logs").mkdir(exist_ok=True)
        for p in logs:
            shutil.copyfile(p, dest.parent / "device_check_logs" / p.name)
    print(f"wrote {dest}" + (f" and {len(logs)} logs in {dest.parent / 'device_check_logs'}" if logs else "")
          + "; `make readme` shows it")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("step", nargs="?", default="all", choices=["all", "_smoke", "_slice"], help=argparse.SUPPRESS)
    ap.add_argument("paper", nargs="?", help=argparse.SUPPRESS)
    ap.add_argument("--device", default=None, help="the device (default cuda; cpu with --dry-run)")
    ap.add_argument("--dry-run", action="store_true", help="the same steps on the CPU at smoke sizes")
    ap.add_argument("--papers", nargs="*", default=None, help="only these papers (default: every paper)")
    ap.add_argument("--out", default=os.environ.get("OUT"), help="also copy the summary (and logs) here (default $OUT)")
    ap.add_argument("--jobs", type=int, default=None, help="smoke runs side by side (default: half the cores)")
    ap.add_argument("--import", dest="import_path", metavar="PATH",
                    help="bring a device run's summary (device_check.json, or the folder $OUT came back to) into results/bench/")
    ap.add_argument("--answer", help=argparse.SUPPRESS)
    ap.add_argument("--snapshots", help=argparse.SUPPRESS)     # a copy of the summary at every write (the tests)
    args = ap.parse_args(argv)
    if args.import_path:
        return import_summary(Path(args.import_path))
    device = args.device or ("cpu" if args.dry_run else "cuda")
    if args.step != "all":
        res = smoke(args.paper, device) if args.step == "_smoke" else gpu_slice(args.paper, device, args.dry_run)
        Path(args.answer).write_text(json.dumps(res, default=str))
        return 0
    if device.startswith("cuda") and not args.dry_run:
        import torch

        if not torch.cuda.is_available():
            print("error: no CUDA device visible to torch; run this on a GPU machine, or pass --dry-run", file=sys.stderr)
            return 2
    known = papers()
    bad = [p for p in args.papers or [] if p not in known]
    if bad:
        print(f"error: unknown paper {bad[0]!r}; choose from {', '.join(known)}", file=sys.stderr)
        return 2
    from common.errors import UserError

    try:
        check_smoke_overrides(known if args.papers is None else args.papers)
    except UserError as err:
        print(f"error: device_check.SMOKE_OVERRIDES: {err}", file=sys.stderr)
        return 2
    jobs = args.jobs or max(1, (os.cpu_count() or 1) // 2)
    check = Check(device, args.dry_run, known if args.papers is None else args.papers,
                  Path(args.out) if args.out else None, Path(args.snapshots) if args.snapshots else None)
    s = check.run(jobs)
    return 0 if s["all_pass"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
