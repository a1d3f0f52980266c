"""asq's full profile on one H100: CIFAR-10 ResNet-20, float pre-training and the QAT grid.

The paper's cost model (common/README.md, the contract: `estimate(cfg) -> common.costmodel.Estimate`),
read by `benchmarks/full_cost.py`. Every number is an estimate from assumed inputs, listed in the record.
"""
from __future__ import annotations

import math

from common.costmodel import (DATA, H100, IMAGE_SHAPES, UTIL, CpuPart, Estimate, GpuPart, activation_numel, forward_flops, leaf_modules,
                              make_data, meta, n_params, reproduce_command, round3, train_memory_gb)


QAT_OVERHEAD = 1.5      # fake quantization of weights and activations: extra elementwise kernels per layer (assumed)


def qat_runs(cfg) -> int:
    """QAT runs per training replicate, counted as the study trains them (`papers.asq.qat_grid.QATGrid.configs`):
    LSQ and ASQ at every width, the scalar-beta null at `sbeta_bits`, the weight-grid ablation."""
    from types import SimpleNamespace

    from .qat_grid import QATGrid

    return len(QATGrid.configs(SimpleNamespace(cfg=cfg)))


def extra_evaluations(cfg) -> int:
    """Test-set evaluations per training replicate besides each trained model's: the frozen-beta diagnostic at
    `frozen_bits` and the model before QAT (`ptq_diagnostic`)."""
    return len([b for b in getattr(cfg, "frozen_bits", []) if b in cfg.bits]) + int(bool(getattr(cfg, "ptq_diagnostic", False)))


def estimate(cfg) -> Estimate:
    """The cost of one run of the full profile `cfg` (`config.get_config("full")`), from its counts."""
    from papers.asq.models import ARCHS

    ch, size, n_train, n_test = IMAGE_SHAPES[cfg.dataset]
    model = meta(lambda: ARCHS[cfg.arch](num_classes=10, in_channels=ch))
    fwd = forward_flops(model, (1, ch, size, size))
    ops = leaf_modules(model)
    seeds, runs = len(cfg.seeds), qat_runs(cfg)
    steps_epoch = n_train // cfg.batch_size
    fp_steps = seeds * cfg.fp_epochs * steps_epoch
    qat_steps = seeds * runs * cfg.qat_epochs * steps_epoch
    step_flops = 3 * fwd * cfg.batch_size
    sgd_ops = 10
    evals = seeds * (runs + 1 + extra_evaluations(cfg)) * n_test * fwd   # every model (float too), the diagnostics
    gpu = [GpuPart("float pre-training", fp_steps * step_flops, ops=fp_steps * (3 * ops + sgd_ops)),
           GpuPart("QAT grid", qat_steps * step_flops * QAT_OVERHEAD, ops=qat_steps * (3 * ops * 3 + sgd_ops)),
           GpuPart("evaluations", evals, ops=seeds * (runs + 1 + extra_evaluations(cfg))
                   * math.ceil(n_test / cfg.eval_batch) * ops)]
    # integer LUT inference of the test set, with the right and the wrong LUT; the weight-error search's samples
    cpu = [CpuPart("integer LUT inference on the test set (notebook 03) and the weight-error search", 2 * n_test * fwd
                   + cfg.mse_samples * 64 * 2 * 20, "small_gflops_per_core")]
    acts = activation_numel(model, (cfg.batch_size, ch, size, size))
    mem = train_memory_gb(n_params(model), acts * 3, optimizer_states=1)   # QAT keeps masks and scale grads: 3x outputs
    r34 = meta(lambda: ARCHS["resnet34"](num_classes=1000, in_channels=3))
    r34_fwd = forward_flops(r34, (1, 3, 224, 224))
    # the same grid on ImageNet, fine-tuned from torchvision's float weights (`fp_checkpoint`, the paper's protocol):
    # no float epochs
    imagenet_epochs = seeds * QAT_OVERHEAD * runs * cfg.qat_epochs
    imagenet_h = 1281167 * imagenet_epochs * 3 * r34_fwd / (H100["fp32_tflops"] * 1e12 * UTIL["gemm"]) / 3600
    return Estimate(
        data="CIFAR-10 " + DATA["cifar10"][len("CIFAR-10 "):] + "; optional: ImageNet (ILSVRC-2012 class folders, ~150 GB, "
             "by hand: an account is needed) for -p dataset=imagenet -p arch=resnet34",
        make_data=make_data([cfg.dataset]),
        commands=[reproduce_command("asq"),
                  "torchrun --nproc_per_node 8 -m papers.asq.cli --profile full --ckpt-dir results/asq/ckpt-full",
                  ".venv/bin/python -m common.reproduce asq --profile full -p ckpt_dir=results/asq/ckpt-full"],
        gpu=gpu, cpu=cpu, memory_gb=mem,
        assumptions=[
            f"{cfg.arch} on {cfg.dataset}: {fwd / 1e6:.1f} MFLOP per {size}x{size} image forward, {n_params(model)} parameters "
            "(counted on the meta device)",
            f"{seeds} training seeds x (1 float run of {cfg.fp_epochs} epochs + {runs} QAT runs of {cfg.qat_epochs} epochs "
            f"(LSQ/ASQ at bits {list(cfg.bits)}, grids {list(cfg.ablation_grids)} at {cfg.ablation_bits} bits)); "
            f"{steps_epoch} steps of {cfg.batch_size} per epoch",
            f"QAT step = {QAT_OVERHEAD:g} x the float step's FLOPs and 3x its eager ops (fake quantization; assumed)",
            f"one GPU; `torchrun --nproc_per_node 8` (DDP, global batch {cfg.batch_size}) divides the wall time of the "
            "training by up to 8 at about the same GPU-hours",
            "GPU memory: ResNet-20 with SGD momentum, 3x the leaf-module outputs of one batch, a CUDA context; the "
            "training set stays on the host",
            f"not in the total: the optional ImageNet ResNet-34 run ({r34_fwd / 1e9:.2f} GFLOP per 224x224 image forward, "
            f"the same {seeds} seeds x {runs} x {cfg.qat_epochs} QAT epochs of 1.28M images, fine-tuned from torchvision's "
            f"float weights with -p fp_checkpoint) ~ {imagenet_h:.0f} GPU-hours at utilisation {UTIL['gemm']:g} (estimate; "
            f"fewer epochs or bits cut it in proportion; without fp_checkpoint add {cfg.fp_epochs} float epochs per seed)",
            "one run = seed 0 (training seeds 0, 1, 2); --seeds 0 1 2 costs 3x"],
        extra={"qat_runs_per_seed": runs, "imagenet_resnet34_gpu_hours_estimate": round3(imagenet_h)})
