"""Where acl computes: the image models (autoencoder, classifier, GAN / ACL-GAN, G_c / D_c and the MMD
control) train on the run's device; every metric (FID, KID, PRDC, C2ST, class histograms) and the 2-D
mixtures run on the CPU. The same code path runs here on the CPU with the device passed through; the tests
marked `cuda` run it on a GPU (REPRO_TEST_DEVICE=cuda) and check that the GPU was used, that no device
generator was reseeded, and that what runs on the CPU gives the CPU's numbers."""
import json

import pytest
import torch

from common.seed import Streams
from papers.acl import image_replicates
from papers.acl.config import get_config
from papers.acl.mmd import fit_mmd_code_generator
from papers.acl.train import Hyper

SMALL = dict(code_steps=5, ae_steps=5, cls_steps=5, gan_steps=3, n_eval=120, n_region=60, n_prdc=60, n_mem=60,
             kid_subsets=2, kid_subset_size=50, feat_epochs=1, n_regions=2)


def _task(tmp_path, device, study):
    cfg = vars(get_config("smoke", **SMALL)) | {"device": device}
    return image_replicates.image_task(cfg, str(tmp_path), Streams(0), 0, 0, study)


@pytest.mark.parametrize("study", ["ae", "cls", "aclgan"])
def test_image_task_runs_on_the_device_it_is_given(tmp_path, test_device, study):
    out = _task(tmp_path, test_device, study)
    assert out["provenance"]["image_models_device"] == test_device and out["provenance"]["evaluation_device"] == "cpu"
    want = {"ae": {"acl", "normal", "gauss", "gmm", "mmd_gc"}, "cls": {"acl", "normal", "gauss", "gmm", "mmd_gc"},
            "aclgan": {"aclgan"}}[study]
    assert set(out["metrics"]) == want
    if study != "aclgan":
        assert set(out["c2st"]) == want | {"train_codes"}
    if study == "cls":   # the classifier's own head read G_c's codes on the device, counted on the host
        assert sum(out["own_head_class_frac"]) == pytest.approx(1.0)


def test_the_mmd_control_starts_from_the_same_weights_on_any_device(test_device):
    codes = torch.randn(300, 3, generator=torch.Generator().manual_seed(0))
    hp = Hyper(code_dim=3, z_dim=3, hidden=16, depth=1, code_steps=0, code_batch=32)
    cpu = fit_mmd_code_generator(codes, hp, Streams(4))
    dev = fit_mmd_code_generator(codes.to(test_device), hp, Streams(4))
    assert all(p.device.type == torch.device(test_device).type for p in dev.parameters())
    assert all(torch.equal(a, b.cpu()) for a, b in zip(cpu.parameters(), dev.parameters()))


def _trained_mmd_control(device):
    """The MMD control trained 5 steps on `device` (CPU generators throughout), its initial and trained
    G_c(z) on a fixed noise batch, back on the CPU, and where its parameters lived."""
    codes = torch.randn(300, 3, generator=torch.Generator().manual_seed(0))
    z = torch.randn(64, 3, generator=torch.Generator().manual_seed(9))
    out = []
    for steps in (0, 5):
        hp = Hyper(code_dim=3, z_dim=3, hidden=16, depth=1, code_steps=steps, code_batch=32)
        model = fit_mmd_code_generator(codes.to(device), hp, Streams(4))
        with torch.no_grad():
            out.append(model.generate(z.to(device)).cpu())
    return out[0], out[1], {p.device.type for p in model.parameters()}


@pytest.mark.cuda
def test_on_the_gpu_the_image_models_use_it_and_its_generator_is_left_alone(tmp_path, gpu_peak):
    torch.cuda.init()
    state = torch.cuda.get_rng_state()
    gpu_peak.reset()
    for study in ("ae", "cls", "aclgan"):
        out = _task(tmp_path / study, "cuda", study)
        assert out["provenance"]["image_models_device"] == "cuda" and out["provenance"]["evaluation_device"] == "cpu"
        assert all(v == v for m in out["metrics"].values() for v in (m.values() if isinstance(m, dict) else [m])
                   if isinstance(v, float)), study                       # no NaN from the GPU's models
    assert gpu_peak.grew()
    assert torch.equal(torch.cuda.get_rng_state(), state)


@pytest.mark.cuda
def test_on_the_gpu_the_mmd_control_trains_as_on_the_cpu():
    """The same start bit for bit (CPU-seeded weights), and after 5 steps the CPU's answer up to rounding: the
    difference between devices is a small part of what training moved (a GPU run on other batches, or not
    training, would move it by the whole)."""
    test_the_mmd_control_starts_from_the_same_weights_on_any_device("cuda")
    start_c, trained_c, _ = _trained_mmd_control("cpu")
    start_g, trained_g, devices = _trained_mmd_control("cuda")
    assert devices == {"cuda"}
    assert torch.equal(start_g, start_c)
    moved = float((trained_c - start_c).abs().max())
    assert moved > 1e-4 and float((trained_g - trained_c).abs().max()) < 0.05 * moved


@pytest.mark.cuda
def test_smoke_run_on_the_gpu_gives_the_cpus_verdicts_and_the_cpus_2d_numbers(tmp_path, monkeypatch, in_process, gpu_peak):
    """The claims the smoke profile judges get the CPU run's verdicts; the 2-D mixtures run on the CPU whatever the
    device, so their metrics are the CPU's to the bit; the manifest names the GPU."""
    import csv

    from common.reproduce import main

    out = {}
    for device in ("cpu", "cuda"):
        monkeypatch.setenv("REPRO_RESULTS", str(tmp_path / device))
        gpu_peak.reset()
        assert main(["acl", "--profile", "smoke", "--quiet", "--device", device]) == 0
        assert gpu_peak.grew() == (device == "cuda")    # the image models: GPU, else none
        run = tmp_path / device / "acl" / "smoke"
        with open(run / "claims.csv") as f:
            verdicts = {r["id"]: r["verdict"] for r in csv.DictReader(f)}
        out[device] = (verdicts, json.loads((run / "metrics.json").read_text()),
                       json.loads((run / "manifest.json").read_text()))
    assert out["cpu"][0] == out["cuda"][0]
    syn = {k for k in out["cpu"][1] if k.startswith("syn_")}
    assert syn and all(out["cpu"][1][k] == out["cuda"][1][k] for k in syn)
    assert out["cuda"][1]["image_models_device"].startswith("cuda") and out["cpu"][1]["image_models_device"] == "cpu"
    assert "cuda" in json.dumps(out["cuda"][2]["device"])
