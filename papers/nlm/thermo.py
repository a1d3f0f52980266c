"""Entropy production: the NLM sampler is reversible for any J, the rate network is not.

Paper: arXiv:2506.23546 (Sec. on the Langevin dynamics). For dx = f dt + √(2T) dW in steady state
the entropy production rate is σ = ⟨f ∘ ẋ⟩ / T (Stratonovich, midpoint rule; the system entropy
term averages to zero). The NLM drift f = −∇E gives σ = 0 exactly; the rate network's own drift
f = −x + Jφ(x) + b with asymmetric J gives σ > 0. The NLM value comes from trajectories of
`sampler.langevin` (the sampler every notebook uses); the rate network, which has no sampler, from
the same Euler-Maruyama loop and estimator here (`entropy_production`), which also re-measures the
NLM drift as a cross-check.

That Stratonovich sum with f = −∇E telescopes to −ΔE/T along any path, so it cannot see a wrong
stepper. `time_reversal_asymmetry` needs no drift: for a reversible process the lagged correlation
C(τ) = ⟨x(t + τ) x(t)ᵀ⟩ is symmetric, so ‖C(τ) − C(τ)ᵀ‖² / ‖C(0)‖² vanishes; it is measured on
trajectories of `sampler.langevin` itself, and two deliberately broken steppers run through the
same sampler must fail it (Onsager term dropped: the rate network's drift; a noise scale that
differs between neurons: −∇E with anisotropic diffusion, whose stationary flow circulates).
"""
from __future__ import annotations

import math

import torch

from .model import force, velocity
from .sampler import Stepper


class NoOnsagerStepper(Stepper):
    """Broken on purpose: x += dt·(Jφ(x) + b − x) + noise, the rate network's drift (no Onsager term)."""

    def euler(self, x, dt, xi=None, noise: float = 0.0):
        t = torch.tanh(x)
        e = (torch.baddbmm(self.b, t, self.Jt) if self.batched else torch.addmm(self.b, t, self.Jt)).sub_(x)
        x.add_(e, alpha=dt) if xi is None else x.add_(xi.mul_(noise).add_(e, alpha=dt))


class AnisotropicNoiseStepper(Stepper):
    """Broken on purpose: the right drift −∇E, but the noise of every other neuron scaled by 1 − spread
    and of the rest by 1 + spread (a wrong, neuron-dependent noise scale); spread 1/2 here."""

    spread = 0.5

    def __init__(self, J, b, x, gemm_dtype=None):
        super().__init__(J, b, x, gemm_dtype)
        self.scale = torch.where(torch.arange(x.shape[-1]) % 2 == 0, 1.0 - self.spread, 1.0 + self.spread).to(x.dtype)

    def euler(self, x, dt, xi=None, noise: float = 0.0):
        super().euler(x, dt, None if xi is None else xi.mul_(self.scale), noise)


class NearMissNoiseStepper(AnisotropicNoiseStepper):
    """The near miss: noise scales 0.8 and 1.2 (spread 1/5, fixed before any run), the resolution check of
    the reversibility claim (an agreement: the sampler against detailed balance)."""

    spread = 0.2


# run in this order on one generator: a stepper added at the end leaves the others' numbers as they were
BROKEN_STEPPERS = {"no_onsager": NoOnsagerStepper, "anisotropic_noise": AnisotropicNoiseStepper,
                   "anisotropic_noise_20": NearMissNoiseStepper}


def time_reversal_asymmetry(J, b, x0, T: float, dt: float, burn: int, steps: int, lag: int, groups: int = 20,
                            generator=None, stepper=None) -> tuple[float, float]:
    """(a, SE of a): a = ‖C(τ) − C(τ)ᵀ‖²_F / ‖C(0)‖²_F on `sampler.langevin` trajectories, τ = lag·dt.

    The chains are split into `groups`; with A_g each group's antisymmetric part, the U-statistic
    Σ_{g≠h} ⟨A_g, A_h⟩ / (G(G − 1)) is unbiased for ‖A‖² (mean 0 for a reversible sampler, unlike
    the plain ‖A‖², which noise makes positive). SE: jackknife over the groups.
    """
    from .sampler import langevin

    x, _ = langevin(x0, J, b, burn, dt, T, generator, check_every=0, where="time reversal", stepper=stepper)
    G = int(groups)
    M = (x.shape[0] // G) * G
    A = torch.zeros(G, x.shape[1], x.shape[1], dtype=torch.float64)
    C0 = torch.zeros(x.shape[1], x.shape[1], dtype=torch.float64)
    n = 0
    for _ in range(max(1, steps // lag)):
        x_new, _ = langevin(x, J, b, lag, dt, T, generator, check_every=0, where="time reversal", stepper=stepper)
        a, c = x_new[:M].double().reshape(G, -1, x.shape[1]), x[:M].double().reshape(G, -1, x.shape[1])
        cross = torch.einsum("gmi,gmj->gij", a, c)
        A += cross - cross.transpose(-1, -2)
        C0 += torch.einsum("gmi,gmj->ij", c, c)
        x, n = x_new, n + 1
    A /= n * (M // G)
    C0 /= n * M
    norm = float((C0 ** 2).sum())

    def u(Ag):
        k = len(Ag)
        s = Ag.sum(0)
        return float(((s ** 2).sum() - (Ag ** 2).sum()) / (k * (k - 1))) / norm

    est = u(A)
    jack = torch.tensor([u(torch.cat([A[:g], A[g + 1:]])) for g in range(G)], dtype=torch.float64)
    se = float(math.sqrt((G - 1) / G * float(((jack - jack.mean()) ** 2).sum())))
    return est, se


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


# The runs of `sampler_vs_rate_network`, in the order they draw from its generator: σ of the NLM drift and of the rate
# network (plain Euler loops), σ on the sampler's own trajectories, the lag-correlation asymmetry of the sampler and of
# each broken stepper
SECTIONS = (("ep", "nlm"), ("ep", "rnn"), ("ep_langevin", "nlm"), ("rev", "nlm"), *(("rev", name) for name in BROKEN_STEPPERS))


def run_section(kind: str, name: str, J, b, x0, T: float, dt: float, burn: int, steps: int, lag: int,
                generator) -> tuple[float, float]:
    """One run of `SECTIONS` (its estimate and SE), drawing from `generator`."""
    if kind == "ep":
        drift = (lambda x: force(x, J, b)) if name == "nlm" else (lambda x: velocity(x, J, b))
        return entropy_production(drift, x0, T, dt, burn, steps, generator)
    if kind == "ep_langevin":
        return entropy_production_langevin(J, b, x0, T, dt, burn, steps, generator)
    return time_reversal_asymmetry(J, b, x0, T, dt, burn, steps, lag, generator=generator, stepper=BROKEN_STEPPERS.get(name))


def skip_section(kind: str, x0, burn: int, steps: int, lag: int, generator) -> None:
    """Advance `generator` past the draws `run_section(kind, ...)` makes from it, without its arithmetic: the same
    calls of torch's normal (the Euler loops) or of `sampler.noise_draws` (one key per noise block of each
    `sampler.langevin` call)."""
    from .sampler import noise_draws

    if kind == "ep":
        for _ in range(burn + steps):
            torch.randn(x0.shape, generator=generator, dtype=x0.dtype)
    elif kind == "ep_langevin":
        for _ in range(burn + steps):
            noise_draws(1, x0.numel(), generator)
    else:
        noise_draws(burn, x0.numel(), generator)
        for _ in range(max(1, steps // lag)):
            noise_draws(lag, x0.numel(), generator)


def section_task(generator_state, **task) -> tuple[float, float]:
    """`run_section` from a generator in `generator_state` (a task for a worker process)."""
    g = torch.Generator()
    g.set_state(generator_state)
    return run_section(generator=g, **task)


def sampler_vs_rate_network(n: int = 8, gain: float = 2.0, chains: int = 2000, dt: float = 0.01, burn: int = 600,
                            steps: int = 1000, T: float = 1.0, generator=None, lag: int = 50,
                            spread=None) -> dict:
    """Sec. 2's Boltzmann-Gibbs measure: the NLM sampler's drift is −∇E, so it is reversible (zero entropy
    production) for any asymmetric J, while the raw rate network ẋ = −x + Jφ(x) + b is not. On a random n-neuron
    network: σ of both, the sampler's lag-correlation asymmetry against two deliberately broken steppers and a
    near miss (`rev_*`), with SEs. `generator`: the CPU torch.Generator of the network, states and noise (a run's
    keyed stream; None: a default-seeded one).

    The runs (`SECTIONS`) draw one after the other from the generator. `spread(fn, tasks)` (e.g. `workers.spread`)
    runs them side by side instead: each task starts from the generator's state at its run's start, found by
    skipping the earlier runs' draws (`skip_section`), so the numbers are the same, bit for bit; the generator ends
    where the runs one after the other leave it."""
    g = generator if generator is not None else torch.Generator()
    J = torch.randn(n, n, generator=g, dtype=torch.float64) * gain / math.sqrt(n)
    J.fill_diagonal_(0.0)
    b = torch.zeros(n, dtype=torch.float64)
    x0 = torch.randn(chains, n, generator=g, dtype=torch.float64)
    common = dict(J=J, b=b, x0=x0, T=T, dt=dt, burn=burn, steps=steps, lag=lag)
    if spread is None:
        out = [run_section(kind, name, generator=g, **common) for kind, name in SECTIONS]
    else:
        tasks = []
        for kind, name in SECTIONS:
            tasks.append(dict(kind=kind, name=name, generator_state=g.get_state(), **common))
            skip_section(kind, x0, burn, steps, lag, g)
        out = spread(section_task, tasks)
    res = dict(zip(SECTIONS, out))
    (s_nlm, se_nlm), (s_rnn, se_rnn), (s_lan, se_lan) = res[("ep", "nlm")], res[("ep", "rnn")], res[("ep_langevin", "nlm")]
    rev = {}
    for name in ("nlm", *BROKEN_STEPPERS):
        rev[f"rev_asym_{name}"], rev[f"rev_asym_{name}_se"] = res[("rev", name)]
    # the estimator's resolution: 4 SEs of the sampler's own estimate (a null passes it with ~98 %)
    rev["rev_tolerance"] = 4.0 * rev["rev_asym_nlm_se"]
    return {**rev, "sigma_nlm": s_lan, "sigma_nlm_se": se_lan, "sigma_rnn": s_rnn, "sigma_rnn_se": se_rnn,
            "sigma_nlm_euler_loop": s_nlm, "sigma_nlm_euler_loop_se": se_nlm,
            "asymmetry_J": float((J * J.T).sum() / (J * J).sum())}
