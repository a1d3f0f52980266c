"""benchmarks/bench_nlm_cuda.py without a GPU: the full profile's projection is counts from the config times
unit times (hand-computable with fixed unit times), and without CUDA it stops with one line, exit 2."""
import importlib.util
import sys

import pytest
import torch

from common import paths

sys.path.insert(0, str(paths.REPO / "benchmarks"))
spec = importlib.util.spec_from_file_location("bench_nlm_cuda", paths.REPO / "benchmarks" / "bench_nlm_cuda.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def test_the_projection_is_the_full_profiles_counts_times_the_unit_times(monkeypatch):
    unit = {"update_main": 1.0, "update_sweep": 2.0, "update_ooe_pcd": 3.0, "update_ooe_rdm": 5.0}
    shapes = {}

    def fake_update(K, n, m, batch, k, mode="pcd", **kw):
        key = {(1, "pcd"): "update_main", (50, "pcd"): "update_sweep", (3, "pcd"): "update_ooe_pcd", (3, "rdm"): "update_ooe_rdm"}[(K, mode)]
        shapes[key] = (K, n, m, batch, k)
        return {"median": unit[key]}

    def fake_step(K, m, n, **kw):
        shapes[f"step {K}x{m}"] = (K, m, n)
        return {"median": 1e-3 * K}

    def fake_check(K, n, **kw):
        return {"median": 0.1 * K}

    monkeypatch.setattr(bench, "update_time", fake_update)
    monkeypatch.setattr(bench, "step_time", fake_step)
    monkeypatch.setattr(bench, "stability_time", fake_check)
    r = bench.full_profile(quick=True)
    # the full profile: 1000 chains, batch 1000, N = 784, k = 10; 10 sizes x 5 replicates; 3 replicates of
    # PCD-10 and of Rdm-500 (24000 updates: the released script's 2400 epochs x 10); the explored P = 288 model
    assert shapes["update_main"] == (1, 784, 1000, 1000, 10) and shapes["update_ooe_rdm"] == (3, 784, 1000, 1000, 500)
    assert shapes["step 13x1000"] == (13, 1000, 784) and shapes["step 50x1000"] == (50, 1000, 784)
    assert shapes["step 6x1000"] == (6, 1000, 784) and shapes["step 5x8"] == (5, 8, 784)
    c = r["counts"]
    assert c["Rdm replicates (notebook 03)"] == 24_000 and c["main (notebooks 01, 04, 06 share it)"] == 120_000
    assert c["explored model (notebook 04)"] == 20_000
    assert c["sweep generation (notebook 02)"] == 3 * 50_000 + 2 * 500
    # a stability check every 100 updates: 1600 of one model, 200 of the 50-model stack, 1440 of 3 models
    assert c["stability checks, P-sweep"] == 200 and c["stability checks, PCD and Rdm replicates"] == 1440
    assert c["stability checks, main, second and explored"] == 1600
    expected = (120_000 * 1 + 20_000 * 1 + 20_000 * 1 + 20_000 * 2 + 120_000 * 3 + 24_000 * 5
                + 50_000 * 0.013 + 151_000 * 0.05 + 50_000 * 0.006 + 150_000 * 0.005
                + 1600 * 0.1 + 200 * 5.0 + 1440 * 0.3)
    assert r["projected_total_s_per_seed"] == pytest.approx(expected, rel=1e-12)
    assert r["projected_total_h_per_seed"] == pytest.approx(expected / 3600, rel=1e-12)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_without_a_gpu_it_is_one_line_and_exit_2(capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["bench_nlm_cuda.py"])
    with pytest.raises(SystemExit) as e:
        bench.main()
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no CUDA device" in err[0]
