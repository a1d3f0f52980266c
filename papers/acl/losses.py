"""Adversarial losses: non-saturating (the original GAN's, in its usual generator form) and WGAN-GP.

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539 -- the abstract says ACL's training has "a close resemblance to the
original GAN"; which loss the paper uses is not known here, so both are offered (parameter `loss`).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from common.errors import UserError

LOSSES = ("ns", "wgan-gp")


def check_loss(loss: str) -> str:
    if loss not in LOSSES:
        raise UserError(f"unknown adversarial loss {loss!r}; choose one of {', '.join(LOSSES)}")
    return loss


def gradient_penalty(critic, real: torch.Tensor, fake: torch.Tensor, gen: torch.Generator | None = None) -> torch.Tensor:
    """E[(||grad critic(x_hat)|| - 1)^2] on random interpolates x_hat (Gulrajani et al. 2017, Eq. 3)."""
    shape = (real.shape[0],) + (1,) * (real.dim() - 1)
    eps = torch.rand(shape, generator=gen).to(real.device)
    x_hat = (eps * real.detach() + (1 - eps) * fake.detach()).requires_grad_(True)
    grad, = torch.autograd.grad(critic(x_hat).sum(), x_hat, create_graph=True)
    return ((grad.flatten(1).norm(dim=1) - 1) ** 2).mean()


def d_loss(loss: str, real_out: torch.Tensor, fake_out: torch.Tensor) -> torch.Tensor:
    """Discriminator/critic loss without the gradient penalty: non-saturating GAN (Goodfellow et al. 2014) or the
    WGAN critic (Arjovsky et al. 2017)."""
    if loss == "ns":  # -log D(real) - log(1 - D(fake))  (Goodfellow et al. 2014, Eq. 1)
        return F.softplus(-real_out).mean() + F.softplus(fake_out).mean()
    return fake_out.mean() - real_out.mean()  # WGAN critic: E[D(fake)] - E[D(real)]


def g_loss(loss: str, fake_out: torch.Tensor) -> torch.Tensor:
    """Generator loss: non-saturating -log D(fake) (Goodfellow et al. 2014), or -E[D(fake)] for WGAN."""
    if loss == "ns":
        return F.softplus(-fake_out).mean()
    return -fake_out.mean()


def confuse_loss(loss: str, real_out: torch.Tensor) -> torch.Tensor:
    """Loss that moves *real* codes toward the generated ones (ARAE's encoder term): -log(1 - D(E(x)))."""
    if loss == "ns":
        return F.softplus(real_out).mean()
    return real_out.mean()
