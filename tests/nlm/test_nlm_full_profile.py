"""The full profile (MNIST {1, 3, 6}, N = 784, the revised scripts' Adam with decay on J and a bias, their
DataLoader's epochs, the released training ages) runs the code quick runs: every function the notebooks call,
through each study's `measure` as the notebooks do, on MNIST files in the official IDX layout, at sizes a test
affords, on the CPU and (where torch sees one) on a GPU, as the notebooks pass the run's device. Full's code paths
are kept: P above the batch (so epochs of several batches, the last one short), a second data set, its own explored
model, a set Rdm length, the released ages. Every claim judged at full gets its metric and its control from that
code."""
from pathlib import Path

import numpy as np
import pytest
import torch

from common import data as cdata
from common.claims import load_claims
from papers.nlm import figures as figs
from common.study import measure, open_run
from papers.nlm.config import get_config, preflight
from papers.nlm.mainmodel import main_model
from papers.nlm.studies import rule_and_spectrum

TINY = dict(  # every size of the full profile cut to seconds; the rule, minibatches, dataset, N and dt stay full's
    # (the second data set: thresholded MNIST, the same code as full's Fashion-MNIST, whose checksummed files a test
    # cannot fake; main_p = 26 over batch 12: epochs of 12 + 12 + 2)
    n_test=20, n_chains=12, batch=12, main_p=26, main_updates=4, n_ages=2, n_gen=8, gen_steps=20,
    second_updates=2, second_p=20, second_dataset="mnist_binary", sweep_sizes=[5, 24], sweep_replicates=1, sweep_updates=3, sweep_gen=8, sweep_gen_steps=20,
    sweep_boot=8, avg_steps=20, ooe_p=24, ooe_updates=3, ooe_rdm_k=20, ooe_rdm_updates=3, ooe_gen_steps=80,
    ooe_times=5, ooe_gen=8, ooe_n_test=20, ooe_boot=8, ooe_replicates=2, explore_steps=300, explore_every=10,
    explore_burn=50, explore_chains=2, explore_p=20, explore_updates=3, denoise_nlm_updates=4, denoise_nlm_steps=20, denoise_reps=1, grad_grid=41,
    ep_chains=64, ep_steps=60, ep_burn=60, quench_steps=20,
)


def _idx(a: np.ndarray) -> bytes:
    """MNIST's IDX layout: magic 0x0800 + ndim, the dimensions as big-endian uint32, then the bytes."""
    return np.array([0x800 + a.ndim, *a.shape], dtype=">u4").tobytes() + a.astype(np.uint8).tobytes()


def _fake_mnist(root: Path, n_train: int = 90, n_test: int = 60) -> None:
    """Digit-like 28x28 images (a class-dependent stroke plus noise and a few saturated pixels) in MNIST's four IDX files."""
    rng = np.random.default_rng(0)
    d = root / "mnist"
    d.mkdir()
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        y = rng.integers(0, 10, n)
        img = rng.integers(0, 40, (n, 28, 28))
        for i, c in enumerate(y):
            img[i, 4 + c: 24, 10 + c % 4: 14 + c % 4] = 255
        # a few saturated pixels per image, so that the thresholded second data set has no test image equal to a
        # training image: with exact duplicates the median test-to-train distance is 0 and d_gen / d_test divides by
        # it (on an AVX2 CPU the distance came out exactly 0, on an AVX-512 one a rounding error above it)
        img[rng.random(img.shape) < 0.03] = 255
        (d / f"{prefix}-images-idx3-ubyte").write_bytes(_idx(img))
        (d / f"{prefix}-labels-idx1-ubyte").write_bytes(_idx(y))


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
def test_full_profile_runs_the_notebooks_code_on_mnist_files(tmp_path, monkeypatch, device, request):
    peak = request.getfixturevalue("gpu_peak") if device == "cuda" else None
    if peak is not None:
        peak.reset()
    _fake_mnist(tmp_path)
    monkeypatch.setenv("REPRO_DATA", str(tmp_path))
    cfg, run = open_run("nlm", "full", seed=0, device=device, run_dir=tmp_path / "run", overrides=TINY)   # preflight too
    assert (cfg.dataset, cfg.optimizer, cfg.lr, cfg.weight_decay, cfg.bias) == ("mnist", "adam", 5e-5, 5e-7, True)
    assert (cfg.minibatch, cfg.age_schedule) == ("epochs", "released")
    torch.set_num_threads(1)
    metrics = {}
    first = measure("nlm", "training_samples", cfg, run)              # notebook 01: the main model, then the second set
    model = main_model(cfg, run.streams, run.dir, device=run.device)   # its checkpoint, as notebooks 04 and 06 read it
    assert model["cached"]
    st = model["state"]
    J, b = st["J"], st["b"]
    assert J.shape[-1] == 784 == model["data"].x_train.shape[1]
    assert torch.count_nonzero(torch.diagonal(J, dim1=-2, dim2=-1)) == 0   # J_ii = 0, as in the paper's model
    assert torch.count_nonzero(b) > 0                                  # the revised scripts train a bias
    assert st["config"]["minibatch"] == "epochs" and st["epochs"]["pos"] == [12]   # 12 + 12 + 2, then 12 of epoch 2
    assert sorted(st["snaps"]) == [0, 4] and first["fashion"] is not None   # released ages within 4 updates: the last
    results = {"age": first["age"], "fashion": first["fashion"],
               "sweep": measure("nlm", "memorization_sweep", cfg, run),     # notebook 02
               "ooe": measure("nlm", "out_of_equilibrium", cfg, run),       # notebook 03
               "explore": measure("nlm", "exploration", cfg, run),          # notebook 04 (its own P)
               "denoise": measure("nlm", "denoising", cfg, run),            # notebook 05
               "rule": rule_and_spectrum.rule_checks(cfg, run.streams),     # notebook 06
               "spectrum": rule_and_spectrum.spectrum(model)}
    for res in results.values():
        metrics |= res["metrics"]
    assert metrics["explore_p"] == cfg.explore_p == 20                 # notebook 04 explores its own P (full: 288)
    # every notebook figure draws from the full profile's results (28 x 28 images, results made on `device`)
    import matplotlib.pyplot as plt                                     # MPLBACKEND=Agg (conftest)
    for draw, key in ((figs.samples_over_age, "age"), (figs.age_curves, "age"), (figs.samples_over_age, "fashion"), (figs.sweep, "sweep"),
                      (figs.sweep_samples, "sweep"), (figs.ooe, "ooe"), (figs.exploration, "explore"),
                      (figs.denoising_by_nlm, "denoise"), (figs.denoising, "denoise"), (figs.rule_check, "rule"),
                      (figs.spectrum, "spectrum")):
        plt.close(draw(results[key]))
    claims = [c for c in load_claims(Path(figs.__file__).with_name("claims.yaml")) if "full" in c.profiles]
    assert claims
    for c in claims:
        tol = c.tolerance.get("metric") if isinstance(c.tolerance, dict) else c.tolerance
        for key in (c.metric, c.se, c.control, c.control_se, c.value, tol):
            if isinstance(key, str):
                assert key in metrics and metrics[key] is not None, (c.id, key)
    assert np.isfinite([metrics[c.metric] for c in claims]).all()
    assert np.isfinite([metrics[c.control] for c in claims]).all()
    if peak is not None:                                                # training and sampling really ran there
        assert peak.grew()


def test_full_profile_without_mnist_is_one_line_naming_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_DATA", str(tmp_path))
    monkeypatch.setattr(cdata, "SYSTEM_DIR", tmp_path / "none")
    monkeypatch.setattr(cdata.paths, "DATA", tmp_path / "none")
    from common.errors import UserError
    with pytest.raises(UserError, match="REPRO_DATA"):
        preflight(get_config("full"))
