"""Entropy production: the NLM sampler is reversible for any J, the rate network is not.

Paper: arXiv:2506.23546 (Sec. on the Langevin dynamics). For dx = f dt + √(2T) dW in steady state
the entropy production rate is σ = ⟨f ∘ ẋ⟩ / T (Stratonovich, midpoint rule; the system entropy
term averages to zero). The NLM drift f = −∇E gives σ = 0 exactly; the rate network's own drift
f = −x + Jφ(x) + b with asymmetric J gives σ > 0. The NLM value comes from trajectories of
`sampler.langevin` (the sampler every notebook uses); the rate network, which has no sampler, from
the same Euler-Maruyama loop and estimator here (`entropy_production`), which also re-measures the
NLM drift as a cross-check.
"""
from __future__ import annotations

import math

import torch

from .model import force, velocity


def entropy_production(drift, x0, T: float, dt: float, burn: int, steps: int, generator=None) -> tuple[float, float]:
    """(σ, its standard error over chains) for drift(x) from x0 (M, N) after `burn` steps."""
    x = x0.clone()
    noise = math.sqrt(2 * T * dt)
    acc = torch.zeros(x.shape[0], dtype=x.dtype)
    for s in range(burn + steps):
        x_new = x + dt * drift(x) + noise * torch.randn(x.shape, generator=generator, dtype=x.dtype)
        if s >= burn:
            acc += (drift(0.5 * (x + x_new)) * (x_new - x)).sum(-1)
        x = x_new
    per_chain = acc / (T * steps * dt)
    return float(per_chain.mean()), float(per_chain.std() / math.sqrt(len(per_chain)))


def entropy_production_langevin(J, b, x0, T: float, dt: float, burn: int, steps: int, generator=None) -> tuple[float, float]:
    """σ and its SE as in `entropy_production`, on trajectories of the project's sampler itself.

    `sampler.langevin` makes every step (its fused Euler step and noise); the Stratonovich sum uses
    the force −∇E at each step's midpoint. Only the NLM force has a sampler; the rate network's
    drift runs through `entropy_production`.
    """
    from .sampler import langevin

    x = x0.clone()
    acc = torch.zeros(x.shape[0], dtype=x.dtype)
    for s in range(burn + steps):
        x_new, _ = langevin(x, J, b, 1, dt, T, generator, check_every=0, where="entropy production")
        if s >= burn:
            acc += (force(0.5 * (x + x_new), J, b) * (x_new - x)).sum(-1)
        x = x_new
    per_chain = acc / (T * steps * dt)
    return float(per_chain.mean()), float(per_chain.std() / math.sqrt(len(per_chain)))


def sampler_vs_rate_network(n: int = 8, gain: float = 2.0, chains: int = 2000, dt: float = 0.01, burn: int = 600,
                            steps: int = 1000, T: float = 1.0, seed: int = 0) -> dict:
    g = torch.Generator().manual_seed(seed)
    J = torch.randn(n, n, generator=g, dtype=torch.float64) * gain / math.sqrt(n)
    J.fill_diagonal_(0.0)
    b = torch.zeros(n, dtype=torch.float64)
    x0 = torch.randn(chains, n, generator=g, dtype=torch.float64)
    s_nlm, se_nlm = entropy_production(lambda x: force(x, J, b), x0, T, dt, burn, steps, g)
    s_rnn, se_rnn = entropy_production(lambda x: velocity(x, J, b), x0, T, dt, burn, steps, g)
    s_lan, se_lan = entropy_production_langevin(J, b, x0, T, dt, burn, steps, g)
    return {"sigma_nlm": s_lan, "sigma_nlm_se": se_lan, "sigma_rnn": s_rnn, "sigma_rnn_se": se_rnn,
            "sigma_nlm_euler_loop": s_nlm, "sigma_nlm_euler_loop_se": se_nlm,
            "asymmetry_J": float((J * J.T).sum() / (J * J).sum())}
