"""Investigations on development seeds: looks that chose no setting (so they have no entry in
`config.TUNED`), recorded like the tuning runs in `results/acl/dev/<what>.json`.

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539

    python -m papers.acl.investigations cls-codes --seeds 100   # code two-sample test on a classifier's features
    python -m papers.acl.investigations controls --seeds 100    # a look at the control without the adversary

`cls-codes`: `devtune.tune_codes` on a trained classifier's ReLU features (every sampler is almost
perfectly separable there, so the two-sample test cannot choose; `devtune cls-fid` chose by FID).
"""
from __future__ import annotations

import json
import time

import torch

from common.seed import Streams

from .devtune import main as devtune_main
from .devtune import tune_codes


def look_cls_codes(seed: int) -> dict:
    """`devtune.tune_codes` on a quick classifier's cached features (`devtune.CLS_VARIANTS`)."""
    return tune_codes(seed, "classifier")


def look_controls(seed: int) -> dict:
    """The control of the ACL claims (`mmd.fit_mmd_code_generator`: G_c of ACL's size trained without the
    adversary) beside ACL, on a development seed, nothing chosen from it: one quick ACL-AE replicate
    (the run's code path, `image_replicates.ae_replicate`) with FID / KID / the smallest class share of ACL,
    the MMD-trained G_c, the fitted Gaussian and the GMM on the same decoder; and ACL-AE against its MMD
    control on the ring and the grid (one replicate each: modes under the 1/5-share rule, HQ fraction)."""
    from pathlib import Path
    from tempfile import TemporaryDirectory

    from .config import get_config
    from .evaluation import evaluator
    from .image_replicates import ae_replicate
    from .images import Images
    from .samplers import code_model_samples, fit_baselines, mmd_null
    from .synthetic_replicates import synthetic_task

    cfg = get_config("quick")
    images = Images(cfg)
    out = {"ae": {}, "ring": {}, "grid": {}}
    with TemporaryDirectory() as tmp:
        ev, _ = evaluator(cfg, images, Path(tmp))
        t0 = time.perf_counter()
        train, draw = Streams(seed).child("ae", 0), Streams(seed).child("samples", "ae", 0)   # as the run draws them
        res = ae_replicate(cfg, images, train, 0, Path(tmp))
        samples = code_model_samples(res, images, cfg.n_eval, fit_baselines(res, images, cfg, draw), draw)
        null = mmd_null(res, images.x, train)
        with torch.no_grad():
            samples["mmd_gc"] = res["models"]["Dec"](null.sample(cfg.n_eval, draw.torch_generator("null-noise")))
        for name, x in samples.items():
            m = ev.evaluate(x, memorization=False, full=False)
            out["ae"][name] = {"fid": m["fid"], "kid": m["kid"], "class_min_frac": m["class_min_frac"]}
        print(f"seed {seed} images ({time.perf_counter() - t0:.0f} s):", json.dumps(out["ae"]), flush=True)
    for mix in ("ring", "grid"):
        r = synthetic_task(vars(cfg), mix, 0, Streams(seed), "ae")
        for name in ("acl_ae", "ae_mmd_gc", "ae_gmm", "uniform"):
            out[mix][name] = {"modes": r[name]["modes"], "modes_any": r[name]["modes_any"], "hq": r[name]["hq_frac"]}
        print(f"seed {seed} {mix}:", json.dumps(out[mix]), flush=True)
    return out


INVESTIGATIONS = {"cls-codes": look_cls_codes, "controls": look_controls}


def main(argv=None):
    devtune_main(argv, INVESTIGATIONS, __doc__)


if __name__ == "__main__":
    main()
