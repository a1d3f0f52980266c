"""The device check's CPU dry run, as on a bare GPU image (the notebook stack and prdc not importable): every
step runs (a paper's smoke notebooks executed in process, the CUDA tests collected and skipped with their
reason, the paper's full-profile slice), the summary is written after each step, the steps' limits fit the
8 minutes a lent machine leaves them; its one-line refusals; the wheels' install failing loudly."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from common import paths
from common.bench import load_benchmark

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
        assert steps[0]["papers"] == steps[2]["papers"] == dc.papers() == sorted(["acl", "asq", "diffusion", "hetero", "netrecon", "nlm"])
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


def test_the_stackless_notebook_readers_give_papermills_and_nbformats_answers(stackless_readers):
    """What `in_process` uses on a GPU image without the notebook stack, against the runner's own readers."""
    from common.runner.params import notebook_defaults, notebook_parameters

    names, defaults = stackless_readers
    books = sorted(paths.NOTEBOOKS.glob("*/[0-9]*.ipynb"))
    assert len(books) >= 6
    for nb in books:
        assert set(names(nb)) == set(notebook_parameters(nb)), nb.name
        assert defaults(nb) == notebook_defaults(nb), nb.name
