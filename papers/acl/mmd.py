"""The null of the ACL claims: a code generator of ACL's size trained WITHOUT the adversary.

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539 -- the paper credits *adversarial* code learning: G_c(z) is trained
against a code discriminator D_c until it matches the codes E(x). The competing explanation of every
"ACL beats a baseline" result is that any trained code generator of that size would do as well. This
module trains exactly that: the same G_c (same MLP, same code standardization, same residual skip,
same seeded initialization scheme, same Adam, steps, batch and learning-rate decay as the code-only
phase `train.code_step`), with D_c's loss replaced by the kernel two-sample distance MMD^2 between a
batch of G_c(z) and a batch of cached codes (a generative moment-matching network, Li et al. 2015;
Dziugaite et al. 2015). Only the adversary is removed.

Kernel: a sum of Gaussian kernels exp(-|a - b|^2 / (2 h^2)) at the bandwidths h = m * BANDWIDTH_FACTORS,
m the median pairwise distance of the standardized codes (the median heuristic, widened both ways so
that fine structure, e.g. the modes of the 2-D mixtures, and the global spread are both matched); the
factors were fixed before any run of this control was seen.
"""
from __future__ import annotations

import torch

from .acl import CodeGAN

BANDWIDTH_FACTORS = (0.125, 0.25, 0.5, 1.0, 2.0)


def _kernel_sum(d2: torch.Tensor, c: float, powers: tuple, kernel: bool = True, derivative: bool = True):
    """(sum_j exp(-r_j c d2), its derivative in d2 -c sum_j r_j exp(-r_j c d2)), each None where not asked for, from ONE
    exp: exp(-r c d2) = exp(-c d2)^r by repeated squaring, for integer powers of two r_j."""
    p, r, top = torch.exp(d2 * -c), 1, max(powers)
    k = torch.zeros_like(d2) if kernel else None
    dk = torch.zeros_like(d2) if derivative else None
    while True:
        if r in powers:
            if k is not None:
                k.add_(p)
            if dk is not None:
                dk.add_(p, alpha=-c * r)
        if r >= top:
            break
        p, r = p * p, 2 * r
    return k, dk


class _GaussianSum(torch.autograd.Function):
    """sum_j exp(-r_j c d2) for integer powers of two r_j, from ONE exp (`_kernel_sum`; the factors 1/8 ... 2 of
    `BANDWIDTH_FACTORS` give r = 1, 4, 16, 64, 256). Its derivative in d2 is formed in the same pass and the backward
    is one product: about half the time of five exps and their autograd graph, the same values up to float rounding
    (relative 1e-5)."""

    @staticmethod
    def forward(ctx, d2, c: float, powers: tuple):
        k, dk = _kernel_sum(d2, c, powers, derivative=ctx.needs_input_grad[0])
        ctx.save_for_backward(dk)
        return k

    @staticmethod
    def backward(ctx, grad):
        (dk,) = ctx.saved_tensors
        return grad * dk, None, None


class _GaussianSumMeanGrad(torch.autograd.Function):
    """The gradient of `_GaussianSum(d2).mean()` without its value: the forward forms only the derivative (the kernel
    sum and its mean are never added up) and returns NaN; the backward is the mean's backward (the upstream gradient
    over the element count, each element alike) times that derivative, the products autograd forms through the two
    nodes, bit for bit. For a loss whose value nobody reads (`mmd_code_step(value=False)`): fewer passes over the
    kernel matrix."""

    @staticmethod
    def forward(ctx, d2, c: float, powers: tuple):
        _, dk = _kernel_sum(d2, c, powers, kernel=False)
        ctx.save_for_backward(dk)
        ctx.numel = d2.numel()
        return d2.new_full((), float("nan"))

    @staticmethod
    def backward(ctx, grad):
        (dk,) = ctx.saved_tensors
        return grad.div(ctx.numel) * dk, None, None


def _powers(bandwidths) -> tuple[float, tuple] | None:
    """(c, powers) with 1 / (2 h^2) = c * r for each bandwidth h and r an integer power of two, or None (tensor
    bandwidths, which must not be read back to the host, or other ratios)."""
    if not all(isinstance(h, (int, float)) for h in bandwidths):
        return None
    cs = [1 / (2 * float(h) ** 2) for h in bandwidths]
    c = min(cs)
    rs = [x / c for x in cs]
    powers = tuple(sorted({round(r) for r in rs}))
    ok = all(abs(r - round(r)) < 1e-9 * r and round(r) & (round(r) - 1) == 0 for r in rs)
    return (c, powers) if ok and len(powers) == len(rs) else None


def kernel_mean(a: torch.Tensor, b: torch.Tensor, bandwidths, value: bool = True) -> torch.Tensor:
    """Mean of the sum of Gaussian kernels exp(-|a_i - b_j|^2 / (2 h^2)) over every pair (i, j). `value=False`, at the
    bandwidths of the one-exp path: NaN, with the gradient of that mean bit for bit (`_GaussianSumMeanGrad`)."""
    d2 = torch.cdist(a, b).pow(2)
    fast = _powers(bandwidths)
    if fast is not None:   # the factors of BANDWIDTH_FACTORS at a float median: one exp (`_GaussianSum`)
        return _GaussianSum.apply(d2, *fast).mean() if value else _GaussianSumMeanGrad.apply(d2, *fast)
    return sum(torch.exp(-d2 / (2 * h ** 2)) for h in bandwidths).mean()  # floats or 0-d tensors (no host sync)


def mmd2(x: torch.Tensor, y: torch.Tensor, bandwidths) -> torch.Tensor:
    """Biased (V-statistic) MMD^2 (Gretton et al. 2012; the loss of a generative moment-matching network,
    Li et al. 2015) between the rows of x and y with the sum of Gaussian kernels at
    `bandwidths`: mean k(x, x') + mean k(y, y') - 2 mean k(x, y). Zero iff the two empirical
    distributions coincide (the kernel is characteristic); differentiable in x and y.

    The three blocks are computed apart: the (x, y) block once (the joint matrix of [x; y] held it twice),
    and the (y, y) block without a backward pass when y carries no gradient (the cached codes): half the
    work of the joint matrix, the same value up to float rounding."""
    return kernel_mean(x, x, bandwidths) + kernel_mean(y, y, bandwidths) - 2 * kernel_mean(x, y, bandwidths)


def median_distance(u: torch.Tensor, n: int = 1000) -> float:
    """Median pairwise Euclidean distance among the first `n` rows of u (distinct pairs)."""
    u = u[:n].double()
    d = torch.cdist(u, u)
    iu = torch.triu_indices(len(u), len(u), 1)
    return float(d[iu[0], iu[1]].median())


def batch_bandwidths(u: torch.Tensor, factors=BANDWIDTH_FACTORS) -> list[torch.Tensor]:
    """The median heuristic on one batch of standardized codes, as 0-d tensors (nothing read back to the
    host): the kernel of the joint-phase MMD null of ACL-GAN, whose codes move while it trains."""
    d = torch.cdist(u, u)
    iu = torch.triu_indices(len(u), len(u), 1, device=u.device)
    m = d[iu[0], iu[1]].median().clamp_min(1e-6)
    return [m * f for f in factors]


def mmd_code_step(acl: CodeGAN, codes: torch.Tensor, opt: torch.optim.Optimizer, hp, gen: torch.Generator, k: int,
                  bandwidths, value: bool = True) -> torch.Tensor:
    """Step k of the null's code phase: G_c moved by MMD^2 between a batch of G_c(z) and a batch of the cached
    codes (standardized), at code_lr decaying linearly to code_lr_final * code_lr over code_steps, as
    `train.code_step` does for ACL. `hp` is the null's schedule (`Hyper.null()`). Returns the detached loss; with
    `value=False` None, for a caller that never reads the value: the (codes, codes) block, a constant of G_c's weights,
    is left out and the other two blocks form only their gradients (`kernel_mean(value=False)`), so the gradient, the
    step and the model are the same bit for bit."""
    lr = hp.code_lr * (1 - (1 - hp.code_lr_final) * k / max(1, hp.code_steps - 1))
    for group in opt.param_groups:
        group["lr"] = lr
    real = acl.standardize(codes[torch.randint(len(codes), (hp.code_batch,), generator=gen).to(codes.device)])
    fake = acl.generate(acl.noise(hp.code_batch, gen))
    if value:
        loss = mmd2(fake, real, bandwidths)
    else:   # mmd2 less kernel_mean(real, real) (no gradient flows through that block), gradients only
        loss = kernel_mean(fake, fake, bandwidths, value=False) - 2 * kernel_mean(fake, real, bandwidths, value=False)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.detach() if value else None


def fit_mmd_code_generator(codes: torch.Tensor, hp, streams, factors=BANDWIDTH_FACTORS) -> CodeGAN:
    """A CodeGAN of ACL's size whose G_c is trained by MMD^2 to the cached codes (no D_c step ever).

    `hp` (a `train.Hyper`) gives the architecture (code_dim, z_dim, hidden, depth, residual_gc), the
    standardization (normalize_codes, whiten_codes) and the schedule: Adam betas (0.5, 0.9), lr decaying
    linearly to code_lr_final x its start, with the null's own batch, lr and steps (`Hyper.null()`:
    null_batch / null_lr / null_steps, chosen on development seeds on the same grid as ACL's code_batch /
    code_lr / code_steps; 0 keeps ACL's). The initial weights come from the stream ("gc-init",) of `streams`
    (a `common.seed.Streams`; torch's global generators are restored afterwards), the stream ACL's G_c is built
    from in `train.fit_code_model`: the null starts from ACL's initial G_c. The model is built on the CPU, so the
    null is the same on every device. Runs on the device of `codes`; returns the model in eval mode.
    """
    hp = hp.null()
    dev = codes.device
    with streams.torch_global("gc-init"):
        acl = CodeGAN(hp.code_dim, hp.z_dim, hp.hidden, hp.depth, hp.loss, hp.gp_weight, hp.residual_gc)
    acl = acl.to(dev)
    if hp.normalize_codes:
        acl.set_scale(codes, whiten=hp.whiten_codes)
    bandwidths = [median_distance(acl.standardize(codes)) * f for f in factors]
    opt = acl.optimizers(hp.code_lr, hp.code_lr)["G_c"]
    gen = streams.torch_generator("null-batches")
    for k in range(hp.code_steps):
        mmd_code_step(acl, codes, opt, hp, gen, k, bandwidths, value=False)
    acl.bandwidths = bandwidths
    return acl.eval()
