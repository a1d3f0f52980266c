"""GPU slice of acl's full profile (the device check's contract: `full_slice(device, dry_run) -> dict`).

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", https://arxiv.org/abs/2001.11539.
Times, on one device, a few hundred steps of every training the full profile runs on the device, at its
real sizes (MNIST's 1 x 28 x 28, or CIFAR-10's 3 x 32 x 32 with `-p dataset=cifar10`; code 32, width 64,
G_c / D_c 2 x 256, batch 64, code batch 256), through the same functions the notebooks call: the
autoencoder's reconstruction step with its joint code GAN, the adversarial code-only step, the MMD
control's step, the classifier step, the classifier-inversion decoder step, the plain GAN step and the
ACL-GAN step. Random images of the real shape stand in for the dataset (speed does not depend on the
pixels). The projection is those unit times x the full profile's step counts for one seed
(`full_counts`). Left out, because they run on the CPU whatever the device: the evaluation network's
training, every metric (FID, KID, PRDC, C2ST), the GMM fits and the 2-D mixtures.

    python benchmarks/gpu_slice_acl.py [--device cuda] [--dry-run]
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SHAPES = {"mnist": (1, 28), "fashion_mnist": (1, 28), "digits": (1, 8), "cifar10": (3, 32)}
UNITS = ("ae_step", "code_step", "mmd_step", "cls_step", "cls_dec_step", "gan_step", "aclgan_step")
DRY = dict(code_dim=8, z_dim=8, width=8, hidden=16, cls_feat_dim=8, batch=16, code_batch=32)  # dry run: tiny sizes


def full_counts(cfg) -> dict[str, int]:
    """Steps of each unit in one seed of the profile `cfg` (`config.PROFILES`): autoencoder replicates x
    (ae_steps, code_steps, the MMD null's null_steps); classifier replicates x (cls_steps, ae_steps of the
    inversion decoder, its code_steps, its null's steps); GAN / ACL-GAN replicates x gan_steps and ACL-GAN's
    code refit (code_steps); with `gan_null`, ACL-GAN without the adversary as many more ACL-GAN steps (its
    MMD term costs about D_c's) and its MMD refit (null_steps). A study the profile does not run (`cls_study` or
    `gan_study` False, as at quick) counts 0."""
    from types import SimpleNamespace

    cfg = SimpleNamespace(**(vars(cfg) | {"cls_replicates": cfg.cls_replicates if getattr(cfg, "cls_study", True) else 0,
                                          "gan_replicates": cfg.gan_replicates if getattr(cfg, "gan_study", True) else 0}))
    refit = cfg.code_steps if cfg.code_refit else 0
    null = cfg.null_steps or cfg.code_steps
    cls_code = cfg.cls_code_steps or cfg.code_steps
    cls_null = cfg.cls_null_steps or cls_code
    gan_null = bool(getattr(cfg, "gan_null", False))
    return {
        "ae_step": cfg.replicates * cfg.ae_steps,
        "code_step": cfg.replicates * cfg.code_steps + cfg.cls_replicates * cls_code + cfg.gan_replicates * refit,
        "mmd_step": cfg.replicates * null + cfg.cls_replicates * cls_null + (cfg.gan_replicates * null if gan_null and refit else 0),
        "cls_step": cfg.cls_replicates * cfg.cls_steps,
        "cls_dec_step": cfg.cls_replicates * cfg.ae_steps,
        "gan_step": cfg.gan_replicates * cfg.gan_steps,
        "aclgan_step": cfg.gan_replicates * cfg.gan_steps * (2 if gan_null else 1),
    }


def projected_hours(counts: dict, unit_s: dict) -> float:
    """GPU-hours of one seed: sum over units of its step count x its time per step."""
    return sum(int(counts[k]) * float(unit_s[k]) for k in counts) / 3600.0


def _sync(device):
    import torch

    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def unit_times(cfg, device: str, steps: int) -> dict[str, float]:
    """Seconds per step of each unit on `device`, at the sizes of `cfg` (after one warm-up step each)."""
    import torch

    from common.seed import Streams
    from papers.acl.mmd import fit_mmd_code_generator
    from papers.acl.nets import Classifier, ConvDecoder, ConvEncoder
    from papers.acl.train import Hyper, fit_code_model, fit_gan

    ch, size = SHAPES[cfg.dataset]
    x = torch.rand(max(512, 8 * cfg.batch), ch, size, size, generator=torch.Generator().manual_seed(0)).to(device)
    y = torch.randint(10, (len(x),), generator=torch.Generator().manual_seed(1)).to(device)
    ae = lambda: (ConvEncoder(ch, size, cfg.code_dim, cfg.width).to(device), ConvDecoder(cfg.code_dim, ch, size, cfg.width).to(device))
    cls = lambda: (Classifier(ch, size, 10, cfg.width // 2, cfg.cls_feat_dim).to(device),
                   ConvDecoder(cfg.cls_feat_dim, ch, size, cfg.width).to(device))
    gan = lambda acl: (ConvDecoder(cfg.code_dim, ch, size, cfg.width).to(device), ConvEncoder(ch, size, 1, cfg.width).to(device),
                       ConvEncoder(ch, size, cfg.code_dim, cfg.width).to(device) if acl else None)
    zero = dict(cls_steps=0, ae_steps=0, code_steps=0, gan_steps=0)
    hp = lambda **over: Hyper.from_cfg(cfg, **(zero | over))
    codes = torch.randn(len(x), cfg.code_dim, generator=torch.Generator().manual_seed(2)).to(device)
    st = Streams(0).child("gpu-slice")
    runs = {
        "ae_step": lambda n: fit_code_model(x, *ae(), hp(ae_steps=n), st),
        "code_step": lambda n: fit_code_model(x, *ae(), hp(code_steps=n), st),
        "mmd_step": lambda n: fit_mmd_code_generator(codes, hp(code_steps=n), st),
        "cls_step": lambda n: fit_code_model(x, *cls(), hp(cls_steps=n, code_dim=cfg.cls_feat_dim), st, y=y, objective="classifier"),
        "cls_dec_step": lambda n: fit_code_model(x, *cls(), hp(ae_steps=n, code_dim=cfg.cls_feat_dim), st, y=y, objective="classifier"),
        "gan_step": lambda n: fit_gan(x, *gan(False)[:2], hp(gan_steps=n), st),
        "aclgan_step": lambda n: (lambda G, Dx, E: fit_gan(x, G, Dx, hp(gan_steps=n, code_refit=False), st, E=E))(*gan(True)),
    }
    out = {}
    for name, fn in runs.items():
        fn(1)                                   # warm-up: kernels, allocator, the first cached encoding
        _sync(device)
        t0 = time.perf_counter()
        fn(steps + 1)
        _sync(device)
        t1 = time.perf_counter()
        fn(1)
        _sync(device)
        t2 = time.perf_counter()
        out[name] = max((t1 - t0) - (t2 - t1), 1e-9) / steps   # the difference removes set-up (models, optimizers, caching)
    return out


def full_slice(device: str, dry_run: bool) -> dict:
    import torch

    from common.profiles import resolve
    from papers.acl.config import PROFILES

    cfg = resolve(PROFILES, "full")
    counts = full_counts(cfg)
    timed = resolve(PROFILES, "full", **DRY) if dry_run else cfg
    if dry_run:
        timed.dataset = "digits"
    on_cuda = str(device).startswith("cuda")
    if on_cuda:
        torch.cuda.reset_peak_memory_stats()
    steps = 2 if dry_run else 200
    t0 = time.perf_counter()
    unit_s = unit_times(timed, device, steps)
    seconds = time.perf_counter() - t0
    hours = projected_hours(counts, unit_s)
    peak = torch.cuda.max_memory_allocated() / 2**30 if on_cuda else None
    ch, size = SHAPES[timed.dataset]
    basis = (f"{steps} steps of each unit on {device} at {ch}x{size}x{size}, code {timed.code_dim}, width {timed.width}, "
             f"G_c/D_c {timed.depth}x{timed.hidden}, batch {timed.batch}, code batch {timed.code_batch} "
             + ("(dry run: tiny sizes) " if dry_run else "(the full profile's sizes) ")
             + "x the full profile's steps for one seed (" + ", ".join(f"{k} {v}" for k, v in counts.items()) + ")")
    notes = ("left out (on the CPU whatever the device): the evaluation network, FID/KID/PRDC/C2ST on 10k samples and "
             "the prior regions, the GMM fits, the 2-D mixtures; the classifier's code phase is timed at the autoencoder's "
             "code width (the classifier's features are 64 wide at full, its code steps counted with code_step)")
    ok = all(v > 0 for v in unit_s.values()) and hours > 0
    return {"ok": ok, "seconds": seconds, "projected_gpu_hours": hours, "basis": basis, "peak_mem_gb": peak,
            "notes": notes, "unit_s": unit_s, "counts": counts, "steps_timed": steps}


def main(argv=None) -> int:
    from common.bench import slice_cli

    return slice_cli(full_slice, __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
