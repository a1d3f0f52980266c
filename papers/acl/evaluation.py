"""Scoring samples: the evaluation network of a run, the metrics of each sampler, the held-out code
two-sample test and the metrics by region of the prior.

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539 (the abstract names no metric; FID on a local feature network, KID,
PRDC and the class histogram are this reproduction's choice, papers/acl/README.md).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import torch

from common.seed import Streams

from .baselines import BASELINES
from .images import Images, provenance
from .metrics import Evaluator, accuracy, heldout_medians, train_feature_net, weights_sha256
from .nets import Classifier
from .regions import region_samples
from .runfiles import run_lock, save_atomic
from .samplers import NULLS
from .train import encode_all, train_codes
from .twosample import c2st_accuracy


def feature_net(cfg, images: Images, run_dir) -> Classifier:
    """The evaluation classifier of a run folder: loaded from `<run_dir>/ckpt/featnet.pt`, or trained there once
    on the training split (fixed seed `feat_seed`, one torch thread: `metrics.train_feature_net`) and kept."""
    path = Path(run_dir) / "ckpt" / "featnet.pt"
    if path.exists():
        net = Classifier(images.channels, images.size, len(images.classes))
        net.load_state_dict(torch.load(path, weights_only=True))
        return net.eval()
    net = train_feature_net(images.all_x, images.all_y, len(images.classes), cfg.feat_epochs,
                            Streams(cfg.feat_seed).child("featnet"))
    save_atomic(net.state_dict(), path)
    return net


def evaluator(cfg, images: Images, run_dir) -> tuple[Evaluator, dict]:
    """The feature network of the run folder (`feature_net`) and an Evaluator on the test reference, with the
    network's info (`reference_features`: the reference's and the training images' features and the test accuracy
    are computed by the first caller, the notebook's process or a worker, and kept in the run folder)."""
    net, info, feats = reference_features(cfg, images, run_dir)
    ev = Evaluator(net, images.test_x, images.x.cpu(), images.floor_x, len(images.classes), n_prdc=cfg.n_prdc,
                   n_mem=cfg.n_mem, k=cfg.prdc_k, kid_subsets=cfg.kid_subsets, kid_subset_size=cfg.kid_subset_size,
                   streams=Streams(cfg.feat_seed).child("evaluation"),   # KID's subsets: the same for every sampler
                   real_features=feats["real"], train_features=feats["train"], heldout_medians=feats.get("heldout"))
    return ev, info


REFERENCE_KEYS = ("dataset", "n_train", "n_eval", "feat_epochs", "feat_seed")


def reference_features(cfg, images: Images, run_dir) -> tuple[Classifier, dict, dict]:
    """(network, its info, {"real": features of the test reference, "train": features of the training images}),
    computed once per run folder and kept in `<run_dir>/ckpt/` under a key of the network's hash and the sizes of
    `REFERENCE_KEYS`, with the memorization ratios' denominators at `n_mem` samples ("heldout", by sample count:
    `metrics.heldout_medians`, the same for every sampler, so computed once per run instead of once per replicate;
    a file without them, or of another `n_mem`, leaves them to each evaluator); the info (hash, test accuracy,
    sizes) is computed where the file is written. The network
    trains and featurizes on one torch thread (`metrics`), so the file holds the same bits for a notebook's
    process and a one-thread worker, whatever the core count. Under the run folder's "reference" lock (`run_lock`):
    a worker that asks while the notebook's process computes them waits and reads them (`measure` of notebook 02
    builds them beside its workers' training)."""
    with run_lock(run_dir, "reference"):
        return _reference_features(cfg, images, run_dir)


def _reference_features(cfg, images: Images, run_dir) -> tuple[Classifier, dict, dict]:
    net = feature_net(cfg, images, run_dir)
    sha = weights_sha256(net)
    key = hashlib.sha256(json.dumps([sha, torch.__version__] + [getattr(cfg, k) for k in REFERENCE_KEYS]).encode()).hexdigest()[:16]
    path = Path(run_dir) / "ckpt" / f"reffeats-{key}.pt"
    if path.exists():
        out = torch.load(path, weights_only=False)
    else:
        info = {"featnet_sha256": sha, "featnet_test_acc": accuracy(net, images.test_x, images.test_y),
                "featnet_dim": net.num_features, "featnet_train_images": len(images.all_x), "featnet_epochs": cfg.feat_epochs}
        out = {"info": info, "real": Evaluator.features_of(net, images.test_x),
               "train": Evaluator.features_of(net, images.x.cpu())}
        m = min(cfg.n_mem, len(images.test_x))   # `Evaluator.evaluate`'s m for samples of at least n_mem
        out["heldout"] = {m: heldout_medians(images.test_x, images.x.cpu(), out["real"], out["train"], m)}
        save_atomic(out, path)
    return net, out["info"], out


FLOOR_KEYS = ("dataset", "n_train", "n_eval", "n_floor", "n_prdc", "n_mem", "prdc_k", "kid_subsets", "kid_subset_size")


def floor(cfg, ev: Evaluator, run_dir) -> dict:
    """The real-vs-real floor (`Evaluator.floor`), computed once per run folder and kept in `<run_dir>/ckpt/`
    under a key of everything it depends on (the evaluation network's hash and the sizes of `FLOOR_KEYS`), so
    that notebooks 02, 03 and 04 share one computation; a different key computes it again."""
    key = hashlib.sha256(json.dumps([ev.hash] + [getattr(cfg, k) for k in FLOOR_KEYS]).encode()).hexdigest()[:16]
    path = Path(run_dir) / "ckpt" / f"floor-{key}.pt"
    if path.exists():
        return torch.load(path, weights_only=False)
    out = ev.floor()
    save_atomic(out, path)
    return out


def reference(cfg, run_dir, seed: int) -> tuple[Images, Evaluator, dict, dict, dict]:
    """What notebooks 02-04 score against, in this order: the run's images (on the CPU), the evaluator and
    its network's info, the provenance of the results files, and the real-vs-real floor (`floor`)."""
    images = Images(cfg)
    ev, featinfo = evaluator(cfg, images, run_dir)
    prov = provenance(cfg, seed, images, featinfo)
    return images, ev, featinfo, prov, floor(cfg, ev, run_dir)


def evaluate_samples(ev: Evaluator, samples: dict, full: bool = True) -> dict:
    """Metrics per sampler; the memorization ratio only for the generators (not the code baselines or nulls)."""
    return {name: ev.evaluate(x, memorization=full and name not in BASELINES + NULLS, full=full)
            for name, x in samples.items()}


def code_c2st(res: dict, images: Images, samplers: dict, null, n: int, streams: Streams, steps: int = 300) -> dict:
    """Classifier two-sample accuracy (Lopez-Paz & Oquab 2017, `twosample`) of each code sampler against
    held-out codes E(x_test): G_c ("acl"), the baselines, the MMD-trained G_c (`null`), and the floor:
    training codes vs held-out codes. Tests ACL's premise that G_c(z) follows E(x) (claims `ae-code-c2st*`)."""
    held = encode_all(res["encode"], images.test_x.to(images.x.device)).cpu()
    gen = streams.torch_generator("c2st-codes")
    fakes = {"acl": res["models"]["acl"].sample(n, gen).cpu(), "mmd_gc": null.sample(n, gen).cpu()}
    fakes |= {k: sampler(n, streams.rng("c2st-baseline-codes")) for k, sampler in samplers.items()}
    codes = train_codes(res, images.x).cpu()
    fakes["train_codes"] = codes[torch.randperm(len(codes), generator=gen)[:n]]
    return {k: c2st_accuracy(held, f, streams.child("c2st"), steps=steps) for k, f in fakes.items()}   # one test for every sampler


def region_metrics(ev: Evaluator, sample_fn, z_dim: int, cfg, streams: Streams) -> list[dict]:
    """Metrics of the samples of every region of the prior (`regions.region_samples`: `n_regions` shells of
    |z|, then 2^m orthants, each of equal prior mass; the abstract's "any part of the prior"); without KID where
    `region_kid` is off (quick: the region claims read density, precision and FID)."""
    kid = getattr(cfg, "region_kid", True)   # no claim reads a region's KID (off at quick); its own keyed stream
    return [ev.evaluate(x, memorization=False, kid=kid) | {"region": name}
            for name, x in region_samples(sample_fn, z_dim, cfg.n_regions, cfg.n_region, streams)]
