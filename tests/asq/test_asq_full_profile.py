"""The full profile (CIFAR-10, ResNet-20, W2/W3/W4, the grid ablation with the released POST set) runs the code
quick runs: every notebook, through the runner, on CIFAR-10's python batches (`common.fakedata`), with the
epochs, sample counts and batch sizes cut to one training step and two evaluation batches, the figures drawn at a
low resolution (PNG only), and the dataset, architecture, bit widths and grids left as full has them. Every claim full judges on CIFAR-10 gets a finite metric and a finite control (the two ImageNet
ResNet-34 claim needs `-p dataset=imagenet -p arch=resnet34`: its path runs on fake class folders below, from a
torchvision-format float checkpoint). Without the data,
the full profile stops before anything is written, in one line naming the fix."""
from common.seed import Streams
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


@pytest.fixture(autouse=True)
def small_kernels(request):
    """The CPU tests here convolve a few images once per shape, where oneDNN's set-up of each new shape costs more
    than the convolution (ResNet-34's first forward and backward at 4 images: 3.4 s of CPU, against 0.02 s with
    PyTorch's own kernels), and where a second intra-op thread waits on the other test process of `make test`
    (narrow ResNet-34, 4 images, forward and backward: 27 ms with 2 threads against 6 ms with 1 on a loaded 2-core
    Xeon): they run on PyTorch's own CPU kernels, one thread. The repository's code path is the same; what they
    check (every notebook and claim measured, finite) does not depend on the kernel. The CUDA test keeps both."""
    import torch

    if "cuda" in request.keywords:
        yield
        return
    threads, onednn = torch.get_num_threads(), torch.backends.mkldnn.enabled
    torch.set_num_threads(1)
    torch.backends.mkldnn.enabled = False
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        torch.backends.mkldnn.enabled = onednn


def _values(metrics, key):
    v = metrics[key]
    return v if isinstance(v, list) else [v]


def small_figures(fig, name, directory, vector="svg"):
    """Stands in for `common.plots.save_figure`: every figure is still drawn and written, at 20 dpi, PNG only
    (the full-size PNG path is the smoke run's and nbval's; the SVG copy is tested in tests/common/test_io_runs.py)."""
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


def check_every_full_claim_measured(metrics, ids=None):
    every = load_claims(Path(config.__file__).with_name("claims.yaml"))
    claims = [c for c in every if "full" in c.profiles]
    judged = [c for c in claims if all(metrics.get(k) == v for k, v in c.when)]
    if ids is None:
        # full lists every claim of claims.yaml, and judges all but those that need ImageNet (`when`)
        imagenet = {c.id for c in claims if dict(c.when).get("dataset") == "imagenet"}
        assert claims and [c.id for c in claims] == [c.id for c in every]
        assert imagenet and {c.id for c in claims} - {c.id for c in judged} == imagenet
    else:
        judged = [c for c in judged if c.id in ids]
        assert len(judged) == len(ids)
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
    assert manifest["parameters"]["bits"] == [2, 3, 4]
    assert {"post_released", "pot_released", "apot"} <= set(manifest["parameters"]["ablation_grids"])
    assert len(metrics["acc_post_released_w4_per_seed"]) == len(metrics["acc_pot_released_w4_per_seed"]) == 1
    # full evaluates every QAT epoch: the best of them (the release's best_acc1) beside the final accuracy
    assert metrics["best_acc_asq_w4a4_uniform_per_seed"][0] >= 0 and manifest["parameters"]["augment"] is True
    assert manifest["parameters"]["cosine_per"] == "epoch"                  # the release's CosineAnnealingLR
    check_every_full_claim_measured(metrics)


IMAGENET = dict(bits=[4], ablation_grids=["uniform"], sbeta_bits=[], frozen_bits=[], ptq_diagnostic=False,
                batch_size=4, eval_batch=4, image_size=32)


def test_full_profile_runs_the_imagenet_path_on_class_folders(tmp_path, monkeypatch):
    """The ImageNet variant's own code path as full runs it: class folders decoded and augmented
    (RandomResizedCrop + flip) in worker processes, one DataLoader per epoch and per evaluation pass, ResNet-34
    fine-tuned from a torchvision-format float checkpoint (not retrained), the per-epoch cosine, the best and the
    final accuracy, and the ImageNet claim's metrics; notebook 02's study (the one that trains) through the study
    interface. Cut for 2 CPU cores: ResNet-34's blocks at an eighth of its widths (8-64 channels, torchvision's
    layer names), 32 x 32 images (`image_size`; 224 at full), W4 LSQ and ASQ only. The other notebooks run the
    same code on any model (the CIFAR-10 test above); on the real ResNet-34 their weight-error study alone costs
    minutes here."""
    import re

    import torch

    from common.study import run_all
    from papers.asq import models
    from papers.asq.models import BasicBlock, ResNet, build_model
    from papers.asq.qat_grid import QATGrid

    def narrow_resnet34(num_classes=1000, in_channels=3):     # resnet34's structure, 1/8 of its widths
        return ResNet(BasicBlock, [3, 4, 6, 3], [8, 16, 32, 64], num_classes, in_channels)

    monkeypatch.setitem(models.ARCHS, "resnet34", narrow_resnet34)
    # the narrowed model exists in this process only: its QAT models train here, not in spawned workers
    # (common.spawned; tests/asq/test_asq_qat_pool.py checks the pool)
    monkeypatch.setattr(QATGrid, "pooled", property(lambda self: False))

    write_imagefolder(tmp_path / "data", n_classes=2, n_per_class=4, size=48, n_val_per_class=2)
    monkeypatch.setenv("REPRO_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("REPRO_DATA_WORKERS", "2")                      # worker processes, as on a GPU machine
    monkeypatch.setitem(config.PROFILES, "full", dict(config.PROFILES["full"], **{**TINY, **IMAGENET}))
    fp = build_model("resnet34", 2, 3, streams=Streams(5))
    ckpt = tmp_path / "resnet34-float.pth"                              # torchvision's names: layer1. ... layer4.
    torch.save({re.sub(r"^layers\.(\d+)\.", lambda m: f"layer{int(m.group(1)) + 1}.", k): v
                for k, v in fp.state_dict().items()}, ckpt)
    over = {"dataset": "imagenet", "arch": "resnet34", "fp_checkpoint": str(ckpt)}
    out = run_all("asq", "full", tmp_path / "run", device="cpu", overrides=over, studies=["qat_comparison"])
    metrics = out["qat_comparison"]["metrics"]
    params = json.loads((tmp_path / "run" / "manifest.json").read_text())["parameters"]
    assert (params["augment"], params["cosine_per"], params["image_size"]) == (True, "epoch", 32)
    check_every_full_claim_measured({**metrics, **over}, {"asq-w4-r34-imagenet", "asq-w4-vs-fp"})
    assert len(metrics["best_acc_asq_w4a4_uniform_per_seed"]) == 1      # best of the epochs beside the final
    results = json.loads(next((tmp_path / "run").rglob("checkpoints/results.json")).read_text())
    assert results["fp-s0r0"]["checkpoint"] == str(ckpt) and not list((tmp_path / "run").rglob("fp-s0r0.pt"))


@pytest.mark.cuda
def test_full_profile_runs_every_notebook_on_the_gpu(tmp_path, monkeypatch, in_process, gpu_peak):
    gpu_peak.reset()
    metrics, manifest = run_full_tiny(tmp_path, monkeypatch, "cuda")
    assert "cuda" in json.dumps(manifest["device"])
    assert gpu_peak.grew()                        # training and the integer path ran there (above what was allocated)
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


def test_fp_checkpoint_errors_are_one_line(tmp_path, monkeypatch):
    from common.fakedata import write_imagefolder as wif

    _no_data(tmp_path, monkeypatch)
    wif(tmp_path, n_classes=2, n_per_class=1, size=32, n_val_per_class=1)
    with pytest.raises(UserError, match="is not a file") as err:
        config.preflight(config.get_config("full", dataset="imagenet", arch="resnet34", fp_checkpoint="/nowhere.pth"))
    assert "\n" not in str(err.value)
    write_cifar10(tmp_path, n_train=10, n_test=10)
    (tmp_path / "w.pth").write_bytes(b"")
    with pytest.raises(UserError, match="dataset=imagenet"):
        config.preflight(config.get_config("full", fp_checkpoint=str(tmp_path / "w.pth")))


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
