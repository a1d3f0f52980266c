"""Seeds of a run: one independent integer seed per (master seed, keys), and the fixed noise of the
sample grids.

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539
"""
from __future__ import annotations

import numpy as np
import torch

from common.seed import numpy_rng


def rep_seed(seed: int, *keys) -> int:
    """Independent integer seed for (master seed, keys)."""
    return int(numpy_rng(seed, *keys).integers(2**31 - 1))


def fixed_noise(seed: int, n: int, dim: int) -> torch.Tensor:
    """The fixed noise of the sample grids (one per seed and width)."""
    return torch.as_tensor(np.random.default_rng(seed).standard_normal((n, dim)), dtype=torch.float32)
