"""LSQ and ASQ fake quantization, the ASQ adapter, and the weight quantizers.

Paper: "Precision Neural Network Quantization via Learnable Adaptive Modules",
arXiv:2504.17263, https://arxiv.org/abs/2504.17263 ; LSQ: Esser et al., arXiv:1902.08153.

ASQ keeps LSQ's learned per-tensor step s for activations and multiplies it, per sample, by a
factor beta that a small adapter predicts from the layer's input:

    s_a = s * beta(x)                                  (ASQ step)
    x_int = clamp(round(x / s_a), Qn, Qp)              (quantize)
    x_hat = x_int * s_a                                (dequantize)

Gradients (straight-through estimator inside the range):

    d x_hat / d s_a = -x/s_a + round(x/s_a)  inside,  Qn below,  Qp above
    dL/ds     = g * sum_b beta_b * G_b,   G_b = sum_{c,h,w} dL/dx_hat * d x_hat/d s_a
    dL/dbeta_b = s * G_b                   (no gradient scaling on beta)
    dL/dx      = dL/dx_hat * 1[Qn <= x/s_a <= Qp]

with g = 1 / sqrt(Qp * numel) (the released convention: numel of the whole batch tensor for
activations, weights per output channel for per-channel steps). With beta = 1 this is LSQ.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from common.errors import UserError

from .levels import LOG_GRIDS, check_grid, level_set, levels_key, project, project_index

EPS = torch.finfo(torch.float32).eps
#: activation quantizers: LSQ, ASQ (adapter), and ASQ's trained null without adaptivity (one scalar beta per layer)
ACT_METHODS = ("lsq", "asq", "sbeta")


def _reduce_to(t: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Sum t over the dimensions that were broadcast from `shape`."""
    padded = (1,) * (t.dim() - len(shape)) + tuple(shape)          # right-aligned broadcasting
    dims = [i for i, (a, b) in enumerate(zip(t.shape, padded)) if b == 1 and a != 1]
    out = t.sum(dim=dims, keepdim=True) if dims else t
    return out.reshape(shape)


def _sample_shape(x: torch.Tensor) -> tuple:
    return (x.shape[0],) + (1,) * (x.dim() - 1)


def _row_dots(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """sum over all but the first dimension of a * b, shape (n, 1, ..., 1), without the product tensor."""
    n = a.shape[0]
    return torch.einsum("bi,bi->b", a.reshape(n, -1), b.reshape(n, -1)).reshape(_sample_shape(a))


def row_quantile(x: torch.Tensor, q: float) -> torch.Tensor:
    """`torch.quantile(x, q, dim=1)` (linear interpolation) of a 2-D float tensor without NaNs, bit for bit, from the
    top n - floor(q (n - 1)) values of each row (`topk`) instead of a sort of the whole row: the same rank
    q (n - 1) in x's dtype, the same two order statistics and the same `lerp` between them."""
    n = x.shape[1]
    rank = torch.tensor(q, dtype=x.dtype) * (n - 1)                   # torch.quantile's rank, in x's dtype
    below, above = int(rank), int(torch.ceil(rank))
    k = n - below                                                      # the (below + 1)-th smallest is the k-th largest
    top = x.topk(k, dim=1, largest=True, sorted=True).values
    low = top[:, k - 1]
    return torch.lerp(low, low if above == below else top[:, k - 2], rank - below)


class LSQFunction(torch.autograd.Function):
    """x_hat = clamp(round(x / (s * beta)), Qn, Qp) * s * beta with the LSQ/ASQ gradients (module docstring).

    ASQ's quantizer s_a = s * beta(x) and its gradients dL/ds = g sum_b beta_b G_b, dL/dbeta_b = s G_b
    (abstract; official code `asq.py: LSQFakeQuant`); with beta = None it is LSQ's quantizer and step-size
    gradient with its scale g (LSQ (Esser et al., arXiv:1902.08153) Sec. 2, "Methods").

    The forward keeps what the backward needs and nothing more: the mask of the range and
    d x_hat / d s_a (one float and one bool tensor, computed in place), so the backward is two
    passes (the straight-through mask and one dot product per sample or channel).
    """

    @staticmethod
    def forward(ctx, x, s, beta, qn: float, qp: float, grad_scale: float):
        step = s if beta is None else s * beta                         # s_a = s * beta
        v = x / step
        q = torch.clamp(v, qn, qp)
        inside = q == v                                                # Qn <= x/s_a <= Qp
        q.round_()                                                     # x_int = round(clamp(x/s_a))
        out = q * step                                                 # x_hat = x_int * s_a
        dstep = torch.sub(q, v.mul_(inside), out=v)                    # d x_hat / d s_a: q - v inside, Qn / Qp outside
        ctx.save_for_backward(dstep, inside, s, beta)
        ctx.grad_scale = grad_scale
        return out

    @staticmethod
    def backward(ctx, grad_out):
        dstep, inside, s, beta = ctx.saved_tensors
        grad_x = grad_out * inside                                     # straight-through mask
        grad_beta = None
        if beta is None and s.numel() > 1 and s.shape != _sample_shape(dstep):
            return grad_x, _reduce_to(grad_out * dstep, s.shape) * ctx.grad_scale, None, None, None, None
        rows = _row_dots(grad_out, dstep)                              # G_b (or G_c per channel)
        if beta is None and s.numel() > 1:
            grad_s = rows * ctx.grad_scale                             # per-channel LSQ: g * sum G
        else:
            weighted = rows if beta is None else rows * beta
            grad_s = _reduce_to(weighted, s.shape) * ctx.grad_scale    # g * sum_b beta_b G_b
            if beta is not None and ctx.needs_input_grad[2]:
                grad_beta = rows * s                                   # s * G_b
        return grad_x, grad_s, grad_beta, None, None, None


def lsq_quantize(x, s, qn, qp, grad_scale, beta=None):
    """Fake-quantize x with step s (and per-sample factor beta for ASQ): `LSQFunction` (official code
    `asq.py: LSQFakeQuant`). Where no gradient is recorded (evaluation), the forward's own operations in
    its order, without what only the backward reads: the same output bit for bit, in fewer passes."""
    if not torch.is_grad_enabled():
        step = s if beta is None else s * beta                         # s_a = s * beta
        q = torch.clamp(x / step, float(qn), float(qp)).round_()       # x_int = round(clamp(x/s_a))
        return q * step                                                # x_hat = x_int * s_a
    return LSQFunction.apply(x, s, beta, float(qn), float(qp), float(grad_scale))


class GridFunction(torch.autograd.Function):
    """w_hat = alpha * P(clamp(w / alpha, -1, 1)) onto a normalised level set, STE for w.

    d w_hat / d alpha = P(v) - v inside [-1, 1] and P(v) (= sign v) outside: LSQ's form with Qp = 1.
    The POST weight quantizer of the release (official code `post.py: post_quantization`, `PostWeightQuant`),
    with the projection P a table look-up (`levels.project`) instead of a levels x weights distance tensor.
    """

    @staticmethod
    def forward(ctx, w, alpha, levels, grad_scale: float, key: tuple | None = None):
        v = w / alpha
        vc = torch.clamp(v, -1.0, 1.0)
        inside = vc == v
        q = project(vc, levels.to(w.dtype), key)                       # nearest level (`key`: no host read)
        dalpha = torch.sub(q, v.mul_(inside), out=v)                   # P(v) - v inside, P(v) outside
        ctx.save_for_backward(dalpha, inside, alpha)
        ctx.grad_scale = grad_scale
        return q * alpha

    @staticmethod
    def backward(ctx, grad_out):
        dalpha, inside, alpha = ctx.saved_tensors
        if alpha.shape == _sample_shape(dalpha):                       # per output channel
            grad_alpha = _row_dots(grad_out, dalpha) * ctx.grad_scale
        else:
            grad_alpha = _reduce_to(grad_out * dalpha, alpha.shape) * ctx.grad_scale
        return grad_out * inside, grad_alpha, None, None, None


class Adapter(nn.Module):
    """Predicts beta (one positive scalar per sample) from the layer input.

    GAP -> Linear(C, C/4) -> ReLU -> Linear(C/4, 1) -> ReLU (a single Linear(C, 1) -> ReLU when
    C < 8); clamp(min=1e-8). The last layer starts at weight ~ N(0, 0.01), bias 1, so beta ~ 1 and
    ASQ starts as LSQ. The paper's adapter (abstract: "adaptive step size"), as in the official code
    `asq.py: Adapter` (`Linear_Adapter` for FC inputs is the same on a (B, C) input).
    """

    def __init__(self, channels: int, ratio: int = 4, generator: torch.Generator | None = None):
        super().__init__()
        if channels >= 2 * ratio:
            hidden = channels // ratio
            self.net = nn.Sequential(nn.Linear(channels, hidden), nn.ReLU(), nn.Linear(hidden, 1), nn.ReLU())
        else:
            self.net = nn.Sequential(nn.Linear(channels, 1), nn.ReLU())
        with torch.no_grad():
            for m in self.net:
                if isinstance(m, nn.Linear):
                    bound = 1.0 / math.sqrt(m.in_features)
                    m.weight.uniform_(-bound, bound, generator=generator)
                    m.bias.uniform_(-bound, bound, generator=generator)
            last = self.net[-2]
            last.weight.normal_(0.0, 0.01, generator=generator)          # beta ~ 1 at init
            last.bias.fill_(1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pooled = x.mean(dim=tuple(range(2, x.dim()))) if x.dim() > 2 else x   # AdaptiveAvgPool(1)
        beta = self.net(pooled).clamp(min=1e-8)
        return beta.reshape(_sample_shape(x))


class ActQuantizer(nn.Module):
    """Per-tensor activation quantizer: LSQ (`method="lsq"`), ASQ (`method="asq"`), or the trained null of ASQ's
    adaptivity (`method="sbeta"`: LSQ's step times one trained scalar beta per layer, no adapter).

    Unsigned range [0, 2^b - 1] for non-negative inputs, signed [-2^(b-1), 2^(b-1) - 1] when the
    calibration batch has negative values (the input image of a quantized first layer). Official code
    `asq.py: AsqActQuant` (ASQ) and `lsq.py: LsqActQuant` (LSQ).

    `sbeta` gives beta ASQ's gradient (dL/dbeta = s sum_b G_b, unscaled, the gradient of the adapter's last
    bias) and ASQ's start (beta = 1), but beta is the same for every input: it is ASQ with the input
    dependence removed and everything else trained, the null of the claim that the adaptivity pays.

    The range (signed or not) and whether the step is initialised are kept as Python values beside their
    buffers, so the forward pass reads no tensor on the host (no device sync); they are refreshed when a
    state dict is loaded.
    """

    def __init__(self, bits: int, method: str, channels: int, generator: torch.Generator | None = None):
        super().__init__()
        if method not in ACT_METHODS:
            raise UserError(f"unknown quantization method {method!r}; choose one of {', '.join(ACT_METHODS)}")
        if int(bits) != bits or not (2 <= bits <= 8 or bits == 32):
            raise UserError(f"activation bits must be 2..8 (or 32 for float); got {bits}")
        self.bits, self.method = int(bits), method
        self.s = nn.Parameter(torch.ones(1))
        self.adapter = Adapter(channels, generator=generator) if method == "asq" and bits != 32 else None
        self.beta_scalar = nn.Parameter(torch.ones(1)) if method == "sbeta" and bits != 32 else None
        self.register_buffer("initialized", torch.tensor(False))
        self.register_buffer("signed", torch.tensor(False))
        self._initialized, self._signed = False, False                 # host copies of the two buffers
        self.fixed_beta: float | None = None   # set to 1.0 to force beta = 1 (ASQ -> LSQ check)
        self.record_beta = False
        self.last_beta: torch.Tensor | None = None

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        self._initialized, self._signed = bool(self.initialized), bool(self.signed)   # once per load

    @property
    def qn(self) -> int:
        return -(2 ** (self.bits - 1)) if self._signed else 0

    @property
    def qp(self) -> int:
        return 2 ** (self.bits - 1) - 1 if self._signed else 2**self.bits - 1

    def reset(self) -> None:
        """Mark the step uninitialised: the next forward pass initialises it from its input (`init_from`)."""
        self.initialized.fill_(False)
        self._initialized = False

    @torch.no_grad()
    def init_from(self, x: torch.Tensor) -> None:
        """s = 2 * mean|x| / sqrt(Qp) from one batch (a training batch in this reproduction): LSQ (Esser et al., arXiv:1902.08153) Sec. 2's
        initialisation, as the release's `AsqActQuant.init_from` (which takes a validation batch, erratum 5)."""
        self._signed = bool((x < 0).any())                             # one sync, at initialisation only
        self.signed.fill_(self._signed)
        self.s.copy_(x.abs().mean().reshape(1) * 2 / math.sqrt(self.qp))
        self.s.clamp_(min=EPS)
        self.initialized.fill_(True)
        self._initialized = True

    def beta(self, x: torch.Tensor) -> torch.Tensor | None:
        if self.adapter is None and self.beta_scalar is None:
            return None
        if self.fixed_beta is not None:
            return torch.full(_sample_shape(x), self.fixed_beta, dtype=x.dtype, device=x.device)
        if self.beta_scalar is not None:                               # one beta for every input
            return self.beta_scalar.to(x.dtype).reshape((1,) * x.dim()).expand(_sample_shape(x))
        return self.adapter(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.bits == 32:
            return x
        if not self._initialized:
            self.init_from(x)
        with torch.no_grad():
            self.s.abs_().clamp_(min=EPS)                               # keep the step positive
        beta = self.beta(x)
        if self.record_beta and beta is not None:
            self.last_beta = beta.detach().reshape(-1)
        qp = self.qp
        g = 1.0 / math.sqrt(qp * x.numel())
        return lsq_quantize(x, self.s.to(x.dtype), self.qn, qp, g, beta)

    def codes(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Integer codes (int64) and the per-sample step s * beta (float, shape (B, 1, ...)): x_int =
        clamp(round(x / (s beta)), Qn, Qp), the activation side of the integer path (`integer.py`, README
        "Method as implemented": integer inference)."""
        beta = self.beta(x)
        step = self.s.to(x.dtype).reshape((1,) * x.dim()) * (1.0 if beta is None else beta)
        step = step.expand(_sample_shape(x)) if beta is None else step
        q = torch.clamp(x / step, self.qn, self.qp).round()
        return q.to(torch.int64), step


class WeightQuantizer(nn.Module):
    """Per-output-channel weight quantizer on a grid.

    `uniform`: LSQ with a per-channel step s, signed range [-2^(b-1), 2^(b-1) - 1],
    s initialised to 2 mean|w| / sqrt(Qp). Log grids (POT, POST, ...): per-channel clip alpha
    initialised to the 99th percentile of |w|, w_hat = alpha * P(clamp(w / alpha, -1, 1)).
    Official code `asq.py: AsqWeightQuant` (uniform) and `post.py: PostWeightQuant` (log grids).
    """

    def __init__(self, bits: int, grid: str, weight: torch.Tensor):
        super().__init__()
        check_grid(grid, bits)
        self.bits, self.grid = int(bits), grid
        shape = (weight.shape[0],) + (1,) * (weight.dim() - 1)
        w = weight.detach().reshape(weight.shape[0], -1)
        self.levels_key: tuple | None = None                            # the level set on the host (`levels_key`)
        if bits == 32:
            self.register_buffer("levels", torch.zeros(0))
            self.scale = nn.Parameter(torch.ones(shape), requires_grad=False)
        elif grid == "uniform":
            self.register_buffer("levels", level_set(grid, bits).float())
            self.scale = nn.Parameter((w.abs().mean(dim=1) * 2 / math.sqrt(self.qp)).reshape(shape))
        else:
            self.register_buffer("levels", level_set(grid, bits).float())
            self.levels_key = levels_key(self.levels)
            self.scale = nn.Parameter(row_quantile(w.abs().float(), 0.99).clamp_min(EPS).reshape(shape))

    @property
    def qn(self) -> int:
        return -(2 ** (self.bits - 1))

    @property
    def qp(self) -> int:
        return 2 ** (self.bits - 1) - 1

    def forward(self, w: torch.Tensor) -> torch.Tensor:
        if self.bits == 32:
            return w
        with torch.no_grad():
            self.scale.abs_().clamp_(min=EPS)
        per_channel = w.numel() / w.shape[0]
        scale = self.scale.to(w.dtype)
        if self.grid == "uniform":
            return lsq_quantize(w, scale, self.qn, self.qp, 1.0 / math.sqrt(self.qp * per_channel))
        if not torch.is_grad_enabled():   # evaluation: `GridFunction.forward`'s output alone, bit for bit
            return project(torch.clamp(w / scale, -1.0, 1.0), self.levels.to(w.dtype), self.levels_key) * scale
        return GridFunction.apply(w, scale, self.levels, 1.0 / math.sqrt(per_channel), self.levels_key)

    @torch.no_grad()
    def codes(self, w: torch.Tensor) -> torch.Tensor:
        """Integer weight codes: two's-complement step counts (uniform) or signed level indices.

        For log grids the code is sign * c with magnitude code c = 0 for zero and c >= 1 for
        the c-th largest magnitude (`levels.magnitudes(grid, bits)[c - 1]`): the index into the POST LUT
        (abstract, "LUT"; a reconstruction, the release has no LUT code).
        """
        scale = self.scale.to(w.dtype)
        if self.grid == "uniform":
            return torch.clamp(w / scale, self.qn, self.qp).round().to(torch.int64)
        levels = self.levels.to(w.dtype)
        idx = project_index(torch.clamp(w / scale, -1.0, 1.0), levels, self.levels_key)
        zero = int((levels == 0).nonzero()[0])
        n_mag = levels.numel() - 1 - zero
        return torch.where(idx > zero, n_mag + zero + 1 - idx, torch.where(idx < zero, -(idx + 1), 0)).to(torch.int64)


def is_log_grid(grid: str) -> bool:
    """Whether `grid` is a log grid (clip alpha and a level set, `GridFunction`) rather than uniform LSQ."""
    return grid in LOG_GRIDS
