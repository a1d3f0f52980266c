"""Issue 35: where hetero's ranks compute. The CPU emulation pins every rank to the CPU whatever GPUs are
visible (it used to give rank r `cuda:r`, so rank 1 failed on a one-GPU machine); the real-device path
gives one GPU per rank and refuses in one line when a node has fewer GPUs than ranks; the notebooks'
manifest records the CPU the emulation computed on. CUDA tests (skipped without REPRO_TEST_DEVICE=cuda
and a GPU): the smoke notebooks' code with a GPU visible, the real-device path, the GPU slice."""
import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from common.errors import UserError
from papers.hetero import train
from papers.hetero.job import Job, rank_device
from papers.hetero.launch import emulation_device, launch

JOB = Job(vendors="nv,amd", links=["cpu_forward:2"], steps=2, corpus_tokens=20_000, timeout_s=20.0)


def test_the_emulation_pins_every_rank_to_the_cpu_whatever_gpus_are_visible():
    # the case: one GPU, two ranks; and more GPUs than ranks: the emulation never takes one
    for n_gpus in (0, 1, 4):
        assert [rank_device("cpu", r, 2, n_gpus=n_gpus) for r in range(2)] == ["cpu", "cpu"]
    assert Job().device == "cpu"  # what the notebooks and the local launcher run


def test_real_devices_give_one_gpu_per_rank_and_refuse_more_ranks_than_gpus():
    assert [rank_device("cuda", r, 4, n_gpus=4) for r in range(4)] == ["cuda:0", "cuda:1", "cuda:2", "cuda:3"]
    assert rank_device("auto", 1, 2, n_gpus=8) == "cuda:1" and rank_device("auto", 1, 2, n_gpus=0) == "cpu"
    for req, n in (("cuda", 1), ("auto", 1), ("cuda", 0)):
        with pytest.raises(UserError) as err:
            rank_device(req, 1, 2, n_gpus=n)
        msg = str(err.value)
        assert "\n" not in msg and "device cpu" in msg
    with pytest.raises(UserError, match="2 ranks on this node need one GPU each, but 1 present"):
        rank_device("cuda", 1, 2, n_gpus=1)
    with pytest.raises(UserError, match="device must be one of"):
        rank_device("gpu", 0, 2, n_gpus=1)


def test_the_launcher_refuses_more_ranks_than_gpus_before_starting_anything(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    work = tmp_path / "run"
    with pytest.raises(UserError, match="launch at most 1 per node"):
        launch(replace(JOB, device="cuda"), 2, workdir=work)
    assert not work.exists()  # nothing written


def test_the_torchrun_entry_defaults_to_auto_and_a_job_file_keeps_its_device(tmp_path):
    assert train.parse_args(["--link", "direct"]).device == "auto"
    jf = tmp_path / "job.json"
    jf.write_text(JOB.to_json())
    assert train.parse_args(["--job", str(jf)]).device == "cpu"
    assert train.parse_args(["--job", str(jf), "--device", "cuda"]).device == "cuda"


# A launch with a GPU made visible (CUDA_VISIBLE_DEVICES=0): its ranks compute on the CPU and see no GPU. That launch
# also checks two other things, so it lives in test_hetero_bugs.py
# (test_one_launch_compares_vendor_maps_after_expansion_runs_on_loopback_without_privileges_on_the_cpu).


def test_the_manifest_records_the_cpu_the_emulation_computes_on(monkeypatch, capsys):
    monkeypatch.setenv("REPRO_DEVICE", "cpu")
    assert emulation_device(None) == "cpu" and capsys.readouterr().out == ""
    assert emulation_device("cuda") == "cpu"
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "device cuda not used" in out and "torchrun -m papers.hetero.train" in out


# ---- on a GPU (REPRO_TEST_DEVICE=cuda) -------------------------------------------------------------------

@pytest.mark.cuda
def test_on_a_gpu_machine_the_smoke_notebooks_run_the_emulation_and_record_the_cpu(in_process, monkeypatch, tmp_path):
    from common import reproduce
    from common.claims import read_claims_table

    verdicts = {}
    for device in ("cpu", "cuda"):
        out = tmp_path / device
        monkeypatch.setenv("REPRO_RESULTS", str(out))
        assert reproduce.main(["hetero", "--profile", "smoke", "--device", device]) == 0
        run = out / "hetero" / "smoke"
        man = json.loads((run / "manifest.json").read_text())
        assert "cpu" in json.dumps(man.get("device")).lower()  # where the ranks computed, not the GPU asked for
        table = read_claims_table(run / "claims.csv")
        verdicts[device] = dict(zip(table["id"], table["verdict"]))
    # every smoke claim is device-independent (the emulation ignores the GPU): the same verdicts
    assert verdicts["cpu"] == verdicts["cuda"]


@pytest.mark.cuda
def test_on_one_gpu_a_two_rank_real_device_run_is_refused_in_one_line(tmp_path):
    if torch.cuda.device_count() >= 2:
        pytest.skip("this machine has a GPU per rank")
    with pytest.raises(UserError, match="ranks on this node need one GPU each"):
        launch(replace(JOB, device="cuda"), 2, workdir=tmp_path / "run")


@pytest.mark.cuda
def test_with_two_gpus_the_real_device_path_runs_one_rank_per_gpu_and_equals_the_cpu(tmp_path):
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs (one per rank)")
    gpu = launch(replace(JOB, device="cuda"), 2, workdir=tmp_path / "gpu", deadline_s=180)
    cpu = launch(JOB, 2, workdir=tmp_path / "cpu", deadline_s=180)
    assert [r["device"] for r in gpu] == ["cuda:0", "cuda:1"]
    a, b = (r[-1]["variants"]["cpu_forward:2"]["losses"] for r in (gpu, cpu))
    assert max(abs(x - y) for x, y in zip(a, b)) < 1e-4


@pytest.mark.cuda
def test_the_gpu_slice_trains_on_the_gpu(gpu_peak):
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_slice_hetero.py"
    spec = importlib.util.spec_from_file_location("gpu_slice_hetero", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    gpu_peak.reset()
    res = mod.full_slice("cuda", dry_run=True)
    assert res["ok"] and res["peak_mem_gb"] > 0 and gpu_peak.grew()
    assert res["real_device_gpu_hours"] > 0 and res["projected_gpu_hours"] == 0.0   # full itself takes no GPU
