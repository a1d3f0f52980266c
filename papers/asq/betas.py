"""The ASQ adapter's output beta, read out of a trained model, and the model with beta frozen.

Paper: "Precision Neural Network Quantization via Learnable Adaptive Modules",
arXiv:2504.17263, https://arxiv.org/abs/2504.17263 (ASQ: s_a = s * beta(x), abstract; official code
`asq.py: Adapter`, `AsqActQuant`).

`collect_betas` records beta per (layer, example) (notebook 04); `frozen_beta_model` fixes each
layer's beta at its mean over training images: ASQ without its adaptivity, the control of the
ASQ-vs-LSQ claims (README "Claims and their controls").
"""
from __future__ import annotations

import copy

import pandas as pd
import torch
from torch import nn

from common.errors import UserError

from .convert import quant_layers


@torch.no_grad()
def collect_betas(qmodel: nn.Module, data, n: int = 2000, batch_size: int = 500) -> pd.DataFrame:
    """beta of every ASQ layer for the first n examples: one row per (layer, example). beta is the adapter's
    output in s_a = s * beta(x) (abstract; official code `asq.py: Adapter`).

    The batches go to the model's device; the table is built on the CPU."""
    layers = [(name, l) for name, l in quant_layers(qmodel) if l.act_q.adapter is not None]
    if not layers:
        raise UserError("model has no ASQ layer; convert it with method='asq'")
    p = next(qmodel.parameters())
    qmodel.eval()
    out = {name: [] for name, _ in layers}
    for _, l in layers:
        l.act_q.record_beta = True
    try:
        for xb, _ in data.eval_batches(batch_size, n):
            qmodel(xb.to(device=p.device, dtype=p.dtype))
            for name, l in layers:
                out[name].append(l.act_q.last_beta.clone())
    finally:
        for _, l in layers:
            l.act_q.record_beta = False
    frames = []
    for i, (name, _) in enumerate(layers):
        b = torch.cat(out[name]).double().cpu().numpy()
        frames.append(pd.DataFrame({"layer": name, "depth": i, "example": range(len(b)), "beta": b}))
    df = pd.concat(frames, ignore_index=True)
    labels = data.y[: df.example.max() + 1].numpy()
    df["label"] = labels[df.example.to_numpy()]
    return df


@torch.no_grad()
def frozen_beta_model(qmodel: nn.Module, data, n: int = 2000, batch_size: int = 500) -> nn.Module:
    """A copy of an ASQ model whose adapters output a constant: each layer's beta is fixed at its mean
    over the first n examples of `data` (training images). Everything else (weights, steps, BN) is the
    trained model's, so the copy differs from it only by the input dependence of beta: the adaptivity
    the paper credits. Its accuracy against LSQ is the control of the ASQ-vs-LSQ claims."""
    betas = collect_betas(qmodel, data, n=n, batch_size=batch_size)
    means = betas.groupby("layer", sort=False).beta.mean()
    frozen = copy.deepcopy(qmodel)
    for name, layer in quant_layers(frozen):
        if layer.act_q.adapter is not None:
            layer.act_q.fixed_beta = float(means[name])
    return frozen.eval()
