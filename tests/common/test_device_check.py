"""The device check's CPU dry run: the same steps as on a GPU machine (a paper's smoke notebooks executed in
process, its full-profile slice, the CUDA tests' selection), its summary JSON, and its one-line refusals."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from common import paths

SCRIPT = paths.REPO / "benchmarks" / "device_check.py"
PAPER = "diffusion"   # the quickest smoke run; every paper's slice has its own dry-run test in tests/<id>/


def _run(*args, results: Path, timeout=600):
    env = dict(os.environ, REPRO_RESULTS=str(results))
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=timeout,
                          cwd=paths.REPO)


def test_dry_run_writes_one_summary_with_every_step(tmp_path):
    out = _run("--dry-run", "--papers", PAPER, "--out", str(tmp_path / "out"), results=tmp_path / "res")
    summary = json.loads((tmp_path / "res" / "bench" / "device_check_dry.json").read_text())
    copy = json.loads((tmp_path / "out" / "device_check_dry.json").read_text())
    assert copy == summary
    res = summary["results"]
    assert res["device"] == "cpu" and res["dry_run"] is True and res["environment"]["missing_modules"] == []
    row = res["papers"][PAPER]
    assert row["smoke"] == "pass", row["smoke_error"]
    assert row["smoke_counts"]["total"] > 0 and row["peak_gpu_mem_gb"] is None          # judged; no GPU here
    assert row["slice"] == "pass", row["slice_error"]
    assert row["projected_gpu_hours"] > 0 and row["basis"]
    # the CUDA tests are selected and, without a GPU, every one is skipped (none fails, none is lost)
    tests = res["cuda_tests"]
    assert tests["ok"] and tests["counts"].get("skipped", 0) >= 6 and not tests["counts"].get("passed")
    assert res["all_pass"] is True and res["projected_gpu_hours_total"] == pytest.approx(row["projected_gpu_hours"], rel=1e-3)
    assert out.returncode == 0, out.stderr[-2000:]


def test_refusals_are_one_line_and_write_nothing(tmp_path):
    bad = _run("--dry-run", "--papers", "nosuch", results=tmp_path / "res", timeout=60)
    assert bad.returncode == 2 and bad.stderr.strip().startswith("error: unknown paper 'nosuch'")
    assert len(bad.stderr.strip().splitlines()) == 1 and not (tmp_path / "res").exists()
    import torch

    if not torch.cuda.is_available():
        nogpu = _run("--papers", PAPER, results=tmp_path / "res", timeout=60)
        assert nogpu.returncode == 2 and "no CUDA device" in nogpu.stderr and not (tmp_path / "res").exists()
