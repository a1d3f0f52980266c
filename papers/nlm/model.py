"""The NLM rate network, its energy, force and local learning rule (arXiv:2506.23546).

Shapes: a state batch x is (..., M, N) (M chains or images, N neurons); couplings J are
(..., N, N) with J[i, j] the synapse from neuron j to neuron i, bias b is (..., N). A leading
model axis K stacks independent models in one tensor, so every function here works for one model
(J: (N, N)) or a stack (J: (K, N, N), x: (K, M, N)).
"""
from __future__ import annotations

import math

import torch

from common.errors import UserError


def phi(x):
    return torch.tanh(x)


def phi_prime(x):
    t = torch.tanh(x)
    return 1.0 - t * t


def local_field(x, J, b):
    """h_i = Σ_j J_ij φ(x_j) + b_i."""
    return torch.matmul(phi(x), J.transpose(-1, -2)) + b.unsqueeze(-2)


def velocity(x, J, b):
    """ẋ = −x + Jφ(x) + b, the rate network's speed (the 'prediction error' with a minus sign)."""
    return local_field(x, J, b) - x


def energy(x, J, b):
    """E(x) = ½ ‖−x + Jφ(x) + b‖² (the kinetic energy of the rate network), per state."""
    e = velocity(x, J, b)
    return 0.5 * (e * e).sum(-1)


def force(x, J, b):
    """−∇E: F_i = e_i − φ'(x_i) Σ_j J_ji e_j, e = ẋ; the second term is the Onsager feedback."""
    e = velocity(x, J, b)
    return e - phi_prime(x) * torch.matmul(e, J)


def rule_terms(x, J, b, weights=None):
    """Phase averages of the local rule: ⟨(x_i − h_i) φ(x_j)⟩ and ⟨x_i − h_i⟩.

    Postsynaptic speed (x_i − h_i = −ẋ_i) times presynaptic rate φ(x_j): only signals present at
    synapse (i, j). `weights` (..., M) averages with per-sample weights (default uniform).
    """
    speed = -velocity(x, J, b)                      # x − h
    rate = phi(x)
    if weights is None:
        weights = torch.full(x.shape[:-1], 1.0 / x.shape[-2], dtype=x.dtype, device=x.device)
    ws = speed * weights.unsqueeze(-1)
    gJ = torch.matmul(ws.transpose(-1, -2), rate)  # Σ_m w_m (x−h)_i φ(x)_j
    gb = ws.sum(-2)
    return gJ, gb


def likelihood_gradient(data, model_samples, J, b, T=1.0, data_weights=None):
    """∂L/∂J_ij = β[⟨(x_i−h_i)φ_j⟩_data − ⟨(x_i−h_i)φ_j⟩_model], same for b (Sec. 2; zero diagonal)."""
    dJ, db = rule_terms(data, J, b, data_weights)
    mJ, mb = rule_terms(model_samples, J, b)
    gJ = (dJ - mJ) / T
    gJ = gJ * (1.0 - torch.eye(J.shape[-1], dtype=J.dtype, device=J.device))
    return gJ, (db - mb) / T


def init_couplings(n, gain=2.0, n_models=None, generator=None, dtype=torch.float32):
    """J_ij ~ N(0, g²/N), J_ii = 0 (g = 2: the untrained network is chaotic); b = 0."""
    shape = (n, n) if n_models is None else (n_models, n, n)
    J = torch.randn(shape, generator=generator, dtype=torch.float64) * (gain / math.sqrt(n))
    J = J * (1.0 - torch.eye(n, dtype=torch.float64))
    b = torch.zeros(shape[:-1], dtype=torch.float64)
    return J.to(dtype), b.to(dtype)


def asymmetry(J):
    """η = Σ J_ij J_ji / Σ J_ij² (1 symmetric, −1 antisymmetric, ≈ 0 for i.i.d. entries)."""
    return float((J * J.transpose(-1, -2)).sum() / (J * J).sum())


def check_temperature(T):
    if not (isinstance(T, (int, float)) and math.isfinite(T) and T > 0):
        raise UserError(f"temperature T must be a positive number, got {T!r}; set T=1.0 (the paper's value)")
