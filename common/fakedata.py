"""Stand-in datasets in the official file formats, for tests and for timing a full profile where the real
files are absent (a GPU machine without network).

Each writer puts class-dependent images (a bright bar whose place depends on the label, on dim noise) in
the layout `common.data` loads and `make data` unpacks, under `root/<folder>` (`data.folder(name)`), so
`REPRO_DATA=root` makes `load_dataset` read them:

| writer | files |
|---|---|
| `write_mnist` | `mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte` (IDX: magic 0x0800+ndim, big-endian dims) |
| `write_cifar10` | `cifar-10-batches-py/{data_batch_1..5,test_batch,batches.meta}` (pickled dicts, bytes keys) |
| `write_imagefolder` | `imagenet/{train,val}/<class>/*.JPEG` |

The images are learnable (a classifier separates the classes) but carry no claim: a run on them tests code
paths and cost, never a result.
"""
from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np

from .data import folder


def idx_bytes(a: np.ndarray) -> bytes:
    """An unsigned-byte array in MNIST's IDX layout."""
    a = np.asarray(a)
    return np.array([0x800 + a.ndim, *a.shape], dtype=">u4").tobytes() + a.astype(np.uint8).tobytes()


def class_images(n: int, shape: tuple[int, ...], n_classes: int, rng: np.random.Generator):
    """`n` uint8 images of `shape` (H, W) or (C, H, W) and their labels: a bright bar at a class-dependent row."""
    y = rng.integers(0, n_classes, n)
    img = rng.integers(0, 60, (n, *shape)).astype(np.uint8)
    h = shape[-2]
    band = max(1, h // (n_classes + 2))
    for i, c in enumerate(y):
        top = (1 + int(c)) * h // (n_classes + 2)
        img[i, ..., top: top + band, :] = 255
    return img, y.astype(np.int64)


def write_mnist(root, n_train: int = 120, n_test: int = 60, seed: int = 0) -> Path:
    """MNIST's four IDX files (28x28, 10 classes) in `root/mnist/`; returns that folder."""
    rng = np.random.default_rng(seed)
    d = Path(root) / folder("mnist")
    d.mkdir(parents=True, exist_ok=True)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        img, y = class_images(n, (28, 28), 10, rng)
        (d / f"{prefix}-images-idx3-ubyte").write_bytes(idx_bytes(img))
        (d / f"{prefix}-labels-idx1-ubyte").write_bytes(idx_bytes(y))
    return d


CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


def write_cifar10(root, n_train: int = 100, n_test: int = 40, seed: int = 0) -> Path:
    """CIFAR-10's python batches (3x32x32, 10 classes; the train split over five batches) in
    `root/cifar-10-batches-py/`; returns that folder."""
    rng = np.random.default_rng(seed)
    d = Path(root) / folder("cifar10") / "cifar-10-batches-py"
    d.mkdir(parents=True, exist_ok=True)

    def dump(name: str, n: int) -> None:
        img, y = class_images(n, (3, 32, 32), 10, rng)
        batch = {b"batch_label": name.encode(), b"labels": [int(v) for v in y],
                 b"data": img.reshape(n, 3 * 32 * 32), b"filenames": [f"{name}_{i}.png".encode() for i in range(n)]}
        (d / name).write_bytes(pickle.dumps(batch, protocol=2))

    sizes = [n_train // 5 + (1 if k < n_train % 5 else 0) for k in range(5)]
    for k, n in enumerate(sizes, start=1):
        dump(f"data_batch_{k}", n)
    dump("test_batch", n_test)
    meta = {b"label_names": [c.encode() for c in CIFAR10_CLASSES], b"num_cases_per_batch": max(sizes), b"num_vis": 3072}
    (d / "batches.meta").write_bytes(pickle.dumps(meta, protocol=2))
    return d


def write_imagefolder(root, n_classes: int = 3, n_per_class: int = 4, size: int = 64, n_val_per_class: int = 2,
                      seed: int = 0) -> Path:
    """An ImageNet-style class folder of RGB JPEGs, `root/imagenet/{train,val}/n0000000k/*.JPEG`
    (WordNet-like class names); returns `root/imagenet`."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    base = Path(root) / folder("imagenet")
    for split, per in (("train", n_per_class), ("val", n_val_per_class)):
        for c in range(n_classes):
            d = base / split / f"n{c:08d}"
            d.mkdir(parents=True, exist_ok=True)
            for i in range(per):
                img = rng.integers(0, 60, (size, size, 3)).astype(np.uint8)
                top = (1 + c) * size // (n_classes + 2)
                img[top: top + max(1, size // (n_classes + 2)), :, c % 3] = 255
                Image.fromarray(img).save(d / f"{split}_{c}_{i}.JPEG", quality=90)
    return base
