"""Where asq computes: training, evaluation, beta collection, the frozen-beta control, the weight-error study
of the trained layers and the integer path all run on the device of the model (the run's device); the
synthetic weight errors, the accounting and every statistic run on the CPU, and whatever comes back (logits,
tables, numbers) is on the CPU. The same code runs here on the CPU with the device passed through; the tests
marked `cuda` run it on a GPU (REPRO_TEST_DEVICE=cuda), check the GPU was used, and that the checks that do not
depend on float rounding give the CPU's answers."""
from common.seed import Streams
import json

import pytest
import torch

from papers.asq import integer, weight_error
from papers.asq.config import get_config
from papers.asq.convert import init_step_sizes, quantize_model
from papers.asq.data import Split
from papers.asq.betas import collect_betas
from papers.asq.levels import level_set, project, project_index, weight_mse
from papers.asq.models import build_model
from papers.asq.qat_grid import QATGrid


def test_level_tables_follow_the_values_device(test_device):
    v = torch.linspace(-1.2, 1.2, 2001, dtype=torch.float64)
    for grid in ("post", "pot", "uniform", "apot"):
        levels = level_set(grid, 4)
        want, want_i = project(v, levels), project_index(v, levels)
        for lv in (levels, levels.to(test_device)):              # a table on the CPU or on the device
            got, got_i = project(v.to(test_device), lv), project_index(v.to(test_device), lv)
            assert got.device.type == got_i.device.type == torch.device(test_device).type    # computed there
            assert torch.equal(got.cpu(), want) and torch.equal(got_i.cpu(), want_i)
    w = torch.randn(5, 300, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    cpu, dev = weight_mse(w, "post", 4), weight_mse(w.to(test_device), "post", 4)
    assert dev.device.type == torch.device(test_device).type and torch.allclose(dev.cpu(), cpu, rtol=1e-12, atol=0)


def _qmodel(device):
    q = quantize_model(build_model("small_resnet", 10, 1, streams=Streams(0), width=8), "asq", 4, 4, "post", streams=Streams(0)).to(device)
    init_step_sizes(q, torch.randn(32, 1, 28, 28, generator=torch.Generator().manual_seed(1)).to(device))
    return q.eval()


def test_integer_path_runs_on_the_models_device_and_returns_to_the_cpu(test_device):
    data = Split(torch.randn(24, 1, 28, 28, generator=torch.Generator().manual_seed(2)), torch.randint(0, 10, (24,)), None, None)
    cpu = integer.compare_paths(_qmodel("cpu"), data, batch_size=8, near_misses=integer.NEAR_MISSES)
    q = _qmodel(test_device)
    dev = integer.compare_paths(q, data, batch_size=8, near_misses=integer.NEAR_MISSES)
    assert dev["max_abs_logit_diff"] < 1e-10 and dev["argmax_agreement"] == 1.0
    assert dev["frac_images_diff_gt_1e-3_without_flip_fp32"] == 0.0
    assert dev["acc_integer"] == cpu["acc_integer"]
    assert integer.artefact_bytes(q) == integer.artefact_bytes(_qmodel("cpu"))
    ref, diff = integer.logit_differences(q, data, n=10)
    assert ref.device.type == diff.device.type == "cpu" and ref.shape == (10, 10) and float(diff.abs().max()) < 1e-10
    assert all(p.device.type == torch.device(test_device).type and p.dtype == torch.float32 for p in q.parameters())


def test_the_studys_models_live_on_its_device(tmp_path, test_device):
    cfg = get_config("smoke", fp_epochs=1, qat_epochs=1, bits=[2], ablation_grids=["uniform"], ablation_bits=2,
                     freeze_samples=100)
    study = QATGrid(cfg, tmp_path, Streams(0), device=test_device)
    fmodel, acc = study.float_model(0)
    assert next(fmodel.parameters()).device.type == torch.device(test_device).type and 0 <= acc <= 100
    errs = weight_error.layer_errors(fmodel, ["uniform", "post"], 4, cfg.first_last, tag="s0")
    assert errs.nmse.notna().all() and (errs.nmse > 0).all()
    qm, _ = study.qat_model(0, "asq", 2)
    betas = collect_betas(qm, study.test, n=50, batch_size=20)
    assert len(betas) == 50 * betas.layer.nunique() and betas.beta.gt(0).all()
    frozen = study.frozen_accuracy(0, 2)
    assert 0 <= frozen <= 100 and study.frozen_accuracy(0, 2) == frozen        # cached in results.json
    df = study.run_grid([0])
    assert set(df.config) == {"fp", "lsq-w2a2-uniform", "asq-w2a2-uniform", "frozen-asq-w2a2-uniform"}


@pytest.mark.cuda
def test_on_the_gpu_training_and_the_integer_path_use_it(tmp_path, gpu_peak):
    gpu_peak.reset()
    test_the_studys_models_live_on_its_device(tmp_path, "cuda")
    assert gpu_peak.grew()
    gpu_peak.reset()
    test_integer_path_runs_on_the_models_device_and_returns_to_the_cpu("cuda")   # the CPU's accuracy, exactly
    assert gpu_peak.grew()


@pytest.mark.cuda
def test_on_the_gpu_the_level_tables_give_the_cpus_projections():
    """Projections and weight errors on the GPU against the CPU's, bit for bit (float64), on GPU tensors."""
    test_level_tables_follow_the_values_device("cuda")


@pytest.mark.cuda
def test_smoke_run_on_the_gpu_gives_the_cpus_verdicts(tmp_path, monkeypatch, in_process, gpu_peak):
    """The smoke claims (the weight-error share, the integer path's exactness) do not depend on float rounding
    in training; the manifest names the GPU."""
    import csv

    from common.reproduce import main

    out = {}
    for device in ("cpu", "cuda"):
        monkeypatch.setenv("REPRO_RESULTS", str(tmp_path / device))
        gpu_peak.reset()
        assert main(["asq", "--profile", "smoke", "--quiet", "--device", device]) == 0
        assert gpu_peak.grew() == (device == "cuda")    # training ran there, else nowhere
        run = tmp_path / device / "asq" / "smoke"
        with open(run / "claims.csv") as f:
            verdicts = {r["id"]: r["verdict"] for r in csv.DictReader(f)}
        out[device] = (verdicts, json.loads((run / "metrics.json").read_text()),
                       json.loads((run / "manifest.json").read_text()))
    assert out["cpu"][0] == out["cuda"][0]
    assert out["cuda"][1]["int_max_abs_logit_diff"] < 1e-10
    assert all(out["cpu"][1][k] == out["cuda"][1][k] for k in out["cpu"][1] if k.startswith("nmse_"))  # CPU: the same
    assert "cuda" in json.dumps(out["cuda"][2]["device"])
