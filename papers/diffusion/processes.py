"""Forward and backward diffusion paths with their stochastic-thermodynamics functionals.

Paper: Yu & Huang, https://arxiv.org/abs/2405.11932 (Secs. III-IV forward, Sec. V backward).

**Forward** (physical time t ∈ [0, T]): dX = −X dt + √2 dW, integrated with the *exact*
Ornstein-Uhlenbeck kernel X_{t+dt} = e^{−dt} X_t + √(1 − e^{−2dt}) Z, started from p_0.

**Backward** (reversed time s = T − t ∈ [0, T]):
dX̃ = [X̃ + 2∇ln p_{T−s}(X̃)] ds + √2 dW, Euler-Maruyama with the exact score, started from the
exact p_T (not from N(0, I)).

Per trajectory, in nats and with unit temperature:

* medium entropy  ΔS_E = ∫ f ∘ dX  (Stratonovich),  f = −X forward, f* = X + 2∇ln p backward;
* system entropy  ΔS   = ln p_start(X_start) − ln p_end(X_end);
* total           ΔS_tot = ΔS_E + ΔS, with ⟨e^{−ΔS_tot}⟩ = 1 (integral fluctuation theorem).

The Stratonovich product is discretised by the trapezoid ½[f(x_n, s_n) + f(x_{n+1}, s_{n+1})]·Δx,
which re-uses the drift the Euler step needs next, so the backward loop costs one score per step.
Forward, it telescopes exactly to (|X_0|² − |X_T|²)/2 (tested per path).

Paths are simulated in chunks; each chunk owns the keyed stream (direction, chunk index) of the `Streams` passed in,
so results do not depend on the number of worker threads. The only Python loop is over time steps.
"""
from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from common.errors import UserError
from common.progress import progress
from common.seed import Streams

from .mixture import GaussianMixture, ou_decay
from .workers import cpu_shares

DEFAULT_CHUNK = 1 << 15
BLOCK = 64          # forward steps per vectorised block


@dataclass
class PathEntropy:
    """Endpoints and entropy functionals of n simulated paths (arrays of length n)."""

    direction: str
    T: float
    dt: float
    x_start: np.ndarray
    x_end: np.ndarray
    medium: np.ndarray          # ΔS_E
    system: np.ndarray          # ΔS
    times: np.ndarray           # physical time t of each grid point (decreasing when backward)
    bin_edges: np.ndarray | None = None              # step indices delimiting the time bins
    medium_bins: np.ndarray | None = None            # (n, n_bins) per-path medium entropy per bin
    system_bins: np.ndarray | None = None            # (n, n_bins) per-path system entropy per bin
    paths: np.ndarray | None = None                  # (steps+1, n_keep, d), a few paths for plots
    medium_ito: np.ndarray | None = None             # (n,) ΔS_E as a left-point (Itô) sum, when asked (a null)
    medium_ito_bins: np.ndarray | None = None        # (n, n_bins) the same per bin (backward, with n_bins)

    @property
    def total(self) -> np.ndarray:
        return self.medium + self.system  # ΔS_tot = ΔS_E + ΔS

    @property
    def total_ito(self) -> np.ndarray:
        """ΔS_tot with the medium entropy as a left-point (Itô) sum: the broken discretisation
        that drops the Stratonovich (Jacobian) term ∫∇·f dt of the path measure (a null).

        The λ = 0 end of the paper's λ-discretised path integral (Eq. (16)), whose Jacobian term e^{−λ∇·f dt} it
        drops."""
        if self.medium_ito is None:
            raise UserError("simulate with ito=True to get the left-point medium entropy")
        return self.medium_ito + self.system

    @property
    def n(self) -> int:
        return self.medium.shape[0]


def _check_grid(T, dt, n_paths):
    T, dt = float(T), float(dt)
    if not (T > 0 and math.isfinite(T)):
        raise UserError(f"T must be a positive time; got {T}")
    if not (dt > 0):
        raise UserError(f"dt must be positive; got {dt}")
    if dt >= T:
        raise UserError(f"dt={dt} must be smaller than T={T}; lower dt")
    if int(n_paths) < 1:
        raise UserError(f"n_paths must be >= 1; got {n_paths}")
    steps = int(round(T / dt))
    return steps, T / steps


def _workers(workers):
    """`workers` threads (at least 1); None: the run's budget (`workers.cpu_shares`)."""
    return cpu_shares() if workers is None else max(1, int(workers))


def _run_chunks(fn, n_paths, chunk, workers, desc, show_progress):
    if chunk < 1:
        raise UserError(f"chunk must be a positive number of paths; got {chunk}")
    sizes = [min(chunk, n_paths - i) for i in range(0, n_paths, chunk)]
    jobs = list(enumerate(sizes))
    with ThreadPoolExecutor(max_workers=_workers(workers)) as pool:
        it = pool.map(lambda job: fn(*job), jobs)
        if show_progress:
            it = progress(it, total=len(jobs), desc=desc)
        return list(it)


def _bins(steps, n_bins):
    """Step index -> bin index, for n_bins bins of consecutive steps (edges as step indices)."""
    n_bins = max(1, min(int(n_bins), steps))
    edges = np.linspace(0, steps, n_bins + 1).astype(int)
    return edges, np.searchsorted(edges, np.arange(steps), side="right") - 1


def _merge(direction, T, dt, times, parts, edges, keep):
    cat = lambda key: np.concatenate([p[key] for p in parts])  # noqa: E731
    out = PathEntropy(direction, T, dt, cat("x_start"), cat("x_end"), cat("medium"), cat("system"), times)
    if edges is not None:
        out.bin_edges = edges
        out.medium_bins = cat("medium_bins")
        out.system_bins = cat("system_bins")
    if parts[0].get("medium_ito") is not None:
        out.medium_ito = cat("medium_ito")
    if parts[0].get("medium_ito_bins") is not None:
        out.medium_ito_bins = cat("medium_ito_bins")
    if keep:
        out.paths = parts[0]["paths"]
    return out


def simulate_forward(mix: GaussianMixture, T: float, dt: float, n_paths: int, streams: Streams, *,
                     n_bins: int = 0, keep_paths: int = 0, chunk: int | None = None,
                     workers: int | None = None, show_progress: bool = False,
                     noise_scale: float = 1.0, ito: bool = False) -> PathEntropy:
    """Forward OU paths from p_0 with the exact kernel and their entropy functionals.

    The grid has round(T/dt) steps of T/round(T/dt); dt >= T is a UserError.

    `n_bins` > 0 also keeps, per path, the medium and system entropy gathered in each of n_bins
    time bins (their ensemble means per unit time estimate φ, dS/dt and, summed, π).

    Every step of every path is simulated (normals drawn BLOCK steps at a time, two in-place
    operations per step). Both functionals telescope, so they need X only at the bin edges:
    ΔS_E = ½(|X_start|² − |X_end|²) per bin (Stratonovich ∫ −X∘dX exactly), ΔS = −Δ ln p_t.
    `chunk=None` splits n into about four chunks (at most DEFAULT_CHUNK paths each) so that small
    runs also use two cores; results depend on n, `streams` (chunk k draws `streams.rng("forward", k)`) and
    chunk, never on the thread count.

    Nulls (broken variants, for controls): `noise_scale` c ≠ 1 simulates dX = −X dt + √(2c) dW
    (the wrong noise scale) while the functionals stay those of the paper's process (unit
    temperature, the paper's p_t); `ito=True` also returns `medium_ito`, the left-point sum
    Σ −X_n·(X_{n+1} − X_n) = ΔS_E + ½Σ|ΔX|² (one extra accumulation per step).

    Sec. IV: the forward paths and their ΔS_E, ΔS, ΔS_tot behind the integral fluctuation theorem (Fig. 2), the
    histograms (Fig. 3) and the forward rates (Fig. 9); the official `forward_n.py`.
    """
    steps, dt = _check_grid(T, dt, n_paths)
    if not (noise_scale > 0 and math.isfinite(noise_scale)):
        raise UserError(f"noise_scale must be a positive number; got {noise_scale}")
    a = math.exp(-dt)                      # X_{t+dt} = e^{−dt} X_t + √(c(1−e^{−2dt})) Z
    b = math.sqrt(-noise_scale * math.expm1(-2.0 * dt))
    d = mix.d
    times = np.arange(steps + 1) * dt
    edges, _ = _bins(steps, n_bins or 1)

    def one(idx, m):
        rng = streams.rng("forward", idx)
        x = mix.sample(m, rng)
        x_start = x.copy()
        y = np.empty_like(x)
        keep = min(keep_paths, m) if (keep_paths and idx == 0) else 0
        kept = np.empty((steps + 1, keep, d)) if keep else None
        if keep:
            kept[0] = x[:keep]
        n_seg = edges.size - 1
        med_b = np.zeros((m, n_seg)); sys_b = np.zeros((m, n_seg))
        sq = (x * x).sum(-1)
        logp = mix.log_prob(x, 0.0) if n_bins else None
        dx2 = np.zeros_like(x) if ito else None             # Σ (ΔX)² per coordinate
        step = np.empty_like(x) if ito else None
        for j in range(n_seg):
            n = int(edges[j])
            while n < edges[j + 1]:
                k = min(BLOCK, int(edges[j + 1]) - n)
                z = rng.standard_normal((k, m, d))
                z *= b
                for i in range(k):
                    np.multiply(x, a, out=y)
                    y += z[i]                                   # X_{n+1} = e^{−dt}X_n + √(1−e^{−2dt}) Z_n
                    if ito:
                        np.subtract(y, x, out=step)
                        step *= step
                        dx2 += step
                    x, y = y, x
                    if keep:
                        kept[n + 1 + i] = x[:keep]
                n += k
            sq_end = (x * x).sum(-1)
            med_b[:, j] = 0.5 * (sq - sq_end)                  # Σ −½(x_n + x_{n+1})(x_{n+1} − x_n)
            sq = sq_end
            if n_bins:
                logp_end = mix.log_prob(x, times[n])
                sys_b[:, j] = logp - logp_end                   # dS = −d ln p
                logp = logp_end
        medium = med_b.sum(1)
        system = mix.log_prob(x_start, 0.0) - mix.log_prob(x, T)   # ΔS = ln p_0(X_0) − ln p_T(X_T)
        return {"x_start": x_start, "x_end": x.copy(), "medium": medium, "system": system,
                "medium_bins": med_b if n_bins else None, "system_bins": sys_b if n_bins else None,
                "paths": kept, "medium_ito": medium + 0.5 * dx2.sum(-1) if ito else None}

    if chunk is None:
        chunk = max(256, min(DEFAULT_CHUNK, -(-int(n_paths) // 4)))
    parts = _run_chunks(one, int(n_paths), int(chunk), workers, "forward paths", show_progress)
    return _merge("forward", T, dt, times, parts, edges if n_bins else None, keep_paths)


def backward_drift(mix: GaussianMixture):
    """f*(x, t) = x + 2∇ln p_t(x), the reverse drift of the backward SDE (Sec. V) evaluated at physical
    time t, as a function `drift(x, t, out, tmp) -> out` writing into `out` (`tmp` a scratch array of
    x's shape); the pair's tanh fast path in d = 1. The sampler's field whose pitchfork marks t_S
    (`landscape.pitchfork_branch`)."""
    pair = mix.symmetric_pair()
    if pair is not None and mix.d == 1:
        mu, s2 = float(pair[0][0]), pair[1]

        def drift(x, t, out, tmp):
            e = math.exp(-t); v = 1.0 + (s2 - 1.0) * e * e; m = mu * e
            # f* = x + 2[m tanh(m x / v) − x]/v = (1 − 2/v) x + (2m/v) tanh(m x / v)
            np.multiply(x, m / v, out=tmp)
            np.tanh(tmp, out=tmp)
            tmp *= 2.0 * m / v
            np.multiply(x, 1.0 - 2.0 / v, out=out)
            out += tmp
            return out
        return drift

    def drift(x, t, out, tmp):
        np.multiply(mix.score(x, t), 2.0, out=out)
        out += x
        return out
    return drift


def simulate_backward(mix: GaussianMixture, T: float, dt: float, n_paths: int, streams: Streams, *,
                      n_bins: int = 0, keep_paths: int = 0, chunk: int = DEFAULT_CHUNK,
                      workers: int | None = None, show_progress: bool = False,
                      x_start: np.ndarray | None = None, ito: bool = False,
                      sampler_score=None) -> PathEntropy:
    """Reverse-time paths s ∈ [0, T] from the exact p_T with the exact score (Euler-Maruyama).

    `times` holds the physical time t = T − s of each grid point. `x_start` (n_paths, d) replaces
    the draw from p_T (used for clone experiments; the system entropy still uses p_T).
    `ito=True` also returns the left-point medium entropy Σ f*(X̃_n)·ΔX̃ (`medium_ito`, and per bin
    `medium_ito_bins`), the discretisation that drops the Stratonovich term (a null).
    `sampler_score(x, t)` (a null: a mis-specified score, e.g. `wrong_noise_score`) drives the
    Euler steps with the drift x + 2·sampler_score, while the functionals stay those of `mix` (its
    f* in ΔS_E, its p_T and p_0 in ΔS): an approximate sampler's paths weighed as the exact
    process's paths, which breaks the fluctuation theorems (one more score per step).

    Sec. V, Eqs. (54)-(64): the backward (generative) paths and their ΔS_E, ΔS, ΔS_tot behind the backward
    fluctuation theorem (Fig. 7), the histograms (Fig. 8) and the backward rates (Fig. 10); the official
    `backward_n.py`.
    """
    steps, dt = _check_grid(T, dt, n_paths)
    d = mix.d
    drift = backward_drift(mix)
    sampler = None
    if sampler_score is not None:
        def sampler(x, t, out, tmp):
            np.multiply(sampler_score(x, t), 2.0, out=out)
            out += x
            return out
    times = T - np.arange(steps + 1) * dt
    times[-1] = 0.0
    edges, bin_of = _bins(steps, n_bins or 1)
    noise = math.sqrt(2.0 * dt)
    if x_start is not None:
        x_start = np.asarray(x_start, dtype=np.float64).reshape(int(n_paths), d)

    def one(idx, m):
        rng = streams.rng("backward", idx)
        if x_start is None:
            x = mix.sample(m, rng, t=T)                       # X̃_0 ~ p_T exactly
        else:
            x = x_start[idx * chunk: idx * chunk + m].copy()
        x0 = x.copy()
        f = np.empty_like(x); f_next = np.empty_like(x); tmp = np.empty_like(x)
        y = np.empty_like(x); z = np.empty_like(x); dx = np.empty_like(x)
        g = np.empty_like(x) if sampler is not None else None   # the sampler's drift, when mis-specified
        medium = np.zeros(m)
        medium_ito = np.zeros(m) if ito else None
        ito_b = None
        kept = None
        if keep_paths and idx == 0:
            kept = np.empty((steps + 1, min(keep_paths, m), d))
            kept[0] = x[: kept.shape[1]]
        med_b = sys_b = logp_prev = None
        if n_bins:
            med_b = np.zeros((m, edges.size - 1)); sys_b = np.zeros_like(med_b)
            ito_b = np.zeros_like(med_b) if ito else None
            logp_prev = mix.log_prob(x, T)
        drift(x, times[0], f, tmp)
        for n in range(steps):
            rng.standard_normal(out=z)
            # Euler-Maruyama: X̃_{n+1} = X̃_n + f*(X̃_n, T − s_n) ds + √(2 ds) Z
            np.multiply(f if sampler is None else sampler(x, times[n], g, tmp), dt, out=dx)
            z *= noise
            dx += z
            np.add(x, dx, out=y)
            if ito:                                            # left point: f*(x_n)·(x_{n+1} − x_n)
                np.multiply(f, dx, out=tmp)
                step_ito = tmp[:, 0].copy() if d == 1 else tmp.sum(-1)
                medium_ito += step_ito
                if n_bins:
                    ito_b[:, bin_of[n]] += step_ito
            drift(y, times[n + 1], f_next, tmp)
            # dS_E = f* ∘ dX̃, trapezoid (Stratonovich): ½[f*(x_n) + f*(x_{n+1})]·(x_{n+1} − x_n)
            np.add(f, f_next, out=tmp)
            tmp *= dx
            step_med = tmp[:, 0] * 0.5 if d == 1 else 0.5 * tmp.sum(-1)
            medium += step_med
            if n_bins:
                logp = mix.log_prob(y, times[n + 1])
                med_b[:, bin_of[n]] += step_med
                sys_b[:, bin_of[n]] += logp_prev - logp       # dS = −d ln p
                logp_prev = logp
            x, y = y, x
            f, f_next = f_next, f
            if kept is not None:
                kept[n + 1] = x[: kept.shape[1]]
        system = mix.log_prob(x0, T) - mix.log_prob(x, 0.0)   # ΔS = ln p_T(X̃_0) − ln p_0(X̃_T)
        return {"x_start": x0, "x_end": x.copy(), "medium": medium, "system": system,
                "medium_bins": med_b, "system_bins": sys_b, "paths": kept,
                "medium_ito": medium_ito, "medium_ito_bins": ito_b}

    parts = _run_chunks(one, int(n_paths), int(chunk), workers, "backward paths", show_progress)
    return _merge("backward", T, dt, times, parts, edges if n_bins else None, keep_paths)


def wrong_noise_score(mix: GaussianMixture, c: float):
    """The score a sampler would use if the forward process had noise variance c (dX = −X dt +
    √(2c) dW) instead of the paper's 1: ∇ln p_t^{(c)}(x) = c^{−½} ∇ln q_t(x/√c), q = mix.noise_scaled(c).
    A mis-specified score (a null) for `simulate_backward(sampler_score=...)`; c = 1 gives mix.score."""
    q = mix.noise_scaled(c)
    r = math.sqrt(float(c))
    return lambda x, t: q.score(np.asarray(x) / r, t) / r
