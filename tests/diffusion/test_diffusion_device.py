"""The device path of the diffusion paper (arXiv:2405.11932). Only the learned score (notebook 05's
last section: training by denoising score matching and the reverse SDE of the clones) runs on the
run's device; everything else is numpy on the CPU. On the CPU these tests pass the device through
the same code; the tests marked `cuda` run it on a GPU (REPRO_TEST_DEVICE=cuda)."""
import math

import numpy as np
import pytest
import torch

from common.seed import Streams
from papers.diffusion import learned
from papers.diffusion.config import get_config
from papers.diffusion.studies import high_dimension

cuda = pytest.mark.cuda
TINY = dict(learned_steps=15, learned_hidden=16, learned_clone_starts=12, learned_clone_steps=4, learned_times=4,
            learned_empirical_noise=2)


def _learned(device):
    return high_dimension.learned_speciation(get_config("smoke", **TINY), streams=Streams(0), device=device)


def test_the_learned_score_runs_on_the_device_it_is_given_and_returns_host_numbers():
    for dev in ("cpu", torch.device("cpu")):
        res = _learned(dev)
        m = res["metrics"]
        assert all(isinstance(v, (float, int, bool)) for v in m.values())
        assert math.isfinite(m["learned_final_loss"]) and isinstance(res["losses"], np.ndarray)
    data = res["data"]
    model, losses = learned.train_score(data, 5, streams=Streams(1), hidden=8, device=torch.device("cpu"))
    assert next(model.parameters()).device.type == "cpu" and losses.dtype == np.float64 and losses.shape == (5,)
    a, _ = learned.cloning_curve(model, data, [0.3, 1.0], 6, 3, streams=Streams(2))
    b, _ = learned.cloning_curve(model, data, [0.3, 1.0], 6, 3, streams=Streams(2))
    np.testing.assert_array_equal(a, b)                  # generators on the CPU, seeded per call


# what the learned section computes from the data alone (the same on any device, bit for bit)
DATA_ONLY = ("learned_lambda", "learned_t_s_theory", "learned_n_train", "learned_dim")


@cuda
def test_on_a_gpu_the_learned_score_uses_gpu_memory_the_same_initial_weights_and_gives_the_cpus_loss(gpu_peak):
    cpu_run = _learned("cpu")
    data = cpu_run["data"]
    gpu_peak.reset()
    gpu = learned.untrained_score(data, streams=Streams(3), hidden=16, device="cuda")
    cpu = learned.untrained_score(data, streams=Streams(3), hidden=16, device="cpu")
    for pg, pc in zip(gpu.parameters(), cpu.parameters()):
        assert pg.device.type == "cuda" and torch.equal(pg.cpu(), pc)
    model, _ = learned.train_score(data, 5, streams=Streams(1), hidden=8, device="cuda")
    assert next(model.parameters()).device.type == "cuda"
    res = _learned("cuda")
    assert gpu_peak.grew()
    m, ref = res["metrics"], cpu_run["metrics"]
    # the same batches and noise (CPU generators): the loss after training is the CPU's up to float32 rounding
    assert m["learned_final_loss"] == pytest.approx(ref["learned_final_loss"], rel=1e-3)
    assert all(m[k] == ref[k] for k in DATA_ONLY)
    np.testing.assert_allclose(res["losses"], cpu_run["losses"], rtol=1e-3)


@cuda
def test_on_a_gpu_the_smoke_notebooks_use_it_and_give_the_cpus_numbers(tmp_path, in_process, monkeypatch, gpu_peak):
    """The smoke notebooks in process on the GPU: only the learned score takes GPU memory; every other number
    (numpy on the CPU) is the CPU run's bit for bit, the learned loss up to rounding."""
    import json

    from common import reproduce

    metrics = {}
    for dev in ("cpu", "cuda"):
        out = tmp_path / dev
        monkeypatch.setenv("REPRO_RESULTS", str(out))
        gpu_peak.reset()
        code = reproduce.main(["diffusion", "--profile", "smoke", "--device", dev, "--results", str(out),
                               "-p", "learned_steps=15", "--quiet"])
        assert code in (0, None)
        assert gpu_peak.grew() == (dev == "cuda")
        metrics[dev] = json.loads((out / "diffusion" / "smoke" / "metrics.json").read_text())
    assert {name for name, _ in in_process} >= {"05-high-dimension.ipynb", "01-fluctuation-theorems.ipynb"}
    cpu, gpu = metrics["cpu"], metrics["cuda"]
    assert set(cpu) == set(gpu)
    same = [k for k in cpu if not k.startswith("learned_") or k in DATA_ONLY]
    assert same and all(gpu[k] == cpu[k] for k in same if cpu[k] == cpu[k])
    assert gpu["learned_final_loss"] == pytest.approx(cpu["learned_final_loss"], rel=1e-3)
