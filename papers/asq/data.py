"""Data for the QAT studies: a stratified training subset, the test set, per-channel normalisation.

Paper: "Precision Neural Network Quantization via Learnable Adaptive Modules",
arXiv:2504.17263, https://arxiv.org/abs/2504.17263

Loading goes through `common.data.load_dataset` (digits, fashion_mnist, cifar10, imagenet).
In-memory datasets become normalised float32 tensors once; ImageNet stays lazy and is normalised
per batch.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from common.errors import UserError

IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


@dataclass
class Split:
    x: object            # torch.Tensor (N, C, H, W) normalised, or a lazy sequence (ImageNet)
    y: torch.Tensor      # int64
    mean: torch.Tensor   # (1, C, 1, 1)
    std: torch.Tensor

    def __len__(self) -> int:
        return len(self.y)

    def batch(self, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if isinstance(self.x, torch.Tensor):
            return self.x[idx], self.y[idx]
        xb = torch.as_tensor(np.asarray(self.x[idx.numpy()]))
        return (xb - self.mean) / self.std, self.y[idx]


def stratified_indices(y: np.ndarray, n: int | None, seed: int) -> np.ndarray:
    """n indices with (as nearly as possible) equal counts per class, seeded; all when n is None."""
    if n is None or n >= len(y):
        return np.arange(len(y))
    if n <= 0:
        raise UserError(f"n_train/n_test must be positive; got {n}")
    from common.seed import numpy_rng

    rng = numpy_rng(seed, "asq-subset")
    classes = np.unique(y)
    per = np.full(len(classes), n // len(classes))
    per[: n % len(classes)] += 1
    picks = [rng.permutation(np.flatnonzero(y == c))[:k] for c, k in zip(classes, per)]
    return np.sort(np.concatenate(picks))


def load(name: str, n_train: int | None = None, n_test: int | None = None, seed: int = 0):
    """(train, test, info): normalised splits of dataset `name` and a small provenance dict."""
    from common.data import load_dataset

    tr, te = load_dataset(name, "train"), load_dataset(name, "test")
    itr, ite = stratified_indices(tr.y, n_train, seed), stratified_indices(te.y, n_test, seed + 1)
    info = {"dataset": name, "n_train": int(len(itr)), "n_test": int(len(ite)), "classes": len(tr.classes),
            "provenance": tr.provenance + te.provenance}
    if name == "imagenet":
        mean = torch.tensor(IMAGENET_MEAN).reshape(1, 3, 1, 1)
        std = torch.tensor(IMAGENET_STD).reshape(1, 3, 1, 1)

        class _Lazy:
            def __init__(self, x, idx):
                self.x, self.idx = x, idx

            def __getitem__(self, i):
                return self.x[self.idx[i]]

        train = Split(_Lazy(tr.x, itr), torch.as_tensor(tr.y[itr]), mean, std)
        test = Split(_Lazy(te.x, ite), torch.as_tensor(te.y[ite]), mean, std)
        info["shape"] = (3, 224, 224)
        return train, test, info
    xtr = torch.as_tensor(np.ascontiguousarray(tr.x[itr]))
    xte = torch.as_tensor(np.ascontiguousarray(te.x[ite]))
    mean = xtr.mean(dim=(0, 2, 3), keepdim=True)
    std = xtr.std(dim=(0, 2, 3), keepdim=True).clamp_min(1e-6)
    train = Split((xtr - mean) / std, torch.as_tensor(tr.y[itr]), mean, std)
    test = Split((xte - mean) / std, torch.as_tensor(te.y[ite]), mean, std)
    info["shape"] = tuple(xtr.shape[1:])
    return train, test, info
