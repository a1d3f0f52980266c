"""Regions of the prior: shells of |z| with equal prior mass, sampled exactly.

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539 -- the abstract claims ACL generates "meaningful codes and images
from any part of the prior". For z ~ N(0, I_d), |z| follows a chi distribution with d degrees of
freedom and z/|z| is uniform on the sphere, independent of |z|; shell k of K holds the z whose |z|
lies between the chi quantiles k/K and (k+1)/K.
"""
from __future__ import annotations

import numpy as np
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
