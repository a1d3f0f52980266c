"""benchmarks/gpu_slice_nlm.py in its dry mode: the same code on the CPU at tiny shapes; the projection is the
full profile's counts times the unit times measured, as the device check's contract asks."""
import sys

import pytest

from common import paths
from common.bench import load_benchmark

sys.path.insert(0, str(paths.REPO / "benchmarks"))
gpu_slice = load_benchmark("gpu_slice_nlm")


def test_dry_run_projects_the_full_profiles_counts_times_the_measured_unit_times():
    from common.profiles import resolve
    from papers.nlm.config import PROFILES

    r = gpu_slice.full_slice("cpu", dry_run=True)
    assert {"ok", "seconds", "projected_gpu_hours", "basis", "peak_mem_gb", "notes"} <= set(r)
    assert r["ok"] is True and r["peak_mem_gb"] is None and r["seconds"] > 0
    c, full = r["counts"], resolve(PROFILES, "full")
    # the counts are the full profile's, not the dry run's: 1.2e5 main updates, Rdm-500 for the released 2400 x 10
    assert c["main (notebooks 01, 04, 06 share it)"] == full.main_updates == 120_000
    assert c["Rdm replicates (notebook 03)"] == full.ooe_rdm_updates == 24_000
    assert c["exploration (notebook 04)"] == full.explore_steps
    expected = sum(c[name] * r["unit_s"][r["unit_keys"][name]] for name in c) / 3600
    assert r["projected_gpu_hours"] == pytest.approx(expected, rel=1e-12)
    assert "x 1 seed(s)" in r["basis"] and "dry run" in r["basis"]


def test_projected_hours_scale_with_counts_and_seeds():
    counts, unit, keys = {"a": 3600, "b": 7200}, {"u": 0.5, "v": 2.0}, {"a": "u", "b": "v"}
    assert gpu_slice.projected_hours(counts, unit, keys) == pytest.approx(0.5 + 4.0)
    assert gpu_slice.projected_hours(counts, unit, keys, seeds=3) == pytest.approx(3 * 4.5)
