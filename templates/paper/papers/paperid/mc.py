"""The toy's computation (TEMPLATE: replace with your paper's modules, each named for what it holds).

The toy estimates I(s) = int_0^1 exp(s u) du by Monte Carlo and compares antithetic pairs (u, 1 - u) with
independent pairs. Every function that implements an equation cites it. Tensors live on the run's device.
"""
from __future__ import annotations

import math

import torch


def closed_form(scale: float = 1.0) -> float:
    """Eq. (1): I(s) = int_0^1 exp(s u) du = (e^s - 1) / s."""
    return math.expm1(scale) / scale


def integrand(u: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
    """Eq. (2): f(u) = exp(s u), monotone in u (what makes antithetic pairs anti-correlated)."""
    return torch.exp(scale * u)


def uniforms(n: int, generator: torch.Generator, device, dtype=torch.float64) -> torch.Tensor:
    """n draws of U(0, 1) from one keyed stream (`run.torch_generator(key)`), on `device`."""
    return torch.rand(n, generator=generator, device=device, dtype=dtype)


def mean_and_se(y: torch.Tensor) -> tuple[float, float]:
    """The sample mean and its standard error sd / sqrt(n)."""
    return float(y.mean()), float(y.std() / math.sqrt(y.numel()))


def log_variance_and_se(y: torch.Tensor) -> tuple[float, float]:
    """ln s^2 and its delta-method standard error sqrt((m4 / s^4 - 1) / n) (m4 the fourth central moment)."""
    d = y - y.mean()
    var, m4 = float(d.pow(2).mean()), float(d.pow(4).mean())
    return math.log(var), math.sqrt(max(m4 / var**2 - 1.0, 0.0) / y.numel())


def pair_means(first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
    """Eq. (3): the estimator of one pair, (f(u) + f(u')) / 2: two evaluations per value."""
    return (first + second) / 2
