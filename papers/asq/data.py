"""Data for the QAT studies: a stratified training subset, the test set, per-channel normalisation.

Paper: "Precision Neural Network Quantization via Learnable Adaptive Modules",
arXiv:2504.17263, https://arxiv.org/abs/2504.17263

Loading goes through `common.data.load_dataset` (digits, fashion_mnist, cifar10, imagenet).
In-memory datasets become normalised float32 tensors once; ImageNet stays lazy and is normalised
per batch.

Training batches come from `Split.train_batches` (one epoch), evaluation batches from `Split.eval_batches`
(one pass): for ImageNet each is one DataLoader whose worker processes decode the whole epoch or pass, never
one per batch. Augmentation (the full profile, `augment`), as the release and the usual CIFAR recipe:
  * CIFAR and the other in-memory sets: pad 4 and a random 32 x 32 crop, horizontal flip with p = 1/2
    (`crop_flip`, on whole batches, on the batch's device);
  * ImageNet: RandomResizedCrop(224, scale 0.08-1, ratio 3/4-4/3) + horizontal flip (`ImageNetTrain`), the
    release's `quant_train.py` transforms; evaluation is resize 256 + centre crop 224 as before. (`image_size`
    sets the 224, the resize scaling with it as 256/224; the full-profile test decodes small images.)
The random draws of epoch e come from the stream ("augment", e) of the training replicate's streams (per image
for ImageNet: ("augment", e, i)), so a resumed run repeats the uninterrupted one and paired configurations see
the same augmented batches. The training and test subsets come from the streams `load` is given.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from common.errors import UserError

IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


@dataclass
class Split:
    x: object            # torch.Tensor (N, C, H, W) normalised, or a lazy `common.data.ImageFiles` (ImageNet)
    y: torch.Tensor      # int64
    mean: torch.Tensor   # (1, C, 1, 1)
    std: torch.Tensor

    def __len__(self) -> int:
        return len(self.y)

    @property
    def lazy(self) -> bool:
        return not isinstance(self.x, torch.Tensor)

    def batch(self, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One batch, unaugmented (a one-off: the step-size initialisation, a probe)."""
        if not self.lazy:
            return self.x[idx], self.y[idx]
        xb = torch.as_tensor(np.asarray(self.x[idx.numpy()]))
        return (xb - self.mean) / self.std, self.y[idx]

    def eval_batches(self, batch_size: int, n: int | None = None):
        """(x, y) batches of the first n examples (all when None), in order, unaugmented: one DataLoader for the
        whole pass on ImageNet."""
        n = len(self) if n is None else min(int(n), len(self))
        if not self.lazy:
            for start in range(0, n, batch_size):
                stop = min(start + batch_size, n)
                yield self.x[start:stop], self.y[start:stop]
            return
        for xb, yb in self.x.loader(batch_size=batch_size, indices=np.arange(n)):
            yield (xb - self.mean) / self.std, yb

    def train_batches(self, batches: list, *, streams, epoch: int, augment: bool, device="cpu"):
        """One epoch: (x, y) on `device` for each index batch of `batches`, augmented when `augment` (module
        docstring). ImageNet: one DataLoader for the epoch (decoding and augmenting in worker processes)."""
        if not self.lazy:
            gen = streams.torch_generator("augment", epoch) if augment else None
            for idx in batches:
                xb, yb = self.x[idx].to(device), self.y[idx].to(device)
                yield (crop_flip(xb, gen, self.pad_value()) if augment else xb), yb
            return
        from torch.utils.data import DataLoader
        from common.data import data_workers

        ds = ImageNetTrain(self.x.files, self.y.numpy(), streams, epoch, augment, size=self.x.size,
                           resize=self.x.resize)
        workers = data_workers()
        dl = DataLoader(ds, batch_sampler=[[int(i) for i in idx] for idx in batches], num_workers=workers,
                        collate_fn=_collate)
        for xb, yb in dl:
            yield ((xb - self.mean) / self.std).to(device), yb.to(device)

    def pad_value(self) -> torch.Tensor:
        """The normalised value of a black pixel, (1, C, 1, 1): what zero padding of the raw image becomes."""
        return -self.mean / self.std


def crop_flip(x: torch.Tensor, gen: torch.Generator, fill: torch.Tensor, pad: int = 4) -> torch.Tensor:
    """Random crop of each image of x (B, C, H, W) from its `pad`-padded copy (padding = `fill`, per channel),
    then a horizontal flip with p = 1/2: torchvision's RandomCrop(H, padding=pad) + RandomHorizontalFlip on a
    batch, drawn from `gen` (CPU) and applied on x's device without a loop over images."""
    b, c, h, w = x.shape
    off = torch.randint(0, 2 * pad + 1, (2, b), generator=gen).to(x.device)
    flip = (torch.rand(b, generator=gen) < 0.5).to(x.device)
    padded = fill.to(device=x.device, dtype=x.dtype).expand(b, c, h + 2 * pad, w + 2 * pad).clone()
    padded[:, :, pad:pad + h, pad:pad + w] = x
    rows = off[0][:, None] + torch.arange(h, device=x.device)                     # (B, H)
    cols = off[1][:, None] + torch.arange(w, device=x.device)                     # (B, W)
    cols = torch.where(flip[:, None], cols.flip(1), cols)                         # flipped crop = reversed columns
    bidx = torch.arange(b, device=x.device)[:, None, None]
    return padded[bidx, :, rows[:, :, None], cols[:, None, :]].permute(0, 3, 1, 2).contiguous()


def random_resized_box(width: int, height: int, rng: np.random.Generator, scale=(0.08, 1.0),
                       ratio=(3 / 4, 4 / 3)) -> tuple[int, int, int, int]:
    """(left, top, w, h) of torchvision's RandomResizedCrop: up to 10 draws of an area share in `scale` and a
    log-uniform aspect ratio in `ratio` that fit the image, else the central crop at the nearest allowed ratio."""
    area = width * height
    log_r = (np.log(ratio[0]), np.log(ratio[1]))
    for _ in range(10):
        target = area * rng.uniform(*scale)
        r = float(np.exp(rng.uniform(*log_r)))
        w, h = int(round(np.sqrt(target * r))), int(round(np.sqrt(target / r)))
        if 0 < w <= width and 0 < h <= height:
            return int(rng.integers(0, width - w + 1)), int(rng.integers(0, height - h + 1)), w, h
    in_ratio = width / height
    if in_ratio < min(ratio):
        w, h = width, int(round(width / min(ratio)))
    elif in_ratio > max(ratio):
        w, h = int(round(height * max(ratio))), height
    else:
        w, h = width, height
    return (width - w) // 2, (height - h) // 2, w, h


class ImageNetTrain:
    """Training images of a class folder: RandomResizedCrop(size) + horizontal flip (p = 1/2) when `augment`,
    else resize + centre crop (`common.data.decode_image`); item i of epoch e draws from the stream
    ("augment", e, i) of `streams` (picklable), so the batch does not depend on which worker decodes it. Items: (uint8 (3, size, size), label)."""

    def __init__(self, files, labels, streams, epoch: int, augment: bool, size: int = 224, resize: int = 256):
        self.files, self.labels = list(files), np.asarray(labels, dtype=np.int64)
        self.streams, self.epoch, self.augment, self.size, self.resize = streams, int(epoch), bool(augment), size, resize

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, i: int):
        from PIL import Image

        from common.data import decode_image

        i = int(i)
        if not self.augment:
            return torch.from_numpy(decode_image(self.files[i], self.size, self.resize)), int(self.labels[i])
        rng = self.streams.rng("augment", self.epoch, i)
        with Image.open(self.files[i]) as im:
            im = im.convert("RGB")
            left, top, w, h = random_resized_box(im.size[0], im.size[1], rng)
            im = im.resize((self.size, self.size), Image.BILINEAR, box=(left, top, left + w, top + h))
            if rng.random() < 0.5:
                im = im.transpose(Image.FLIP_LEFT_RIGHT)
            arr = np.asarray(im, dtype=np.uint8).transpose(2, 0, 1).copy()
        return torch.from_numpy(arr), int(self.labels[i])


def _collate(items):
    """(uint8 image, label) pairs into float32 [0, 1] images and int64 labels."""
    x = torch.stack([im for im, _ in items]).to(torch.float32).div_(255.0)
    return x, torch.as_tensor([lab for _, lab in items], dtype=torch.int64)


def stratified_indices(y: np.ndarray, n: int | None, rng: np.random.Generator) -> np.ndarray:
    """n indices with (as nearly as possible) equal counts per class, drawn from `rng`; all when n is None."""
    if n is None or n >= len(y):
        return np.arange(len(y))
    if n <= 0:
        raise UserError(f"n_train/n_test must be positive; got {n}")
    classes = np.unique(y)
    per = np.full(len(classes), n // len(classes))
    per[: n % len(classes)] += 1
    picks = [rng.permutation(np.flatnonzero(y == c))[:k] for c, k in zip(classes, per)]
    return np.sort(np.concatenate(picks))


_LOADED: dict = {}   # the last load of this process (the runner runs a seed's notebooks in one kernel)


def load(name: str, n_train: int | None = None, n_test: int | None = None, streams=None, image_size: int = 224):
    """(train, test, info): normalised splits of dataset `name` and a small provenance dict; the subsets of
    n_train / n_test images are drawn from the streams "train-subset" / "test-subset" of `streams` (a
    `common.seed.Streams`, needed only when a subset is drawn). ImageNet images are `image_size` pixels square
    (centre crop after resizing the short side to 256/224 of it; RandomResizedCrop to it in training). The splits are
    read-only for every caller, so the last load is kept and handed out again for the same arguments and data
    location ($REPRO_DATA): the notebooks of one run share one copy instead of reading the files four times."""
    import os

    key = (name, n_train, n_test, streams, image_size, os.environ.get("REPRO_DATA", ""), os.getcwd())
    if key not in _LOADED:
        _LOADED.clear()
        _LOADED[key] = _load(name, n_train, n_test, streams, image_size)
    train, test, info = _LOADED[key]
    return train, test, dict(info)


def _load(name: str, n_train: int | None, n_test: int | None, streams, image_size: int = 224):
    from common.data import ImageFiles, load_dataset

    def subset(y, n, key):
        if n is not None and n < len(y) and streams is None:
            raise UserError(f"drawing a subset of {n} images needs the run's streams; pass streams=run.streams")
        return stratified_indices(y, n, streams.rng(key) if n is not None and n < len(y) else None)

    tr, te = load_dataset(name, "train"), load_dataset(name, "test")
    itr, ite = subset(tr.y, n_train, "train-subset"), subset(te.y, n_test, "test-subset")
    info = {"dataset": name, "n_train": int(len(itr)), "n_test": int(len(ite)), "classes": len(tr.classes),
            "provenance": tr.provenance + te.provenance}
    if name == "imagenet":
        mean = torch.tensor(IMAGENET_MEAN).reshape(1, 3, 1, 1)
        std = torch.tensor(IMAGENET_STD).reshape(1, 3, 1, 1)

        def files(x, idx):                                                         # lazy: nothing decoded
            return ImageFiles([x.files[int(i)] for i in idx], x.folder.labels[idx], size=image_size,
                              resize=round(image_size * 256 / 224), workers=x.workers)

        train = Split(files(tr.x, itr), torch.as_tensor(tr.y[itr]), mean, std)
        test = Split(files(te.x, ite), torch.as_tensor(te.y[ite]), mean, std)
        info["shape"] = (3, image_size, image_size)
        return train, test, info
    xtr = torch.as_tensor(np.ascontiguousarray(tr.x[itr]))
    xte = torch.as_tensor(np.ascontiguousarray(te.x[ite]))
    mean = xtr.mean(dim=(0, 2, 3), keepdim=True)
    std = xtr.std(dim=(0, 2, 3), keepdim=True).clamp_min(1e-6)
    train = Split((xtr - mean) / std, torch.as_tensor(tr.y[itr]), mean, std)
    test = Split((xte - mean) / std, torch.as_tensor(te.y[ite]), mean, std)
    info["shape"] = tuple(xtr.shape[1:])
    return train, test, info
