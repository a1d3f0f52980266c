"""benchmarks/gpu_slice_netrecon.py in its dry mode: the same code on the CPU at tiny shapes; the projection is
the full profile's counts times the unit times measured, as the device check's contract asks (arXiv:2409.04240)."""

import pytest

from common.bench import load_benchmark
from common.profiles import resolve
from papers.netrecon.config import PROFILES

gpu_slice = load_benchmark("gpu_slice_netrecon")


def test_dry_run_projects_the_full_profiles_counts_times_the_measured_unit_times():
    r = gpu_slice.full_slice("cpu", dry_run=True)
    assert {"ok", "seconds", "projected_gpu_hours", "basis", "peak_mem_gb", "notes"} <= set(r)
    assert r["ok"] is True and r["peak_mem_gb"] is None and r["seconds"] > 0
    full = resolve(PROFILES, "full")
    c = r["counts"]
    # the counts are the full profile's, not the dry run's: 13 gains x 5 networks x 110 time units of 1e-2
    assert c["lambda grid (01, 05)"] == (1000, 25 * 5 * 11_000)             # g = 0 ... 4.8 in steps of 0.2
    assert c["eta sweep (03)"] == (1000, 2 * 5 * (5000 + 6 * 40_000 + 32_000))
    # the P-sweep's 1e4 epochs are an upper bound (early stopping with patience 100 ends it sooner)
    assert r["adam_epochs"] == pytest.approx(30 + 10 + 2 * 10_000 * (2 + 4 + 8 + 16 + 32 + 64 + 98) / 100)
    assert c["g < 1 student and nulls (03)"] == (1000, 3 * (5 * 3000 + 2 * 8000 + 5 * 3000))   # + 4 eta-grid students
    assert r["dmft_counts"]["horizon law in eta"] == (3000, full.tr_nodes, 2)
    assert r["dmft_counts"]["tracking and near miss"] == (1000, full.tr_nodes, 6)
    u = r["unit_s"]
    expected = gpu_slice.projected_hours(c, u["pass_N1000"], r["dmft_counts"], tuple(r["dmft_unit"]), u["adam_epoch"],
                                         r["adam_epochs"], r["cores"])
    assert r["projected_gpu_hours"] == pytest.approx(expected["machine_hours"], rel=1e-12)
    assert "x 1 seed(s)" in r["basis"] and "dry run" in r["basis"]


def test_projected_hours_scale_with_size_squared_cores_and_seeds():
    counts = {"a": (1000, 3600), "b": (500, 7200)}            # 3600 s + 7200 / 4 s of passes at 1 s each
    h = gpu_slice.projected_hours(counts, 1.0, {}, (10, 10, 1.0), adam_s=36.0, epochs=100, cores=2)
    assert h["cpu_core_hours"] == pytest.approx(1.5) and h["adam_gpu_hours"] == pytest.approx(1.0)
    assert h["machine_hours"] == pytest.approx(1.0 + 0.75)
    dm = gpu_slice.projected_hours({}, 1.0, {"x": (20, 10, 3)}, (10, 10, 2.0), adam_s=0.0, epochs=0, cores=1, seeds=2)
    assert dm["cpu_core_hours"] == pytest.approx(2 * 3 * 2.0 * 4 / 3600)    # (2 x steps)^2 = 4 x the unit solve
