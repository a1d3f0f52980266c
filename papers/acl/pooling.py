"""2x2 max pooling of the evaluation network, faster where no gradient is asked for.

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539 (the evaluation network is this reproduction's: papers/acl/metrics.py).

On one CPU thread torch's `max_pool2d` took about half of the time of featurizing images (every evaluation of a
replicate: 21 sets of 600 to 2000 images); the maximum of the window's four corners taken as strided views
(`torch.maximum`) is about four times faster. A maximum is exact in any order, so the values are torch's bit for
bit; only a window whose largest values are zeros of both signs might keep the other zero, and the next layer
(a convolution or a linear layer with a bias) adds it to its sums, where +0 and -0 give the same number. Training
(a gradient asked for) needs the index of each window's maximum: torch's `max_pool2d_with_indices` is run on a
channels-last copy of the input (`_MaxPool2x2Indices`), about three times faster than its kernel on the
channels-first layout on one thread (the evaluation network's training: two poolings a step), and gives the same
maxima and the same indices (each window's first maximum, NaN taken as a maximum, in both layouts); the backward is
torch's own (`max_pool2d_with_indices_backward` on the channels-first input with those indices), so the gradients
are torch's bit for bit.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


_ARGS = ([2, 2], [2, 2], [0, 0], [1, 1], False)   # kernel, stride, padding, dilation, ceil_mode of max_pool2d(x, 2)


class _MaxPool2x2Indices(torch.autograd.Function):
    """`F.max_pool2d(x, 2)` with a gradient, for a channels-first 4-D CPU tensor: the maxima and their indices from
    torch's kernel on a channels-last copy (the same values and indices, faster), returned channels-first; the
    backward is torch's `max_pool2d_with_indices_backward` on the channels-first input, as torch's autograd runs it."""

    @staticmethod
    def forward(ctx, x):
        out, idx = torch.ops.aten.max_pool2d_with_indices(x.contiguous(memory_format=torch.channels_last), *_ARGS)
        ctx.save_for_backward(x, idx.contiguous())
        return out.contiguous()

    @staticmethod
    def backward(ctx, grad):
        x, idx = ctx.saved_tensors
        return torch.ops.aten.max_pool2d_with_indices_backward(grad, x, *_ARGS, idx)


def max_pool_2x2(x: torch.Tensor) -> torch.Tensor:
    """`F.max_pool2d(x, 2)`: for a 4-D tensor of even height and width that needs no gradient, as the maximum of the
    four corners of every window (module docstring); with a gradient, for a channels-first CPU tensor of float32,
    torch's kernels on a channels-last copy (`_MaxPool2x2Indices`); torch's kernel otherwise."""
    if x.dim() != 4 or x.shape[-1] % 2 or x.shape[-2] % 2:
        return F.max_pool2d(x, 2)
    if x.requires_grad and torch.is_grad_enabled():
        if x.device.type == "cpu" and x.dtype == torch.float32 and x.is_contiguous():
            return _MaxPool2x2Indices.apply(x)
        return F.max_pool2d(x, 2)
    top = torch.maximum(x[..., 0::2, 0::2], x[..., 0::2, 1::2])
    return torch.maximum(top, torch.maximum(x[..., 1::2, 0::2], x[..., 1::2, 1::2]))


class MaxPool2x2(nn.Module):
    """`nn.MaxPool2d(2)` (no parameters: the state dict around it is unchanged), computed by `max_pool_2x2`."""

    def forward(self, x):
        return max_pool_2x2(x)
