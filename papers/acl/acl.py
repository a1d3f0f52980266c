"""The ACL module: a code generator G_c (prior noise -> code) and a code discriminator D_c.

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539 -- ACL "shifts the learning from image spaces to prior and latent code
spaces": G_c(z), z ~ N(0, I), is trained adversarially so that its codes match the codes E(x) of real
data; a sample is then Dec(G_c(z)). The method section could not be read: the architecture (MLPs, no
BatchNorm in D_c) and the alternation (k critic steps, then one G_c step) are reconstructed.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .losses import check_loss, d_loss, g_loss, gradient_penalty
from .nets import adam, mlp


class CodeGAN(nn.Module):
    """G_c: z -> c and D_c: c -> score, with their own Adam optimizers (see `optimizers()`): the ACL module of the
    abstract ("learns a latent code ... with a prior noise as its input"), reconstructed as ARAE's code GAN (official
    ARAE code `pytorch/train.py`; papers/acl/README.md "What is reconstructed")."""

    def __init__(self, code_dim: int, z_dim: int, hidden: int = 256, depth: int = 2, loss: str = "ns",
                 gp_weight: float = 1.0, residual: bool = False):
        super().__init__()
        self.code_dim, self.z_dim, self.loss, self.gp_weight = code_dim, z_dim, check_loss(loss), gp_weight
        # residual: G_c(z) = P z + MLP(z) in whitened code units (P: the first code_dim coordinates of z,
        # zero-padded), so that with whitened codes (`whiten`) a G_c whose MLP outputs 0 is the fitted Gaussian
        self.residual = residual
        self.G = mlp([z_dim] + [hidden] * depth + [code_dim])
        self.D = mlp([code_dim] + [hidden] * depth + [1], act="leaky")  # no BatchNorm in D_c
        # G_c and D_c work on standardized codes (c - mu) T^-1; mu = 0, T = I leaves codes as they are
        self.register_buffer("mu", torch.zeros(code_dim))
        self.register_buffer("sd", torch.ones(code_dim))
        self.register_buffer("T", torch.eye(code_dim))      # code = mu + u T  (T = diag(sd), or the covariance's root)
        self.register_buffer("T_inv", torch.eye(code_dim))

    @torch.no_grad()
    def set_scale(self, codes: torch.Tensor, momentum: float = 1.0, whiten: bool = False) -> None:
        """Code statistics (momentum < 1: running average) used to standardize codes: per dimension
        (u = (c - mu) / sd), or with `whiten` by the symmetric root of the full covariance (u has
        identity covariance; then mu + u T with u ~ N(0, I) is exactly the fitted Gaussian)."""
        self.mu.lerp_(codes.mean(0), momentum)
        self.sd.lerp_(codes.std(0).clamp_min(1e-6), momentum)
        if whiten:
            c = codes.double() - codes.double().mean(0)
            w, v = torch.linalg.eigh(c.T @ c / len(c))
            w = w.clamp_min(1e-6 * float(w.max()))  # dead directions (e.g. ReLU features) stay bounded
            self.T.copy_((v * w.sqrt()) @ v.T)
            self.T_inv.copy_((v / w.sqrt()) @ v.T)
        else:
            self.T.copy_(torch.diag(self.sd))
            self.T_inv.copy_(torch.diag(1 / self.sd))

    def standardize(self, c: torch.Tensor) -> torch.Tensor:
        return (c - self.mu) @ self.T_inv

    def generate(self, z: torch.Tensor) -> torch.Tensor:
        """G_c(z) in standardized units (what D_c sees)."""
        out = self.G(z)
        if self.residual:
            k = min(self.z_dim, self.code_dim)
            out = out + F.pad(z[:, :k], (0, self.code_dim - k))
        return out

    def observe(self, codes: torch.Tensor, first: bool, normalize: bool = True) -> None:
        """Track the statistics of moving codes E(x) (exact on the first batch, then a running average).

        The one code path that ACL-AE, ACL-classifier and ACL-GAN share: G_c / D_c see standardized
        codes; normalize=False keeps mu = 0, sd = 1 (raw codes).
        """
        if normalize:
            self.set_scale(codes.detach(), momentum=1.0 if first else 0.01)

    def to_code(self, u: torch.Tensor) -> torch.Tensor:
        return u @ self.T + self.mu

    def code(self, z: torch.Tensor) -> torch.Tensor:
        """G_c(z) in code units, differentiable (the image generator of ACL-GAN consumes it)."""
        return self.to_code(self.generate(z))

    def optimizers(self, lr_g: float, lr_d: float, betas=(0.5, 0.9)) -> dict:
        """Adam for G_c and for D_c (`adam`: the multi-tensor update, the same numbers as the per-tensor one)."""
        return {"G_c": adam(self.G.parameters(), lr_g, betas=betas), "D_c": adam(self.D.parameters(), lr_d, betas=betas)}

    def noise(self, n: int, gen: torch.Generator | None = None) -> torch.Tensor:
        return torch.randn(n, self.z_dim, generator=gen).to(self.device)

    @property
    def device(self):
        return next(self.parameters()).device

    def d_step(self, real_codes: torch.Tensor, opt: torch.optim.Optimizer, gen=None) -> torch.Tensor:
        """One D_c update: E(x) is "real", G_c(z) is "fake" (the abstract's "close resemblance to the original GAN",
        moved to the code space). Returns the loss as a detached tensor (no host sync: the caller reads it once
        per log interval)."""
        with torch.no_grad():
            fake = self.generate(self.noise(real_codes.shape[0], gen))
        real = self.standardize(real_codes.detach())
        loss = d_loss(self.loss, self.D(real), self.D(fake))
        if self.loss == "wgan-gp":
            loss = loss + self.gp_weight * gradient_penalty(self.D, real, fake, gen)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.detach()

    def g_step(self, n: int, opt: torch.optim.Optimizer, gen=None) -> torch.Tensor:
        """One G_c update against the current D_c (its loss as a detached tensor, as `d_step`). D_c's weights
        take no gradient here (the next `d_step` would discard it): the backward pass through D_c computes
        only what G_c needs, the same numbers for G_c."""
        frozen = [p for p in self.D.parameters() if p.requires_grad]
        for p in frozen:
            p.requires_grad_(False)
        try:
            loss = g_loss(self.loss, self.D(self.generate(self.noise(n, gen))))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        finally:
            for p in frozen:
                p.requires_grad_(True)
        return loss.detach()

    @torch.no_grad()
    def sample(self, n: int, gen=None, z: torch.Tensor | None = None) -> torch.Tensor:
        return self.to_code(self.generate(self.noise(n, gen) if z is None else z.to(self.device)))

