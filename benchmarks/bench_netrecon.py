"""Benchmark of the netrecon implementation against references that keep the released code's structure.

Z. Yu and H. Huang, "Network reconstruction may not mean dynamics prediction",
https://arxiv.org/abs/2409.04240 (official code: github.com/yuzd610/Network-reconstruction-may-not-mean-dynamics-prediction)

The references below are written here from the released scripts' structure (nothing copied):
  * Lyapunov point: the released lledian.py loop as it is (numpy float64, default BLAS threads,
    full trajectory arrays written column by column, two np.matmul per step, a Python list of
    logs), at its own sizes N = 1000, 5 networks, 1e4 steps, 2000 discarded;
  * reconstruction: one epoch of teacher-forced Adam over windows of 4 steps, batch 250;
  * two-replica DMFT: Monte-Carlo fixed point (Gaussian noise sampled jointly over all times and
    both replicas from the current kernel, paths integrated, kernel re-estimated), every iterate kept.
Ours, at the same sizes: one task per network in processes with one BLAS thread each, the
two-trajectory method in float64 (both states in one pass over J per step, papers/netrecon/kernels.py)
and the tangent map in float32; closed-form least squares; the exact forward two-replica propagation.
Every comparison is one run, reported as a ratio with the machine's load average.

    python benchmarks/bench_netrecon.py
"""
from __future__ import annotations

import os
import time
import tracemalloc

import numpy as np


# ---------------------------------------------------------------------------------------------
# references (released structure)
# ---------------------------------------------------------------------------------------------
def reference_lyapunov_point(N, g, n_nets, n_steps, n_discard, dt=0.01, eps=1e-6, seed=0):
    """The released lledian.py loop for one g, with its own library calls, dtype and sizes.

    numpy float64 with the default BLAS threads; both trajectories stored in full (N, steps + 1)
    arrays written column by column; two `np.matmul` matrix-vector products per step; the log
    distance computed with np.sqrt(np.sum(...)) and appended to a Python list every step, the
    companion pulled back with np.linalg.norm; the first `n_discard` entries dropped; every network
    restarts from the same initial state. Only the random draws are seeded here (the script is not).
    """
    rng = np.random.default_rng(seed)
    X1 = np.zeros((N, n_steps + 1))
    X2 = np.zeros((N, n_steps + 1))
    u = rng.standard_normal(N)
    X1[:, 0] = rng.normal(0, 1, N)
    X2[:, 0] = X1[:, 0] + eps * u / np.linalg.norm(u)
    lams = np.zeros(n_nets)
    for i in range(n_nets):
        logs = []
        J = rng.normal(loc=0, scale=np.sqrt(g**2 / N), size=(N, N))
        np.fill_diagonal(J, 0)
        for t in range(n_steps):
            X1[:, t + 1] = (1 - dt) * X1[:, t] + dt * np.matmul(J, np.tanh(X1[:, t]))
            X2[:, t + 1] = (1 - dt) * X2[:, t] + dt * np.matmul(J, np.tanh(X2[:, t]))
            logs.append(np.log(np.sqrt(np.sum((X2[:, t + 1] - X1[:, t + 1]) ** 2)) / eps) / dt)
            X2[:, t + 1] = X1[:, t + 1] + eps * (X2[:, t + 1] - X1[:, t + 1]) / np.linalg.norm(X2[:, t + 1] - X1[:, t + 1])
        lams[i] = np.mean(logs[n_discard:])
    return float(np.mean(lams))


def reference_adam_epoch(traj, dt, lr=0.1, batch=250, window=4, seed=0):
    import torch

    from papers.netrecon.recon import windows

    torch.manual_seed(seed)
    data = torch.as_tensor(windows(traj, window, traj.shape[0] // window))
    N = data.shape[-1]
    W = torch.nn.Parameter(torch.rand(N, N, dtype=torch.float64))
    opt = torch.optim.Adam([W], lr=lr)
    perm = torch.randperm(data.shape[0])
    for s in range(0, data.shape[0], batch):
        xb = data[perm[s:s + batch]]
        pred = [xb[:, 0]]
        for k in range(1, window):  # the released loop: one time step at a time, first state copied
            pred.append((1 - dt) * xb[:, k - 1] + dt * torch.tanh(xb[:, k - 1]) @ W.T)
        loss = ((torch.stack(pred, 1) - xb) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return W.detach().numpy()


def reference_two_replica_mc(g, eta, T, dt, n_samples, n_iter, seed=0):
    """Sampling DMFT for the Euler map, keeping every iterate's paths (samples, 2 nt, iterations)."""
    rng = np.random.default_rng(seed)
    nt = int(round(T / dt))
    rho = np.sqrt(1 - eta**2)
    gain = np.block([[np.ones((nt, nt)), rho * np.ones((nt, nt))], [rho * np.ones((nt, nt)), np.ones((nt, nt))]]) * g**2
    x0 = rng.standard_normal(n_samples)
    hist = np.zeros((n_samples, 2 * (nt + 1), n_iter))
    phi = np.tanh(np.concatenate([np.repeat(x0[:, None], nt, 1)] * 2, axis=1))  # first guess: frozen x0
    for it in range(n_iter):
        Cphi = phi.T @ phi / n_samples                                    # <phi(x_a(t)) phi(x_b(s))>
        K = gain * Cphi + 1e-10 * np.eye(2 * nt)
        L = np.linalg.cholesky(K)
        gam = rng.standard_normal((n_samples, 2 * nt)) @ L.T
        x = np.empty((n_samples, 2, nt + 1))
        x[:, :, 0] = x0[:, None]
        for n in range(nt):
            x[:, 0, n + 1] = (1 - dt) * x[:, 0, n] + dt * gam[:, n]
            x[:, 1, n + 1] = (1 - dt) * x[:, 1, n] + dt * gam[:, nt + n]
        hist[:, :, it] = x.reshape(n_samples, -1)
        phi = np.tanh(np.concatenate([x[:, 0, :nt], x[:, 1, :nt]], axis=1))
    xT, xS = x[:, 0], x[:, 1]
    return np.arange(nt + 1) * dt, ((xT - xS) ** 2).mean(0)


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def timed(fn, *a, **k):
    t0 = time.perf_counter()
    out = fn(*a, **k)
    return out, time.perf_counter() - t0


def peak_memory(fn, *a, **k):
    tracemalloc.start()
    out, sec = timed(fn, *a, **k)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return out, sec, peak / 2**20


def lyapunov_comparison(N, nets, steps, discard, repeats, task_module, pmap, one_thread):
    """The reference loop against ours at equal work, interleaved (reference, ours, reference, ...).

    Two sizes of the official protocol: one point (g = 2, 5 networks: 5 tasks on the machine's
    cores) and a slice of its g sweep (g = 1.5, 2, 3, 4; 20 tasks). Ours: the two-trajectory method in
    float64 (fused pair product when numba is present, else two gemv), and the same with the fused
    kernel switched off, on the same networks (lambda must agree to rounding); the tangent map in
    float32 for reference. lambda: mean over networks with its standard error.
    """
    from common.seed import Streams
    from papers.netrecon import kernels

    def ours_tasks(gs, **extra):
        # the reference's protocol and work: both trajectories through the discarded steps (state
        # transient and alignment of the separation), then the averaging window
        return [dict(N=N, g=g, streams=Streams(0).child("net", s), n_traj=1, t_transient=0.0, t_align=discard * 0.01,
                     t_average=(steps - discard) * 0.01, **extra) for g in gs for s in range(nets)]

    def run_ours(tasks, fused=True):
        out, sec = timed(pmap, task_module.lyapunov_task, [dict(t, fused=fused) for t in tasks], desc="ours")
        lam = np.array([r["lam_mean"] for r in out])
        return sec, lam

    with one_thread():  # compile (or load) the kernel once, outside the timings
        task_module.lyapunov_task(N=64, g=2.0, streams=Streams(0), n_traj=1, t_transient=0.0, t_average=0.1)
    sizes = {"point": [2.0], "sweep": [1.5, 2.0, 3.0, 4.0]}
    out = {"N": N, "networks_per_g": nets, "steps": steps, "discarded": discard, "repeats": repeats,
           "kernel_fused": kernels.available(),
           "reference": "lledian.py loop: numpy float64, default BLAS threads, two matmul per step",
           "ours": "float64 two-trajectory, one task per network, processes with one BLAS thread each"}
    for name, gs in sizes.items():
        rows = {"reference_s": [], "ours_s": [], "ours_unfused_s": [], "ours_f32_tangent_s": [], "load_average_1min": []}
        lam = {}
        for _ in range(repeats):  # interleaved sides, so that a change of load hits both
            rows["load_average_1min"].append(os.getloadavg()[0])
            t0 = time.perf_counter()
            lam["reference"] = [reference_lyapunov_point(N, g, nets, steps, discard) for g in gs]
            rows["reference_s"].append(time.perf_counter() - t0)
            sec, lam["ours"] = run_ours(ours_tasks(gs))
            rows["ours_s"].append(sec)
            if name == "point":  # the variants at the point only (the sweep is 4x longer)
                sec, lam["ours_unfused"] = run_ours(ours_tasks(gs), fused=False)
                rows["ours_unfused_s"].append(sec)
                sec, lam["ours_f32_tangent"] = run_ours(ours_tasks(gs, method="tangent", dtype="float32"))
                rows["ours_f32_tangent_s"].append(sec)
        rows = {k: v for k, v in rows.items() if v}
        ratio = {k: [r / o for r, o in zip(rows["reference_s"], rows[k + "_s"])]
                 for k in ("ours", "ours_unfused", "ours_f32_tangent") if k + "_s" in rows}
        per_g = {}
        for i, g in enumerate(gs):
            o = lam["ours"][i * nets:(i + 1) * nets]
            per_g[str(g)] = {"lambda_reference": lam["reference"][i], "lambda_ours": float(o.mean()),
                             "lambda_ours_sem": float(o.std(ddof=1) / np.sqrt(nets))}
            if "ours_unfused" in lam:
                per_g[str(g)]["lambda_unfused_minus_fused_max"] = float(np.max(np.abs(
                    lam["ours_unfused"][i * nets:(i + 1) * nets] - o)))
        # both sides are bound by reading J: bytes of J per network step, and the rate they reach
        n_steps_all = len(gs) * nets * steps
        traffic = {"reference_J_bytes_per_step": 2 * N * N * 8, "ours_J_bytes_per_step": N * N * 8,
                   "reference_GB_per_s": 2 * N * N * 8 * n_steps_all / min(rows["reference_s"]) / 1e9,
                   "ours_GB_per_s": N * N * 8 * n_steps_all / min(rows["ours_s"]) / 1e9}
        out[name] = {"g": gs, "tasks": len(gs) * nets, **rows, "J_traffic": traffic,
                     "speedup": {k: {"min": min(v), "max": max(v), "each": v} for k, v in ratio.items()},
                     "lambda": per_g}
        shown = ", ".join(f"{k} x{min(v):.2f}-{max(v):.2f}" for k, v in ratio.items())
        print(f"Lyapunov {name} ({len(gs) * nets} tasks): reference {min(rows['reference_s']):.1f}s; {shown}; "
              f"load {rows['load_average_1min']}", flush=True)
    return out


def main():
    from common.bench import write_benchmark
    from papers.netrecon import dmft, recon, rnn, tasks
    from common.parallel import one_thread, pmap

    quick = os.environ.get("REPRO_BENCH_QUICK") == "1"
    results = {}

    # 1. the Lyapunov unit at N = 1000: networks x 1e4 steps, the first 2000 discarded -----------
    N, nets = 1000, 5
    steps, discard = (2000, 400) if quick else (10_000, 2000)
    repeats = 1 if quick else 2
    results["lyapunov"] = lyapunov_comparison(N, nets, steps, discard, repeats, tasks, pmap, one_thread)

    # 2. reconstruction at N = 1000 --------------------------------------------------------------
    rng = np.random.default_rng(1)
    J = rnn.make_J(N, 2.0, rng)
    n_traj = 20 if quick else 60
    traj = rnn.simulate(J, rng.standard_normal((n_traj, N)), 500)
    W_ref, t_epoch = timed(reference_adam_epoch, traj, 0.01)
    with one_thread():
        W_ls, t_ls = timed(recon.fit_least_squares, traj, 0.01)
    results["reconstruction"] = {"N": N, "samples": int(n_traj * 500), "reference_adam_epoch_s": t_epoch,
                                 "least_squares_s": t_ls, "speedup_vs_one_epoch": t_epoch / t_ls,
                                 "relfro_adam_one_epoch": recon.rel_frobenius(W_ref, J),
                                 "relfro_least_squares": recon.rel_frobenius(W_ls, J)}
    print(f"Reconstruction N={N}: one Adam epoch {t_epoch:.1f}s (rel err {results['reconstruction']['relfro_adam_one_epoch']:.2g}), "
          f"least squares {t_ls:.1f}s (rel err {results['reconstruction']['relfro_least_squares']:.2g})", flush=True)
    del traj

    # 3. two-replica DMFT --------------------------------------------------------------------------
    g, eta, T = 2.0, 0.1, 10.0
    ms, it = (1000, 4) if quick else (4000, 10)
    (t_mc, D_mc), s_mc, mem_mc = peak_memory(reference_two_replica_mc, g, eta, T, 0.02, ms, it)
    with one_thread():
        r02, s02, mem02 = peak_memory(dmft.two_replica, g, eta, T=T, dt=0.02)
        r01, s01, mem01 = peak_memory(dmft.two_replica, g, eta, T=T, dt=0.01, n_nodes=61, half_width=8.0)
    i5 = int(round(5 / 0.02))
    published_bytes = 20000 * 2000 * 31 * 8  # the released solver's (samples, time, iterations) array
    results["two_replica"] = {
        "g": g, "eta": eta, "T": T,
        "reference": {"samples": ms, "iterations": it, "dt": 0.02, "seconds": s_mc, "peak_MiB": mem_mc,
                      "D5": float(D_mc[i5]), "D10": float(D_mc[-1])},
        "ours_dt0.02": {"seconds": s02, "peak_MiB": mem02, "D5": float(r02.D[i5]), "D10": float(r02.D[-1])},
        "ours_dt0.01": {"seconds": s01, "peak_MiB": mem01, "D5": float(r01.D[500]), "D10": float(r01.D[-1])},
        "speedup_same_dt": s_mc / s02, "memory_ratio_same_dt": mem_mc / mem02,
        "published_solver_array_GiB": published_bytes / 2**30,
    }
    print(f"Two-replica DMFT: reference MC ({ms} samples, {it} iterations) {s_mc:.1f}s {mem_mc:.0f} MiB, "
          f"D(10)={D_mc[-1]:.3f}; ours dt=0.02 {s02:.1f}s {mem02:.0f} MiB D(10)={r02.D[-1]:.3f}; "
          f"dt=0.01 {s01:.1f}s {mem01:.0f} MiB D(10)={r01.D[-1]:.3f}", flush=True)
    results["load_average_1min_end"] = os.getloadavg()[0]
    write_benchmark("netrecon", results)
    return results


if __name__ == "__main__":
    main()
