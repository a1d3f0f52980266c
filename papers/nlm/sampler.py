"""Langevin sampling of exp(−E/T) and the noiseless flow, batched over chains and models.

Paper: arXiv:2506.23546. Euler-Maruyama x ← x + dt·F(x) + √(2T·dt)·ξ with F = −∇E (no Metropolis
correction, as in the released code). Works on one model (x: (M, N)) or a stack (x: (K, M, N)).
"""
from __future__ import annotations

import math

import torch

from common.errors import UserError

from .model import check_temperature, energy, phi

X_MAX = 50.0  # mean |x| beyond this is a runaway chain (data sit at |x| <= atanh(0.97) = 2.1)


class Divergence(UserError):
    """Chains left the data region (NaN or runaway |x|)."""


def guard(x, where: str, x_max: float = X_MAX) -> None:
    """Stop with one line if any chain is not finite or the mean |x| of a model runs away."""
    if not torch.isfinite(x).all():
        raise Divergence(f"{where}: chains became NaN/inf; lower the learning rate or dt")
    m = x.abs().mean(dim=(-1, -2)) if x.dim() >= 2 else x.abs().mean()
    worst = float(m.max())
    if worst > x_max:
        raise Divergence(f"{where}: mean |x| = {worst:.3g} > {x_max:g} (runaway chains); lower the learning rate or dt")


def spectral_norm(J) -> float:
    return float(torch.linalg.matrix_norm(J.double(), ord=2).max())


def check_step(dt: float, J=None) -> None:
    """dt must keep Euler steps stable: dt·L < 2 with L = (1 + ‖J‖₂)² bounding the curvature of E."""
    if not (isinstance(dt, (int, float)) and math.isfinite(dt) and dt > 0):
        raise UserError(f"dt must be a positive number, got {dt!r}; use dt=0.01 (the paper's value)")
    lip = 1.0 if J is None else (1.0 + spectral_norm(J)) ** 2
    if dt * lip >= 2.0 or dt > 0.5:
        raise UserError(f"dt={dt:g} is too large for a stable Euler step (needs dt < {min(2.0 / lip, 0.5):.3g} for this J); use dt=0.01")


def langevin(x, J, b, steps: int, dt: float, T: float = 1.0, generator=None, snap_at=(), check_every: int = 100,
             where: str = "langevin", show_progress: bool = False):
    """Run `steps` Euler-Maruyama steps from x (not modified). Returns (x, {step: φ(x) copy}).

    `snap_at`: step counts (0..steps) at which to keep a copy of the image φ(x).
    """
    check_temperature(T)
    x = x.clone()
    noise = math.sqrt(2.0 * T * dt)
    snaps, want = {}, set(int(s) for s in snap_at)
    if 0 in want:
        snaps[0] = phi(x).clone()
    rng = range(1, steps + 1)
    if show_progress:
        from common.progress import progress
        rng = progress(rng, total=steps, desc=where)
    step = _Stepper(J, b, x)
    for s in rng:
        step.euler(x, dt)                                          # x += dt·F(x)
        x.add_(torch.randn(x.shape, generator=generator, dtype=x.dtype, device=x.device), alpha=noise)
        if s in want:
            snaps[s] = phi(x).clone()
        if check_every and s % check_every == 0:
            guard(x, f"{where} step {s}")
    guard(x, f"{where} step {steps}")
    return x, snaps


class _Stepper:
    """x += dt·F(x) in place with two (batched) matrix products and no temporaries kept."""

    def __init__(self, J, b, x):
        self.J = J.expand(*x.shape[:-2], *J.shape[-2:]) if J.dim() < x.dim() else J
        self.Jt = self.J.transpose(-1, -2).contiguous()
        self.J = self.J.contiguous()
        self.b = b.unsqueeze(-2).expand(*x.shape[:-2], 1, b.shape[-1]) if b.dim() < x.dim() else b
        self.batched = x.dim() == 3

    def euler(self, x, dt):
        t = torch.tanh(x)
        if self.batched:
            e = torch.baddbmm(self.b, t, self.Jt).sub_(x)              # e = Jφ(x) + b − x
            g = torch.bmm(e, self.J)                                   # (Jᵀe)_i
        else:
            e = torch.addmm(self.b, t, self.Jt).sub_(x)
            g = e @ self.J
        t.mul_(t).sub_(1.0).mul_(g)                                    # −φ'(x)·Jᵀe (Onsager term)
        x.add_(e.add_(t), alpha=dt)


def flow(x, J, b, steps: int, dt: float, record_energy: bool = False, record_every: int = 1):
    """Noiseless gradient flow x ← x + dt·F (T = 0): the quench that relaxes chains to fixed points.

    Returns (x, energies) where energies is (n_records, ...) of E per state if requested.
    """
    x = x.clone()
    energies = [energy(x, J, b)] if record_energy else []
    step = _Stepper(J, b, x)
    for s in range(1, steps + 1):
        step.euler(x, dt)
        if record_energy and s % record_every == 0:
            energies.append(energy(x, J, b))
    guard(x, "flow")
    return x, (torch.stack(energies) if record_energy else None)


def log_times(t_max: int, n: int, t_min: int = 1) -> list[int]:
    """About n log-spaced integer step counts in [t_min, t_max] (unique, sorted)."""
    import numpy as np

    return sorted(set(int(round(v)) for v in np.geomspace(t_min, t_max, n)))
