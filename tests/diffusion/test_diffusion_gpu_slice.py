"""benchmarks/gpu_slice_diffusion.py in its dry mode: the same code on the CPU at tiny shapes; the projection is
the full profile's counts times the unit times measured (arXiv:2405.11932)."""

import pytest

from common.bench import load_benchmark

gpu_slice = load_benchmark("gpu_slice_diffusion")


def test_dry_run_projects_the_full_profiles_counts_times_the_measured_unit_times():
    r = gpu_slice.full_slice("cpu", dry_run=True)
    assert {"ok", "seconds", "projected_gpu_hours", "basis", "peak_mem_gb", "notes"} <= set(r)
    assert r["ok"] is True and r["peak_mem_gb"] is None and r["seconds"] > 0
    c = r["counts"]
    # the full profile's counts, not the dry run's: 2·10⁴ score-matching steps; 20 times x 2 networks x 100 steps
    assert c["dsm_step"] == 20_000 and c["reverse_step"] == 20 * 2 * 100
    # backward: 2 x 10⁶ paths x 200 steps (T = 1), 2 x 10⁵ x 2000 (T = 10), 2 x 10⁶ x 1500 (rates, dt = 0.002)
    assert c["backward_path_step"] == 2 * 10**6 * 200 + 2 * 10**5 * 2000 + 2 * 10**6 * 1500
    assert c["overlap_unit"] == 70 * (32 + 64 + 128 + 256 + 512) * 20_000 * 2000
    expected = sum(c[k] * r["unit_s"][k] for k in c) / 3600
    assert r["projected_gpu_hours"] == pytest.approx(expected, rel=1e-12)
    assert "dry run" in r["basis"]


def test_projected_hours_split_the_gpu_and_the_cpu_parts():
    counts = {"dsm_step": 3600, "reverse_step": 0, "backward_path_step": 7200, "forward_path_step": 0,
              "fp_sample": 0, "overlap_unit": 0}
    unit = {k: 1.0 for k in counts}
    h = gpu_slice.projected_hours(counts, unit)
    assert h == pytest.approx({"gpu_hours": 1.0, "cpu_hours": 2.0, "machine_hours": 3.0})
