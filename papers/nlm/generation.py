"""Chains from noise of a trained stack, and their time averages: how the studies sample a model.

Paper: Yu, Huang & Huang, arXiv:2506.23546, Sec. 2: generation runs the neural Langevin dynamics
dx = −∇E dt + √(2T) dW (Euler-Maruyama, `sampler.langevin`) from x ~ N(0, I), as the released
generation scripts do (official code: `3 types/PCD_10`, generation from 𝒩(0, 1)).
"""
from __future__ import annotations

import torch

from .model import phi
from .sampler import langevin


def from_noise(J, b, n, steps, cfg, streams, key, snap_at=()):
    """n chains from N(0, I) per model of a stack, `steps` Langevin steps (Sec. 2's dynamics at cfg.T, cfg.dt);
    returns (final x, {step: images}) as `sampler.langevin` does. `key` names the stream of `streams` (a
    `common.seed.Streams`, the run's) that draws the initial states and the noise; its increments are drawn on
    cfg.noise_threads threads (the same numbers for any count)."""
    g = streams.torch_generator("generate", key)
    x0 = torch.randn((*J.shape[:-2], n, J.shape[-1]), generator=g, dtype=J.dtype).to(J.device)
    return langevin(x0, J, b, steps, cfg.dt, cfg.T, g, snap_at=snap_at, where=f"generate {key}", show_progress=True,
                    noise_threads=int(getattr(cfg, "noise_threads", 1)))


def time_average(x, J, b, cfg, streams, key, steps: int, every: int = 10):
    """Continue chains `steps` Langevin steps and average the images φ(x) every `every` steps.

    At T = 1 a single sample sits ~1 away from its basin's centre in every saturated coordinate;
    the average over a window shorter than the time to leave the basin estimates the basin's image.
    Returns (final x, averaged images). The noise: the stream ("time-average", key) of `streams`.
    """
    g = streams.torch_generator("time-average", key)
    acc, n = torch.zeros_like(x), 0
    for _ in range(max(1, steps // every)):
        x, _ = langevin(x, J, b, every, cfg.dt, cfg.T, g, check_every=0, where=f"time-average {key}")
        acc += phi(x); n += 1
    return x, acc / n

