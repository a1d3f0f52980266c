"""2x2 max pooling of the evaluation network, faster where no gradient is asked for.

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539 (the evaluation network is this reproduction's: papers/acl/metrics.py).

On one CPU thread torch's `max_pool2d` took about half of the time of featurizing images (every evaluation of a
replicate: 21 sets of 600 to 2000 images); the maximum of the window's four corners taken as strided views
(`torch.maximum`) is about four times faster. A maximum is exact in any order, so the values are torch's bit for
bit; only a window whose largest values are zeros of both signs might keep the other zero, and the next layer
(a convolution or a linear layer with a bias) adds it to its sums, where +0 and -0 give the same number. Training
(a gradient asked for) goes through torch's kernel: its backward needs the index of each window's maximum.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def max_pool_2x2(x: torch.Tensor) -> torch.Tensor:
    """`F.max_pool2d(x, 2)`: for a 4-D tensor of even height and width that needs no gradient, as the maximum of the
    four corners of every window (module docstring); torch's kernel otherwise."""
    if x.dim() != 4 or x.shape[-1] % 2 or x.shape[-2] % 2 or (x.requires_grad and torch.is_grad_enabled()):
        return F.max_pool2d(x, 2)
    top = torch.maximum(x[..., 0::2, 0::2], x[..., 0::2, 1::2])
    return torch.maximum(top, torch.maximum(x[..., 1::2, 0::2], x[..., 1::2, 1::2]))


class MaxPool2x2(nn.Module):
    """`nn.MaxPool2d(2)` (no parameters: the state dict around it is unchanged), computed by `max_pool_2x2`."""

    def forward(self, x):
        return max_pool_2x2(x)
