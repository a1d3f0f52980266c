"""Benchmark: papers.diffusion against baselines that keep the released scripts' structure.

Paper: Yu & Huang, https://arxiv.org/abs/2405.11932; released code:
github.com/yuzd610/Nonequilbrium-physics-of-generative-diffusion-models (numpy, unseeded).

The baselines below are written for this benchmark (not copied). They keep what limits the speed
of the released scripts:

* forward: the initial points drawn in a Python loop per trajectory, the whole path matrix kept
  in memory (Euler-Maruyama), the Stratonovich sum taken on that matrix afterwards;
* backward: the same, but the medium entropy is a Python loop over trajectories and steps;
* Franz-Parisi: a loop over the q grid (two joblib workers, as released), each q evaluating
  -ln Z on all samples with central finite differences for V' and V'' (six evaluations per q).

Ours: chunked, multi-threaded, exact OU kernel forward, one score per backward step, analytic
V' and V''. Ratios are from one run on this machine; run `python benchmarks/bench_diffusion.py`.
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
from papers.diffusion import franz_parisi as fp  # noqa: E402
from papers.diffusion.mixture import GaussianMixture  # noqa: E402
from papers.diffusion.processes import simulate_backward, simulate_forward  # noqa: E402

MU, S2, DT, STEPS = 1.0, 1.0, 0.01, 1000
T = DT * STEPS


# ---- baselines in the released structure -----------------------------------------------------------

def _initial_loop(n, t_end=0.0):
    """Per-trajectory Python loop drawing from ½N(±μ e^{−t}, σ²) (σ = 1)."""
    comp = np.random.choice([1.0, -1.0], size=n)
    out = np.zeros(n)
    for i in range(n):
        out[i] = np.random.normal(comp[i] * MU * math.exp(-t_end), 1.0)
    return out


def _log_p(x, t):
    m = MU * math.exp(-t)
    return -0.5 * (x * x + m * m) + np.log(np.cosh(m * x)) - 0.5 * math.log(2 * math.pi)


def reference_forward(n):
    x = np.zeros((n, STEPS + 1))
    x[:, 0] = _initial_loop(n)
    for i in range(STEPS):
        x[:, i + 1] = x[:, i] - x[:, i] * DT + np.random.normal(0, 1, n) * math.sqrt(2 * DT)
    medium = np.sum(-np.diff(x, axis=1) / DT * (x[:, :-1] + x[:, 1:]) / 2, axis=1) * DT
    system = _log_p(x[:, 0], 0.0) - _log_p(x[:, -1], T)
    return medium + system


def reference_backward(n):
    x = np.zeros((n, STEPS + 1))
    x[:, 0] = _initial_loop(n, T)
    for i in range(STEPS):
        m = MU * math.exp(-(T - i * DT))
        x[:, i + 1] = x[:, i] + (2 * np.tanh(m * x[:, i]) * m - x[:, i]) * DT + np.random.normal(0, 1, n) * math.sqrt(2 * DT)
    medium = np.zeros(n)
    for r in range(n):                       # Python loop per trajectory and per step
        acc = 0.0
        row = x[r]
        for k in range(STEPS):
            mid = 0.5 * (row[k] + row[k + 1])
            m = MU * math.exp(-(T - k * DT))
            acc += (row[k + 1] - row[k]) * (2 * math.tanh(m * mid) * m - mid)
        medium[r] = acc
    system = _log_p(x[:, 0], T) - _log_p(x[:, -1], 0.0)
    return medium + system


def _neg_log_z(a, xt, q, t, s2=0.1, mu=1.0):
    e = math.exp(-t); d = 1 - e * e

    def h(y):
        p0 = (np.exp(-(y - mu) ** 2 / (2 * s2)) + np.exp(-(y + mu) ** 2 / (2 * s2))) / (2 * math.sqrt(2 * math.pi * s2))
        return (xt - e * y) ** 2 / (2 * d) - np.log(p0)
    z = (np.exp(-h(a + math.sqrt(q))) + np.exp(-h(a - math.sqrt(q)))) / (2 * math.sqrt(q))
    return -np.log(z)


def reference_fp(a, xt, qs, t, workers=2, h=1e-5):
    def one(q):
        v = np.mean(_neg_log_z(a, xt, q, t))
        d1 = np.mean((_neg_log_z(a, xt, q + h, t) - _neg_log_z(a, xt, q - h, t)) / (2 * h))
        d2 = np.mean((_neg_log_z(a, xt, q + h, t) - 2 * _neg_log_z(a, xt, q, t) + _neg_log_z(a, xt, q - h, t)) / h ** 2)
        return v, d1, d2
    try:
        from joblib import Parallel, delayed
        return Parallel(n_jobs=workers)(delayed(one)(q) for q in qs)
    except ImportError:  # pragma: no cover
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(workers) as pool:
            return list(pool.map(one, qs))


CPU = {}


def timed(fn, key=None):
    """Wall seconds (and, under `key`, process CPU seconds: less sensitive to a shared machine)."""
    c0 = time.process_time()
    t0 = time.perf_counter()
    out = fn()
    if key:
        CPU[key] = time.process_time() - c0
    return time.perf_counter() - t0, out


def main() -> dict:
    np.random.seed(0)
    mix = GaussianMixture.two_gaussians(MU, S2)
    res = {"cpus": os.cpu_count()}

    n_ref, n_ours = 20_000, 400_000
    simulate_forward(mix, 0.1, DT, 1000, seed=99)                       # warm-up
    t_ref, _ = timed(lambda: reference_forward(n_ref))
    t_our, _ = timed(lambda: simulate_forward(mix, T, DT, n_ours, seed=0), "forward")
    res["forward_ref_steps_per_s"] = n_ref * STEPS / t_ref
    res["forward_ours_steps_per_s"] = n_ours * STEPS / t_our
    res["forward_speedup"] = res["forward_ours_steps_per_s"] / res["forward_ref_steps_per_s"]

    n_ref_b, n_ours_b = 300, 200_000
    t_ref, _ = timed(lambda: reference_backward(n_ref_b))
    t_our, _ = timed(lambda: simulate_backward(mix, T, DT, n_ours_b, seed=0), "backward")
    res["backward_ref_steps_per_s"] = n_ref_b * STEPS / t_ref
    res["backward_ours_steps_per_s"] = n_ours_b * STEPS / t_our
    res["backward_speedup"] = res["backward_ours_steps_per_s"] / res["backward_ref_steps_per_s"]

    fmix = GaussianMixture.two_gaussians(1.0, 0.1)
    samples = fp.draw_samples(fmix, 100_000, 0)
    q = 0.075 + 0.01 * np.arange(800)
    t_fp = 0.42
    t_ref, ref = timed(lambda: reference_fp(samples.x0, samples.xt(t_fp), q, t_fp))
    t_our, ours = timed(lambda: fp.fp_potential(fmix, t_fp, q, samples), "fp")
    res["fp_ref_seconds"] = t_ref
    res["fp_ours_seconds"] = t_our
    res["fp_speedup"] = t_ref / t_our
    # what two otherwise idle cores would give: CPU seconds spread over the cores used
    ncpu = min(2, os.cpu_count() or 1)
    res["forward_ours_steps_per_s_idle_estimate"] = n_ours * STEPS / (CPU["forward"] / ncpu)
    res["backward_ours_steps_per_s_idle_estimate"] = n_ours_b * STEPS / (CPU["backward"] / ncpu)
    res["fp_ours_seconds_idle_estimate"] = CPU["fp"] / ncpu
    res["load_average_1min"] = os.getloadavg()[0]
    ref_v = np.array([r[0] for r in ref])
    res["fp_max_abs_diff_V"] = float(np.abs(ref_v - ours["V"]).max())
    res["goals"] = {"forward_1e8": res["forward_ours_steps_per_s"] >= 1e8,
                    "backward_3e7": res["backward_ours_steps_per_s"] >= 3e7,
                    "fp_under_3s": res["fp_ours_seconds"] < 3.0}
    for k, v in res.items():
        print(f"{k:28s} {v:.4g}" if isinstance(v, float) else f"{k:28s} {v}")
    write_benchmark("diffusion", res)
    return res


if __name__ == "__main__":
    main()
