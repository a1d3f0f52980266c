"""Integer inference: export codes, per-channel scales and the POST look-up table; integer
accumulation for conv and linear; a model-level integer forward pass; storage/op accounting.

Paper: "Precision Neural Network Quantization via Learnable Adaptive Modules",
arXiv:2504.17263, https://arxiv.org/abs/2504.17263 (the LUT has no code in the release; this is
a reconstruction).

A quantized layer computes, for sample b and output channel c,

    y[b, c] = s_a[b] * w_scale[c] * acc[b, c] + bias[c],   acc = sum_k x_int[b, k] * w_int[c, k]

with activation codes x_int = clamp(round(x / (s * beta_b)), Qn, Qp) and integer weights

    uniform:    w_int = q (two's complement),              w_scale = s_w[c]
    log grids:  w_int = sign * LUT[|code|],                w_scale = alpha[c] * 2^-F
                LUT[c] = round(2^F * 2^(-(c-1)/2))  (POST),  LUT[0] = 0

so every multiply-accumulate is integer (for POT, LUT entries are powers of two: shifts) and the
only real-valued multiply is one per output. The accumulator is exact in int64, and also in
float64 as long as |acc| < 2^53 (checked), which gives a fast exact path through BLAS.

Device: everything runs where the model's parameters are (the LUT is moved to the codes' device);
the int64 backend's matmul runs on the CPU (CUDA has no int64 matmul). Results come back on the CPU.
Comparisons run with TF32 off, so a GPU's float32 reference is IEEE float32 like the CPU's.

Near misses (the controls of the integer-path claims, `NEAR_MISSES`): the same integer path with
one small, realistic bug, showing the checks' resolution:

    lut_truncated        LUT[c] = floor(2^F m_c) instead of round(2^F m_c) (a rounding-mode change:
                         entries differ by at most one unit of 2^-15)
    act_top_off_by_one   activation codes clamped at Qp - 1 instead of Qp (an off-by-one level: only
                         the activations in the top code move, by one step)
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from common.errors import UserError

from .convert import quant_layers
from .layers import QConv2d, QLinear
from .levels import LOG_GRIDS, LUT_FRAC_BITS, magnitudes, storage_bits

#: the near-miss variants of the integer path (see the module docstring)
NEAR_MISSES = ("lut_truncated", "act_top_off_by_one")


def check_near_miss(near_miss: str | None) -> None:
    if near_miss is not None and near_miss not in NEAR_MISSES:
        raise UserError(f"unknown near miss {near_miss!r}; choose one of {', '.join(NEAR_MISSES)}")


def lut_for(grid: str, bits: int, frac_bits: int = LUT_FRAC_BITS, rounding: str = "round") -> torch.Tensor | None:
    """The layer's look-up table: LUT[0] = 0, LUT[c] = round(2^F m_c) (int64, CPU); None for uniform.
    The paper's POST LUT (abstract, "LUT"; no release code, a reconstruction: module docstring).

    `rounding="floor"` truncates the exact magnitudes instead (the `lut_truncated` near miss: at 4 bits
    one POST entry, 2^15 2^(-5/2) = 5792.6, becomes 5792 instead of 5793)."""
    if grid not in LOG_GRIDS:
        return None
    if rounding not in ("round", "floor"):
        raise UserError(f"unknown LUT rounding {rounding!r}; choose round or floor")
    scaled = magnitudes(grid, bits, exact=rounding == "floor") * 2**frac_bits
    lut = (torch.round(scaled) if rounding == "round" else torch.floor(scaled)).to(torch.int64)   # L[c] = round(2^F m_c)
    return torch.cat([torch.zeros(1, dtype=torch.int64), lut])


@dataclass
class IntLayer:
    """Everything integer inference needs from one quantized layer."""

    kind: str                     # "conv" or "linear"
    w_codes: torch.Tensor         # int64 codes (uniform: step counts; log: sign * magnitude code)
    w_int: torch.Tensor           # int64 weights that enter the accumulator
    w_scale: torch.Tensor         # float64 (C_out,)
    lut: torch.Tensor | None      # int64 LUT of a log grid
    bias: torch.Tensor | None
    stride: tuple = (1, 1)
    padding: tuple = (0, 0)
    dilation: tuple = (1, 1)
    groups: int = 1
    grid: str = "uniform"
    w_bits: int = 4


@torch.no_grad()
def export_layer(layer: nn.Module, near_miss: str | None = None) -> IntLayer:
    """Integer codes, scales and LUT of a QConv2d/QLinear (computed in float64, on the layer's device):
    w_int = sign * LUT[|code|], w_scale = alpha 2^-F for log grids; w_int = q, w_scale = s_w for uniform
    (module docstring; README "Method as implemented").

    `near_miss="lut_truncated"` builds the LUT with floor instead of round (a control of the
    integer-path claims); uniform layers, which have no LUT, are unchanged by it.
    """
    check_near_miss(near_miss)
    wq = layer.weight_q
    if wq.bits == 32 or layer.act_q.bits == 32:
        raise UserError("a float (32-bit) layer has no integer form; quantize it with 2..8 bits")
    if getattr(layer, "groups", 1) != 1:
        raise UserError("grouped convolutions are not supported by the integer path")
    w = layer.weight.detach().double()
    scale = wq.scale.detach().double()
    orig = (wq.scale.data, wq.levels)
    wq.scale.data, wq.levels = scale, wq.levels.double()
    try:
        codes = wq.codes(w)
    finally:
        wq.scale.data, wq.levels = orig
    lut = lut_for(wq.grid, wq.bits, rounding="floor" if near_miss == "lut_truncated" else "round")
    if lut is None:
        w_int, w_scale = codes, scale.reshape(-1)
    else:
        lut = lut.to(codes.device)
        w_int = codes.sign() * lut[codes.abs()]                                # sign * LUT[|code|]
        w_scale = scale.reshape(-1) * 2.0 ** -LUT_FRAC_BITS                     # alpha * 2^-F
    bias = None if layer.bias is None else layer.bias.detach().double()
    if isinstance(layer, QConv2d):
        return IntLayer("conv", codes, w_int, w_scale, lut, bias, layer.stride, layer.padding,
                        layer.dilation, layer.groups, wq.grid, wq.bits)
    return IntLayer("linear", codes, w_int, w_scale, lut, bias, grid=wq.grid, w_bits=wq.bits)


def accumulate(x_codes: torch.Tensor, layer: IntLayer, backend: str = "float64") -> torch.Tensor:
    """acc = sum_k x_int * w_int as an int64 tensor (B, C_out, ...): the integer multiply-accumulate of the
    LUT path (module docstring; abstract, "LUT").

    backend "int64": im2col + int64 matmul (integer arithmetic throughout; on the CPU, since CUDA
    has no int64 matmul, the result moved back to the codes' device); "float64": the same sums
    through float64 convolution, exact because every partial sum is an integer below 2^53. On the CPU
    the "float64" backend splits w_int into base-2^8 digits where each digit's sums stay below 2^24
    (`float32_parts`) and convolves in float32, exact as well and several times faster; the int64
    accumulator is the same bit for bit (tested against the int64 backend).
    """
    x_codes = x_codes.to(torch.int64)
    if backend == "float64":
        x_max = x_codes.abs().max()
        if float(x_max.double() * _row_bound(layer.w_int)) >= 2.0**53:
            raise UserError("accumulator may exceed 2^53; use backend='int64'")
        parts = float32_parts(layer.w_int, int(x_max)) if x_codes.device.type == "cpu" and ieee_float32() else None
        if parts is not None:                                                   # the same sums, float32 kernels
            x32 = x_codes.float()
            acc = None
            for part, shift in parts:
                p = _conv_or_linear(x32, part, layer).to(torch.int64)              # exact: every sum < 2^24
                p = p if shift == 0 else p * (1 << shift)
                acc = p if acc is None else acc.add_(p)
            return acc
        xd, wd = x_codes.double(), layer.w_int.double()
        if layer.kind == "conv":
            acc = F.conv2d(xd, wd, None, layer.stride, layer.padding, layer.dilation, layer.groups)
        else:
            acc = F.linear(xd, wd)
        return acc.round().to(torch.int64)
    if backend != "int64":
        raise UserError(f"unknown integer backend {backend!r}; choose int64 or float64")
    device = x_codes.device
    x_codes, w_int = x_codes.cpu(), layer.w_int.cpu()
    if layer.kind == "linear":
        return (x_codes @ w_int.T).to(device)
    c_out, _, kh, kw = w_int.shape
    b, _, h, w = x_codes.shape
    cols = F.unfold(x_codes.double(), (kh, kw), layer.dilation, layer.padding, layer.stride)
    cols = cols.round().to(torch.int64)                                         # exact: codes < 2^53
    acc = w_int.reshape(c_out, -1) @ cols                                        # int64 accumulate
    h_out = (h + 2 * layer.padding[0] - layer.dilation[0] * (kh - 1) - 1) // layer.stride[0] + 1
    w_out = (w + 2 * layer.padding[1] - layer.dilation[1] * (kw - 1) - 1) // layer.stride[1] + 1
    return acc.reshape(b, c_out, h_out, w_out).to(device)


def _row_bound(w_int: torch.Tensor) -> float:
    """max over output channels of sum_k |w_int[c, k]| (exact in float64 below 2^53)."""
    return float(w_int.abs().reshape(w_int.shape[0], -1).sum(1).max().double())


def float32_parts(w_int: torch.Tensor, x_max: int, digit_bits: int = 8, max_parts: int = 4):
    """w_int as sum_j part_j * 2^shift_j (base-2^digit_bits digits, the top one signed) such that every partial sum
    of x_int * part_j is an integer below 2^24 in magnitude (|x_int| <= x_max): then a float32 convolution computes
    each part's accumulator exactly, in any summation order, and their shifted int64 sum is the accumulator.
    None where no such split into at most `max_parts` parts exists (the float64 path is used then)."""
    limit = 2.0**24
    parts, rest, shift = [], w_int.to(torch.int64), 0
    while len(parts) < max_parts:
        if x_max * _row_bound(rest) < limit:
            return parts + [(rest.float(), shift)]
        low = torch.remainder(rest, 1 << digit_bits)                          # the digit, in [0, 2^digit_bits)
        if x_max * _row_bound(low) >= limit:
            return None
        parts.append((low.float(), shift))
        rest = torch.div(rest - low, 1 << digit_bits, rounding_mode="floor")  # exact: a multiple of the base
        shift += digit_bits
    return None


def ieee_float32() -> bool:
    """Whether float32 convolutions and products on the CPU are IEEE float32 (no bf16 / tf32 speed-up set)."""
    conv = getattr(getattr(torch.backends.mkldnn, "conv", None), "fp32_precision", "none")
    return torch.get_float32_matmul_precision() == "highest" and conv in ("none", "ieee")


def _conv_or_linear(x: torch.Tensor, w: torch.Tensor, layer: "IntLayer") -> torch.Tensor:
    if layer.kind == "conv":
        return F.conv2d(x, w, None, layer.stride, layer.padding, layer.dilation, layer.groups)
    return F.linear(x, w)


def dequantize(acc: torch.Tensor, step: torch.Tensor, layer: IntLayer) -> torch.Tensor:
    """y = s_a[b] * w_scale[c] * acc + bias (float64): one real multiply per output (module docstring; with
    ASQ, s_a[b] = s beta_b is per sample, so the requantization scale is too)."""
    shape = (1, -1) + (1,) * (acc.dim() - 2)
    y = acc.double() * (step.double().reshape((-1,) + (1,) * (acc.dim() - 1)) * layer.w_scale.reshape(shape))
    return y if layer.bias is None else y + layer.bias.reshape(shape)


class IntegerLayer(nn.Module):
    """Drop-in replacement of a quantized layer that runs the integer path (float64 around it): codes
    (`ActQuantizer.codes`), `accumulate`, `dequantize`; `near_miss` one of `NEAR_MISSES` (a control)."""

    def __init__(self, qlayer: nn.Module, backend: str = "float64", near_miss: str | None = None):
        super().__init__()
        self.act_q = qlayer.act_q            # float64 copy: the adapter and step live here
        self.int_layer = export_layer(qlayer, near_miss)
        self.backend = backend
        self.top_off_by_one = near_miss == "act_top_off_by_one"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.double()
        codes, step = self.act_q.codes(x)                                      # x_int, s * beta
        if self.top_off_by_one:                                                # near miss: top code Qp - 1
            codes = codes.clamp(max=self.act_q.qp - 1)
        return dequantize(accumulate(codes, self.int_layer, self.backend), step.reshape(-1), self.int_layer)


@torch.no_grad()
def bake_weights(qmodel: nn.Module) -> nn.Module:
    """A copy whose float weights are replaced by their fake-quantized values, in the model's dtype.

    Quantizing twice changes nothing, so the copy computes the same outputs; but the weight codes
    are now fixed by the trained (float32) model and cannot flip when it is cast to float64.
    """
    model = copy.deepcopy(qmodel)
    for _, layer in quant_layers(model):
        layer.weight.copy_(layer.weight_q(layer.weight))
    return model


def integer_model(qmodel: nn.Module, backend: str = "float64", near_miss: str | None = None) -> nn.Module:
    """A float64 copy of a QAT model (on its device) whose quantized layers run the integer path
    (`near_miss`: one of `NEAR_MISSES`, a control)."""
    check_near_miss(near_miss)
    model = bake_weights(qmodel).double().eval()
    layers = quant_layers(model)
    if not layers:
        raise UserError("model has no quantized layer; convert it with quantize_model first")
    for name, layer in layers:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, IntegerLayer(layer, backend, near_miss))
    return model


def count_macs(model: nn.Module, input_shape: tuple) -> dict:
    """MACs of one sample: {"model": conv/linear MACs of the network, "adapter": adapter MACs} (the adapter's
    overhead, reference notes: about 0.3M against 1.8G MACs on ResNet-18)."""
    counts = {"model": 0, "adapter": 0}
    hooks = []

    def hook(name):
        def fn(mod, inp, out):
            if isinstance(mod, nn.Conv2d):
                k = mod.in_channels // mod.groups * mod.kernel_size[0] * mod.kernel_size[1]
                macs = out.numel() // out.shape[0] * k
            else:
                macs = mod.in_features * mod.out_features
            counts["adapter" if ".adapter." in f".{name}." else "model"] += int(macs)
        return fn

    for name, mod in model.named_modules():
        if isinstance(mod, (nn.Conv2d, nn.Linear)):
            hooks.append(mod.register_forward_hook(hook(name)))
    was = model.training
    model.eval()
    try:
        with torch.no_grad():
            p = next(model.parameters())
            model(torch.zeros((1,) + tuple(input_shape), dtype=p.dtype, device=p.device))
    finally:
        for h in hooks:
            h.remove()
        model.train(was)
    return counts


def accounting(qmodel: nn.Module, input_shape: tuple, lut_entry_bytes: int = 2, macs: dict | None = None) -> dict:
    """Storage and operation accounting of a QAT model (all plain numbers): the LUT's share of the parameters
    (abstract and official README: "< 0.002 % of the model parameters") and the adapters' overhead.

    Model parameters are those of the float network (weights, biases, BN); quantizer steps,
    clips and adapters are counted separately. Stored bits: quantized weights at the grid's
    storage bits, everything else at 32. The LUT is one table per log-grid layer, of its nonzero
    magnitudes, `lut_entry_bytes` each (uint16 at F = 15).

    `macs`: the {"model", "adapter"} counts of `count_macs` when the caller has them (they depend on the layers'
    shapes and the input size only, not on the weight grid or the weights); otherwise one forward pass counts them.
    """
    if macs is None:
        counted = copy.deepcopy(qmodel)       # the MAC-counting forward pass must not touch the caller's model
        for _, layer in quant_layers(counted):
            layer.act_q.initialized.fill_(True)  # no step-size initialisation from the dummy input
            layer.act_q._initialized = True
        macs = count_macs(counted, input_shape)
    names = {n for n, _ in qmodel.named_parameters()}
    is_quant = lambda n: (".act_q." in f".{n}" or ".weight_q." in f".{n}")  # noqa: E731
    model_params = sum(p.numel() for n, p in qmodel.named_parameters() if not is_quant(n))
    adapter_params = sum(p.numel() for n, p in qmodel.named_parameters() if ".adapter." in f".{n}")
    quant_param = sum(p.numel() for n, p in qmodel.named_parameters() if is_quant(n)) - adapter_params
    qweights, qbits, lut_entries, n_log_layers, per_out_mults = 0, 0, 0, 0, 0
    int_mults_per_mac = {}
    macs_per_layer = {"model": int(macs["model"]), "adapter": int(macs["adapter"])}
    for name, layer in quant_layers(qmodel):
        wq = layer.weight_q
        n = layer.weight.numel()
        qweights += n
        qbits += n * (32 if wq.bits == 32 else storage_bits(wq.grid, wq.bits))
        if wq.grid in LOG_GRIDS and wq.bits != 32:
            lut_entries += len(magnitudes(wq.grid, wq.bits))
            n_log_layers += 1
        int_mults_per_mac[wq.grid] = {"uniform": 1, "pot": 0, "pot_released": 0}.get(wq.grid, 0)
    fp_weight_bits = 32 * (model_params - qweights)
    scale_bits = 32 * quant_param
    model_bits = qbits + fp_weight_bits + scale_bits
    lut_bytes = lut_entries * lut_entry_bytes
    return {
        "model_params": int(model_params),
        "quantized_weights": int(qweights),
        "bits_per_quantized_weight": qbits / max(qweights, 1),
        "bits_per_weight_all": (qbits + fp_weight_bits) / model_params,
        "model_bytes": model_bits / 8,
        "float_model_bytes": 4.0 * model_params,
        "compression_vs_float": 4.0 * model_params / (model_bits / 8),
        "lut_layers": int(n_log_layers),
        "lut_entries": int(lut_entries),
        "lut_bytes": int(lut_bytes),
        "lut_entries_pct_of_params": 100.0 * lut_entries / model_params,
        "lut_bytes_pct_of_model_bytes": 100.0 * lut_bytes / (model_bits / 8),
        "adapter_params": int(adapter_params),
        "adapter_params_pct": 100.0 * adapter_params / model_params,
        "model_macs": int(macs_per_layer["model"]),
        "adapter_macs": int(macs_per_layer["adapter"]),
        "adapter_macs_pct": 100.0 * macs_per_layer["adapter"] / max(macs_per_layer["model"], 1),
        "int_multiplies_per_mac": int_mults_per_mac,
    }


@torch.no_grad()
def code_flips(qmodel: nn.Module, fq64_model: nn.Module, data, batch_size: int):
    """Float32 logits of the trained model, float64 logits of `fq64_model` and, per image, whether
    any activation code differs between the two passes (codes compared batch by batch)."""
    from .quantizers import ActQuantizer

    def recorder(model):
        seen: list = []
        hooks = [m.register_forward_pre_hook(lambda mod, args: seen.append(mod.codes(args[0])[0]))
                 for m in model.modules() if isinstance(m, ActQuantizer) and m.bits != 32]
        return seen, hooks

    qmodel.eval()
    fq64_model.eval()
    device = model_device(qmodel)
    (c32, h32), (c64, h64) = recorder(qmodel), recorder(fq64_model)
    logits, logits64, flips = [], [], []
    try:
        for xb, _ in data.eval_batches(batch_size):
            xb = xb.to(device)
            c32.clear(), c64.clear()
            logits.append(qmodel(xb).cpu())
            logits64.append(fq64_model(xb.double()).cpu())
            flip = torch.zeros(len(xb), dtype=torch.bool, device=device)
            for a, b in zip(c32, c64):
                flip |= (a != b).flatten(1).any(1)
            flips.append(flip.cpu())
    finally:
        for h in h32 + h64:
            h.remove()
    return torch.cat(logits).double(), torch.cat(logits64), torch.cat(flips)


def _path_agreement(int_logits, fq32, fq64, flipped, prefix: str = "") -> dict:
    """The agreement measures of one integer path's logits with the float64 and float32 fake-quant logits."""
    per_image_fp32 = (int_logits - fq32).abs().amax(1)               # max |logit diff| of each image
    differs = per_image_fp32 > 1e-3
    out = {
        "max_abs_logit_diff": float((int_logits - fq64).abs().max()),
        "argmax_agreement": float((int_logits.argmax(1) == fq64.argmax(1)).double().mean()),
        "max_abs_logit_diff_fp32": float((int_logits - fq32).abs().max()),
        "argmax_agreement_fp32": float((int_logits.argmax(1) == fq32.argmax(1)).double().mean()),
        "frac_images_diff_gt_1e-3_fp32": float(differs.double().mean()),
        "frac_images_diff_gt_1e-3_without_flip_fp32": float((differs & ~flipped).double().mean()),
        "median_abs_logit_diff_fp32": float(per_image_fp32.median()),
    }
    return {prefix + k: v for k, v in out.items()}


def model_device(model: nn.Module) -> torch.device:
    """The device of a model's parameters (the CPU for a model without any)."""
    p = next(model.parameters(), None)
    return torch.device("cpu") if p is None else p.device


class _no_tf32:
    """TF32 off for CUDA matmuls and convolutions inside the block (restored after)."""

    def __enter__(self):
        self.saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False

    def __exit__(self, *exc):
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = self.saved
        return False


def compare_paths(qmodel: nn.Module, data, batch_size: int = 1000, backend: str = "float64",
                  near_misses=()) -> dict:
    """Integer path vs the fake-quant model on `data`: max |logit diff| and argmax agreement (the protocol of
    the claims `int-logits`, `int-argmax`, `int-logits-fp32`, `int-argmax-fp32`; source: abstract, LUT inference).

    Against the fake-quant model run in float64 (the same arithmetic without float32 rounding)
    and in float32 as trained. In float32, an activation that lies within rounding of a code
    boundary can round to the neighbouring code (a "flip"), which moves the logits by a visible
    amount; every activation code of both passes is recorded, so each image whose logits differ
    from the float32 model by more than 1e-3 is either explained by a flip or counts against the
    integer path (`frac_images_diff_gt_1e-3_without_flip_fp32`).

    Each of `near_misses` (names in `NEAR_MISSES`) runs the integer path once more with that bug;
    its measures come back prefixed with "<name>_", computed against the same fake-quant logits
    and code flips (the controls: the checks' resolution).

    Runs on the model's device (TF32 off); the model is left in eval mode, in float32.
    """
    from .train import predict

    for nm in near_misses:
        check_near_miss(nm)
    device = model_device(qmodel)
    with _no_tf32():
        int_logits = predict(integer_model(qmodel, backend), data, batch_size, device=device, dtype=torch.float64)
        fq32, fq64, flipped = code_flips(qmodel, bake_weights(qmodel).double(), data, batch_size)  # flipped: a code differs
        variants = {nm: predict(integer_model(qmodel, backend, near_miss=nm), data, batch_size, device=device,
                                dtype=torch.float64) for nm in near_misses}
    y = data.y
    out = _path_agreement(int_logits, fq32, fq64, flipped)
    out.update({
        "frac_images_code_flip_fp32": float(flipped.double().mean()),
        "acc_integer": float((int_logits.argmax(1) == y).double().mean() * 100),
        "acc_fakequant_fp32": float((fq32.argmax(1) == y).double().mean() * 100),
        "logit_scale": float(fq64.abs().max()),
    })
    for nm, logits in variants.items():
        out.update(_path_agreement(logits, fq32, fq64, flipped, prefix=f"{nm}_"))
        out[f"{nm}_acc_integer"] = float((logits.argmax(1) == y).double().mean() * 100)
    return out


def pack_codes(codes: torch.Tensor, nbits: int):
    """Signed integer codes as an `nbits`-per-code two's-complement bit stream (numpy uint8)."""
    import numpy as np

    c = codes.reshape(-1).to(torch.int64).cpu().numpy()
    lo, hi = -(2 ** (nbits - 1)), 2 ** (nbits - 1) - 1
    if c.size and (c.min() < lo or c.max() > hi):
        raise UserError(f"codes outside the {nbits}-bit range [{lo}, {hi}]")
    u = (c & (2**nbits - 1)).astype(np.uint16)
    bits = ((u[:, None] >> np.arange(nbits, dtype=np.uint16)) & 1).astype(np.uint8)   # little-endian bits
    return np.packbits(bits.reshape(-1))


def unpack_codes(packed, nbits: int, n: int) -> torch.Tensor:
    """Inverse of `pack_codes` for the first n codes."""
    import numpy as np

    bits = np.unpackbits(packed)[: n * nbits].reshape(n, nbits).astype(np.int64)
    u = (bits << np.arange(nbits)).sum(1)
    return torch.as_tensor(np.where(u >= 2 ** (nbits - 1), u - 2**nbits, u))


@torch.no_grad()
def artefact_bytes(qmodel: nn.Module, lut_per_channel: bool = False) -> dict:
    """Bytes of the deployable model, measured on the arrays it is made of (the claim `lut-size`: LUT bytes
    against the exported model; source: abstract and the official README, "< 0.002 %").

    Quantized layers: weight codes packed at the grid's storage bits, per-channel weight scales
    and the activation step (float32), adapters (float32), and for log grids one LUT of uint16
    entries; every other parameter and buffer (float first/last layers, BN) as float32.
    `lut_per_channel` prices the design the LUT claim is measured against: one table per output
    channel with the channel's scale folded into its entries (so no separate weight scales).
    """
    import numpy as np

    parts = {"codes": 0, "scales": 0, "adapters": 0, "lut": 0, "float": 0}
    seen = set()
    for name, layer in quant_layers(qmodel):
        il = export_layer(layer)
        parts["codes"] += pack_codes(il.w_codes, storage_bits(il.grid, il.w_bits)).nbytes
        folded = lut_per_channel and il.lut is not None
        parts["scales"] += (0 if folded else il.w_scale.float().cpu().numpy().nbytes) + layer.act_q.s.detach().float().cpu().numpy().nbytes
        if il.lut is not None:
            tables = il.w_codes.shape[0] if lut_per_channel else 1
            parts["lut"] += tables * il.lut[1:].cpu().numpy().astype(np.uint16).nbytes    # LUT[0] = 0 is implicit
        ad = layer.act_q.adapter
        if ad is not None:
            parts["adapters"] += sum(p.detach().float().cpu().numpy().nbytes for p in ad.parameters())
        seen.update(f"{name}.{k}" for k, _ in layer.named_parameters())
        seen.update(f"{name}.{k}" for k, _ in layer.named_buffers())
    for k, t in list(qmodel.named_parameters()) + list(qmodel.named_buffers()):
        if k not in seen and t.is_floating_point():
            parts["float"] += t.detach().float().cpu().numpy().nbytes
    parts["total"] = sum(parts.values())
    return {f"{k}_bytes": int(v) for k, v in parts.items()}


@torch.no_grad()
def logit_differences(qmodel: nn.Module, data, n: int = 500) -> tuple[torch.Tensor, torch.Tensor]:
    """(fake-quant logits in float64, integer-path minus fake-quant logits) of the first n examples of
    `data`, computed on the model's device (TF32 off), returned on the CPU; the model is left untouched."""
    device = model_device(qmodel)
    xb, _ = data.batch(torch.arange(min(n, len(data))))
    xb = xb.to(device=device, dtype=torch.float64)
    with _no_tf32():
        ref = bake_weights(qmodel).double().eval()(xb)
        out = integer_model(qmodel)(xb)
    return ref.cpu(), (out - ref).cpu()
