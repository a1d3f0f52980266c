"""Regions of the prior: shells of |z| with equal prior mass, sampled exactly.

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539 -- the abstract claims ACL generates "meaningful codes and images
from any part of the prior". For z ~ N(0, I_d), |z| follows a chi distribution with d degrees of
freedom and z/|z| is uniform on the sphere, independent of |z|; shell k of K holds the z whose |z|
lies between the chi quantiles k/K and (k+1)/K. Orthant regions split the prior by the signs of its
first coordinates instead (equal mass too), so a region is a direction of z rather than a radius.
"""
from __future__ import annotations

import numpy as np
import torch
from scipy import stats


def shell_noise(n: int, d: int, q_lo: float, q_hi: float, rng: np.random.Generator) -> np.ndarray:
    """n draws of N(0, I_d) conditioned on F_chi(|z|) in [q_lo, q_hi] (inverse-CDF radius, uniform direction)."""
    if not 0 <= q_lo < q_hi <= 1:
        raise ValueError(f"need 0 <= q_lo < q_hi <= 1, got {q_lo}, {q_hi}")
    u = rng.uniform(q_lo, q_hi, size=n)
    radius = stats.chi.ppf(u, d)
    direction = rng.standard_normal((n, d))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    return direction * radius[:, None]


def orthant_noise(n: int, d: int, k: int, n_sign_dims: int, rng: np.random.Generator) -> np.ndarray:
    """n draws of N(0, I_d) conditioned on the signs of its first `n_sign_dims` coordinates being the
    bits of k (bit j set: z_j < 0): one of 2^n_sign_dims orthant regions, each of prior mass
    2^-n_sign_dims, sampled exactly (|z_j| is half-normal and independent of the other coordinates)."""
    if not 1 <= n_sign_dims <= d or not 0 <= k < 2 ** n_sign_dims:
        raise ValueError(f"need 1 <= n_sign_dims <= d and 0 <= k < 2^n_sign_dims, got {n_sign_dims}, {d}, {k}")
    z = rng.standard_normal((n, d))
    signs = np.array([-1.0 if (k >> j) & 1 else 1.0 for j in range(n_sign_dims)])
    z[:, :n_sign_dims] = np.abs(z[:, :n_sign_dims]) * signs
    return z


def region_samples(sample_fn, z_dim: int, n_regions: int, n: int, streams) -> list[tuple[str, torch.Tensor]]:
    """(name, samples) of each region of the prior (the abstract's "any part of the prior"; claims
    `prior-regions-*`): `n_regions` shells of |z| with equal prior mass (shell k: chi quantiles
    k/K..(k+1)/K), then the 2^m orthants of the first m = floor(log2 n_regions) coordinates (at most
    z_dim), also of equal mass. Region k's noise is the stream ("shell", k) or ("orthant", k) of `streams`."""
    out = []
    for k in range(n_regions):
        z = shell_noise(n, z_dim, k / n_regions, (k + 1) / n_regions, streams.rng("shell", k))
        out.append((f"shell{k}", sample_fn(torch.as_tensor(z, dtype=torch.float32))))
    m = max(1, min(z_dim, int(np.log2(n_regions))))
    for k in range(2 ** m):
        z = orthant_noise(n, z_dim, k, m, streams.rng("orthant", k))
        out.append((f"orthant{k}", sample_fn(torch.as_tensor(z, dtype=torch.float32))))
    return out
