"""2-D Gaussian mixtures (ring of 8, grid of 25) and the mode-coverage metrics of VEEGAN.

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539 (the paper has synthetic experiments; their protocol could not be
read, so the standard one is used: data as in WGAN-GP's toy script, metrics as in VEEGAN).

A sample is high quality (HQ) if it lies within `k` (= 3) standard deviations of its nearest mode;
a mode is captured if it is the nearest mode of at least one HQ sample (`min_share` > 0 asks for a
fraction of its expected share of HQ samples instead); the mode histogram's divergence is
KL(histogram of HQ samples over modes || uniform).
"""
from __future__ import annotations

import numpy as np

from common.errors import UserError

MIXTURES = ("ring", "grid")


def mixture(name: str) -> tuple[np.ndarray, float]:
    """(means (K, 2), sigma): ring = 8 modes on radius 2, sigma 0.02; grid = 2*{-2..2}^2, sigma 0.05;
    both divided by the same factor as in the WGAN-GP toys (1.414 and 2.828)."""
    if name == "ring":
        ang = 2 * np.pi * np.arange(8) / 8
        return np.stack([2 * np.cos(ang), 2 * np.sin(ang)], 1) / 1.414, 0.02 / 1.414
    if name == "grid":
        g = np.arange(-2, 3) * 2.0
        return np.array([(a, b) for a in g for b in g], dtype=float) / 2.828, 0.05 / 2.828
    raise UserError(f"unknown mixture {name!r}; choose one of {', '.join(MIXTURES)}")


def sample_mixture(name: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """n points of the equal-weight isotropic mixture."""
    means, sigma = mixture(name)
    k = rng.integers(len(means), size=n)
    return (means[k] + sigma * rng.standard_normal((n, 2))).astype(np.float32)


def mode_stats(samples: np.ndarray, means: np.ndarray, sigma: float, k: float = 3.0, min_share: float = 0.0) -> dict:
    """High-quality fraction, modes captured, per-mode HQ counts and KL(mode histogram || uniform)."""
    samples = np.asarray(samples, dtype=float)
    if samples.ndim != 2 or samples.shape[1] != means.shape[1]:
        raise ValueError(f"samples must be (n, {means.shape[1]}), got {samples.shape}")
    d2 = ((samples[:, None, :] - means[None, :, :]) ** 2).sum(-1)
    nearest = d2.argmin(1)
    dist = np.sqrt(d2[np.arange(len(samples)), nearest])
    hq = np.isfinite(dist) & (dist <= k * sigma)
    counts = np.bincount(nearest[hq], minlength=len(means))
    expected = hq.sum() / len(means)
    captured = int((counts > max(0.0, min_share * expected)).sum()) if min_share > 0 else int((counts > 0).sum())
    if hq.sum():
        p = counts / counts.sum()
        nz = p > 0
        kl = float((p[nz] * np.log(p[nz] * len(means))).sum())
    else:
        kl = float(np.log(len(means)))  # no HQ sample: as far from uniform as a single mode
    return {"hq_frac": float(hq.mean()), "modes": captured, "n_modes": int(len(means)), "counts": counts.tolist(), "kl": kl}


def hq_fraction_exact(k: float = 3.0) -> float:
    """P(|e| <= k sigma) for a 2-D isotropic Gaussian: 1 - exp(-k^2/2) (Rayleigh CDF); 98.9% at k=3."""
    return float(1 - np.exp(-k * k / 2))
