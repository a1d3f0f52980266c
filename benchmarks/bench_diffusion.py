"""Benchmark: papers.diffusion against references that follow the released scripts as they are.

Paper: Yu & Huang, https://arxiv.org/abs/2405.11932; released code:
github.com/yuzd610/Nonequilbrium-physics-of-generative-diffusion-models (numpy, unseeded).

The references below are written for this benchmark (not copied); they make the same library
calls, in float64, at the same sizes as the released scripts:

* forward (`forward_n.py`): components drawn with `np.random.choice` over two strings, then one
  `np.random.normal(mu, sigma)` call per trajectory in a Python loop; the path matrix of shape
  (n, 1001) filled column by column with Euler-Maruyama (`np.random.normal(0, 1, n)` per step);
  system entropy from the σ = 1 closed form (`np.log`/`np.exp`), medium entropy by `np.diff` on the
  matrix. The script loops n = 0, 100, ..., 10⁴; we time single n at n = 2000 and n = 10⁴.
* backward (`backward_n.py`): the same start (means ±μe^{−T}), Euler-Maruyama with the exact
  score, then the medium entropy in a Python loop over trajectories and steps calling `np.exp` and
  `np.tanh` on numpy scalars (midpoint x, left time). Timed at n = 300 (the loop is ~10 ms per path).
* Franz-Parisi (`fpp.py`): joblib `Parallel(n_jobs=-1)` over the 800 values of q, each evaluating
  −ln Z on the 10⁵ joint samples six times (V, and central differences with h = 1e-5 for V', V'').
  Differences: t = 0.42 instead of the script's module-level t = 1; the samples are drawn once by us.

Ours: the project's code at the same n (the forward chunked over two threads, every step simulated;
one score per backward step; analytic V', V''). Every ratio compares equal sizes; the throughput of
ours at the quick profile's n is reported separately, without a ratio.
"""
from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common.bench import write_benchmark  # noqa: E402
from common.seed import Streams  # noqa: E402
from papers.diffusion import franz_parisi as fp  # noqa: E402
from papers.diffusion.mixture import GaussianMixture  # noqa: E402
from papers.diffusion.processes import simulate_backward, simulate_forward  # noqa: E402

MU, DT, ITERATE = 1.0, 0.01, 1000
T = DT * ITERATE


# ---- references in the released scripts' structure ---------------------------------------------------

def _official_start(n, shrink=1.0):
    """Two-string component choice, then one np.random.normal call per trajectory (σ = 1)."""
    sel = np.random.choice(["dist1", "dist2"], size=n, p=[0.5, 0.5])
    out = np.zeros(n)
    for i, d in enumerate(sel):
        out[i] = np.random.normal(-MU * shrink, 1.0) if d == "dist1" else np.random.normal(MU * shrink, 1.0)
    return out


def _official_system(a, b, mu, t):
    """ln p_0(a) − ln p_T(b) for σ = 1, written as the scripts do, through np.exp and np.log."""
    return np.log((np.exp(2 * a * mu) + 1) * np.exp(-0.5 * a ** 2 - a * mu + 0.5 * b ** 2 + b * mu * np.exp(-t)
                                                   - 0.5 * mu ** 2 + 0.5 * mu ** 2 * np.exp(-2 * t))
                  / (np.exp(2 * b * mu * np.exp(-t)) + 1))


def reference_forward(n):
    X = np.zeros((n, ITERATE + 1))
    X[:, 0] = _official_start(n)
    for i in range(ITERATE):
        X[:, i + 1] = X[:, i] - X[:, i] * DT + np.random.normal(0, 1, n) * np.sqrt(DT) * np.sqrt(2)
    diff_dt = np.diff(X, axis=1) / DT
    avg_x = (X[:, :-1] + X[:, 1:]) / 2
    medium = np.sum(-diff_dt * avg_x, axis=1) * DT
    return medium + _official_system(X[:, 0], X[:, -1], MU, T)


def reference_backward(n):
    X = np.zeros((n, ITERATE + 1))
    X[:, 0] = _official_start(n, math.exp(-T))
    for i in range(ITERATE):
        X[:, i + 1] = X[:, i] + (2 * np.tanh(MU * np.exp(-(T - i * DT)) * X[:, i]) * MU * np.exp(-(T - i * DT))
                                 - X[:, i]) * DT + np.random.normal(0, 1, n) * np.sqrt(DT) * np.sqrt(2)
    medium = np.zeros(n)
    for r, row in enumerate(X):              # Python loop per trajectory and per step, numpy scalars
        acc = 0
        for k in range(len(row) - 1):
            mid = (row[k + 1] + row[k]) / 2
            e = np.exp(-(T - k * DT))
            acc += (row[k + 1] - row[k]) / DT * ((2 * np.tanh(MU * e * mid) * MU * e) - mid) * DT
        medium[r] = acc
    return medium - _official_system(X[:, -1], X[:, 0], MU, T)


def _free(a, xt, q, t, s2=0.1, mu=1.0):
    """−ln Z(q) per sample, with H written as in the script (conditional term + −ln p_0)."""
    def h(x0):
        cond = (xt - x0 * np.exp(-t)) ** 2 / (2 * (1 - np.exp(-2 * t)))
        m1 = np.exp(-(x0 - mu) ** 2 / (2 * s2)); m2 = np.exp(-(x0 + mu) ** 2 / (2 * s2))
        return cond - np.log((1 / (2 * np.sqrt(2 * np.pi * s2))) * (m1 + m2))
    z = (1 / (2 * np.sqrt(q))) * (np.exp(-h(a + np.sqrt(q))) + np.exp(-h(a - np.sqrt(q))))
    return -np.log(z)


def reference_fp(a, xt, qs, t, h=1e-5):
    from joblib import Parallel, delayed

    def one(q):
        v = np.mean(_free(a, xt, q, t))
        d1 = np.mean((_free(a, xt, q + h, t) - _free(a, xt, q - h, t)) / (2 * h))
        d2 = np.mean((_free(a, xt, q + h, t) - 2 * _free(a, xt, q, t) + _free(a, xt, q - h, t)) / h ** 2)
        return q, v, d1, d2
    return Parallel(n_jobs=-1)(delayed(one)(q) for q in qs)


def timed(fn):
    """(wall seconds, process CPU seconds, result)."""
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, time.process_time() - c0, out


def main() -> dict:
    np.random.seed(0)
    mix = GaussianMixture.two_gaussians(MU, 1.0)
    res = {"cpus": os.cpu_count(), "load_average_1min_start": os.getloadavg()[0]}
    simulate_forward(mix, 0.1, DT, 1000, streams=Streams(99))                       # warm-up
    reference_forward(100)
    for n in (2000, 10_000):                                             # equal sizes
        t_ref, c_ref, _ = timed(lambda: reference_forward(n))
        t_our, c_our, _ = timed(lambda: simulate_forward(mix, T, DT, n, streams=Streams(0)))
        res[f"forward_n{n}_ref_s"] = t_ref; res[f"forward_n{n}_ours_s"] = t_our
        res[f"forward_n{n}_ours_steps_per_s"] = n * ITERATE / t_our
        res[f"forward_n{n}_speedup"] = t_ref / t_our
        res[f"forward_n{n}_cpu_ratio"] = c_ref / c_our
    n_q = 200_000                                                         # quick profile's n
    t_our, c_our, _ = timed(lambda: simulate_forward(mix, T, DT, n_q, streams=Streams(0)))
    res["forward_n200000_ours_steps_per_s"] = n_q * ITERATE / t_our
    # on a shared machine: CPU seconds spread over the two cores, what two idle cores would give
    res["forward_n200000_ours_steps_per_s_idle_estimate"] = n_q * ITERATE / (c_our / 2)

    n_b = 300
    t_ref, c_ref, _ = timed(lambda: reference_backward(n_b))
    t_our, c_our, _ = timed(lambda: simulate_backward(mix, T, DT, n_b, streams=Streams(0)))
    res["backward_n300_ref_s"] = t_ref; res["backward_n300_ours_s"] = t_our
    res["backward_n300_speedup"] = t_ref / t_our
    t_our, c_our, _ = timed(lambda: simulate_backward(mix, T, DT, 100_000, streams=Streams(0)))
    res["backward_n100000_ours_steps_per_s"] = 100_000 * ITERATE / t_our
    res["backward_n100000_ours_steps_per_s_idle_estimate"] = 100_000 * ITERATE / (c_our / 2)

    fmix = GaussianMixture.two_gaussians(1.0, 0.1)
    samples = fp.draw_samples(fmix, 100_000, Streams(0))
    q = 0.075 + 0.01 * np.arange(800)
    t_fp = 0.42
    t_ref, _, ref = timed(lambda: reference_fp(samples.x0, samples.xt(t_fp), q, t_fp))
    with fp.worker_pool(samples.x0.size * q.size) as pool:     # as notebook 04 computes it: a worker takes half
        fp.fp_potential(fmix, t_fp, q[:1], samples, pool=pool)   # the worker started (the notebook pays it once)
        t_our, c_our, ours = timed(lambda: fp.fp_potential(fmix, t_fp, q, samples, pool=pool))
    res["fp_ref_s"] = t_ref; res["fp_ours_s"] = t_our; res["fp_speedup"] = t_ref / t_our
    # this process's CPU seconds: its share of the blocks, the worker's share beside it on the other core
    res["fp_ours_s_idle_estimate"] = c_our
    res["fp_max_abs_diff_V"] = float(np.abs(np.array([r[1] for r in ref]) - ours["V"]).max())
    res["load_average_1min_end"] = os.getloadavg()[0]
    res["goals"] = {"forward_3x_at_n2000": res["forward_n2000_speedup"] >= 3.0,
                    "forward_1e8_steps_per_s_at_quick_n": res["forward_n200000_ours_steps_per_s"] >= 1e8,
                    "backward_3e7_steps_per_s_at_n1e5": res["backward_n100000_ours_steps_per_s"] >= 3e7,
                    "fp_under_3s": res["fp_ours_s"] < 3.0}
    res["goals_idle_estimate"] = {
        "forward_1e8_steps_per_s_at_quick_n": res["forward_n200000_ours_steps_per_s_idle_estimate"] >= 1e8,
        "backward_3e7_steps_per_s_at_n1e5": res["backward_n100000_ours_steps_per_s_idle_estimate"] >= 3e7,
        "fp_under_3s": res["fp_ours_s_idle_estimate"] < 3.0}
    for k, v in res.items():
        print(f"{k:40s} {v:.4g}" if isinstance(v, float) else f"{k:40s} {v}")
    write_benchmark("diffusion", res)
    return res


if __name__ == "__main__":
    main()
