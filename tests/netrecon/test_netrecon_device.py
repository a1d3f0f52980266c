"""Where netrecon computes: the Adam fits follow a CUDA device (the run's, `run.device`), everything else stays
on the CPU, and a GPU run gives the CPU's verdicts (arXiv:2409.04240)."""
import json

import numpy as np
import pytest
import torch

from common.seed import torch_generator
from common.study import open_run
from papers.netrecon import recon, rnn
from papers.netrecon.studies import reconstruction

TINY = dict(workers=1, rec_N=12, rec_gs=[2.0], rec_n_traj=3, rec_n_steps=40, adam_epochs_chaos=2, adam_batch=16,
            sweep_n_trajs=[1, 2], adam_sweep_n_trajs=[2], adam_sweep_epochs=1, adam_n_x0=2, adam_t_max=3.0,
            pred_t_burn=1.0)


def _fit(device):
    rng = np.random.default_rng(0)
    J = rnn.make_J(20, 2.0, rng)
    traj = rnn.simulate(J, rng.standard_normal((4, 20)), 80)
    return recon.fit_adam(traj, rnn.DT, epochs=2, batch_size=20, generator=torch_generator(3, "adam", 2.0),
                          device=device, J_true=J)


def test_adam_runs_on_the_cpu_unless_the_run_has_a_cuda_gpu(monkeypatch):
    monkeypatch.setenv("REPRO_DEVICE", "cpu")
    assert reconstruction.adam_device(None) == "cpu" and reconstruction.adam_device("auto") == "cpu"
    assert reconstruction.adam_device("cpu") == "cpu"


def test_the_reconstruction_path_takes_the_device_it_is_given_on_the_cpu(test_device, tmp_path):
    cfg, run = open_run("netrecon", "smoke", seed=0, device=test_device, run_dir=tmp_path, overrides=TINY)
    res = reconstruction.measure(cfg, run)
    m = res["metrics"]
    for key in ("adam_r_g2", "ctrl_adam_r_g2", "ls_relfro_g2", "ctrl_ls_relfro_g2", "adam_Tpd_g2"):
        assert np.isfinite(m[key]), key
    W = res["by_g"][2.0]["W_adam"]
    assert isinstance(W, np.ndarray) and W.dtype == np.float64     # brought back to the host as numpy


def test_an_adam_fit_is_fixed_by_its_generator_on_the_cpu():
    W1, h1 = _fit("cpu")
    W2, h2 = _fit("cpu")
    assert np.array_equal(W1, W2) and h1["loss"] == h2["loss"]


# ---- on a GPU (REPRO_TEST_DEVICE=cuda) -------------------------------------------------------------------

@pytest.mark.cuda
def test_on_a_gpu_the_adam_fit_uses_it_and_matches_the_cpu(gpu_peak):
    assert reconstruction.adam_device("cuda").startswith("cuda")
    gpu_peak.reset()
    W_gpu, h_gpu = _fit("cuda")
    assert gpu_peak.grew()                      # the fit ran there, no silent fallback
    W_cpu, h_cpu = _fit("cpu")
    # the same minibatches and start (CPU generators): only rounding differs
    assert np.max(np.abs(W_gpu - W_cpu)) < 1e-8 * max(1.0, np.max(np.abs(W_cpu)))
    assert h_gpu["loss"] == pytest.approx(h_cpu["loss"], rel=1e-9)


@pytest.mark.cuda
def test_on_a_gpu_machine_the_smoke_notebooks_fit_adam_there_and_give_the_cpus_verdicts(in_process, monkeypatch,
                                                                                       tmp_path, gpu_peak):
    from common import reproduce
    from common.claims import read_claims_table

    verdicts, metrics = {}, {}
    for device in ("cpu", "cuda"):
        out = tmp_path / device
        monkeypatch.setenv("REPRO_RESULTS", str(out))
        gpu_peak.reset()
        assert reproduce.main(["netrecon", "--profile", "smoke", "--device", device, "--quiet"]) == 0
        assert gpu_peak.grew() == (device == "cuda")   # the Adam fits (workers=1: here)
        run = out / "netrecon" / "smoke"
        table = read_claims_table(run / "claims.csv")
        verdicts[device] = dict(zip(table["id"], table["verdict"]))
        metrics[device] = json.loads((run / "metrics.json").read_text())
    assert verdicts["cpu"] == verdicts["cuda"]
    # only the Adam numbers can move, by rounding; every CPU-only number is the same bit for bit
    for key, v in metrics["cpu"].items():
        if isinstance(v, float) and np.isfinite(v):
            if key.startswith(("adam_", "ctrl_adam_")):
                assert metrics["cuda"][key] == pytest.approx(v, rel=1e-6, abs=1e-9), key
            else:
                assert metrics["cuda"][key] == v, key
