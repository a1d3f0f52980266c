"""Turn a float model into a QAT model.

Paper: "Precision Neural Network Quantization via Learnable Adaptive Modules",
arXiv:2504.17263, https://arxiv.org/abs/2504.17263

Every nn.Conv2d and nn.Linear becomes a QConv2d / QLinear, including 1x1 downsample
convolutions. The first layer (first conv or linear in module order) and the last layer (last
one) stay in full precision by default, as in the released ImageNet builders; `first_last="8bit"`
quantizes them at 8 bits with uniform weights instead.
"""
from __future__ import annotations

import copy

import torch
from torch import nn

from common.errors import UserError

from .layers import QUANT_LAYERS, QConv2d, QLinear
from .levels import check_grid

METHODS = ("lsq", "asq", "sbeta")   # sbeta: ASQ's trained null (one scalar beta per layer, `ActQuantizer`)
FIRST_LAST = ("fp", "8bit")


def _check(method, w_bits, a_bits, grid, first_last):
    if method not in METHODS:
        raise UserError(f"unknown quantization method {method!r}; choose one of {', '.join(METHODS)}")
    if first_last not in FIRST_LAST:
        raise UserError(f"unknown first/last-layer policy {first_last!r}; choose fp or 8bit")
    for name, b in (("weight", w_bits), ("activation", a_bits)):
        if not isinstance(b, (int,)) or isinstance(b, bool):
            raise UserError(f"{name} bits must be an integer; got {b!r}")
    if not (2 <= a_bits <= 8 or a_bits == 32):
        raise UserError(f"activation bits must be 2..8 (or 32 for float); got {a_bits}")
    check_grid(grid, w_bits)


def quantizable_layers(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """(name, module) of every Conv2d / Linear in module order."""
    return [(n, m) for n, m in model.named_modules() if isinstance(m, (nn.Conv2d, nn.Linear))]


def _set_module(model: nn.Module, name: str, new: nn.Module) -> None:
    parent_name, _, child = name.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    setattr(parent, child, new)


def quantize_model(model: nn.Module, method: str = "asq", w_bits: int = 4, a_bits: int = 4,
                   weight_grid: str = "uniform", first_last: str = "fp", streams=None) -> nn.Module:
    """A QAT copy of `model` (the input is left untouched), as the release's builders quantize ResNets
    (official code `q_resnet.py`: every inner conv incl. 1x1 downsamples; first conv and last FC full precision,
    `FirstConv2dUnfold` / `LastLinear`).

    method: "lsq", "asq" or "sbeta" (one trained scalar beta per layer, no adapter); w_bits / a_bits: 2..8 or 32 (float); weight_grid: see `levels.GRIDS`;
    first_last: "fp" (default) or "8bit". Adapter weights are drawn from the stream "adapters" of `streams` (a
    `common.seed.Streams`); without streams from torch's global generator (shapes only: the accounting).
    """
    _check(method, w_bits, a_bits, weight_grid, first_last)
    layers = quantizable_layers(model)
    if any(isinstance(m, QUANT_LAYERS) for _, m in layers):
        raise UserError("model is already quantized; convert the float model instead")
    if not layers:
        raise UserError("model has no Conv2d or Linear layer to quantize; pass a float CNN/MLP")
    ends = {layers[0][0], layers[-1][0]}
    if first_last == "fp" and len(layers) <= 2:
        raise UserError("model has no quantizable layer besides its first and last; use first_last='8bit'")
    qmodel = copy.deepcopy(model)
    gen = streams.torch_generator("adapters") if streams is not None else None
    for name, layer in layers:
        if name in ends:
            if first_last == "fp":
                continue
            wb, ab, grid = 8, 8, "uniform"
        else:
            wb, ab, grid = w_bits, a_bits, weight_grid
        cls = QConv2d if isinstance(layer, nn.Conv2d) else QLinear
        _set_module(qmodel, name, cls.from_float(layer, method, wb, ab, grid, generator=gen))
    return qmodel


def quant_layers(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """(name, layer) of the quantized layers of a QAT model."""
    return [(n, m) for n, m in model.named_modules() if isinstance(m, QUANT_LAYERS)]


@torch.no_grad()
def init_step_sizes(model: nn.Module, batch: torch.Tensor) -> None:
    """Initialise every activation step from one (training) batch: s = 2 mean|x| / sqrt(Qp) (official code
    `quant_train.py`, which takes a validation batch: erratum 5).

    Runs one eval-mode forward pass, so batch-norm statistics are untouched and each layer sees
    the already-quantized outputs of the layers before it.
    """
    was_training = model.training
    model.eval()
    for _, m in quant_layers(model):
        m.act_q.reset()
    model(batch)
    model.train(was_training)
