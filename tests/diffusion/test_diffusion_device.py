"""The device path of the diffusion paper (arXiv:2405.11932). Only the learned score (notebook 05's
last section: training by denoising score matching and the reverse SDE of the clones) runs on the
run's device; everything else is numpy on the CPU. On the CPU these tests pass the device through
the same code; the tests marked `cuda` run it on a GPU (REPRO_TEST_DEVICE=cuda)."""
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from common.claims import evaluate, load_claims
from papers.diffusion import learned
from papers.diffusion.config import get_config
from papers.diffusion.studies import entropy_rates, high_dimension, potential_phase_diagram

cuda = pytest.mark.cuda
CLAIMS = Path(learned.__file__).with_name("claims.yaml")
TINY = dict(learned_steps=15, learned_hidden=16, learned_clone_starts=12, learned_clone_steps=4, learned_times=4,
            learned_empirical_noise=2)


def _learned(device):
    return high_dimension.learned_speciation(get_config("smoke", **TINY), seed=0, device=device)


def test_the_learned_score_runs_on_the_device_it_is_given_and_returns_host_numbers():
    for dev in ("cpu", torch.device("cpu")):
        res = _learned(dev)
        m = res["metrics"]
        assert all(isinstance(v, (float, int, bool)) for v in m.values())
        assert math.isfinite(m["learned_final_loss"]) and isinstance(res["losses"], np.ndarray)
    data = res["data"]
    model, losses = learned.train_score(data, 5, seed=1, hidden=8, device=torch.device("cpu"))
    assert next(model.parameters()).device.type == "cpu" and losses.dtype == np.float64 and losses.shape == (5,)
    a, _ = learned.cloning_curve(model, data, [0.3, 1.0], 6, 3, seed=2)
    b, _ = learned.cloning_curve(model, data, [0.3, 1.0], 6, 3, seed=2)
    np.testing.assert_array_equal(a, b)                  # generators on the CPU, seeded per call


@cuda
def test_on_a_gpu_the_learned_score_uses_gpu_memory_and_the_same_initial_weights():
    data = _learned("cpu")["data"]
    torch.cuda.reset_peak_memory_stats()
    gpu = learned.untrained_score(data, seed=3, hidden=16, device="cuda")
    cpu = learned.untrained_score(data, seed=3, hidden=16, device="cpu")
    for pg, pc in zip(gpu.parameters(), cpu.parameters()):
        assert pg.device.type == "cuda" and torch.equal(pg.cpu(), pc)
    res = _learned("cuda")
    assert torch.cuda.max_memory_allocated() > 0
    assert math.isfinite(res["metrics"]["learned_final_loss"])


@cuda
def test_on_a_gpu_the_smoke_verdicts_are_the_cpu_verdicts():
    cfg = get_config("smoke", **TINY)
    runs = {}
    for dev in ("cpu", "cuda"):
        m = {}
        for res in (potential_phase_diagram.speciation_checks(cfg), entropy_rates.measure(cfg, seed=0),
                    high_dimension.learned_speciation(cfg, 0, device=dev)):
            m |= res["metrics"]
        runs[dev] = evaluate(load_claims(CLAIMS), m, "smoke")
    smoke = [c.id for c in load_claims(CLAIMS) if "smoke" in c.profiles]
    cpu = runs["cpu"].set_index("id").loc[smoke, "verdict"]
    gpu = runs["cuda"].set_index("id").loc[smoke, "verdict"]
    assert (cpu == gpu).all()                            # every smoke claim is numpy: device-independent


@cuda
def test_on_a_gpu_the_smoke_notebooks_run_in_process(tmp_path, in_process, monkeypatch):
    from common import reproduce

    monkeypatch.setenv("REPRO_RESULTS", str(tmp_path))
    code = reproduce.main(["diffusion", "--profile", "smoke", "--device", "cuda", "--results", str(tmp_path),
                           "-p", "learned_steps=15"])
    assert code in (0, None)
    assert {name for name, _ in in_process} >= {"05-high-dimension.ipynb", "01-fluctuation-theorems.ipynb"}
