"""The device check's slice of asq's full profile: the dry run executes the same code on the CPU at tiny
sizes, and the projection is the full profile's step counts times the timed seconds per step."""
import importlib.util
import math
from pathlib import Path

import pytest

from papers.asq.config import get_config

PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_slice_asq.py"


def load():
    spec = importlib.util.spec_from_file_location("gpu_slice_asq", PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_full_counts_follow_the_full_profile():
    mod = load()
    cfg = get_config("full")
    c = mod.full_counts(cfg)
    steps = 50000 // 256                                                 # 195 steps per epoch at batch 256
    assert c["fp_step"] == 3 * 200 * steps
    # per seed: LSQ, ASQ and the scalar-beta null (timed as LSQ) at W2, W3, W4 (uniform); ablation at W4: POT, POST,
    # APoT, released POST and released POT (uniform is ASQ W4)
    assert mod.qat_units(cfg) == {"lsq_step": 6, "asq_step": 3, "asq_log_step": 5}
    assert c["lsq_step"] == 3 * 6 * 90 * steps and c["asq_step"] == 3 * 3 * 90 * steps
    assert c["asq_log_step"] == 3 * 5 * 90 * steps
    assert c["int_image"] == 10000
    assert mod.projected_hours({"a": 3600, "b": 7200}, {"a": 0.5, "b": 0.25}) == pytest.approx(1.0)


def test_dry_run_projects_its_timed_units():
    mod = load()
    r = mod.full_slice("cpu", dry_run=True)
    assert r["ok"] and r["peak_mem_gb"] is None and r["seconds"] > 0
    assert set(r["unit_s"]) == set(mod.UNITS) | {"int_image"} and all(v > 0 for v in r["unit_s"].values())
    expect = sum(r["counts"][k] * r["unit_s"][k] for k in r["counts"]) / 3600
    assert math.isclose(r["projected_gpu_hours"], expect, rel_tol=1e-12)
    r34 = sum(r["imagenet_r34_counts"][k] * r["imagenet_r34_unit_s"][k] for k in r["imagenet_r34_counts"]) / 3600
    assert math.isclose(r["projected_gpu_hours_imagenet_r34"], r34, rel_tol=1e-12)
    assert r["imagenet_r34_counts"]["fp_step"] == 3 * 200 * (1281167 // 256)
    assert "dry run" in r["basis"] and "200 float" in r["basis"]
