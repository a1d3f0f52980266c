"""How the code-phase and synthetic defaults were chosen: development seeds (100 and up,
`common.devseeds`) and the development mixtures ring6 / grid16 only, never the reported seeds 0-2 or the
ring / grid of the claims. Each setting chosen here is listed in `config.TUNED` with the result that chose it.

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539

    python -m papers.acl.devtune codes --seeds 100 101     # G_c variants on one trained AE's cached codes
    python -m papers.acl.devtune cls-fid --seeds 100 101   # the classifier's code phase, chosen by FID
    python -m papers.acl.devtune synthetic --seeds 100 101 # ACL-AE on ring6 / grid16, old vs new code phase

Looks that chose nothing (the code two-sample test on a classifier's features, the control without the
adversary) are in `papers.acl.investigations`.

`codes`: trains one quick-profile autoencoder per seed (reconstruction phase only), caches E(x) of the
training subset and of the held-out test images, then fits G_c / D_c variants on the cached codes and
reports the held-out classifier two-sample accuracy (`twosample.c2st_accuracy`) against E(x_test),
beside the fitted Gaussian's, the GMM's and N(0, I)'s. Results: results/acl/dev/<what>.json.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from common import devseeds, paths
from common.errors import user_errors_exit

CODE_VARIANTS = {  # name: Hyper overrides of the code-only phase (quick profile otherwise)
    "diag-plain-const-2000": dict(whiten_codes=False, residual_gc=False, code_lr_final=1.0, code_steps=2000),
    "diag-plain-decay-2000": dict(whiten_codes=False, residual_gc=False, code_lr_final=0.1, code_steps=2000),
    "whiten-plain-decay-2000": dict(whiten_codes=True, residual_gc=False, code_lr_final=0.1, code_steps=2000),
    "whiten-residual-const-2000": dict(whiten_codes=True, residual_gc=True, code_lr_final=1.0, code_steps=2000),
    "whiten-residual-decay-2000": dict(whiten_codes=True, residual_gc=True, code_lr_final=0.1, code_steps=2000),
    "whiten-residual-decay-4000": dict(whiten_codes=True, residual_gc=True, code_lr_final=0.1, code_steps=4000),
    "diag-plain-wgan-gp-5critic-2000": dict(whiten_codes=False, residual_gc=False, code_lr_final=1.0, code_steps=2000,
                                            loss="wgan-gp", n_critic=5, code_lr=1e-4),
}


CLS_VARIANTS = {  # the classifier's ReLU features: the earlier code phase against the autoencoder's choice
    "diag-plain-const-2000": CODE_VARIANTS["diag-plain-const-2000"],
    "diag-plain-decay-4000": dict(whiten_codes=False, residual_gc=False, code_lr_final=0.1, code_steps=4000),
    "whiten-residual-decay-4000": CODE_VARIANTS["whiten-residual-decay-4000"],
}


def fit_code_phase(codes: torch.Tensor, hp):
    """G_c / D_c alone on cached codes for hp.code_steps (the code-only phase), at fixed seeds, so
    that variants differ only by their settings."""
    from .acl import CodeGAN
    from .train import code_step

    torch.manual_seed(7)
    acl = CodeGAN(codes.shape[1], hp.z_dim, hp.hidden, hp.depth, hp.loss, hp.gp_weight, hp.residual_gc)
    acl.set_scale(codes, whiten=hp.whiten_codes)
    opts = acl.optimizers(hp.code_lr, hp.code_lr)
    gen = torch.Generator().manual_seed(3)
    for k in range(hp.code_steps):
        code_step(acl, codes, opts, hp, gen, k)
    return acl


def tune_codes(seed: int, objective: str = "ae") -> dict:
    """G_c variants (`CODE_VARIANTS`, or `CLS_VARIANTS` on a classifier's features) fitted to one quick model's
    cached codes, scored by the held-out classifier two-sample accuracy (`twosample.c2st_accuracy`) beside
    the baselines'; the record behind `config.TUNED`'s code-phase keys (objective "ae")."""
    from .baselines import code_samplers
    from .config import get_config
    from .images import Images
    from .seeds import rep_seed
    from .nets import ConvDecoder, ConvEncoder
    from .train import Hyper, encode_all, fit_code_model
    from .twosample import c2st_accuracy

    cfg = get_config("quick")
    images = Images(cfg)
    rs = rep_seed(seed, objective, 0)
    torch.manual_seed(rs)
    if objective == "ae":
        E, D = ConvEncoder(1, 28, cfg.code_dim, cfg.width), ConvDecoder(cfg.code_dim, 1, 28, cfg.width)
        fit_code_model(images.x, E, D, Hyper.from_cfg(cfg, code_steps=0), seed=rs)
        enc, variants = E, CODE_VARIANTS
    else:
        from .nets import Classifier
        E = Classifier(1, 28, len(images.classes), cfg.width // 2, cfg.cls_feat_dim)
        D = ConvDecoder(cfg.cls_feat_dim, 1, 28, cfg.width)
        fit_code_model(images.x, E, D, Hyper.from_cfg(cfg, code_dim=cfg.cls_feat_dim, code_steps=0), seed=rs,
                       y=images.y, objective="classifier")
        enc, variants = E.features, CLS_VARIANTS
    tr, te = encode_all(enc, images.x), encode_all(enc, images.test_x)
    n = len(te)
    samplers = code_samplers(tr.numpy(), cfg.gmm_components, 0, cfg.gmm_iters)
    out = {k: c2st_accuracy(te, s(n, np.random.default_rng(0)), seed=1) for k, s in samplers.items()}
    out["train_codes"] = c2st_accuracy(te, tr[torch.randperm(len(tr), generator=torch.Generator().manual_seed(0))[:n]], seed=1)
    z = torch.randn(n, cfg.z_dim, generator=torch.Generator().manual_seed(5))
    for name, over in variants.items():
        t0 = time.perf_counter()
        hp = Hyper.from_cfg(cfg, **over)
        acl = fit_code_phase(tr, hp)
        out[name] = c2st_accuracy(te, acl.sample(n, z=z), seed=1)
        print(f"seed {seed} {name}: c2st {out[name]:.3f} ({time.perf_counter() - t0:.0f} s)", flush=True)
    return out


CLS_FID_VARIANTS = {  # the classifier's code phase (cls_* keys), quick's 4000 code steps
    "whiten-residual-decay": dict(cls_whiten_codes=True, cls_residual_gc=True, cls_code_lr_final=0.1),
    "diag-plain-decay": dict(cls_whiten_codes=False, cls_residual_gc=False, cls_code_lr_final=0.1),
    "diag-plain-const": dict(cls_whiten_codes=False, cls_residual_gc=False, cls_code_lr_final=1.0),
}


def tune_cls_fid(seed: int) -> dict:
    """The classifier's code phase chosen by FID: one quick classifier + inversion decoder per seed, then
    each code-phase variant on its cached features; FID of Dec(G_c(z)) beside the fitted Gaussian's and
    the GMM's on the same decoder (the claims' competitors), on the quick evaluation set."""
    from .baselines import code_samplers
    from .config import get_config
    from .evaluation import evaluator
    from .image_replicates import cls_hyper
    from .images import Images
    from .seeds import rep_seed
    from .nets import Classifier, ConvDecoder
    from .train import encode_all, fit_code_model

    cfg = get_config("quick")
    images = Images(cfg)
    dev_dir = paths.results_root() / "acl" / "dev"
    ev, _ = evaluator(cfg, images, dev_dir)
    rs = rep_seed(seed, "cls", 0)
    torch.manual_seed(rs)
    E = Classifier(1, 28, len(images.classes), cfg.width // 2, cfg.cls_feat_dim)
    D = ConvDecoder(cfg.cls_feat_dim, 1, 28, cfg.width)
    fit_code_model(images.x, E, D, cls_hyper(cfg, code_steps=0), seed=rs, y=images.y, objective="classifier")
    tr = encode_all(E.features, images.x)
    n = cfg.n_eval
    out = {}
    with torch.no_grad():
        for name, sampler in code_samplers(tr.numpy(), cfg.gmm_components, 0, cfg.gmm_iters).items():
            c = torch.as_tensor(sampler(n, np.random.default_rng(0)), dtype=torch.float32)
            out[name] = {"fid": ev.evaluate(D(c), memorization=False, full=False)["fid"]}
    z = torch.randn(n, cfg.z_dim, generator=torch.Generator().manual_seed(5))
    for name, over in CLS_FID_VARIANTS.items():
        t0 = time.perf_counter()
        hp = cls_hyper(get_config("quick", **over))
        acl = fit_code_phase(tr, hp)
        with torch.no_grad():
            fid = ev.evaluate(D(acl.sample(n, z=z)), memorization=False, full=False)["fid"]
        out[name] = {"fid": fid, "minus_gauss": fid - out["gauss"]["fid"], "seconds": time.perf_counter() - t0}
        print(f"seed {seed} {name}: FID {fid:.1f} (fitted Gaussian {out['gauss']['fid']:.1f}, "
              f"GMM {out['gmm']['fid']:.1f}; {time.perf_counter() - t0:.0f} s)", flush=True)
    return out


def tune_synthetic(seed: int, replicates: int = 3) -> dict:
    """ACL-AE on the development mixtures (`synthetic.DEV_MIXTURES`) with the per-dimension standardization and
    plain G_c against the whitened residual G_c: HQ fractions and modes of ACL-AE and the GMM per replicate."""
    from . import analysis
    from .config import get_config
    from .synthetic import DEV_MIXTURES
    from .synthetic_replicates import synthetic_table, synthetic_task

    out = {}
    for name, over in (("diag-plain", dict(syn_whiten_codes=False, syn_residual_gc=False)), ("whiten-residual", {})):
        cfg = get_config("quick", **over)
        cfg.syn_mixtures = list(DEV_MIXTURES)
        res = [synthetic_task(vars(cfg), m, r, seed, "ae") for m in DEV_MIXTURES for r in range(replicates)]
        met = analysis.synthetic_metrics(synthetic_table(res), DEV_MIXTURES)
        out[name] = {k: v for k, v in met.items() if k.endswith(("_hq", "_modes")) and ("acl_ae" in k or "gmm" in k)}
        print(f"seed {seed} {name}:", json.dumps(out[name]), flush=True)
    return out


TUNERS = {"codes": tune_codes, "cls-fid": tune_cls_fid, "synthetic": tune_synthetic}


def run(what: str, fn, seeds, paper: str = "acl") -> None:
    """`fn(seed)` for each development seed, one thread, recorded as `results/<paper>/dev/<what>.json`."""
    torch.set_num_threads(1)
    devseeds.run_seeds(paper, what, seeds, fn)          # refuses a reported seed before anything runs


def main(argv=None, tuners: dict | None = None, doc: str | None = None):
    tuners = TUNERS if tuners is None else tuners
    ap = argparse.ArgumentParser(description=(doc or __doc__).splitlines()[0])
    ap.add_argument("what", choices=tuple(tuners))
    ap.add_argument("--seeds", type=int, nargs="+", default=[100, 101])
    args = ap.parse_args(argv)
    with user_errors_exit():
        run(args.what, tuners[args.what], args.seeds)


if __name__ == "__main__":
    main()
