"""The fixed noise of the sample grids, from the run's keyed streams (`common.seed.Streams`).

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539
"""
from __future__ import annotations

import torch

from common.seed import Streams


def grid_noise(streams: Streams, n: int, dim: int) -> torch.Tensor:
    """The fixed noise of the sample grids: the stream ("grid-noise", dim) of the run, so every replicate's
    grid of one width draws the same z."""
    return torch.as_tensor(streams.rng("grid-noise", dim).standard_normal((n, dim)), dtype=torch.float32)
