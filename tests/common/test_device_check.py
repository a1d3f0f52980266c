"""The device check's CPU dry run, as on a bare GPU image (the notebook stack and prdc not importable): every
step runs (a paper's smoke notebooks executed in process, the CUDA tests collected and skipped with their
reason, the paper's full-profile slice), the summary is written after each step, the steps' limits fit the
8 minutes a lent machine leaves them; its one-line refusals; the wheels' install failing loudly."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from common import paths
from common.bench import load_benchmark
from common.runner.registry import papers as registered_papers

SCRIPT = paths.REPO / "benchmarks" / "device_check.py"
PAPER = "diffusion"   # the quickest smoke run; every paper's slice has its own dry-run test in tests/<id>/
# what a bare GPU image lacks (device README): hidden from every process the check starts
HIDDEN = ("papermill", "nbformat", "nbclient", "jupyter_client", "ipykernel", "nbval", "dask", "distributed", "prdc")
SHIM = f'''import sys

_HIDDEN = {set(HIDDEN)!r}


class _Hide:
    """Finds nothing of the hidden packages (as if not installed: find_spec None, ModuleNotFoundError)."""

    def __init__(self, inner):
        self.inner = inner

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in _HIDDEN:
            return None
        find = getattr(self.inner, "find_spec", None)
        return find(name, path, target) if find else None

    def __getattr__(self, attr):
        return getattr(self.inner, attr)


sys.meta_path[:] = [_Hide(f) for f in sys.meta_path]
'''


def _env(results: Path, shim: Path | None = None, **extra) -> dict:
    env = dict(os.environ, REPRO_RESULTS=str(results), **extra)
    if shim:
        shim.mkdir(parents=True, exist_ok=True)
        (shim / "sitecustomize.py").write_text(SHIM)
        env["PYTHONPATH"] = os.pathsep.join([str(shim), str(paths.REPO)])
    return env


def _run(*args, results: Path, timeout=600, shim: Path | None = None):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout,
                          env=_env(results, shim), cwd=paths.REPO)


def test_dry_run_without_the_notebook_stack_runs_every_step_and_writes_the_summary_after_each(tmp_path):
    shim = tmp_path / "shim"
    probe = subprocess.run([sys.executable, "-c", "import importlib.util as u; print(u.find_spec('papermill'))"],
                           env=_env(tmp_path, shim), capture_output=True, text=True)
    assert probe.stdout.strip() == "None"                                    # the stack is hidden
    out = _run("--dry-run", "--papers", PAPER, "--out", str(tmp_path / "out"), "--snapshots", str(tmp_path / "snap"),
               results=tmp_path / "res", shim=shim)
    summary = json.loads((tmp_path / "res" / "bench" / "device_check_dry.json").read_text())
    assert json.loads((tmp_path / "out" / "device_check_dry.json").read_text()) == summary
    snaps = [json.loads(p.read_text())["results"] for p in sorted((tmp_path / "snap").glob("*.json"))]
    # one write before the first step, then one after each: smoke, the CUDA tests, the slice
    assert [s["steps"][-1]["step"] for s in snaps] == ["start", f"smoke {PAPER} on cpu", "cuda_tests", f"slice {PAPER}"]
    assert [len(s["steps"]) for s in snaps] == [1, 2, 3, 4] and snaps[-1] == summary["results"]
    first, after_smoke, after_tests, res = snaps
    assert first["papers"][PAPER]["smoke"] == "not run" and first["all_pass"] is False
    assert after_smoke["papers"][PAPER]["smoke"] == "pass", after_smoke["papers"][PAPER]["smoke_error"]
    assert after_smoke["papers"][PAPER]["slice"] == "not run" and after_smoke["cuda_tests"]["error"] == "not run"
    tests = after_tests["cuda_tests"]     # collected without the notebook stack; without a GPU every one skipped
    assert tests["ok"] and tests["selected"] >= 20 and tests["counts"] == {"skipped": tests["selected"]}
    assert tests["skip_reasons"] and all("REPRO_TEST_DEVICE=cuda" in r for r in tests["skip_reasons"])
    assert after_tests["papers"][PAPER]["slice"] == "not run"
    assert res["device"] == "cpu" and res["dry_run"] is True and res["environment"]["missing_modules"] == []
    assert set(res["environment"]["missing_wanted"]) >= {"papermill", "nbformat", "nbclient", "jupyter_client", "prdc"}
    assert res["limits_s_total"] <= res["budget_s"] == 480
    row = res["papers"][PAPER]
    assert row["smoke_counts"]["total"] > 0 and row["peak_gpu_mem_gb"] is None          # judged; no GPU here
    assert row["slice"] == "pass", row["slice_error"]
    assert row["projected_gpu_hours"] > 0 and row["basis"] and row["projected_cpu_hours"] > 0   # kept apart
    assert res["all_pass"] is True and res["projected_gpu_hours_total"] == pytest.approx(row["projected_gpu_hours"], rel=1e-3)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]


def test_the_steps_fit_eight_minutes_most_valuable_first():
    dc = load_benchmark("device_check")
    for dry in (False, True):
        steps = dc.plan(dc.papers(), dry)
        assert sum(s["limit_s"] for s in steps) <= dc.BUDGET_S == 480
        assert [s["step"] for s in steps] == ["smoke", "cuda_tests", "slices"] and steps[2]["each_s"] <= steps[2]["limit_s"]
        assert steps[0]["papers"] == steps[2]["papers"] == dc.papers() == sorted(registered_papers())
    files = dc.cuda_test_files()
    assert all("pytest.mark.cuda" in (paths.REPO / f).read_text() for f in files) and len(files) >= 6
    device_files = [f for f in files if f.endswith("_device.py")]
    assert files[:len(device_files)] == device_files and "tests/common/test_device_check.py" not in files


def test_a_cut_short_pytest_log_still_gives_each_tests_outcome():
    dc = load_benchmark("device_check")
    plain = ("tests/a/test_x_device.py::test_one PASSED                 [ 33%]\n"
             "tests/a/test_x_device.py::test_two[cuda] FAILED           [ 66%]\n"
             "tests/a/test_x_device.py::test_three SKIPPED (no GPU)     [100%]\n")
    xdist = ("[gw1] [ 50%] PASSED tests/b/test_y.py::test_four \n"
             "[gw0] [100%] ERROR tests/b/test_y.py::test_five \n")
    assert dc.parse_outcomes(plain + xdist) == {"tests/a/test_x_device.py::test_one": "passed",
                                           "tests/a/test_x_device.py::test_two[cuda]": "failed",
                                           "tests/a/test_x_device.py::test_three": "skipped",
                                           "tests/b/test_y.py::test_four": "passed", "tests/b/test_y.py::test_five": "error"}


def test_a_device_runs_summary_is_brought_into_results_bench(tmp_path, monkeypatch, capsys):
    dc = load_benchmark("device_check")
    monkeypatch.setenv("REPRO_RESULTS", str(tmp_path / "res"))
    dry = tmp_path / "dry.json"
    dry.write_text(json.dumps({"name": "device_check_dry", "results": {"dry_run": True, "papers": {}}}))
    assert dc.main(["--import", str(dry)]) == 2 and not (tmp_path / "res").exists()
    assert capsys.readouterr().err.strip().startswith(f"error: {dry} is not the summary of a device run")
    real = tmp_path / "device_check.json"
    real.write_text(json.dumps({"name": "device_check", "results": {"dry_run": False, "device": "cuda", "papers": {"acl": {}}}}))
    assert dc.main(["--import", str(real)]) == 0
    assert json.loads((tmp_path / "res" / "bench" / "device_check.json").read_text())["results"]["device"] == "cuda"


def test_refusals_are_one_line_and_write_nothing(tmp_path):
    bad = _run("--dry-run", "--papers", "nosuch", results=tmp_path / "res", timeout=60)
    assert bad.returncode == 2 and bad.stderr.strip().startswith("error: unknown paper 'nosuch'")
    assert len(bad.stderr.strip().splitlines()) == 1 and not (tmp_path / "res").exists()
    import torch

    if not torch.cuda.is_available():
        nogpu = _run("--papers", PAPER, results=tmp_path / "res", timeout=60)
        assert nogpu.returncode == 2 and "no CUDA device" in nogpu.stderr and not (tmp_path / "res").exists()


def test_wheels_that_do_not_install_are_said_loudly(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("on a GPU machine the check would go on to run")
    whl = tmp_path / "whl"
    whl.mkdir()
    (whl / "broken-1.0-py3-none-any.whl").write_bytes(b"not a zip")
    env = _env(tmp_path / "res", OUT=str(tmp_path / "out"), DEVICE_WHEELS=str(whl), DEVICE_SITE=str(tmp_path / "site"))
    run = subprocess.run(["bash", str(paths.REPO / "benchmarks" / "device_check.sh"), "--papers", PAPER],
                         capture_output=True, text=True, env=env, timeout=120, cwd=paths.REPO)
    assert run.returncode == 2
    assert f"error: installing the 1 wheels of {whl} failed" in run.stderr
    assert (tmp_path / "out" / "wheels.log").read_text().strip()


def test_the_wheels_carried_are_binary_pinned_and_the_versions_the_tests_run_here():
    """What `device_wheels.sh` fetches for the GPU image: wheels only (no sdist, which nothing there would build),
    one pin per package, every module the check wants, at the version this venv's tests ran with."""
    import importlib.metadata as md

    text = (paths.REPO / "benchmarks" / "device_wheels.sh").read_text()
    assert "--only-binary=:all:" in text and "--no-binary" not in text and "set -euo pipefail" in text
    specs = dict(spec.split("==") for spec in re.search(r"SPECS=\((.*?)\)", text, re.S).group(1).split())
    norm = lambda name: re.sub(r"[-_.]+", "-", name.lower())                      # noqa: E731
    assert len({norm(n) for n in specs}) == len(specs) >= 30
    assert {norm(m) for m in load_benchmark("device_check").WANTED} <= {norm(n) for n in specs}
    assert not {"pytest", "pluggy", "iniconfig", "torch", "numpy"} & {norm(n) for n in specs}   # on the image
    assert {n: md.version(n) for n in specs} == specs


# ---- what a GPU run decides, simulated here: the check's verdict on fake answers of its children ---------

def _gpu_check(tmp_path, monkeypatch, papers=("asq", "hetero")):
    """A Check as on a GPU machine (device cuda, not a dry run) whose children's answers the test gives."""
    import time

    dc = load_benchmark("device_check")
    monkeypatch.setenv("REPRO_RESULTS", str(tmp_path / "res"))
    check = dc.Check("cuda", False, list(papers), tmp_path / "out", None)
    check.t0 = time.perf_counter()
    check.s["environment"].update(missing_modules=[], wheels="installed 34 wheels")
    check.s["cuda_tests"] = {"ok": True}
    return dc, check


def _answer(ok=True, peak=0.2, verdicts=None, error=""):
    verdicts = verdicts or {"a": "reproduced", "b": "not run at this scale"}
    return {"ok": ok, "peak_gpu_mem_gb": peak, "verdicts": verdicts, "error": error,
            "judged": sorted(k for k, v in verdicts.items() if v != "not run at this scale"), "counts": {"total": 1}}


def _slice(check, paper, peak=1.5):
    check.slice_done(paper, {"ok": True, "projected_gpu_hours": 2.0, "cpu_hours": 0.5, "peak_mem_gb": peak}, "")


def test_on_a_gpu_a_silent_cpu_fallback_fails_the_paper_and_the_check(tmp_path, monkeypatch):
    dc, check = _gpu_check(tmp_path, monkeypatch)
    check.smoke_done("asq@cuda", _answer(peak=0.0), "")                  # ran, but took no GPU memory
    check.smoke_done("asq@cpu", _answer(peak=None), "")
    check.smoke_done("hetero@cuda", _answer(peak=0.0), "")              # the CPU by design (CPU_AT_SMOKE)
    _slice(check, "asq")
    _slice(check, "hetero")
    asq, hetero = check.s["papers"]["asq"], check.s["papers"]["hetero"]
    assert asq["gpu_used"] is False and "fell back to the CPU" in asq["gpu_note"] and asq["pass"] is False
    assert hetero["gpu_used"] is None and hetero["pass"] is True and "hetero" in dc.CPU_AT_SMOKE
    assert check.s["all_pass"] is False
    check.smoke_done("asq@cuda", _answer(peak=0.3), "")                 # the same with GPU memory taken: passes
    assert asq["gpu_used"] is True and asq["pass"] is True and check.s["all_pass"] is True
    _slice(check, "asq", peak=0.0)                                       # a slice that never touched the GPU
    assert asq["slice_gpu_used"] is False and check.s["all_pass"] is False
    # GPU-hours and CPU-hours apart, the totals too; the summary on disk after each of these steps
    assert (asq["projected_gpu_hours"], asq["projected_cpu_hours"]) == (2.0, 0.5)
    assert (check.s["projected_gpu_hours_total"], check.s["projected_cpu_hours_total"]) == (4.0, 1.0)
    written = json.loads((tmp_path / "out" / "device_check.json").read_text())["results"]
    assert written["steps"][-1]["step"] == "slice asq" and len(written["steps"]) == check.writes == 7


def test_on_a_gpu_a_failed_cpu_reference_and_differing_verdicts_fail_the_paper(tmp_path, monkeypatch):
    dc, check = _gpu_check(tmp_path, monkeypatch)
    _slice(check, "asq")
    check.smoke_done("asq@cuda", _answer(), "")
    check.smoke_done("asq@cpu", _answer(ok=False, error="study 2: RuntimeError: boom"), "")
    row = check.s["papers"]["asq"]
    assert row["cpu_smoke"] == "fail" and row["cpu_smoke_error"].endswith("boom") and row["pass"] is False
    assert "verdicts_equal_cpu" not in row                               # nothing compared against a failed run
    check.smoke_done("asq@cpu", _answer(verdicts={"a": "not reproduced", "b": "not run at this scale"}), "")
    assert row["verdicts_equal_cpu"] is False and row["verdicts_differ"] == ["a"] and row["pass"] is False
    check.smoke_done("asq@cpu", _answer(), "")
    assert (row["verdicts_equal_cpu"], row["verdicts_compared"], row["verdicts_decided"], row["pass"]) == (True, 1, 1, True)
    inconclusive = {"a": "inconclusive at this scale"}
    check.smoke_done("asq@cuda", _answer(verdicts=inconclusive), "")
    check.smoke_done("asq@cpu", _answer(verdicts=inconclusive), "")
    assert row["verdicts_equal_cpu"] is True and row["verdicts_decided"] == 0 and "inconclusive" in row["verdicts_note"]


def test_on_a_gpu_the_cpu_references_run_where_they_compare_something(tmp_path, monkeypatch):
    dc, check = _gpu_check(tmp_path, monkeypatch, papers=("acl", "hetero", "nlm"))
    specs = check.smoke_specs(["acl", "hetero", "nlm"])
    assert [label for label, _ in specs] == ["acl@cuda", "hetero@cuda", "nlm@cuda", "acl@cpu", "nlm@cpu"]
    assert specs[3][1] == ["_smoke", "acl", "--device", "cpu"]
    hetero = check.s["papers"]["hetero"]                # computes on the CPU at smoke: the same run twice
    assert hetero["verdicts_equal_cpu"] is None and hetero["verdicts_note"].startswith("not compared")
    dry = dc.Check("cpu", True, ["acl"], None, None)
    assert [label for label, _ in dry.smoke_specs(["acl"])] == ["acl@cpu"]


def test_the_gpu_peak_fixture_rejects_a_silent_cpu_fallback(gpu_peak, monkeypatch):
    """`gpu_peak` (root conftest), which every `cuda` test's no-fallback check uses, on a fake CUDA allocator: code
    that computed on the CPU does not pass for GPU work, whatever earlier tests allocated or still hold."""
    import torch

    class Allocator:
        held = peak = 0

        def take(self, n):
            self.held += n
            self.peak = max(self.peak, self.held)

    fake = Allocator()
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda *a, **k: setattr(fake, "peak", fake.held))
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda *a, **k: fake.held)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda *a, **k: fake.peak)
    fake.take(100)
    fake.take(-60)                               # an earlier test: its peak 100, 40 still held
    gpu_peak.reset()
    x = torch.ones(256, 256)
    assert float((x @ x).sum()) == 256.0 ** 3 and not gpu_peak.grew()   # the answer, on the CPU: no GPU work
    fake.take(8)
    fake.take(-8)                                # GPU memory of its own, given back by the end
    assert gpu_peak.grew()


def test_a_device_run_is_imported_from_the_folder_its_out_came_back_to(tmp_path, monkeypatch, capsys):
    dc = load_benchmark("device_check")
    monkeypatch.setenv("REPRO_RESULTS", str(tmp_path / "res"))
    back = tmp_path / "files_at" / "out"
    back.mkdir(parents=True)
    (back / "device_check.json").write_text(json.dumps(
        {"name": "device_check", "git": {"sha": None}, "results": {"dry_run": False, "device": "cuda", "revision": "abc123",
                                                                   "papers": {"nlm": {}}}}))
    (back / "cuda_tests.log").write_text("26 passed")
    assert dc.main(["--import", str(tmp_path / "files_at")]) == 0
    bench = tmp_path / "res" / "bench"
    data = json.loads((bench / "device_check.json").read_text())
    assert data["results"]["device"] == "cuda" and data["git"]["sha"] == "abc123"   # DEVICE_CHECK_REV's revision
    assert (bench / "device_check_logs" / "cuda_tests.log").read_text() == "26 passed"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert dc.main(["--import", str(empty)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {empty} holds no device_check.json") and "\n" not in err


def test_smoke_overrides_are_checked_first_and_reach_the_papers_run(tmp_path, monkeypatch, capsys):
    import common.study

    dc = load_benchmark("device_check")
    monkeypatch.setenv("REPRO_RESULTS", str(tmp_path / "res"))
    dc.check_smoke_overrides(dc.papers())                              # the ones the check uses
    monkeypatch.setattr(dc, "SMOKE_OVERRIDES", {"acl": {"code_steps": 0}})
    assert dc.main(["--dry-run", "--papers", "acl"]) == 2 and not (tmp_path / "res").exists()
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: device_check.SMOKE_OVERRIDES: parameter 'code_steps' must be >= 1") and "\n" not in err
    seen = {}
    monkeypatch.setattr(common.study, "run_all", lambda paper, *a, overrides=None, **k: seen.setdefault(paper, overrides))
    monkeypatch.setattr(dc, "SMOKE_OVERRIDES", {"acl": {"code_steps": 60}})
    assert dc.smoke("acl", "cpu")["ok"] and dc.smoke("nlm", "cpu")["ok"]
    assert seen == {"acl": {"code_steps": 60}, "nlm": None}


# ---- the runner path of the `cuda` tests, without the notebook stack -----------------------------------------

def test_a_run_through_the_runner_in_process_gives_its_verdicts(toy_repo, in_process, capsys):
    """What the `cuda` tests that run a paper through `common.reproduce` do (`in_process`); run again below in a
    process where the notebook stack cannot be imported, as on a bare GPU image."""
    import csv

    from common import reproduce

    assert reproduce.main(["toy", "--profile", "smoke", "--quiet", "--device", "cpu"]) == 0, capsys.readouterr().err[-2000:]
    with open(toy_repo / "results" / "toy" / "smoke" / "claims.csv") as f:
        verdicts = {r["id"]: r["verdict"] for r in csv.DictReader(f)}
    assert verdicts["c-pass"] == "reproduced" and verdicts["c-fail"] == "not reproduced"
    assert [name for name, _ in in_process] == ["01-toy.ipynb"]


def test_the_runner_path_of_the_cuda_tests_needs_no_notebook_stack(tmp_path):
    shim = tmp_path / "shim"
    env = _env(tmp_path / "res", shim)
    probe = subprocess.run([sys.executable, "-c", "import importlib.util as u; print(u.find_spec('nbformat'), u.find_spec('papermill'))"],
                           env=env, capture_output=True, text=True)
    assert probe.stdout.split() == ["None", "None"]
    test = f"{Path(__file__).relative_to(paths.REPO)}::test_a_run_through_the_runner_in_process_gives_its_verdicts"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:nbval", "-p", "no:cacheprovider", "-n", "0", test],
                         env=env, capture_output=True, text=True, timeout=120, cwd=paths.REPO)
    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout[-3000:] + run.stderr[-2000:]


# ---- every `cuda` test checks that the GPU did the work ------------------------------------------------------

# a check that the work ran on the GPU: GPU memory taken since a reset, or a tensor's / module's / run's device
ON_GPU = re.compile(r"""\.grew\(\)|\.device\.type\s*==\s*(['"]cuda['"]|torch\.device\()|==\s*\{['"]cuda['"]\}"""
                    r"""|\.startswith\(['"]cuda['"]\)|['"]cuda['"] in json\.dumps|\[['"]cuda:0['"], ['"]cuda:1['"]\]""")
# `cuda` tests that rightly check no GPU work: what they check instead
NO_GPU_WORK = {
    "test_on_a_gpu_machine_the_smoke_notebooks_run_the_emulation_and_record_the_cpu":
        "hetero's smoke is the CPU emulation by design (device_check.CPU_AT_SMOKE): on a GPU machine its manifest must "
        "say the CPU, and the verdicts must be the CPU run's",
    "test_on_one_gpu_a_two_rank_real_device_run_is_refused_in_one_line": "a refusal: nothing is computed",
}


CALLED = "\n# ---- a function it calls\n"
MARK = ".".join(("pytest", "mark", "cuda"))   # spelled so that this file is not taken for one holding cuda tests


def _cuda_tests() -> dict[str, str]:
    """'file::name' -> the source of each test marked `cuda` with that of the module's functions it calls."""
    import ast

    out = {}
    for f in load_benchmark("device_check").cuda_test_files():
        tree = ast.parse((paths.REPO / f).read_text())
        funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        for fn in funcs.values():
            marks = [ast.unparse(d) for d in fn.decorator_list]
            if any(m in (MARK, "cuda") or f"marks={MARK}" in m for m in marks):
                called = {c.func.id for c in ast.walk(fn) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
                out[f"{f}::{fn.name}"] = CALLED.join(ast.unparse(funcs[n]) for n in [fn.name, *sorted(called & set(funcs) - {fn.name})])
    return out


def test_every_cuda_test_fails_on_a_silent_cpu_fallback_and_measures_peak_memory_after_a_reset():
    tests = _cuda_tests()
    assert len(tests) >= 20
    unchecked = [t for t, src in tests.items() if t.split("::")[1] not in NO_GPU_WORK and not ON_GPU.search(src)]
    assert not unchecked, f"cuda tests that would pass on a silent CPU fallback: {unchecked}"
    gone = set(NO_GPU_WORK) - {t.split("::")[1] for t in tests}
    assert not gone, f"NO_GPU_WORK excuses cuda tests that no longer exist (drop them): {sorted(gone)}"
    measured = 0
    for t, src in tests.items():
        own = src.split(CALLED)[0]
        grew = list(re.finditer(r"(\w+)\.grew\(\)", own))
        measured += bool(grew)
        for m in grew:                                                 # the peak is reset first, by the same helper
            assert re.search(rf"{m.group(1)}\.reset\(\)", own[:m.start()]), f"{t}: {m.group(1)}.grew() before its reset()"
    assert measured >= 12
