"""The NLM rate network, its energy, force and local learning rule (arXiv:2506.23546, Sec. 2).

The maths, in one place (the paper's equation numbers are not known to us; Sec. 2 is the section the
claims cite). Rate network ẋ = −x + Jφ(x) + b, φ = tanh, J asymmetric with J_ii = 0. Its "kinetic
energy" E(x) = ½‖ẋ‖² (a quasi-potential, after Qiu & Huang, arXiv:2401.10009) defines the Boltzmann-Gibbs
measure P(x) = e^{−E/T}/Z; neural Langevin dynamics dx = −∇E dt + √(2T) dW samples it (`sampler`). With
h = Jφ(x) + b and e = h − x, −∇E_i = e_i − φ′(x_i) Σ_j J_ji e_j: the second term, the Onsager feedback, turns
the rate network's drift into a gradient flow, so the sampler is reversible for any J. The mean
log-likelihood L = −β⟨E⟩_data − ln Z has ∂L/∂J_ij = β[⟨(x_i − h_i)φ(x_j)⟩_data − ⟨(x_i − h_i)φ(x_j)⟩_model]
(∂ ln Z / ∂J_ij = −β⟨∂E/∂J_ij⟩_model, and ∂E/∂J_ij = e_i φ(x_j) = −(x_i − h_i)φ(x_j)): postsynaptic speed
times presynaptic rate, local and asymmetric (ΔJ_ij ≠ ΔJ_ji).

Shapes: a state batch x is (..., M, N) (M chains or images, N neurons); couplings J are
(..., N, N) with J[i, j] the synapse from neuron j to neuron i, bias b is (..., N). A leading
model axis K stacks independent models in one tensor, so every function here works for one model
(J: (N, N)) or a stack (J: (K, N, N), x: (K, M, N)).
"""
from __future__ import annotations

import math

import torch

from common import fastops
from common.errors import UserError


def phi(x):
    """φ(x) = tanh(x) (numpy's SIMD loop on CPU, torch.tanh elsewhere and under autograd)."""
    return fastops.tanh(x)


def phi_prime(x):
    t = torch.tanh(x)
    return 1.0 - t * t


def local_field(x, J, b):
    """h_i = Σ_j J_ij φ(x_j) + b_i, the local field (Sec. 2)."""
    if x.dim() == 2 and J.dim() == 2:
        return fastops.linear(phi(x), J, b)
    return torch.matmul(phi(x), J.transpose(-1, -2)) + b.unsqueeze(-2)


def velocity(x, J, b):
    """ẋ = −x + Jφ(x) + b, the rate network's speed (Sec. 2; the 'prediction error' with a minus sign)."""
    return local_field(x, J, b) - x


def energy(x, J, b):
    """E(x) = ½ ‖−x + Jφ(x) + b‖² (Sec. 2: the kinetic energy of the rate network, the measure's energy), per state."""
    e = velocity(x, J, b)
    return 0.5 * (e * e).sum(-1)


def force(x, J, b):
    """−∇E: F_i = e_i − φ'(x_i) Σ_j J_ji e_j, e = ẋ (Sec. 2, the drift of the neural Langevin dynamics); the
    second term is the Onsager feedback."""
    e = velocity(x, J, b)
    return e - phi_prime(x) * torch.matmul(e, J)


def rule_terms(x, J, b, weights=None):
    """Phase averages of the local rule (Sec. 2): ⟨(x_i − h_i) φ(x_j)⟩ and ⟨x_i − h_i⟩.

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
    """∂L/∂J_ij = β[⟨(x_i−h_i)φ_j⟩_data − ⟨(x_i−h_i)φ_j⟩_model], same for b (Sec. 2; zero diagonal).

    Both phases in one pass: the data rows weighted +w_m, the model rows −1/M, so the field and the
    product with φ are one matrix product each over all rows (the same sums as `rule_terms` twice).
    """
    if model_samples.dim() == 3 and model_samples.shape[0] == 1 and J.dim() == 3:   # a stack of one model
        gJ, gb = likelihood_gradient(data[0] if data.dim() == 3 else data, model_samples[0], J[0], b[0], T,
                                     None if data_weights is None else data_weights.reshape(-1))
        return gJ.unsqueeze(0), gb.unsqueeze(0)
    M = model_samples.shape[-2]
    if data_weights is None:
        data_weights = torch.full(data.shape[:-1], 1.0 / data.shape[-2], dtype=data.dtype, device=data.device)
    lead = model_samples.shape[:-2]
    x = torch.cat([data.expand(*lead, *data.shape[-2:]), model_samples], -2)
    w = torch.cat([data_weights.expand(*lead, data.shape[-2]),
                   torch.full((*lead, M), -1.0 / M, dtype=data.dtype, device=data.device)], -1)
    rate = phi(x)
    if x.dim() == 2 and J.dim() == 2:
        ws = (x - fastops.linear(rate, J, b)).mul_(w.unsqueeze(-1))             # w_m (x − h)_m
        gJ = fastops.linear(ws.t().contiguous(), rate.t().contiguous())       # Σ_m w_m (x−h)_i φ_j
    else:
        ws = (x - torch.matmul(rate, J.transpose(-1, -2)) - b.unsqueeze(-2)).mul_(w.unsqueeze(-1))
        gJ = torch.matmul(ws.transpose(-1, -2), rate)
    gJ.diagonal(dim1=-2, dim2=-1).zero_()
    return gJ / T, ws.sum(-2) / T


def init_couplings(n, gain=2.0, n_models=None, generator=None, dtype=torch.float32):
    """J_ij ~ N(0, g²/N), J_ii = 0 (g = 2: the untrained network is chaotic); b = 0 (Sec. 2; the released
    `config.py`'s initialisation; the spectrum figure's initial disk of radius g)."""
    shape = (n, n) if n_models is None else (n_models, n, n)
    J = torch.randn(shape, generator=generator, dtype=torch.float64) * (gain / math.sqrt(n))
    J = J * (1.0 - torch.eye(n, dtype=torch.float64))
    b = torch.zeros(shape[:-1], dtype=torch.float64)
    return J.to(dtype), b.to(dtype)


def asymmetry(J):
    """η = Σ J_ij J_ji / Σ J_ij² (1 symmetric, −1 antisymmetric, ≈ 0 for i.i.d. entries): the symmetry of J in
    the spectrum-of-J figure (the elliptic law's parameter)."""
    return float((J * J.transpose(-1, -2)).sum() / (J * J).sum())


def check_temperature(T):
    if not (isinstance(T, (int, float)) and math.isfinite(T) and T > 0):
        raise UserError(f"temperature T must be a positive number, got {T!r}; set T=1.0 (the paper's value)")
