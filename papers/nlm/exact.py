"""A network small enough to integrate exactly: the rule against the likelihood gradient.

Paper: arXiv:2506.23546. For N = 2 the Boltzmann-Gibbs measure exp(−E/T)/Z is integrated on a
grid, so ln Z, the mean log-likelihood L = −⟨E⟩_data/T − ln Z and the model-phase averages are
exact up to the grid; the local rule (data phase minus model phase) is compared with central
finite differences of L. Float64 throughout.
"""
from __future__ import annotations

import torch

from .model import energy, likelihood_gradient


def grid(n: int = 401, half_width: float = 9.0):
    """Points (n², 2) and cell area of a square grid on [−w, w]²."""
    g = torch.linspace(-half_width, half_width, n, dtype=torch.float64)
    xx, yy = torch.meshgrid(g, g, indexing="ij")
    return torch.stack([xx.reshape(-1), yy.reshape(-1)], 1), float((g[1] - g[0]) ** 2)


def log_likelihood(J, b, data, T: float = 1.0, pts=None, area=None) -> torch.Tensor:
    """L(J, b) = −⟨E⟩_data/T − ln Z, Z = ∫ exp(−E/T) by the grid sum: the mean log-likelihood of Sec. 2."""
    if pts is None:
        pts, area = grid()
    logw = -energy(pts, J, b) / T
    log_z = torch.logsumexp(logw, 0) + torch.log(torch.tensor(area, dtype=torch.float64))
    return -energy(data, J, b).mean() / T - log_z


def boltzmann_weights(J, b, T: float = 1.0, pts=None):
    if pts is None:
        pts, _ = grid()
    return pts, torch.softmax(-energy(pts, J, b) / T, 0)


def rule_on_grid(J, b, data, T: float = 1.0, pts=None):
    """The local rule of Sec. 2 (`model.rule_terms`, data phase minus model phase) with its model phase averaged
    exactly over the grid measure."""
    pts, w = boltzmann_weights(J, b, T, pts)
    from .model import rule_terms

    dJ, db = rule_terms(data, J, b)
    mJ, mb = rule_terms(pts, J, b, weights=w)
    off = 1.0 - torch.eye(J.shape[-1], dtype=J.dtype)
    return (dJ - mJ) * off / T, (db - mb) / T


def hebbian_on_grid(J, b, data, T: float = 1.0, pts=None):
    """The correlation (Hebbian) rule ⟨φ_i φ_j⟩_data − ⟨φ_i φ_j⟩_model on the same grid measure.

    The symmetric competitor of the local rule (the Boltzmann-machine form): its update of J_ij equals
    that of J_ji by construction, so the asymmetry measure gives 0 on it.
    """
    pts, w = boltzmann_weights(J, b, T, pts)
    r_d, r_m = torch.tanh(torch.as_tensor(data, dtype=torch.float64)), torch.tanh(pts)
    off = 1.0 - torch.eye(J.shape[-1], dtype=J.dtype)
    return (r_d.T @ r_d / len(r_d) - (r_m * w[:, None]).T @ r_m) * off / T


def finite_difference_gradient(J, b, data, T: float = 1.0, h: float = 1e-5, pts=None, area=None):
    """Central differences of L in every off-diagonal J_ij and every b_i."""
    if pts is None:
        pts, area = grid()
    gJ, gb = torch.zeros_like(J), torch.zeros_like(b)
    n = J.shape[0]
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            for sgn in (1, -1):
                Jp = J.clone(); Jp[i, j] += sgn * h
                gJ[i, j] += sgn * log_likelihood(Jp, b, data, T, pts, area) / (2 * h)
        for sgn in (1, -1):
            bp = b.clone(); bp[i] += sgn * h
            gb[i] += sgn * log_likelihood(J, bp, data, T, pts, area) / (2 * h)
    return gJ, gb


def gradient_check(generator=None, n_data: int = 5, T: float = 1.0, gain: float = 2.0) -> dict:
    """Rule vs finite differences on a random asymmetric 2-neuron network and 5 data points (drawn from `generator`,
    a CPU torch.Generator; None: a default-seeded one)."""
    g = generator if generator is not None else torch.Generator()
    J = torch.randn(2, 2, generator=g, dtype=torch.float64) * gain / 2 ** 0.5
    J.fill_diagonal_(0.0)
    b = 0.5 * torch.randn(2, generator=g, dtype=torch.float64)
    data = 1.5 * torch.randn(n_data, 2, generator=g, dtype=torch.float64)
    pts, area = grid()
    rJ, rb = rule_on_grid(J, b, data, T, pts)
    fJ, fb = finite_difference_gradient(J, b, data, T, pts=pts, area=area)
    rule = torch.cat([rJ.reshape(-1), rb]); fd = torch.cat([fJ.reshape(-1), fb])
    return {
        "grad_rel_err": float((rule - fd).abs().max() / fd.abs().max()),
        "grad_scale": float(fd.abs().max()),
        "rule_asymmetry": float((rJ - rJ.T).norm() / rJ.norm()),
        "J": J, "b": b, "rule_J": rJ, "fd_J": fJ, "rule_b": rb, "fd_b": fb,
    }


def sampled_rule(J, b, data, samples, T: float = 1.0):
    """The rule as used in training: model phase from samples (for a Monte-Carlo comparison)."""
    return likelihood_gradient(data, samples, J, b, T)
