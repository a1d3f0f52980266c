"""Data encoding and the datasets used at each scale (arXiv:2506.23546).

One documented space: a pixel p ∈ [0, 1] becomes the image s = clip(2p − 1, ±0.97) ∈ [−1, 1] and
the model state x = atanh(s), so the network's rates φ(x) = tanh(x) reproduce the image. Training
and sampling act on x; every metric (distances, accuracies, covariances) is computed on images
s = φ(x), for data and samples alike.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from common.data import load_dataset
from common.errors import UserError
from common.seed import Streams

CLIP = 0.97
DATASETS = {  # name -> (loader name, classes, pooling)
    "digits": ("digits", (1, 3, 6), 1),              # sklearn 8x8, N = 64
    "fashion14": ("fashion_mnist", (1, 7, 8), 2),   # trouser, sneaker, bag; 2x2-pooled 14x14, N = 196
    "mnist": ("mnist", (1, 3, 6), 1),                # the paper: 28x28, N = 784
}
BINARY = "_binary"   # name suffix: pixels thresholded at 1/2 after pooling (every pixel saturated: x = ±atanh(0.97))
LIMITS = {"digits": 546, "fashion14": 18_000, "mnist": 20_000}   # images of the three classes (train + test for digits)


def spec(name: str):
    """(loader, classes, pooling, binary) of a dataset name: one of DATASETS, or one of them + "_binary"."""
    base = base_name(name)
    return (*DATASETS[base], base != name)


def base_name(name: str) -> str:
    """The dataset a name reads ("digits" for "digits_binary"); an unknown name is a user error."""
    base = name[: -len(BINARY)] if isinstance(name, str) and name.endswith(BINARY) else name
    if base not in DATASETS:
        names = ", ".join(f"{d} (or {d}{BINARY})" for d in DATASETS)
        raise UserError(f"unknown dataset {name!r}; choose one of {names}")
    return base


def pixels_to_image(p, clip: float = CLIP):
    return np.clip(2.0 * np.asarray(p, dtype=np.float64) - 1.0, -clip, clip)


def encode(p, clip: float = CLIP):
    """Pixels in [0, 1] -> model state x = atanh(clip(2p − 1)), so tanh(x) is the image (the released v2 scripts'
    encoding, clip ±0.97)."""
    return np.arctanh(pixels_to_image(p, clip))


def decode(x):
    """Model state -> image in [−1, 1] (φ = tanh)."""
    return torch.tanh(x) if isinstance(x, torch.Tensor) else np.tanh(x)


@dataclass
class Data:
    name: str
    x_train: np.ndarray   # model states (P_max, N), float32
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    shape: tuple          # image shape (H, W)
    classes: tuple
    provenance: list

    @property
    def n(self) -> int:
        return self.x_train.shape[1]

    def images(self, which: str = "train") -> np.ndarray:
        return np.tanh(self.x_train if which == "train" else self.x_test)


def _pool(x, k):
    if k == 1:
        return x
    n, c, h, w = x.shape
    return x.reshape(n, c, h // k, k, w // k, k).mean(axis=(3, 5))


def load(name: str, n_test: int = 150, rng=None) -> Data:
    """Classes of the paper's choice ({1, 3, 6}), pixels encoded; a held-out test split.

    digits: train and test of sklearn pooled then split by a fixed stream, the same for every run (n_test held out);
    fashion14 / mnist: their own test files (n_test images drawn from them). The training list
    is shuffled by `rng` (a numpy Generator: the run's stream that names the list; None keeps the stored
    order), so its first P images are the training set of size P. `<name>_binary`:
    the same images (same split and order) with each pixel set to 1 where p >= 1/2, else 0.
    """
    loader, classes, pool, binary = spec(name)
    parts = [load_dataset(loader, s) for s in ("train", "test")]
    prov = parts[0].provenance + parts[1].provenance
    pick = lambda d: (np.isin(d.y, classes))  # noqa: E731
    xs = [_pool(np.asarray(d.x)[pick(d)], pool) for d in parts]
    if binary:
        xs = [(x >= 0.5).astype(np.float64) for x in xs]
    ys = [d.y[pick(d)] for d in parts]
    split = Streams(0).rng("held-out split", loader)   # the data's split: the same for every run (not the run's stream)
    if loader == "digits":
        x_all, y_all = np.concatenate(xs), np.concatenate(ys)
        idx = split.permutation(len(y_all))
        te, tr = idx[:n_test], idx[n_test:]
        xtr, ytr, xte, yte = x_all[tr], y_all[tr], x_all[te], y_all[te]
    else:
        te = split.choice(len(ys[1]), size=min(n_test, len(ys[1])), replace=False)
        xtr, ytr, xte, yte = xs[0], ys[0], xs[1][te], ys[1][te]
    if rng is not None:
        order = rng.permutation(len(ytr))
        xtr, ytr = xtr[order], ytr[order]
    flat = lambda a: encode(a.reshape(len(a), -1)).astype(np.float32)  # noqa: E731
    return Data(name, flat(xtr), ytr, flat(xte), yte, tuple(xtr.shape[-2:]), classes, prov)


def check_sizes(data: Data, sizes) -> None:
    big = max(int(p) for p in sizes)
    if big > len(data.x_train):
        raise UserError(f"training-set size P={big} exceeds the {len(data.x_train)} {data.name} images available; lower P")
    if min(int(p) for p in sizes) < 2:
        raise UserError("training-set sizes must be >= 2")
