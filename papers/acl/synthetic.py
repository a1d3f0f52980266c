"""2-D Gaussian mixtures (ring of 8, grid of 25) and the mode-coverage metrics of VEEGAN.

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539 (the paper has synthetic experiments; their protocol could not be
read, so the standard one is used: data as in WGAN-GP's toy script, metrics as in VEEGAN).

A sample is high quality (HQ) if it lies within `k` (= 3) standard deviations of its nearest mode.
A mode is captured (PacGAN's protocol, Lin et al. 2018, on VEEGAN's grid) only if at least
`min_count_share` (= 1/5) of its uniform share of ALL samples, n / K, are HQ samples nearest to it:
20 of 2500 samples on the 25-grid. VEEGAN's lenient count (a mode is captured by a single HQ sample)
is kept as `modes_any`: uniform noise on the data's box or annulus passes it (25/25, 8/8), while it
captures no mode under the 1/5 rule. The mode histogram's divergence is KL(histogram of HQ samples
over modes || uniform). `uniform_like` draws that control: uniform noise on the data's bounding box
(grid) or on the annulus between its smallest and largest radius (ring).
"""
from __future__ import annotations

import numpy as np

from common.errors import UserError

MIXTURES = ("ring", "grid", "ring6", "grid16")
DEV_MIXTURES = ("ring6", "grid16")  # for choosing the synthetic defaults; the claims are judged on ring / grid


def mixture(name: str) -> tuple[np.ndarray, float]:
    """(means (K, 2), sigma): ring = 8 modes on radius 2, sigma 0.02; grid = 2*{-2..2}^2, sigma 0.05;
    both divided by the same factor as in the WGAN-GP toys (1.414 and 2.828). The development
    mixtures ring6 (6 modes on the same circle) and grid16 (2*{-1.5..1.5}^2, same sigma) are built the
    same way and used only to choose defaults."""
    if name in ("ring", "ring6"):
        k = 8 if name == "ring" else 6
        ang = 2 * np.pi * np.arange(k) / k
        return np.stack([2 * np.cos(ang), 2 * np.sin(ang)], 1) / 1.414, 0.02 / 1.414
    if name in ("grid", "grid16"):
        g = np.arange(-2, 3) * 2.0 if name == "grid" else np.arange(-1.5, 2) * 2.0
        return np.array([(a, b) for a in g for b in g], dtype=float) / 2.828, 0.05 / 2.828
    raise UserError(f"unknown mixture {name!r}; choose one of {', '.join(MIXTURES)}")


def sample_mixture(name: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """n points of the equal-weight isotropic mixture."""
    means, sigma = mixture(name)
    k = rng.integers(len(means), size=n)
    return (means[k] + sigma * rng.standard_normal((n, 2))).astype(np.float32)


MIN_COUNT_SHARE = 0.2  # PacGAN: a mode is lost with fewer than 20 of 2500 samples (1/5 of its expected 100)


def mode_stats(samples: np.ndarray, means: np.ndarray, sigma: float, k: float = 3.0,
               min_count_share: float = MIN_COUNT_SHARE) -> dict:
    """VEEGAN's synthetic metrics (Srivastava et al. 2017; PacGAN's 1/5-share mode rule, Lin et al. 2018):
    high-quality fraction, modes captured (>= min_count_share * n / K HQ samples; `modes_any`: >= 1),
    per-mode HQ counts and KL(mode histogram || uniform)."""
    samples = np.asarray(samples, dtype=float)
    if samples.ndim != 2 or samples.shape[1] != means.shape[1]:
        raise ValueError(f"samples must be (n, {means.shape[1]}), got {samples.shape}")
    d2 = ((samples[:, None, :] - means[None, :, :]) ** 2).sum(-1)
    nearest = d2.argmin(1)
    dist = np.sqrt(d2[np.arange(len(samples)), nearest])
    hq = np.isfinite(dist) & (dist <= k * sigma)
    counts = np.bincount(nearest[hq], minlength=len(means))
    need = max(1.0, min_count_share * len(samples) / len(means))  # at least one HQ sample in any case
    captured = int((counts >= need).sum())
    if hq.sum():
        p = counts / counts.sum()
        nz = p > 0
        kl = float((p[nz] * np.log(p[nz] * len(means))).sum())
    else:
        kl = float(np.log(len(means)))  # no HQ sample: as far from uniform as a single mode
    return {"hq_frac": float(hq.mean()), "modes": captured, "modes_any": int((counts > 0).sum()), "n_modes": int(len(means)),
            "counts": counts.tolist(), "kl": kl}


def uniform_like(name: str, data: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """The structureless control: n points uniform on the data's bounding box (grid) or, for the ring,
    uniform in area on the annulus between the data's smallest and largest radius (angle uniform)."""
    data = np.asarray(data, dtype=float)
    if name.startswith("ring"):
        r = np.linalg.norm(data, axis=1)
        rad = np.sqrt(rng.uniform(r.min() ** 2, r.max() ** 2, n))  # uniform density per unit area
        ang = rng.uniform(0, 2 * np.pi, n)
        return np.stack([rad * np.cos(ang), rad * np.sin(ang)], 1).astype(np.float32)
    if name.startswith("grid"):
        return rng.uniform(data.min(0), data.max(0), (n, data.shape[1])).astype(np.float32)
    raise UserError(f"unknown mixture {name!r}; choose one of {', '.join(MIXTURES)}")


def hq_fraction_exact(k: float = 3.0) -> float:
    """P(|e| <= k sigma) for a 2-D isotropic Gaussian: 1 - exp(-k^2/2) (Rayleigh CDF); 98.9% at k=3."""
    return float(1 - np.exp(-k * k / 2))
