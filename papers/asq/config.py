"""Profiles of the ASQ/POST reproduction (smoke, quick, full), resolved with common.profiles.

Paper: "Precision Neural Network Quantization via Learnable Adaptive Modules",
arXiv:2504.17263, https://arxiv.org/abs/2504.17263

smoke: 8x8 digits, tiny CNN, seconds. quick: Fashion-MNIST, small ResNet-8 (width 16), a
stratified 10k-image training subset, 6 float epochs and 2 QAT epochs, 3 training seeds, full
10k test set; quick trains no QAT comparison grid (`qat_grid`), only what its claims read: the float models
(the weight-error identity) and the ASQ W4A4 POST model of the first replicate (the integer path). Every
comparison claim is judged at full; the README's quick findings come from `devtune w2_finding`, which trains
quick's comparison set (`bits`, `sbeta_bits`, `frozen_bits` with `qat_grid` on) on development seeds.
full: CIFAR-10 ResNet-20 (the paper's released recipe lengths); ImageNet ResNet-34 W4A4 with `-p dataset=imagenet -p arch=resnet34`.

`seeds` lists a run's training replicates: replicate r draws from the run's keyed stream ("train", r)
(`papers/asq/qat_grid.py`), so `--seeds 0 1 2` gives three runs whose replicates share no stream (the run's
seed roots every stream), each with its own paired comparisons.
"""
from __future__ import annotations

import sys

from common.profiles import configure

_COMMON = dict(
    first_last="fp",          # "fp" (released default) or "8bit"
    fp_lr=0.1, fp_wd=5e-4,    # float pre-training: SGD 0.9, cosine
    qat_lr=0.01, qat_wd=1e-4,  # QAT: the released recipe (SGD 0.9, cosine)
    ablation_bits=4,          # weight-grid ablation at W4A4 with ASQ activations
    lut_arch="resnet34",      # model on which the LUT / adapter accounting is reported
    acct_size=224,            # input size for MAC counting in the accounting
    eval_batch=1000,
    mse_samples=20000,
    freeze_samples=2000,      # training images over which each layer's beta is averaged (the frozen-beta control)
    ckpt_dir="",              # "" = <run_dir>/checkpoints; point at a torchrun-trained cache
    fp_checkpoint="",         # ImageNet: a torchvision-format float state dict to fine-tune from ("" = train the float model)
    augment=False,            # training augmentation: crop + flip (CIFAR), RandomResizedCrop + flip (ImageNet)
    image_size=224,           # ImageNet: training crop and evaluation centre crop (the release's 224; resize 256/224 of it)
    cosine_per="step",        # cosine learning rate per "step" or per "epoch" (the release's CosineAnnealingLR; full)
    eval_each_epoch=False,    # test accuracy after every QAT epoch: the best of them (the release's best_acc1) beside the final
    sbeta_bits=[],            # widths with the trained null of ASQ's adaptivity (one scalar beta per layer, method sbeta)
    frozen_bits=[],           # widths at which the trained ASQ model is evaluated again with beta frozen (a diagnostic)
    ptq_diagnostic=False,     # ASQ W4A4 before QAT (no fine-tuning) evaluated too: a diagnostic of what QAT adds
    qat_grid=True,            # train the QAT comparison grid (bits, sbeta_bits, frozen_bits, ablation_grids, PTQ) in a run
    converged_qat_steps_min=1560,  # LSQ's activation step has not converged before this many QAT steps (quick's sizes; TUNED)
)

PROFILES = {
    "smoke": dict(_COMMON, dataset="digits", arch="digits_cnn", width=16, n_train=0, n_test=0,
                  fp_epochs=4, qat_epochs=1, batch_size=64, seeds=[0], bits=[2, 4],
                  ablation_grids=["post"], mse_samples=4000, eval_batch=500, acct_size=64,
                  lut_arch="resnet18", frozen_bits=[2], ptq_diagnostic=True),
    # quick trains what its claims read (issue 43): the float model of every training seed (the weight-error identity
    # post-vs-apot-mse-w4) and ASQ W4A4 with POST weights of the first (the integer path, notebook 03; trained in
    # notebook 02's worker pool). No QAT comparison grid (qat_grid=False): every comparison claim is judged at full;
    # bits / sbeta_bits / frozen_bits below are the comparison set that `python -m papers.asq.devtune w2_finding`
    # trains on development seeds for the README's findings (LSQ and ASQ at W2 and W4, the scalar-beta null and
    # the frozen-beta diagnostic at W2). W3, the weight-grid ablation and PTQ serve claims judged at full only.
    "quick": dict(_COMMON, dataset="fashion_mnist", arch="small_resnet", width=16, n_train=10000, n_test=0,
                  fp_epochs=6, qat_epochs=2, batch_size=128, seeds=[0, 1, 2], bits=[2, 4],
                  ablation_grids=[], sbeta_bits=[2], frozen_bits=[2], qat_grid=False),
    "full": dict(_COMMON, dataset="cifar10", arch="resnet20", width=16, n_train=0, n_test=0,
                 fp_epochs=200, qat_epochs=90, batch_size=256, seeds=[0, 1, 2], bits=[2, 3, 4],
                 ablation_grids=["uniform", "pot", "post", "apot", "post_released", "pot_released"], mse_samples=200000,
                 augment=True, eval_each_epoch=True, cosine_per="epoch", sbeta_bits=[2, 3, 4], frozen_bits=[2, 3, 4], ptq_diagnostic=True),
}


_WIDTHS = [2, 3, 4, 5, 6, 7, 8]
#: value checks of every profile and override (`common.profiles.check_bounds`; types come from PROFILES)
BOUNDS = {
    "dataset": {"choices": ["digits", "fashion_mnist", "cifar10", "imagenet"]},
    "arch": {"choices": ["digits_cnn", "small_resnet", "resnet20", "resnet18", "resnet34", "resnet50"]},
    "lut_arch": {"choices": ["resnet18", "resnet34", "resnet50"]},
    "first_last": {"choices": ["fp", "8bit"]},
    "bits": {"choices": _WIDTHS}, "ablation_bits": {"choices": _WIDTHS}, "sbeta_bits": {"choices": _WIDTHS},
    "frozen_bits": {"choices": _WIDTHS},
    "ablation_grids": {"choices": ["uniform", "pot", "post", "apot", "post_released", "pot_released"]},
    "seeds": {"min": 0},
    "width": {"min": 1}, "n_train": {"min": 0}, "n_test": {"min": 0},
    "fp_epochs": {"min": 0}, "qat_epochs": {"min": 0},
    "batch_size": {"min": 1}, "eval_batch": {"min": 1}, "freeze_samples": {"min": 1},
    "fp_lr": {"above": 0}, "qat_lr": {"above": 0}, "fp_wd": {"min": 0}, "qat_wd": {"min": 0},
    "mse_samples": {"min": 2}, "acct_size": {"min": 16}, "converged_qat_steps_min": {"min": 1},
    "image_size": {"min": 16}, "cosine_per": {"choices": ["step", "epoch"]},
}


def get_config(profile: str, **overrides):
    """The resolved profile, checked (`common.profiles.configure`: unknown keys, bad types and values outside
    `BOUNDS` a UserError); n_train = 0 / n_test = 0 mean the whole split."""
    return configure(sys.modules[__name__], profile, **overrides)


def preflight(cfg) -> None:
    """What `BOUNDS` cannot say ends here in one line, before any notebook runs (the runner and `open_run` call
    it): CIFAR-10 or ImageNet files absent (naming `make data DATASETS=<name>`), an `fp_checkpoint` that is not a
    file or is given without ImageNet, ImageNet with a model of the wrong shape. The digits ship with
    scikit-learn."""
    from common.data import available, folder
    from common.errors import UserError

    if cfg.dataset not in ("digits",) and not available(cfg.dataset):
        need = {"cifar10": "CIFAR-10's python batches (cifar-10-batches-py/)",
                "imagenet": "ImageNet as class folders (train/<class>/*.JPEG, val/<class>/*.JPEG)"}.get(cfg.dataset, cfg.dataset)
        raise UserError(f"the {cfg.profile} profile needs {need} in data/{folder(cfg.dataset)}/ or under $REPRO_DATA; "
                        f"run `make data DATASETS={cfg.dataset}` or set REPRO_DATA")
    if cfg.fp_checkpoint:
        from pathlib import Path

        if cfg.dataset != "imagenet":
            raise UserError(f"fp_checkpoint holds torchvision's ImageNet weights; use it with -p dataset=imagenet "
                            f"(got dataset={cfg.dataset})")
        if not Path(cfg.fp_checkpoint).is_file():
            raise UserError(f"fp_checkpoint {cfg.fp_checkpoint!r} is not a file; save torchvision's float weights "
                            f"there (papers/asq/README.md, 'Full profile on ImageNet') or drop -p fp_checkpoint")
    if cfg.dataset == "imagenet" and cfg.arch not in ("resnet18", "resnet34", "resnet50"):
        raise UserError(f"ImageNet needs an ImageNet-shape model; add -p arch=resnet34 (got arch={cfg.arch})")


#: settings chosen on development seeds (common/devseeds.py, `python -m papers.asq.devtune qat_length`)
TUNED: dict = {
    "converged_qat_steps_min": {
        "result": "qat_length",
        "show": ["results.converged_epochs", "results.converged_after_steps", "results.min_change_ratio_e2",
                 "results.min_change_ratio_e10", "results.converged_epochs_abs", "results.mean_acc_lsq_e10",
                 "results.mean_acc_lsq_e20"],
        "why": "a lower bound on the QAT length (in steps at quick's sizes) at which LSQ's activation step has "
               "converged: no length of the ladder 2, 5, 10, 20 epochs has every layer's change to the next length "
               "below 10 % of its change so far, on every development seed (devtune.converged_length; the first, "
               "absolute criterion was met at every length because the step hardly moves: "
               "converged_epochs_abs). The ASQ-vs-LSQ and ASQ-vs-scalar-beta claims need a converged length; "
               "quick's 156 steps are a tenth of this bound, so they are judged at full (90 epochs x 195 steps)",
    },
}
