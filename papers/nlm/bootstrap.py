"""Bootstrap of E_AAI along generation time, and window differences with standard errors.

Paper: Yu, Huang & Huang, https://arxiv.org/abs/2506.23546 (E_AAI vs generation time, PCD-10 vs
Rdm-500). E_AAI itself is `metrics.adversarial_accuracy` (Yale et al. 2020, Decelle et al. 2021).

Why: the E_AAI of a finite set of samples fluctuates (about ±0.02 with 150 samples), so the minimum
of a curve is biased low and "last − min" is positive even for a stationary curve. Here the curve is
compared on pre-declared windows of time points, and the uncertainty comes from a bootstrap that
resamples the chains (one index set shared by every time point, since a chain is one trajectory)
and the held-out images (shared by every time point and model, as they are one reference set).

A resampled set holds duplicates; a duplicate is not its own nearest neighbour, so "nearest other
point of the same kind" excludes every copy of the same original index. The resampled sets hold
≈ 63 % distinct points. Where E_AAI is well above 0 (samples distinguishable from data, as in the
quick runs: 0.13-0.25) the SE matches the spread over independent repetitions (ratio 0.9-1.15 in
the tests); near E_AAI = 0, the quadratic minimum of E_AAI, it is conservative (about 3x).
"""
from __future__ import annotations

import numpy as np
import torch

from .metrics import pairwise


def masked_nn(d, present):
    """(B, n): for each row of d (n, n0), the smallest entry over the columns present in replicate b."""
    return d[None].masked_fill(~present[:, None, :], float("inf")).min(2).values


NEAREST_K = 32   # candidates per row kept by `Nearest` (a column is absent from a resample with probability ~1/e)


class Nearest:
    """The smallest entry of each row of d (n, n0) over the columns present in a replicate, as `masked_nn`, from
    each row's NEAREST_K smallest entries in ascending order: the first candidate present is the answer, the same
    number (a minimum is one of its entries); a row with no candidate present (probability about e^-32 when
    n0 > NEAREST_K) scans its whole row. With numba a compiled loop, else `masked_nn`."""

    def __init__(self, d):
        self.d = d
        if _first_present is not None:
            val, idx = torch.topk(d, min(NEAREST_K, d.shape[1]), dim=1, largest=False, sorted=True)   # (n, k) each
            self.val, self.idx, self.dn = val.contiguous().numpy(), idx.contiguous().numpy(), d.contiguous().numpy()

    def __call__(self, present):
        if _first_present is None:
            return masked_nn(self.d, present)
        out = np.empty((len(present), len(self.val)))
        _first_present(self.val, self.idx, self.dn, present.contiguous().numpy(), out)
        return torch.from_numpy(out)


try:
    from numba import njit

    @njit(cache=True, nogil=True)
    def _first_present(val, idx, d, present, out):  # pragma: no cover - compiled
        for b in range(present.shape[0]):
            for i in range(val.shape[0]):
                v = np.inf
                found = False
                for k in range(val.shape[1]):
                    if present[b, idx[i, k]]:
                        v = val[i, k]
                        found = True
                        break
                if not found and val.shape[1] < d.shape[1]:            # no candidate present: the whole row
                    for j in range(d.shape[1]):
                        if present[b, j] and d[i, j] < v:
                            v = d[i, j]
                out[b, i] = v
except ImportError:  # pragma: no cover - numba absent: the masked minimum
    _first_present = None


def e_aai_curve(samples, test, n_boot: int = 0, generator=None, chunk: int = 25, parts: bool = False):
    """See `_e_aai_curve`; runs on one thread (these small reductions run ~30x slower on two threads
    of a busy 2-core machine). parts=True: {"e_aai", "acc_s", "acc_t"} -> (est, boot) each. `generator`: the
    CPU torch.Generator of the bootstrap's draws (a run's keyed stream), needed when n_boot > 0."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        est, boot = _e_aai_curve(samples, test, n_boot, generator, chunk)
    finally:
        torch.set_num_threads(threads)
    if parts:
        return {name: (est[i], boot[i]) for i, name in enumerate(("e_aai", "acc_s", "acc_t"))}
    return est[0], boot[0]


def _e_aai_curve(samples, test, n_boot: int, generator, chunk: int):
    """E_AAI against `test` of each set of samples (T, n, D), and its (n_boot, T) bootstrap replicates.

    Uses the first m = min(n, len(test)) samples and test images, as `metrics.quality` does; the
    point estimate is exactly `metrics.adversarial_accuracy`. A bootstrap replicate draws m chains and
    m test images with replacement, the same draws at every time point. A point drawn c times weighs
    c in Acc; its nearest neighbour is sought among the other distinct points drawn (copies of
    itself excluded), so the replicate equals E_AAI of the resampled sets with self-matches removed.
    """
    samples = torch.as_tensor(np.asarray(samples), dtype=torch.float64)
    test = torch.as_tensor(np.asarray(test), dtype=torch.float64)
    m = min(samples.shape[1], len(test))
    samples, test = samples[:, :m], test[:m]
    inf = torch.full((m,), float("inf"), dtype=torch.float64)
    nn_tt = Nearest(pairwise(test, test).diagonal_scatter(inf))                # no point is its own neighbour

    def aai(draws, t):                          # [(c_s, c_t)]: counts (B, m) of each index; t: the time point
        s = samples[t]
        nn_ss, d_ts = Nearest(pairwise(s, s).diagonal_scatter(inf)), pairwise(test, s)
        nn_ts, nn_st = Nearest(d_ts), Nearest(d_ts.T.contiguous())
        out = []
        for c_s, c_t in draws:
            p_s, p_t = c_s > 0, c_t > 0
            acc_t = ((nn_tt(p_t) < nn_ts(p_s)) * c_t).sum(1) / m
            acc_s = ((nn_ss(p_s) < nn_st(p_t)) * c_s).sum(1) / m
            out.append(torch.stack([0.5 * ((acc_s - 0.5) ** 2 + (acc_t - 0.5) ** 2), acc_s, acc_t]))  # E_AAI = ½[(Acc_S − ½)² + (Acc_T − ½)²]
        return torch.cat(out, 1)                                                # (3, B): E_AAI, Acc_S, Acc_T

    ones = torch.ones((1, m), dtype=torch.float64)
    draws = [(ones, ones)]
    if n_boot > 0:
        if generator is None:
            raise ValueError("a bootstrap needs its generator: pass the run's stream (run.streams.torch_generator(...))")
        g = generator
        counts = lambda b: torch.zeros((b, m), dtype=torch.float64).scatter_add_(  # noqa: E731
            1, torch.randint(0, m, (b, m), generator=g), torch.ones((b, m), dtype=torch.float64))
        for start in range(0, n_boot, chunk):                                   # every draw first (the stream's order)
            b = min(chunk, n_boot - start)
            c_s = counts(b)
            draws.append((c_s, counts(b)))
    res = torch.stack([aai(draws, t) for t in range(len(samples))], 2)         # (3, 1 + n_boot, T)
    return res[:, 0].numpy(), res[:, 1:].numpy()


def window_mask(times, lo: float, hi: float) -> np.ndarray:
    """Time points with lo <= t <= hi (a pre-declared window; never chosen from the curve)."""
    t = np.asarray(times, dtype=float)
    m = (t >= lo) & (t <= hi)
    if not m.any():
        raise ValueError(f"no time point in the window [{lo}, {hi}] of {list(times)}")
    return m


def window_difference(est, boot, late, early) -> tuple[float, float]:
    """mean(curve over `late`) − mean(curve over `early`) and its bootstrap standard error."""
    est, boot = np.asarray(est), np.asarray(boot)
    d = float(est[late].mean() - est[early].mean())
    db = boot[:, late].mean(1) - boot[:, early].mean(1)
    return d, float(db.std(ddof=1)) if len(db) > 1 else float("nan")


def adversarial_groups(samples, reference, n_boot: int, streams) -> dict:
    """Acc_S, Acc_T and E_AAI of `samples` against `reference` with n = min(len) points per side, as the
    paper computes them, averaged over disjoint groups of n samples (the P = 5 point of the paper is a
    5-vs-5 test; here every sample enters once). A larger reference is subsampled to n (fixed draw).
    Returns {name: (estimate, (n_boot,) bootstrap replicates)} for e_aai, acc_s, acc_t; the bootstrap
    resamples each group's samples and the reference (copies never their own neighbour). `streams` (a
    `common.seed.Streams`): the reference's subsample ("reference subset") and the bootstrap ("bootstrap"); two
    sample sets measured with equal `streams` draw the same resamples (paired).
    """
    samples, reference = np.asarray(samples, dtype=np.float64), np.asarray(reference, dtype=np.float64)
    n = min(len(samples), len(reference))
    if len(reference) > n:
        reference = reference[streams.rng("reference subset").permutation(len(reference))[:n]]
    groups = samples[: (len(samples) // n) * n].reshape(-1, n, samples.shape[-1])
    out = e_aai_curve(groups, reference, n_boot=n_boot, generator=streams.torch_generator("bootstrap"), parts=True)
    return {name: (float(est.mean()), boot.mean(1)) for name, (est, boot) in out.items()}
