"""Figures for the netrecon notebooks (matplotlib, headless, default fonts).

Z. Yu and H. Huang, "Network reconstruction may not mean dynamics prediction",
https://arxiv.org/abs/2409.04240

Each function takes a result of `pipeline` and returns a matplotlib Figure; the notebook saves it
with `run.save_figure` and closes it.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np


def trajectories(trajs):
    fig, axes = plt.subplots(1, len(trajs), figsize=(5 * len(trajs), 3.4), sharex=True)
    for ax, tr in zip(np.atleast_1d(axes), trajs):
        ax.plot(tr["t"], tr["x"], lw=0.8)
        ax.set(title=f"g = {tr['g']:g}", xlabel="t", ylabel="$x_i(t)$")
    fig.tight_layout()
    return fig


def lambda_vs_g(grid, sub=(), theory=None):
    fig, ax = plt.subplots(figsize=(6, 4))
    gs = sorted({r["g"] for r in grid})
    m = [np.mean([v for r in grid if r["g"] == g for v in r["lam"]]) for g in gs]
    s = [np.std([v for r in grid if r["g"] == g for v in r["lam"]]) for g in gs]
    ax.errorbar(gs, m, yerr=s, fmt="o", label=f"simulation, N = {grid[0]['N']}")
    if sub:
        gq = sorted({r["g"] for r in sub})
        ax.plot(gq, [np.mean([v for r in sub if r["g"] == g for v in r["lam"]]) for g in gq], "s",
                label=f"simulation, N = {sub[0]['N']}")
    if theory is not None:
        ax.plot(theory[0], theory[1], "-", color="k", label="DMFT")
    gg = np.linspace(0, 1, 20)
    ax.plot(gg, gg - 1, "--", color="gray", label="g - 1")
    ax.axvline(1.0, color="gray", lw=0.8)
    ax.axhline(0.0, color="gray", lw=0.8)
    ax.set(xlabel="g", ylabel=r"largest Lyapunov exponent $\lambda$")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def scatter_WJ(by_g):
    fig, axes = plt.subplots(1, len(by_g), figsize=(4.5 * len(by_g), 4))
    for ax, (g, r) in zip(np.atleast_1d(axes), by_g.items()):
        J, W = r["J"].ravel(), r["W_adam"].ravel()
        ax.plot(J, W, ".", ms=1, alpha=0.3)
        lim = [J.min(), J.max()]
        ax.plot(lim, lim, "k-", lw=0.8)
        ax.set(xlabel="$J_{ij}$", ylabel="$W_{ij}$ (Adam)", title=f"g = {g:g}")
    fig.tight_layout()
    return fig


def training(by_g):
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for g, r in by_g.items():
        ep = np.arange(1, len(r["hist"]["loss"]) + 1)
        axes[0].semilogy(ep, r["hist"]["loss"], "o-", label=f"g = {g:g}")
        axes[1].semilogy(ep, r["hist"]["d_W"], "o-", label=f"g = {g:g}")
    axes[0].set(xlabel="epoch", ylabel="training loss")
    axes[1].set(xlabel="epoch", ylabel="$d_W$")
    axes[0].legend()
    fig.tight_layout()
    return fig


def dW_vs_P(by_g):
    fig, ax = plt.subplots(figsize=(6, 4))
    for g, r in by_g.items():
        sw = r["sweep"]
        ax.loglog(sw["P"], np.maximum(sw["dW_exact"], 1e-32), "o--", label=f"least squares, exact data, g = {g:g}")
        ax.loglog(sw["P"], sw["dW_noisy"], "s-", label=f"ridge, noisy data, g = {g:g}")
        if r["adam_sweep"]:
            P, d = zip(*r["adam_sweep"])
            ax.loglog(P, d, "^-", label=f"Adam (paper), g = {g:g}")
    ax.axvline(next(iter(by_g.values()))["J"].shape[0], color="gray", lw=0.8)
    ax.set(xlabel="number of samples P", ylabel="$d_W$")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def teacher_student(ex):
    fig, ax = plt.subplots(figsize=(7, 3.6))
    for i in range(ex["xT"].shape[1]):
        ax.plot(ex["t"], ex["xT"][:, i], "-", color=f"C{i}", lw=1)
        ax.plot(ex["t"], ex["xS"][:, i], "--", color=f"C{i}", lw=1)
    ax.set(xlabel="t", ylabel="$x_i$", title=f"teacher (solid) vs student (dashed), g = {ex['g']:g}, eta = {ex['eta']:g}")
    fig.tight_layout()
    return fig


def horizon(res, delta):
    etas = res["etas"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for i, (g, h) in enumerate(res["horizon"].items()):
        x = np.log(1 / etas)
        axes[0].plot(x, h["Tm"], "o", color=f"C{i}", label=f"g = {g:g}")
        f = h["fit"]
        axes[0].plot(x, f["intercept"] + f["slope"] * x, "-", color=f"C{i}", lw=0.8,
                     label=rf"fit: $\lambda_{{fit}}$ = {f['lam_fit']:.3f}, Benettin {1 / np.mean(1 / h['lam']):.3f}")
        full = np.all(np.isfinite(h["D"]), axis=1)  # times every network reached
        axes[1].semilogy(h["t"][full], h["D"][full, -1], color=f"C{i}", label=f"g = {g:g}, eta = {etas[-1]:g}")
        axes[1].semilogy(h["t"][full], h["D"][full, 0], "--", color=f"C{i}", label=f"g = {g:g}, eta = {etas[0]:g}")
    axes[0].set(xlabel=r"$\ln(1/\eta)$", ylabel=r"$T_{pd}$ ($\sqrt{D}$ = %g)" % delta)
    axes[0].legend(fontsize=7)
    axes[1].axhline(delta**2, color="gray", lw=0.8)
    axes[1].set(xlabel="t", ylabel="D(t)")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    return fig


def one_step(res):
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for g, h in res["horizon"].items():
        ax.loglog(res["etas"], h["eps"], "o", label=f"measured, g = {g:g}")
        ax.loglog(res["etas"], h["eps_theory"], "-", lw=0.8, label=rf"$\Delta t\sqrt{{2Ng^2(1-\rho)\langle\phi^2\rangle}}$, g = {g:g}")
    ax.set(xlabel=r"$\eta$", ylabel=r"one-step error $\epsilon$")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def quiescent(res):
    q = res["quiescent"]
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    ax.plot(q["t"], q["rms_over_eta"])
    ax.axhline(0.5, color="gray", ls="--", lw=0.8)
    ax.set(xlabel="t", ylabel=r"RMS error / $\eta$", title="g < 1: reconstruction implies prediction")
    fig.tight_layout()
    return fig


def data_size(res):
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for r in res["data_size"]:
        axes[0].loglog(r["P"], r["d_W"], "o-", label=f"network {r['seed']}")
        axes[1].semilogx(r["d_W"], np.nanmean(r["T_pd"], axis=1), "o-", label=rf"$\lambda$ = {r['lam']:.3f}")
    axes[0].set(xlabel="number of samples P", ylabel="$d_W$ (ridge, noisy data)")
    axes[1].invert_xaxis()
    axes[1].set(xlabel="$d_W$", ylabel="$T_{pd}$")
    axes[0].legend(fontsize=7)
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    return fig


def stationary(res, max_lag):
    fig, axes = plt.subplots(1, len(res["by_g"]), figsize=(5 * len(res["by_g"]), 3.8))
    for ax, (g, r) in zip(np.atleast_1d(axes), res["by_g"].items()):
        th = r["theory"]
        sel = th.tau <= max_lag
        ax.plot(th.tau[sel], th.Delta[sel], "k-", label="DMFT")
        ax.plot(r["tau"], r["D_sim"], "--", label="simulation")
        ax.set(xlabel=r"$\tau$", ylabel=r"$\Delta(\tau)$", title=f"g = {g:g}")
        ax.legend()
    fig.tight_layout()
    return fig


def two_replica(res):
    cases = [k for k in res["cases"] if k[0] != "sat"]
    fig, axes = plt.subplots(1, len(cases), figsize=(4.6 * len(cases), 3.8))
    for ax, key in zip(np.atleast_1d(axes), cases):
        c = res["cases"][key]
        ax.plot(c["t_th"], c["D_th"], "k-", label="two-replica DMFT")
        ax.plot(c["t_sim"], c["D_sim"], "--", label="simulation")
        ax.fill_between(c["t_sim"], c["D_sim"] - c["D_sd"], c["D_sim"] + c["D_sd"], alpha=0.3)
        ax.set(xlabel="t", ylabel="D(t)", title=f"g = {key[0]:g}, eta = {key[1]:g}")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def saturation(res):
    sats = [k for k in res["cases"] if k[0] == "sat"]
    fig, ax = plt.subplots(figsize=(6, 4))
    for i, key in enumerate(sats):
        c = res["cases"][key]
        ax.semilogy(c["t_th"], c["D_th"], "-", color=f"C{i}", label=f"DMFT, g = {key[1]:g}, eta = {key[2]:g}")
        ax.semilogy(c["t_sim"], c["D_sim"], "--", color=f"C{i}", label="simulation")
        if c["two_delta0"] > 0:
            ax.axhline(c["two_delta0"], color=f"C{i}", lw=0.8, ls=":", label=r"$2\Delta_0$")
    ax.set(xlabel="t", ylabel="D(t)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def running_estimates(stat_res):
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for i, (g, r) in enumerate(stat_res.items()):
        for j, (t, run) in enumerate(r["running"]):
            ax.plot(t, run, color=f"C{i}", lw=0.8, label=f"g = {g:g}" if j == 0 else None)
        ax.axhline(r["lam_dmft"], color=f"C{i}", ls="--", lw=0.8)
    ax.set(xlabel="averaging time", ylabel=r"running $\lambda$ estimate")
    ax.legend()
    fig.tight_layout()
    return fig


def spectrum(spec):
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    axes[0].plot(np.arange(1, len(spec["lam"]) + 1), spec["lam"], "o")
    axes[0].axhline(0, color="gray", lw=0.8)
    axes[0].set(xlabel="index i", ylabel=r"$\lambda_i$")
    axes[1].plot(spec["times"], spec["running"][:, :5])
    axes[1].set(xlabel="averaging time", ylabel=r"running $\lambda_{1..5}$")
    fig.tight_layout()
    return fig
