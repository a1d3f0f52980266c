"""benchmarks/full_cost.py and common.costmodel: the arithmetic on hand-computable cases, every registered paper's
cost model (`papers/<id>/cost.py: estimate(cfg)`, the contract) giving a finite positive estimate of its full
profile, full_cost.py naming no paper, and the device check's projection taking precedence when its summary exists."""
import inspect
import json
import math
import re
from types import SimpleNamespace

import pytest

from common import costmodel as cm
from common import paths
from common.bench import load_benchmark
from common.runner.registry import papers as registered_papers


fc = load_benchmark("full_cost")


@pytest.fixture(scope="module")
def estimates():
    return fc.full_cost(check=None)


def test_every_paper_has_a_cost_model_and_full_cost_names_none():
    """The contract: `papers/<id>/cost.py` defines `estimate(cfg)`; full_cost.py iterates the registry."""
    for pid in registered_papers():
        est = fc.cost_model(pid).estimate
        assert list(inspect.signature(est).parameters) == ["cfg"], pid
    source = (paths.REPO / "benchmarks" / "full_cost.py").read_text()
    named = [pid for pid in registered_papers() if re.search(rf"\b{pid}\b", source)]
    assert not named, f"benchmarks/full_cost.py names {named}: a paper's cost belongs in papers/<id>/cost.py"


def test_linear_and_conv_flops_by_hand():
    import torch
    from torch import nn

    assert cm.linear_flops(7, 3, 5) == 2 * 7 * 3 * 5 == 210
    lin = cm.meta(lambda: nn.Linear(3, 5))
    assert lin.weight.device.type == "meta"
    assert cm.forward_flops(lin, (7, 3)) == 210
    # 3x3 convolution, 1 -> 2 channels, on 4x4: 2 x 2 x 2 outputs of 9 multiply-adds each
    conv = cm.meta(lambda: nn.Conv2d(1, 2, 3))
    assert cm.forward_flops(conv, (1, 1, 4, 4)) == 2 * 2 * 2 * 2 * 9 == 144
    seq = cm.meta(lambda: nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 2)))
    assert cm.forward_flops(seq, (4, 3)) == 2 * 4 * (3 * 5 + 5 * 2)
    assert cm.leaf_modules(seq) == 3 and cm.n_params(seq) == 3 * 5 + 5 + 5 * 2 + 2
    assert cm.activation_numel(seq, (4, 3)) == 4 * 5 + 4 * 5 + 4 * 2
    assert isinstance(torch.empty(1, device="meta"), torch.Tensor)


def test_count_time_and_the_three_bounds():
    assert cm.count_time(3600, 2.0) == 7200.0
    hw = dict(cm.H100, fp32_tflops=50.0, hbm_tb_s=3.0, op_overhead_s=1e-5)
    compute = cm.GpuPart("c", flops=1e12, util=0.5)                 # 1e12 / (50e12 x 0.5) = 0.04 s
    assert compute.seconds(hw) == pytest.approx(0.04) and compute.bound(hw) == "compute"
    memory = cm.GpuPart("m", flops=1e12, bytes=3e12, util=0.5)      # 3e12 B / 3e12 B/s = 1 s beats 0.04 s
    assert memory.seconds(hw) == pytest.approx(1.0) and memory.bound(hw) == "memory"
    ops = cm.GpuPart("o", flops=1e12, ops=1e6, util=0.5)            # 1e6 ops x 10 us = 10 s
    assert ops.seconds(hw) == pytest.approx(10.0) and ops.bound(hw) == "op overhead"
    cpu = cm.CpuPart("x", 40e9, "blas_gflops_per_core")
    assert cpu.core_seconds(dict(cm.CPU, blas_gflops_per_core=20.0)) == pytest.approx(2.0)
    # parameters (4 B) + gradient + 2 Adam states, activations, a resident tensor, one context per process
    gb = cm.train_memory_gb(1_000_000, 500_000, resident_bytes=1e9, processes=2)
    assert gb == pytest.approx(2 * ((4e6 + 5e5) * 4 / 1e9 + 1.0 + cm.H100["context_gb"]))
    assert cm.round3(0.000123456) == 0.000123


def test_record_sums_parts_into_hours():
    est = cm.Estimate(data="d", make_data="m", commands=["c"],
                      gpu=[cm.GpuPart("a", ops=360_000), cm.GpuPart("b", ops=720_000)],
                      cpu=[cm.CpuPart("x", 3600 * 20e9)], memory_gb=1.5, assumptions=["given"])
    rec = est.record()
    seconds = (360_000 + 720_000) * cm.H100["op_overhead_s"]
    assert rec["gpu_hours_estimate"] == pytest.approx(seconds / 3600, rel=1e-2)
    assert rec["cpu_core_hours_estimate"] == pytest.approx(20e9 / (cm.CPU["blas_gflops_per_core"] * 1e9), rel=1e-2)
    assert rec["source"] == cm.ESTIMATE and rec["flops"] == pytest.approx(3600 * 20e9)
    assert rec["assumptions"][0].startswith("CPU-side work dominates") and rec["assumptions"][1] == "given"


def test_qat_runs_counted_as_the_study_does():
    from papers.asq import cost as asq_cost

    cfg = SimpleNamespace(bits=[2, 4], ablation_bits=4, ablation_grids=["uniform", "pot"])
    assert asq_cost.qat_runs(cfg) == 5    # lsq/asq at 2 and 4 bits, + asq pot at 4 (uniform at 4 already there)


def test_every_paper_gets_finite_positive_numbers(estimates):
    papers = estimates["papers"]
    assert sorted(papers) == sorted(registered_papers())
    for pid, rec in papers.items():
        # hetero's full profile is the CPU emulation: CPU core-hours, no GPU-hours and no GPU memory
        keys = ("cpu_core_hours_estimate", "flops") if pid == "hetero" else ("gpu_hours_estimate", "gpu_memory_gb_estimate", "flops")
        for key in keys:
            assert math.isfinite(rec[key]) and rec[key] > 0, (pid, key, rec[key])
        assert rec["source"] == cm.ESTIMATE
        assert f"make reproduce-{pid} PROFILE=full DEVICE=cuda" in rec["commands"]
        assert rec["assumptions"] and all(isinstance(a, str) and a for a in rec["assumptions"])
        assert rec["make_data"] and rec["data"]
    assert papers["asq"]["multi_gpu_command"].startswith("torchrun --nproc_per_node 8 -m papers.asq.cli --profile full")
    assert papers["hetero"]["multi_gpu_command"].startswith("torchrun --nnodes 2")
    assert (papers["hetero"]["gpu_hours_estimate"], papers["hetero"]["gpu_memory_gb_estimate"]) == (0.0, 0.0)
    assert "multi_gpu_command" not in papers["nlm"] and papers["nlm"]["command"] == "make reproduce-nlm PROFILE=full DEVICE=cuda"
    assert any("torchrun" in c and "papers.hetero.train" in c for c in papers["hetero"]["commands"])
    assert papers["asq"]["make_data"] == 'make data DATASETS="cifar10"'
    assert papers["acl"]["make_data"] == 'make data DATASETS="mnist"'
    assert estimates["total_gpu_hours_estimate"] == pytest.approx(sum(r["gpu_hours_estimate"] for r in papers.values()), rel=1e-2)
    # netrecon's simulations stay on the CPU: its CPU time exceeds its GPU time
    assert papers["netrecon"]["cpu_core_hours_estimate"] > papers["netrecon"]["gpu_hours_estimate"]
    assert papers["netrecon"]["assumptions"][0].startswith("CPU-side work dominates")


def test_the_count_follows_the_profile(monkeypatch):
    """Doubling the asq profile's QAT epochs adds exactly the QAT grid's hours once more."""
    from papers.asq import config

    base = fc.paper_cost("asq")["gpu_parts"]["QAT grid"]["hours"]
    full = dict(config.PROFILES["full"], qat_epochs=2 * config.PROFILES["full"]["qat_epochs"])
    monkeypatch.setitem(config.PROFILES, "full", full)
    assert fc.paper_cost("asq")["gpu_parts"]["QAT grid"]["hours"] == pytest.approx(2 * base, rel=1e-2)


def test_device_check_takes_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_RESULTS", str(tmp_path))
    (tmp_path / "bench").mkdir()
    summary = {"device": "NVIDIA H100 80GB HBM3", "papers": {
        "asq": {"projected_gpu_hours": 12.5, "basis": "200 steps timed", "slice_peak_mem_gb": 3.0},
        "hetero": {"projected_gpu_hours": None}}}       # a failed slice: the estimate stays
    (tmp_path / "bench" / "device_check.json").write_text(json.dumps({"name": "device_check", "results": summary}))
    assert fc.device_check_summary()["device"] == summary["device"]
    out = fc.full_cost(papers=("asq", "hetero"))
    asq, hetero = out["papers"]["asq"], out["papers"]["hetero"]
    assert asq["source"] == fc.DEVICE_CHECK and asq["gpu_hours_estimate"] == 12.5
    assert asq["estimated_gpu_hours"] > 0 and asq["device_check"]["basis"] == "200 steps timed"
    assert hetero["source"] == cm.ESTIMATE and hetero["gpu_hours_estimate"] == 0 and hetero["cpu_core_hours_estimate"] > 0
    assert out["total_gpu_hours_estimate"] == pytest.approx(12.5, rel=1e-2)
    # main writes results/bench/full_cost.json through common.bench.write_benchmark
    assert fc.main(["--papers", "asq"]) == 0
    written = json.loads((tmp_path / "bench" / "full_cost.json").read_text())
    assert written["name"] == "full_cost" and written["results"]["papers"]["asq"]["source"] == fc.DEVICE_CHECK


def test_a_device_check_never_bills_gpu_hours_to_a_full_profile_that_takes_no_gpu(tmp_path, monkeypatch):
    """Issue 42: hetero's full profile is the CPU emulation (its estimate has no GPU part); a device check whose slice
    timed its real-device path on a GPU must not put GPU-hours back in its row of the cost table."""
    monkeypatch.setenv("REPRO_RESULTS", str(tmp_path))
    (tmp_path / "bench").mkdir()
    summary = {"device": "NVIDIA H100 80GB HBM3", "papers": {"hetero": {"projected_gpu_hours": 2.4, "basis": "stages timed"}}}
    (tmp_path / "bench" / "device_check.json").write_text(json.dumps({"name": "device_check", "results": summary}))
    hetero = fc.full_cost(papers=("hetero",))["papers"]["hetero"]
    assert hetero["source"] == cm.ESTIMATE and hetero["gpu_hours_estimate"] == 0 and hetero["cpu_core_hours_estimate"] > 0
    assert hetero["device_check"]["projected_gpu_hours_not_billed"] == 2.4 and "no GPU" in hetero["device_check"]["note"]


def test_no_device_check_means_estimates(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_RESULTS", str(tmp_path))
    assert fc.device_check_summary() is None
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "device_check.json").write_text("{not json")
    assert fc.device_check_summary() is None
