"""One loader API for image datasets.

`load_dataset(name, split)` returns a `Dataset` whose `x` is float32 in [0, 1] with shape
(N, C, H, W) and whose `y` is int64 class indices. A dataset's folder is `folder(name)`: its name
with `-` for `_` (`fashion_mnist` -> `fashion-mnist`, as the Debian package names it). Files are
searched, in order, in `data/<folder>/`, `$REPRO_DATA/<folder>/`, `$REPRO_DATA/` and
`/usr/share/datasets/<folder>/` (where the Debian package `dataset-fashion-mnist` installs
Fashion-MNIST). Nothing is ever downloaded here: a missing dataset is a one-line `UserError`
naming `make data DATASETS=<name>` (`common.download` fills `data/<folder>/`, or `$REPRO_DATA/<folder>/`).

| name | files | split sizes |
|---|---|---|
| `digits` | scikit-learn's bundled 8x8 digits (always there) | train 1438 / test 359 (fixed seeded split) |
| `fashion_mnist` | `{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]` | 60000 / 10000, checksums verified |
| `mnist` | the same IDX names | 60000 / 10000 |
| `cifar10` | `cifar-10-batches-py/{data_batch_1..5,test_batch}` | 50000 / 10000 |
| `imagenet` | `train/<class>/*.JPEG`, `val/<class>/*.JPEG` | lazy: `x` is an `ImageFiles` (decodes on indexing, a batch in worker processes; `x.loader()` for epochs) |
"""
from __future__ import annotations

import gzip
import hashlib
import os
import pickle
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import paths
from .errors import UserError

DATASETS = ("digits", "fashion_mnist", "mnist", "cifar10", "imagenet")
SPLITS = ("train", "test")
SYSTEM_DIR = Path("/usr/share/datasets")

# sha256 of the *uncompressed* IDX files (the .gz bytes differ between mirrors).
FASHION_MNIST_SHA256 = {
    "train-images-idx3-ubyte": "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888",
    "train-labels-idx1-ubyte": "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9",
    "t10k-images-idx3-ubyte": "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b",
    "t10k-labels-idx1-ubyte": "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34",
}
FASHION_MNIST_CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot")


@dataclass
class Dataset:
    name: str
    split: str
    x: object  # np.ndarray float32 (N, C, H, W) in [0, 1], or a lazy sequence for imagenet
    y: np.ndarray  # int64
    classes: tuple
    provenance: list = field(default_factory=list)  # [{"path", "sha256", "bytes"}]

    def __len__(self) -> int:
        return len(self.y)

    def subset(self, n: int | None, seed: int = 0) -> "Dataset":
        """A seeded random subset of `n` examples (all of them when n is None or >= len)."""
        if n is None or n >= len(self):
            return self
        idx = np.sort(np.random.default_rng(seed).choice(len(self), size=n, replace=False))
        x = self.x.take(idx) if isinstance(self.x, ImageFiles) else self.x[idx]  # image files stay lazy
        return Dataset(self.name, self.split, x, self.y[idx], self.classes, self.provenance)

    def tensors(self, device="cpu"):
        import torch

        return torch.as_tensor(np.asarray(self.x), device=device), torch.as_tensor(self.y, device=device)


def folder(name: str) -> str:
    """The one folder name of a dataset, under data/, $REPRO_DATA and /usr/share/datasets."""
    return name.replace("_", "-")


def search_dirs(name: str) -> list[Path]:
    dirs = [paths.DATA / folder(name)]
    if os.environ.get("REPRO_DATA"):
        root = Path(os.environ["REPRO_DATA"])
        dirs += [root / folder(name), root]
    dirs.append(SYSTEM_DIR / folder(name))
    return dirs


def _missing(name: str, what: str) -> UserError:
    where = ", ".join(str(d) for d in search_dirs(name))
    return UserError(f"{name} not found ({what}; searched {where}); run `make data DATASETS={name}` or set REPRO_DATA to its folder")


def _find(name: str, stems: list[str]) -> dict[str, Path]:
    for d in search_dirs(name):
        found = {}
        for stem in stems:
            for cand in (d / stem, d / f"{stem}.gz"):
                if cand.exists():
                    found[stem] = cand
                    break
        if len(found) == len(stems):
            return found
    raise _missing(name, ", ".join(stems))


def _read(path: Path) -> bytes:
    with (gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")) as fh:
        return fh.read()


def parse_idx(raw: bytes) -> np.ndarray:
    """Decode an IDX file (magic 0x00000800+ndim for unsigned bytes)."""
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise ValueError("not an unsigned-byte IDX file")
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(dims)):
        raise ValueError(f"IDX size mismatch: header says {dims}, found {data.size} bytes")
    return data.reshape(dims)


def _load_idx(name: str, split: str, checksums: dict | None, classes: tuple) -> Dataset:
    prefix = "train" if split == "train" else "t10k"
    stems = [f"{prefix}-images-idx3-ubyte", f"{prefix}-labels-idx1-ubyte"]
    files = _find(name, stems)
    prov, arrays = [], {}
    for stem, path in files.items():
        raw = _read(path)
        digest = hashlib.sha256(raw).hexdigest()
        if checksums is not None and checksums.get(stem) != digest:
            raise UserError(f"{path} is corrupt or not the official {name} file (sha256 mismatch); delete it and run `make data`")
        prov.append({"path": str(path), "sha256": digest, "bytes": len(raw)})
        arrays[stem] = parse_idx(raw)
    images, labels = arrays[stems[0]], arrays[stems[1]]
    x = (images.astype(np.float32) / 255.0)[:, None, :, :]
    return Dataset(name, split, x, labels.astype(np.int64), classes, prov)


def _load_digits(split: str) -> Dataset:
    from sklearn.datasets import load_digits

    d = load_digits()
    order = np.random.default_rng(0).permutation(len(d.target))
    n_train = int(round(0.8 * len(order)))
    idx = np.sort(order[:n_train] if split == "train" else order[n_train:])
    x = (d.images[idx].astype(np.float32) / 16.0)[:, None, :, :]
    prov = [{"path": "sklearn.datasets.load_digits", "sha256": hashlib.sha256(d.images.tobytes()).hexdigest(), "bytes": int(d.images.nbytes)}]
    return Dataset("digits", split, x, d.target[idx].astype(np.int64), tuple(str(i) for i in range(10)), prov)


def _load_cifar10(split: str) -> Dataset:
    names = [f"data_batch_{i}" for i in range(1, 6)] if split == "train" else ["test_batch"]
    for d in search_dirs("cifar10"):
        base = d / "cifar-10-batches-py" if (d / "cifar-10-batches-py").exists() else d
        if all((base / n).exists() for n in names):
            xs, ys, prov = [], [], []
            for n in names:
                raw = (base / n).read_bytes()
                batch = pickle.loads(raw, encoding="bytes")
                xs.append(np.asarray(batch[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32))
                ys.append(np.asarray(batch[b"labels"], dtype=np.int64))
                prov.append({"path": str(base / n), "sha256": hashlib.sha256(raw).hexdigest(), "bytes": len(raw)})
            classes = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
            return Dataset("cifar10", split, np.concatenate(xs).astype(np.float32) / 255.0, np.concatenate(ys), classes, prov)
    raise _missing("cifar10", "cifar-10-batches-py/" + names[0])


def data_workers() -> int:
    """Decoding processes for image folders: `$REPRO_DATA_WORKERS`, else the usable cores, at most 8."""
    if os.environ.get("REPRO_DATA_WORKERS"):
        return max(0, int(os.environ["REPRO_DATA_WORKERS"]))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return min(8, cores)


def decode_image(path, size: int = 224, resize: int = 256) -> np.ndarray:
    """One image as uint8 (3, size, size): RGB, the short side resized to `resize` (bilinear), centre crop."""
    from PIL import Image

    with Image.open(path) as im:
        im = im.convert("RGB")
        w, h = im.size
        scale = resize / min(w, h)
        im = im.resize((max(1, round(w * scale)), max(1, round(h * scale))), Image.BILINEAR)
        w, h = im.size
        left, top = (w - size) // 2, (h - size) // 2
        im = im.crop((left, top, left + size, top + size))
        return np.asarray(im, dtype=np.uint8).transpose(2, 0, 1).copy()


class ImageFolder:
    """A torch map-style dataset over class-folder images (what torchvision's `ImageFolder` with
    Resize(resize) + CenterCrop(size) gives; torchvision's PyPI build loads only beside a CUDA torch):
    item i is (uint8 tensor (3, size, size), label)."""

    def __init__(self, files: list[Path], labels, size: int = 224, resize: int = 256):
        self.files, self.labels, self.size, self.resize = list(files), np.asarray(labels, dtype=np.int64), size, resize

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, i: int):
        import torch

        return torch.from_numpy(decode_image(self.files[int(i)], self.size, self.resize)), int(self.labels[int(i)])


class ImageFiles:
    """A lazy sequence of image files decoded to float32 (3, size, size) in [0, 1] on indexing: `x[i]` decodes
    one image here, `x[indices]` a batch in `workers` processes (a torch DataLoader over `ImageFolder`);
    `loader(...)` iterates (x, y) batches for an epoch with its workers kept alive."""

    def __init__(self, files: list[Path], labels=None, size: int = 224, resize: int = 256, workers: int | None = None):
        labels = np.zeros(len(files), dtype=np.int64) if labels is None else labels
        self.folder = ImageFolder(files, labels, size, resize)
        self.files, self.size, self.resize = self.folder.files, size, resize
        self.workers = data_workers() if workers is None else workers

    def __len__(self) -> int:
        return len(self.files)

    def _one(self, path: Path) -> np.ndarray:
        return decode_image(path, self.size, self.resize).astype(np.float32) / 255.0

    def take(self, idx) -> "ImageFiles":
        """A lazy view of the images at `idx` (nothing decoded)."""
        idx = np.arange(len(self))[idx]
        return ImageFiles([self.files[int(i)] for i in idx], self.folder.labels[idx], self.size, self.resize, self.workers)

    def loader(self, batch_size: int = 256, indices=None, shuffle: bool = False, seed: int = 0, workers: int | None = None,
               drop_last: bool = False):
        """A torch DataLoader of (float32 (B, 3, size, size) in [0, 1], int64 labels) batches over `indices`
        (all when None), decoded in `workers` processes (default `self.workers`), in order or shuffled by `seed`."""
        import torch
        from torch.utils.data import DataLoader, Subset

        workers = self.workers if workers is None else workers
        ds = self.folder if indices is None else Subset(self.folder, [int(i) for i in np.asarray(indices)])
        gen = torch.Generator().manual_seed(seed)
        return DataLoader(ds, batch_size=batch_size, shuffle=shuffle, generator=gen, num_workers=workers,
                          drop_last=drop_last, persistent_workers=workers > 0, collate_fn=_to_float_batch)

    def __getitem__(self, idx):
        if isinstance(idx, (int, np.integer)):
            return self._one(self.files[int(idx)])
        idx = np.arange(len(self))[idx]
        if len(idx) == 0:
            return np.zeros((0, 3, self.size, self.size), dtype=np.float32)
        workers = min(self.workers, len(idx) // 8)  # a process per at least 8 images
        if workers <= 1:
            return np.stack([self._one(self.files[int(i)]) for i in idx])
        chunk = -(-len(idx) // workers)
        from torch.utils.data import DataLoader, Subset

        dl = DataLoader(Subset(self.folder, [int(i) for i in idx]), batch_size=chunk, num_workers=workers,
                        collate_fn=_to_float_batch)
        return np.concatenate([x.numpy() for x, _ in dl])


def _to_float_batch(items):
    """Collate (uint8 image, label) pairs into float32 [0, 1] images and int64 labels."""
    import torch

    x = torch.stack([im for im, _ in items]).to(torch.float32).div_(255.0)
    return x, torch.as_tensor([lab for _, lab in items], dtype=torch.int64)


def _load_imagenet(split: str) -> Dataset:
    sub = "train" if split == "train" else "val"
    for d in search_dirs("imagenet"):
        root = d / sub
        if root.is_dir():
            classes = tuple(sorted(p.name for p in root.iterdir() if p.is_dir()))
            files, labels = [], []
            for k, c in enumerate(classes):
                for f in sorted((root / c).iterdir()):
                    if f.suffix.lower() in (".jpeg", ".jpg", ".png"):
                        files.append(f)
                        labels.append(k)
            if files:
                prov = [{"path": str(root), "sha256": hashlib.sha256("\n".join(map(str, files)).encode()).hexdigest(), "bytes": len(files)}]
                return Dataset("imagenet", split, ImageFiles(files, labels), np.asarray(labels, dtype=np.int64), classes, prov)
    raise _missing("imagenet", f"{sub}/<class>/*.JPEG")


def load_dataset(name: str, split: str = "train") -> Dataset:
    """Load `name` ("digits", "fashion_mnist", "mnist", "cifar10", "imagenet") for `split`."""
    if name not in DATASETS:
        raise UserError(f"unknown dataset {name!r}; choose one of {', '.join(DATASETS)}")
    if split not in SPLITS:
        raise UserError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    if name == "digits":
        return _load_digits(split)
    if name == "fashion_mnist":
        return _load_idx(name, split, FASHION_MNIST_SHA256, FASHION_MNIST_CLASSES)
    if name == "mnist":
        return _load_idx(name, split, None, tuple(str(i) for i in range(10)))
    if name == "cifar10":
        return _load_cifar10(split)
    return _load_imagenet(split)


def available(name: str) -> bool:
    """Whether `name` can be loaded here, both splits whole, without loading it."""
    try:
        if name == "digits":
            return True
        if name in ("fashion_mnist", "mnist"):
            _find(name, [f"{p}-{k}" for p in ("train", "t10k") for k in ("images-idx3-ubyte", "labels-idx1-ubyte")])
            return True
        if name == "cifar10":
            names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
            return any(all((base / n).exists() for n in names)
                       for d in search_dirs(name) for base in (d / "cifar-10-batches-py", d))
        return any((d / "train").is_dir() and (d / "val").is_dir() for d in search_dirs(name))
    except UserError:
        return False
