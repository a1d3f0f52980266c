"""The full profile (CIFAR-10, ResNet-20, W2/W3/W4, the grid ablation with the released POST set) runs the code
quick runs: every notebook, through the runner, on CIFAR-10's python batches (`common.fakedata`), with the
epochs, sample counts and batch sizes cut to one training step and two evaluation batches, the figures drawn at a
low resolution (PNG only), and the dataset, architecture, bit widths and grids left as full has them. Every claim full judges on CIFAR-10 gets a finite metric and a finite control (the two ImageNet
ResNet-34 claims need `-p dataset=imagenet -p arch=resnet34`; their data check is tested here). Without the data,
the full profile stops before anything is written, in one line naming the fix."""
import json
import math
from pathlib import Path

import pytest

from common import data as cdata
from common.claims import load_claims
from common.errors import UserError
from common.fakedata import write_cifar10, write_imagefolder
from papers.asq import config

TINY = dict(  # counts and sizes only: the dataset, architecture, bit widths and grids stay full's
    fp_epochs=1, qat_epochs=1, batch_size=16, eval_batch=10, mse_samples=1000, freeze_samples=16, acct_size=16,
    seeds=[0], lut_arch="resnet18",
)
N_TRAIN, N_TEST = 16, 20       # CIFAR-10 stand-in images: one training step per epoch, two evaluation batches


def _values(metrics, key):
    v = metrics[key]
    return v if isinstance(v, list) else [v]


def small_figures(fig, name, directory, vector="svg"):
    """Stands in for `common.plots.save_figure`: every figure is still drawn and written, at 20 dpi, PNG only
    (the full-size PNG + SVG path is the smoke run's and nbval's)."""
    png = Path(directory) / f"{name}.png"
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, format="png", dpi=20)
    return png


def run_full_tiny(tmp_path, monkeypatch, device):
    from common import plots
    from common.reproduce import main

    monkeypatch.setattr(plots, "save_figure", small_figures)

    write_cifar10(tmp_path / "data", n_train=N_TRAIN, n_test=N_TEST)
    monkeypatch.setenv("REPRO_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("REPRO_RESULTS", str(tmp_path / "results"))
    monkeypatch.setitem(config.PROFILES, "full", dict(config.PROFILES["full"], **TINY))
    assert main(["asq", "--profile", "full", "--quiet", "--device", device]) == 0
    run = tmp_path / "results" / "asq" / "full"
    assert len(list((run / "figures").glob("fig0*.png"))) == len(json.loads((run / "figures.json").read_text())) == 10
    return json.loads((run / "metrics.json").read_text()), json.loads((run / "manifest.json").read_text())


def check_every_full_claim_measured(metrics):
    claims = [c for c in load_claims(Path(config.__file__).with_name("claims.yaml")) if "full" in c.profiles]
    judged = [c for c in claims if all(metrics.get(k) == v for k, v in c.when)]
    assert len(claims) == 14 and len(judged) == 12                      # all but the two ImageNet ResNet-34 claims
    for c in judged:
        for key in (c.metric, c.baseline, c.control, c.control_baseline, c.value):
            if isinstance(key, str):
                assert key in metrics, (c.id, key)
                vals = _values(metrics, key)
                assert vals and all(isinstance(v, (int, float)) and math.isfinite(v) for v in vals), (c.id, key, vals)


def test_full_profile_runs_every_notebook_on_cifar10_files(tmp_path, monkeypatch, in_process):
    metrics, manifest = run_full_tiny(tmp_path, monkeypatch, "cpu")
    assert [name for name, _ in in_process] == sorted(p.name for p in Path("notebooks/asq").glob("*.ipynb"))
    assert (metrics["dataset"], metrics["arch"]) == ("cifar10", "resnet20")
    assert manifest["parameters"]["bits"] == [2, 3, 4] and "post_released" in manifest["parameters"]["ablation_grids"]
    assert len(metrics["acc_post_released_w4_per_seed"]) == 1
    check_every_full_claim_measured(metrics)


@pytest.mark.cuda
def test_full_profile_runs_every_notebook_on_the_gpu(tmp_path, monkeypatch, in_process):
    import torch

    torch.cuda.reset_peak_memory_stats()
    metrics, manifest = run_full_tiny(tmp_path, monkeypatch, "cuda")
    assert "cuda" in json.dumps(manifest["device"])
    assert torch.cuda.max_memory_allocated() > 0                        # training and the integer path ran there
    check_every_full_claim_measured(metrics)


def _no_data(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_DATA", str(tmp_path))
    monkeypatch.setattr(cdata, "SYSTEM_DIR", tmp_path / "none")
    monkeypatch.setattr(cdata.paths, "DATA", tmp_path / "none")


def test_full_profile_without_cifar10_is_one_line_naming_the_fix(tmp_path, monkeypatch):
    _no_data(tmp_path, monkeypatch)
    with pytest.raises(UserError) as err:
        config.preflight(config.get_config("full"))
    msg = str(err.value)
    assert "\n" not in msg and "CIFAR-10" in msg and "make data DATASETS=cifar10" in msg and "REPRO_DATA" in msg
    write_cifar10(tmp_path, n_train=10, n_test=10)
    config.preflight(config.get_config("full"))                        # with the files, it passes
    config.preflight(config.get_config("quick", dataset="digits"))      # digits ship with scikit-learn


def test_imagenet_claims_need_imagenet_and_an_imagenet_model(tmp_path, monkeypatch):
    _no_data(tmp_path, monkeypatch)
    with pytest.raises(UserError) as err:
        config.preflight(config.get_config("full", dataset="imagenet", arch="resnet34"))
    assert "\n" not in str(err.value) and "make data DATASETS=imagenet" in str(err.value)
    write_imagefolder(tmp_path, n_classes=2, n_per_class=1, size=32, n_val_per_class=1)
    config.preflight(config.get_config("full", dataset="imagenet", arch="resnet34"))
    with pytest.raises(UserError, match="arch=resnet34"):
        config.preflight(config.get_config("full", dataset="imagenet", arch="resnet20"))
    with pytest.raises(UserError, match="qat_epochs"):
        config.preflight(config.get_config("full", dataset="imagenet", arch="resnet34", qat_epochs=-1))
