"""Profiles of the ASQ/POST reproduction (smoke, quick, full), resolved with common.profiles.

Paper: "Precision Neural Network Quantization via Learnable Adaptive Modules",
arXiv:2504.17263, https://arxiv.org/abs/2504.17263

smoke: 8x8 digits, tiny CNN, seconds. quick: Fashion-MNIST, small ResNet-8 (width 16), a
stratified 10k-image training subset, 6 float epochs and 2 QAT epochs, 3 training seeds, full
10k test set: about 5 minutes on 2 cores. full: CIFAR-10 ResNet-20 (the paper's released recipe
lengths); ImageNet ResNet-34 W4A4 with `-p dataset=imagenet -p arch=resnet34`.

`seeds` lists training-seed offsets; a run with notebook parameter `seed = k` trains the seeds
k * len(seeds) + offset, so `--seeds 0 1 2` gives three runs on disjoint training seeds (seed 0:
0, 1, 2; seed 1: 3, 4, 5; seed 2: 6, 7, 8), each with its own paired comparisons.
"""
from __future__ import annotations

from common.profiles import resolve

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
    eval_each_epoch=False,    # test accuracy after every QAT epoch: the best of them (the release's best_acc1) beside the final
    sbeta_bits=[],            # widths with the trained null of ASQ's adaptivity (one scalar beta per layer, method sbeta)
    converged_qat_steps_min=1560,  # LSQ's activation step has not converged before this many QAT steps (quick's sizes; TUNED)
)

PROFILES = {
    "smoke": dict(_COMMON, dataset="digits", arch="digits_cnn", width=16, n_train=0, n_test=0,
                  fp_epochs=4, qat_epochs=1, batch_size=64, seeds=[0], bits=[2, 4],
                  ablation_grids=["uniform", "pot", "post"], mse_samples=4000, eval_batch=500, acct_size=64,
                  lut_arch="resnet18"),
    "quick": dict(_COMMON, dataset="fashion_mnist", arch="small_resnet", width=16, n_train=10000, n_test=0,
                  fp_epochs=6, qat_epochs=2, batch_size=128, seeds=[0, 1, 2], bits=[2, 3, 4],
                  ablation_grids=["uniform", "pot", "post"], sbeta_bits=[2, 3]),
    "full": dict(_COMMON, dataset="cifar10", arch="resnet20", width=16, n_train=0, n_test=0,
                 fp_epochs=200, qat_epochs=90, batch_size=256, seeds=[0, 1, 2], bits=[2, 3, 4],
                 ablation_grids=["uniform", "pot", "post", "apot", "post_released", "pot_released"], mse_samples=200000,
                 augment=True, eval_each_epoch=True, sbeta_bits=[2, 3, 4]),
}


def training_seeds(offsets, seed: int) -> list[int]:
    """The training seeds of run `seed`: disjoint blocks of len(offsets) seeds."""
    return [int(seed) * len(offsets) + int(o) for o in offsets]


def get_config(profile: str, seed: int = 0, **overrides):
    """The resolved profile (`common.profiles.resolve`: unknown keys and bad types a UserError); n_train = 0 /
    n_test = 0 mean the whole split; `seeds` shifted for run `seed` (`training_seeds`)."""
    cfg = resolve(PROFILES, profile, **overrides)
    cfg.seeds = training_seeds(cfg.seeds, seed)
    return cfg


def preflight(cfg) -> None:
    """Missing data and bad sizes of the run `cfg` (`get_config(...)`'s result) end here in one line, before any
    notebook runs (the runner calls it): CIFAR-10 or ImageNet files absent (naming `make data DATASETS=<name>`),
    an `fp_checkpoint` that is not a file or is given without ImageNet, ImageNet with a model of the wrong shape,
    epochs < 0 or sizes < 1. The digits ship with scikit-learn."""
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
                            f"there (README 'ImageNet') or drop -p fp_checkpoint")
    if cfg.dataset == "imagenet" and cfg.arch not in ("resnet18", "resnet34", "resnet50"):
        raise UserError(f"ImageNet needs an ImageNet-shape model; add -p arch=resnet34 (got arch={cfg.arch})")
    for key in ("fp_epochs", "qat_epochs", "batch_size", "eval_batch", "freeze_samples"):
        v = getattr(cfg, key)
        if not isinstance(v, int) or isinstance(v, bool) or v < (0 if key.endswith("epochs") else 1):
            raise UserError(f"{key} must be an integer >= {0 if key.endswith('epochs') else 1}; got {v!r}")


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
