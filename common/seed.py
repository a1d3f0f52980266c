"""Seeding and determinism.

`seed_everything` seeds python, numpy's legacy global state and torch (all devices) in one call,
and can switch on deterministic algorithms. Code should prefer explicit generators:
`numpy_rng(seed, *keys)` and `torch_generator(seed, *keys)` give independent, reproducible
streams keyed by (seed, keys), e.g. `numpy_rng(0, "forward", 3)`.
"""
from __future__ import annotations

import hashlib
import os
import random

import numpy as np


def _derive(seed: int, keys: tuple) -> int:
    if not keys:
        return int(seed)
    digest = hashlib.sha256(repr((int(seed),) + tuple(keys)).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def seed_everything(seed: int, deterministic: bool = False) -> int:
    """Seed python, numpy and torch; optionally force deterministic torch algorithms."""
    import torch

    seed = int(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True
    return seed


def numpy_rng(seed: int, *keys) -> np.random.Generator:
    """An independent numpy Generator for the stream (seed, *keys)."""
    return np.random.default_rng(_derive(seed, keys))


def torch_generator(seed: int, *keys, device="cpu"):
    """An independent torch.Generator for the stream (seed, *keys) on `device`."""
    import torch

    gen = torch.Generator(device=device)
    gen.manual_seed(_derive(seed, keys))
    return gen
