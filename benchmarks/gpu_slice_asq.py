"""GPU slice of asq's full profile (the device check's contract: `full_slice(device, dry_run) -> dict`).

Paper: W. Zhou et al., "Precision Neural Network Quantization via Learnable Adaptive Modules",
https://arxiv.org/abs/2504.17263.
Times, on one device, short stretches of every training the full profile runs, at its real sizes (CIFAR-10
3 x 32 x 32, ResNet-20, batch 256), through the function the notebooks call (`papers.asq.train.fit`): the float
pre-training step, and the QAT step of LSQ (uniform weights), ASQ (uniform weights) and ASQ with a log grid
(POST; POT and the released POST cost the same projection), plus one pass of the integer path over test
images (`integer.compare_paths` with both near misses). Random images of the real shape stand in for CIFAR-10
(speed does not depend on the pixels). The projection is those unit times x the counts of one full run
(`full_counts`: 3 training seeds, 200 float + 90 QAT epochs of 50,000 images, 9 QAT configurations per seed,
the integer comparison on 10,000 test images); `--seeds 0 1 2` costs three times that. The ImageNet ResNet-34
variant (`-p dataset=imagenet -p arch=resnet34`) is projected apart from a few ResNet-34 steps at 224 x 224
(the same counts over 1,281,167 images; data loading not included). Left out: the weight-error study and the
beta statistics (seconds), and everything that runs on the CPU whatever the device (accounting, claims).

    python benchmarks/gpu_slice_asq.py [--device cuda] [--dry-run]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CIFAR_TRAIN, CIFAR_TEST, IMAGENET_TRAIN = 50000, 10000, 1281167
UNITS = ("fp_step", "lsq_step", "asq_step", "asq_log_step")
DRY = dict(arch="digits_cnn", shape=(1, 8, 8), batch=16, steps=2, int_images=32)


def qat_units(cfg) -> dict[str, int]:
    """QAT configurations per training seed, by the unit that times them (`papers.asq.qat_grid.QATGrid.configs`)."""
    n = {"lsq_step": 0, "asq_step": 0, "asq_log_step": 0}
    for b in cfg.bits:
        n["lsq_step"] += 1
        n["asq_step"] += 1
    n["lsq_step"] += len(getattr(cfg, "sbeta_bits", []))       # the scalar-beta null: LSQ's cost (no adapter)
    for g in cfg.ablation_grids:
        if g == "uniform" and cfg.ablation_bits in cfg.bits:
            continue                                            # the same run as ASQ uniform at that width
        n["asq_step" if g == "uniform" else "asq_log_step"] += 1
    return n


def full_counts(cfg, n_train: int = CIFAR_TRAIN) -> dict[str, int]:
    """Steps of each unit in one full run (all of its training seeds) and the integer path's test images."""
    steps = max(1, n_train // cfg.batch_size)
    seeds = len(cfg.seeds)
    counts = {"fp_step": seeds * cfg.fp_epochs * steps}
    counts.update({k: seeds * n * cfg.qat_epochs * steps for k, n in qat_units(cfg).items()})
    counts["int_image"] = CIFAR_TEST
    return counts


def projected_hours(counts: dict, unit_s: dict) -> float:
    """GPU-hours: sum over units of its count x its time per unit."""
    return sum(int(counts[k]) * float(unit_s[k]) for k in counts) / 3600.0


def _sync(device):
    import torch

    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def _split(n, shape, device_seed=0):
    import torch

    from papers.asq.data import Split

    g = torch.Generator().manual_seed(device_seed)
    return Split(torch.randn(n, *shape, generator=g), torch.randint(0, 10, (n,), generator=g), None, None)


def unit_times(arch: str, shape: tuple, batch: int, steps: int, device: str, int_images: int,
               classes: int = 10) -> dict[str, float]:
    """Seconds per training step of each unit (and per image of the integer comparison) on `device`."""
    from papers.asq import integer
    from common.seed import Streams
    from papers.asq.models import build_model
    from papers.asq.train import fit, make_qat

    per_epoch = 4
    data = _split(batch * per_epoch, shape)
    float_model = build_model(arch, classes, shape[0], streams=Streams(0)).to(device)
    models = {"fp_step": lambda: float_model}
    for unit, (method, grid) in {"lsq_step": ("lsq", "uniform"), "asq_step": ("asq", "uniform"),
                                 "asq_log_step": ("asq", "post")}.items():
        models[unit] = (lambda m=method, g=grid: make_qat(float_model, data, method=m, w_bits=4, a_bits=4, grid=g,
                                                          first_last="fp", streams=Streams(0), device=device))
    out = {}
    epochs = max(1, steps // per_epoch)
    for unit, make in models.items():
        model = make()
        kw = dict(lr=0.01, weight_decay=1e-4, batch_size=batch, streams=Streams(0), key="slice", device=device)
        fit(model, data, epochs=1, **kw)                          # warm-up: kernels, allocator
        _sync(device)
        t0 = time.perf_counter()
        fit(model, data, epochs=epochs, **kw)
        _sync(device)
        out[unit] = (time.perf_counter() - t0) / (epochs * per_epoch)
    if int_images:
        qmodel = models["asq_log_step"]()
        test = _split(int_images, shape, 1)
        integer.compare_paths(qmodel, _split(min(8, int_images), shape, 2), batch_size=8,
                              near_misses=integer.NEAR_MISSES)   # warm-up
        _sync(device)
        t0 = time.perf_counter()
        integer.compare_paths(qmodel, test, batch_size=min(500, int_images), near_misses=integer.NEAR_MISSES)
        _sync(device)
        out["int_image"] = (time.perf_counter() - t0) / int_images
    return out


def full_slice(device: str, dry_run: bool) -> dict:
    import torch

    from papers.asq.config import get_config

    cfg = get_config("full")
    counts = full_counts(cfg)
    on_cuda = str(device).startswith("cuda")
    if on_cuda:
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    if dry_run:
        unit_s = unit_times(DRY["arch"], DRY["shape"], DRY["batch"], DRY["steps"], device, DRY["int_images"])
        r34_s = unit_times(DRY["arch"], DRY["shape"], DRY["batch"], DRY["steps"], device, 0)
    else:
        unit_s = unit_times(cfg.arch, (3, 32, 32), cfg.batch_size, 100, device, 2000)
        r34_s = unit_times("resnet34", (3, 224, 224), cfg.batch_size, 8, device, 0, classes=1000)
    seconds = time.perf_counter() - t0
    hours = projected_hours(counts, unit_s)
    r34_counts = {k: v for k, v in full_counts(cfg, IMAGENET_TRAIN).items() if k != "int_image"}
    r34_hours = projected_hours(r34_counts, r34_s)
    peak = torch.cuda.max_memory_allocated() / 2**30 if on_cuda else None
    basis = (f"{'tiny dry run: ' if dry_run else ''}seconds per step of float, LSQ, ASQ and ASQ+POST training "
             f"({cfg.arch}, batch {cfg.batch_size}) x steps of one full run ({len(cfg.seeds)} seeds x ({cfg.fp_epochs} float + "
             f"{sum(qat_units(cfg).values())} configs x {cfg.qat_epochs} QAT epochs) x {CIFAR_TRAIN // cfg.batch_size} steps), "
             f"plus the integer comparison per test image x {CIFAR_TEST}")
    return {"ok": bool(all(v > 0 for v in unit_s.values())), "seconds": seconds, "projected_gpu_hours": hours,
            "basis": basis, "peak_mem_gb": peak,
            "notes": (f"ImageNet ResNet-34 variant (same counts over {IMAGENET_TRAIN} images, data loading excluded): "
                      f"{r34_hours:.4g} GPU-hours; --seeds 0 1 2 costs 3x each"),
            "counts": counts, "unit_s": unit_s, "imagenet_r34_counts": r34_counts, "imagenet_r34_unit_s": r34_s,
            "projected_gpu_hours_imagenet_r34": r34_hours}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    print(json.dumps(full_slice(args.device, args.dry_run), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
