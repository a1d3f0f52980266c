"""Denoising by the noiseless flow of a network fitted to a few patterns (arXiv:2506.23546).

The released denoising demo fits J, b by minimising E at P patterns only (no model phase): that
makes each pattern a fixed point of the rate network, E(ξ) = 0. Minimising Σ_μ E(ξ^μ) is a linear
least-squares problem per neuron (row i of J and b_i against the rates φ(ξ^μ)); gradient descent
from J = 0 converges to its minimum-norm solution, which `fit_patterns` computes directly (an
optional ridge shrinks it). Corrupted patterns (a fraction of pixels replaced by 𝒰[−1, 1] in
state space, as released) then follow the T = 0 flow ẋ = −∇E.
"""
from __future__ import annotations

import numpy as np
import torch

from common.errors import UserError

from .model import energy, init_couplings, phi, velocity
from .sampler import flow


def fit_patterns(x_patterns, ridge: float = 0.0):
    """Min-norm (or ridge) J (zero diagonal), b with Jφ(ξ^μ) + b = ξ^μ for every pattern μ: E(ξ^μ) = 0, the
    minimum of Σ_μ E(ξ^μ) the released denoising demo (`10 types/hopfield`) reaches by gradient descent."""
    X = torch.as_tensor(x_patterns, dtype=torch.float64)
    P, N = X.shape
    R = phi(X)
    J = torch.zeros(N, N, dtype=torch.float64)
    b = torch.zeros(N, dtype=torch.float64)
    for i in range(N):
        keep = [j for j in range(N) if j != i]
        A = torch.cat([R[:, keep], torch.ones(P, 1, dtype=torch.float64)], 1)   # (P, N) regressors
        if ridge > 0:
            w = torch.linalg.solve(A.T @ A + ridge * torch.eye(N, dtype=torch.float64), A.T @ X[:, i])
        else:
            w = torch.linalg.lstsq(A, X[:, i:i + 1], driver="gelsd").solution[:, 0]
        J[i, keep] = w[:-1]
        b[i] = w[-1]
    return J, b


def corrupt(x_patterns, fraction: float, generator=None):
    """Replace `fraction` of each pattern's coordinates by 𝒰[−1, 1] (state space), as the denoising figure's demo does.
    `generator`: the CPU torch.Generator that picks them (a run's keyed stream; None: a default-seeded one)."""
    if not 0 < fraction < 1:
        raise UserError(f"corruption fraction must be in (0, 1), got {fraction!r}")
    X = torch.as_tensor(x_patterns, dtype=torch.float64).clone()
    g = generator if generator is not None else torch.Generator()
    P, N = X.shape
    n_bad = int(round(fraction * N))
    for mu in range(P):
        idx = torch.randperm(N, generator=g)[:n_bad]
        X[mu, idx] = 2.0 * torch.rand(n_bad, generator=g, dtype=torch.float64) - 1.0
    return X


def denoise(x_patterns, fraction: float = 0.25, steps: int = 450, dt: float = 0.1, streams=None, ridge: float = 0.0,
            frames=(0, 150, 300, 450)) -> dict:
    """Fit, corrupt, flow; pixel errors (image space) before and after, energy along the flow. `streams` (a
    `common.seed.Streams`, the run's): the corruption's stream ("corrupt"); None: `Streams(0)`."""
    X = torch.as_tensor(x_patterns, dtype=torch.float64)
    J, b = fit_patterns(X, ridge)
    x0 = corrupt(X, fraction, _streams(streams).torch_generator("corrupt"))
    target = phi(X)
    mse = lambda x: ((phi(x) - target) ** 2).mean(1).numpy()  # noqa: E731
    xs, energies = [x0], None
    x, e = x0, []
    done = 0
    for f in sorted(frames):
        if f > done:
            x, en = flow(x, J, b, f - done, dt, record_energy=True)
            e.append(en if not e else en[1:])
            done = f
        xs.append(x) if f > 0 else None
    energies = torch.cat(e).numpy() if e else np.zeros((1, len(X)))
    err0, err1 = mse(x0), mse(x)
    ratio = err1 / err0
    rises = np.diff(energies, axis=0)
    return {
        "clean": target.numpy(), "frames": {f: phi(v).numpy() for f, v in zip(sorted(frames), xs)}, "energy": energies,
        "err_corrupted": err0, "err_final": err1, "ratio": ratio, "J": J, "b": b,
        "metrics": {"denoise_ratio_median": float(np.median(ratio)), "denoise_ratio_max": float(ratio.max()),
                    "denoise_n_good": int((ratio <= 0.3).sum()), "denoise_n": int(len(ratio)),
                    "denoise_energy_max_rise": float(max(rises.max(), 0.0) if rises.size else 0.0),
                    "denoise_energy_start": float(energies[0].mean()), "denoise_energy_end": float(energies[-1].mean())},
    }


def rate_flow(x, J, b, steps: int, dt: float):
    """The raw rate network's noiseless flow x ← x + dt·(−x + Jφ(x) + b): the NLM flow without its
    Onsager term (a broken variant). Returns (x, energies (steps + 1, ...) of E along it)."""
    x = torch.as_tensor(x, dtype=torch.float64).clone()
    energies = [energy(x, J, b)]
    for _ in range(steps):
        x = x + dt * velocity(x, J, b)
        energies.append(energy(x, J, b))
    return x, torch.stack(energies)


def _streams(streams):
    from common.seed import Streams

    return streams if streams is not None else Streams(0)


def controls(x_patterns, fraction: float = 0.25, steps: int = 450, dt: float = 0.1, streams=None, gain: float = 2.0,
             fitted=None) -> dict:
    """The nulls of the denoising claims, on the same corrupted patterns as `denoise(..., streams)` (the untrained
    network from the stream "untrained network").

    * untrained: the −∇E flow of an untrained network (J ~ N(0, g²/N), J_ii = 0, b = 0) instead of the
      fitted one; its pixel-error ratio (≤ 0.3 counts as repaired) and count of repaired patterns;
    * the corrupted input itself (no flow): ratio 1 by definition, logged for the table;
    * rate flow: the fitted network's raw rate dynamics (no Onsager term), whose energy need not fall.
    """
    X = torch.as_tensor(x_patterns, dtype=torch.float64)
    J, b = fit_patterns(X) if fitted is None else fitted
    streams = _streams(streams)
    x0 = corrupt(X, fraction, streams.torch_generator("corrupt"))
    target = phi(X)
    mse = lambda x: ((phi(x) - target) ** 2).mean(1).numpy()  # noqa: E731
    g = streams.torch_generator("untrained network")
    Ju, bu = init_couplings(X.shape[1], gain, generator=g, dtype=torch.float64)
    xu, _ = flow(x0, Ju, bu, steps, dt)
    ratio_u = mse(xu) / mse(x0)
    _, e_rate = rate_flow(x0, J, b, steps, dt)
    rises = np.diff(e_rate.numpy(), axis=0)
    return {"denoise_n_good_untrained": int((ratio_u <= 0.3).sum()), "denoise_ratio_median_untrained": float(np.median(ratio_u)),
            "denoise_n_good_input": int((mse(x0) / mse(x0) <= 0.3).sum()),
            "denoise_energy_max_rise_rate_flow": float(max(rises.max(), 0.0))}


def langevin_restore(x0, J, b, target, steps: int, dt: float, T: float = 1.0, reps: int = 8, generator=None) -> dict:
    """Denoising by a model's own Langevin dynamics: `reps` noise replicas of each corrupted state x0
    run `steps` steps at temperature T; the images φ(x) are averaged over the run (every 50 steps).

    Returns the pixel-error ratios (reps, P) of the averaged images against the target images, relative
    to the corrupted input's error (the noise from `generator`, a CPU torch.Generator). (For the NLM trained with its contrastive rule the noiseless flow
    lands on fixed points E = 0 off the data; the thermal dynamics stays in the pattern's basin.)
    """
    from .sampler import langevin

    x0 = torch.as_tensor(x0, dtype=J.dtype)
    target = torch.as_tensor(target, dtype=J.dtype)
    g = generator if generator is not None else torch.Generator()
    x = x0.repeat(reps, 1)
    every = max(1, min(50, steps))
    acc, n = torch.zeros_like(x), 0
    for _ in range(max(1, steps // every)):
        x, _ = langevin(x, J, b, every, dt, T, g, check_every=0, where="denoise (Langevin)")
        acc += phi(x); n += 1
    avg = (acc / n).reshape(reps, *x0.shape)
    err0 = ((phi(x0) - target) ** 2).mean(-1)
    return {"ratio": (((avg - target) ** 2).mean(-1) / err0).numpy(), "images": avg[0].numpy()}


def flow_ratio(x0, J, b, target, steps: int, dt: float):
    """Pixel-error ratios (P,) of the noiseless flow's end state against the corrupted input."""
    x0 = torch.as_tensor(x0, dtype=J.dtype)
    target = torch.as_tensor(target, dtype=J.dtype)
    x, _ = flow(x0, J, b, steps, dt)
    return (((phi(x) - target) ** 2).mean(-1) / ((phi(x0) - target) ** 2).mean(-1)).numpy()
