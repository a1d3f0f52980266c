"""Quantized Conv2d and Linear: quantize the input activation and the weight, then the float op.

Paper: "Precision Neural Network Quantization via Learnable Adaptive Modules",
arXiv:2504.17263, https://arxiv.org/abs/2504.17263

As in the released "Unfold" layers, batch norm is not folded: y = BN(conv(x_hat, w_hat)).
The layer keeps the float weight as its parameter (the QAT master copy).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .quantizers import ActQuantizer, WeightQuantizer


class QuantMixin:
    """Shared by QConv2d and QLinear: `act_q` on the input, `weight_q` on the weight."""

    act_q: ActQuantizer
    weight_q: WeightQuantizer

    def attach_quantizers(self, method, w_bits, a_bits, grid, generator):
        """Give the layer its input quantizer (`ActQuantizer`: LSQ, or ASQ with an adapter drawn from
        `generator`) and its weight quantizer (`WeightQuantizer` on `grid`), as the released `AsqConv2d` /
        `PostBnConv2d` hold theirs (official code `asq.py`, `post.py`)."""
        self.method, self.w_bits, self.a_bits, self.grid = method, int(w_bits), int(a_bits), grid
        self.act_q = ActQuantizer(a_bits, method, self.weight.shape[1], generator=generator)
        self.weight_q = WeightQuantizer(w_bits, grid, self.weight)

    def quantized_weight(self) -> torch.Tensor:
        return self.weight_q(self.weight)


class QConv2d(QuantMixin, nn.Conv2d):
    """Conv2d with fake-quantized input (LSQ/ASQ) and weight (uniform, POT, POST, ...)."""

    @classmethod
    def from_float(cls, conv: nn.Conv2d, method: str, w_bits: int, a_bits: int, grid: str,
                   generator: torch.Generator | None = None) -> "QConv2d":
        q = cls(conv.in_channels, conv.out_channels, conv.kernel_size, stride=conv.stride,
                padding=conv.padding, dilation=conv.dilation, groups=conv.groups,
                bias=conv.bias is not None, padding_mode=conv.padding_mode,
                device=conv.weight.device, dtype=conv.weight.dtype)
        with torch.no_grad():
            q.weight.copy_(conv.weight)
            if conv.bias is not None:
                q.bias.copy_(conv.bias)
        q.attach_quantizers(method, w_bits, a_bits, grid, generator)
        return q

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.conv2d(self.act_q(x), self.quantized_weight(), self.bias, self.stride,
                        self.padding, self.dilation, self.groups)


class QLinear(QuantMixin, nn.Linear):
    """Linear with fake-quantized input and weight."""

    @classmethod
    def from_float(cls, fc: nn.Linear, method: str, w_bits: int, a_bits: int, grid: str,
                   generator: torch.Generator | None = None) -> "QLinear":
        q = cls(fc.in_features, fc.out_features, bias=fc.bias is not None,
                device=fc.weight.device, dtype=fc.weight.dtype)
        with torch.no_grad():
            q.weight.copy_(fc.weight)
            if fc.bias is not None:
                q.bias.copy_(fc.bias)
        q.attach_quantizers(method, w_bits, a_bits, grid, generator)
        return q

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(self.act_q(x), self.quantized_weight(), self.bias)


QUANT_LAYERS = (QConv2d, QLinear)
