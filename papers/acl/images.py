"""The images of a run: the training subset, the held-out reference and the floor set, where the image
models train, and the provenance every results file carries.

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch

from common.data import load_dataset
from common.seed import Streams

SPLIT_STREAMS = Streams(0).child("split")   # the split is the same for every run seed: the streams of seed 0


@lru_cache(maxsize=4)
def dataset(name: str, split: str):
    """`common.data.load_dataset`, read and decoded once per process (a worker of notebook 02 scores several
    replicates, each building its `Images`: ~2.7 s of reading, hashing and converting Fashion-MNIST each time). Its
    arrays are read-only: `Images` copies what it keeps."""
    data = load_dataset(name, split)
    for arr in (data.x, data.y):
        if isinstance(arr, np.ndarray):
            arr.setflags(write=False)
    return data


class Images:
    """Training subset, held-out reference (test split), a disjoint real set for the floor."""

    def __init__(self, cfg, device="cpu"):
        train = dataset(cfg.dataset, "train")
        test = dataset(cfg.dataset, "test")
        self.classes, self.provenance = train.classes, train.provenance + test.provenance
        order = SPLIT_STREAMS.rng("train").permutation(len(train))
        n = len(train) if cfg.n_train in (0, None) else min(cfg.n_train, len(train))
        tr, rest = order[:n], order[n:]
        if len(rest) < cfg.n_floor:  # small sets (digits): the floor set overlaps training
            rest = order
        fl = np.sort(rest[:cfg.n_floor])
        te = np.sort(SPLIT_STREAMS.rng("test").permutation(len(test))[:cfg.n_eval])
        X, Y = np.asarray(train.x), train.y
        self.x = torch.as_tensor(X[np.sort(tr)], device=device)
        self.y = torch.as_tensor(Y[np.sort(tr)], device=device)
        self.floor_x = torch.as_tensor(X[fl])
        self.test_x = torch.as_tensor(np.asarray(test.x)[te])
        self.test_y = torch.as_tensor(test.y[te])
        self.all_x, self.all_y = torch.from_numpy(X.copy()), torch.from_numpy(Y.copy())   # the cache's stay read-only
        self.channels, self.size = self.x.shape[1], self.x.shape[2]

    def info(self) -> dict:
        return {"n_train": len(self.x), "n_test_ref": len(self.test_x), "n_floor": len(self.floor_x),
                "shape": list(self.x.shape[1:]), "classes": len(self.classes)}


def image_device(cfg) -> str:
    """Where the image models of a run train: the run's device (`cfg.device`, set by `on_device`), else the CPU."""
    return str(getattr(cfg, "device", None) or "cpu")


def on_device(cfg, run):
    """`cfg` with `device` the run's (`run.device`): what the image studies' workers read (`image_device`)."""
    from types import SimpleNamespace

    return SimpleNamespace(**(vars(cfg) | {"device": str(run.device) if run.device is not None else "cpu"}))


SPLIT = ("train: the first n_train images of a permutation (stream split/train of seed 0) of the training split; "
         "reference: n_eval images of a permutation (stream split/test of seed 0) of the test split; floor: the next n_floor training images (disjoint from train)")


def provenance(cfg, seed: int, images: Images | None = None, featinfo: dict | None = None) -> dict:
    """What every results file carries: seed, sizes, the split, the evaluation network's hash and accuracy."""
    out = {"seed": int(seed), "profile_dataset": cfg.dataset if images is not None else "2-D mixtures"}
    if images is not None:  # the image models train where the images are; every metric is computed on the CPU
        out.update(n_train=len(images.x), n_eval=len(images.test_x), n_floor=len(images.floor_x), split=SPLIT,
                   image_models_device=image_device(cfg), evaluation_device="cpu")
    else:
        out.update(n_train=int(cfg.syn_n), n_eval=int(cfg.syn_eval), mixtures=list(cfg.syn_mixtures),
                   split="2-D points drawn fresh per replicate (seeded); scored against the known modes",
                   synthetic_device="cpu")
    if featinfo is not None:
        out.update(featnet_sha256=featinfo["featnet_sha256"], featnet_test_acc=featinfo["featnet_test_acc"])
    else:
        out.update(featnet_sha256="none (no evaluation network: 2-D points are scored by distance to the modes)",
                   featnet_test_acc=None)
    return out
