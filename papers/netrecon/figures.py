"""Figures for the netrecon notebooks (matplotlib, headless, default fonts).

Z. Yu and H. Huang, "Network reconstruction may not mean dynamics prediction",
https://arxiv.org/abs/2409.04240

Each function takes a result of a study's `measure` (`studies/`) and returns a matplotlib Figure; the notebook saves it
with `run.save_figure(fig, name, caption=..., claims=[...])`. One style for all of them: panels of
about 4.8 x 3.6 inches, 10-point labels, 8-point legends, and every legend label shown once.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from common.plots import styled

PANEL = (4.8, 3.6)


def _panels(n: int, height: float = PANEL[1]):
    fig, axes = plt.subplots(1, n, figsize=(PANEL[0] * n, height))
    return fig, np.atleast_1d(axes)


def legend(ax, **kwargs):
    """A legend with each label once (several artists may share a label)."""
    handles, labels = ax.get_legend_handles_labels()
    seen = {}
    for h, lab in zip(handles, labels):
        if lab and not lab.startswith("_") and lab not in seen:
            seen[lab] = h
    if seen:
        ax.legend(list(seen.values()), list(seen.keys()), **kwargs)
    return list(seen.keys())


@styled
def trajectories(trajs):
    fig, axes = _panels(len(trajs))
    for ax, tr in zip(axes, trajs):
        ax.plot(tr["t"], tr["x"], lw=0.8)
        ax.set(title=f"g = {tr['g']:g}", xlabel="t", ylabel="$x_i(t)$")
    fig.tight_layout()
    return fig


@styled
def lambda_vs_g(grid, sub=(), theory=None, sub_label="networks at N = {N}"):
    fig, ax = plt.subplots(figsize=PANEL)
    gs = sorted({r["g"] for r in grid})
    m = [np.mean([v for r in grid if r["g"] == g for v in r["lam"]]) for g in gs]
    s = [np.std([v for r in grid if r["g"] == g for v in r["lam"]]) for g in gs]
    ax.errorbar(gs, m, yerr=s, fmt="o", label=f"grid over g, N = {grid[0]['N']}")
    if sub:
        gq = sorted({r["g"] for r in sub})
        ax.plot(gq, [np.mean([v for r in sub if r["g"] == g for v in r["lam"]]) for g in gq], "s",
                label=sub_label.format(N=sub[0]["N"]))
    if theory is not None:
        ax.plot(theory[0], theory[1], "-", color="k", label="DMFT")
    gg = np.linspace(0, 1, 20)
    ax.plot(gg, gg - 1, "--", color="gray", label="g - 1")
    ax.axvline(1.0, color="gray", lw=0.8)
    ax.axhline(0.0, color="gray", lw=0.8)
    ax.set(xlabel="g", ylabel=r"largest Lyapunov exponent $\lambda$")
    legend(ax)
    fig.tight_layout()
    return fig


@styled
def scatter_WJ(by_g):
    fig, axes = _panels(len(by_g))
    for ax, (g, r) in zip(axes, by_g.items()):
        J, W = r["J"].ravel(), r["W_adam"].ravel()
        ax.plot(J, W, ".", ms=1, alpha=0.3)
        lim = [J.min(), J.max()]
        ax.plot(lim, lim, "k-", lw=0.8)
        ax.set(xlabel="$J_{ij}$", ylabel="$W_{ij}$ (Adam)", title=f"g = {g:g}")
    fig.tight_layout()
    return fig


@styled
def training(by_g):
    fig, axes = _panels(2)
    for g, r in by_g.items():
        ep = np.arange(1, len(r["hist"]["loss"]) + 1)
        axes[0].semilogy(ep, r["hist"]["loss"], "o-", label=f"g = {g:g}")
        axes[1].semilogy(ep, r["hist"]["d_W"], "o-", label=f"g = {g:g}")
    axes[0].set(xlabel="epoch", ylabel="training loss")
    axes[1].set(xlabel="epoch", ylabel="$d_W$")
    legend(axes[0])
    fig.tight_layout()
    return fig


@styled
def dW_vs_P(by_g):
    fig, ax = plt.subplots(figsize=PANEL)
    for g, r in by_g.items():
        sw = r["sweep"]
        ax.loglog(sw["P"], np.maximum(sw["dW_exact"], 1e-32), "o--", label=f"least squares, exact data, g = {g:g}")
        ax.loglog(sw["P"], sw["dW_noisy"], "s-", label=f"ridge, noisy data, g = {g:g}")
        if r["adam_sweep"]:
            P, d = [e[0] for e in r["adam_sweep"]], [e[1] for e in r["adam_sweep"]]   # (P, d_W, epochs run)
            ax.loglog(P, d, "^-", label=f"Adam (paper), g = {g:g}")
    ax.axvline(next(iter(by_g.values()))["J"].shape[0], color="gray", lw=0.8)
    ax.set(xlabel="number of samples P", ylabel="$d_W$")
    legend(ax)
    fig.tight_layout()
    return fig


@styled
def adam_student_error(by_g, delta):
    """RMS teacher-student error per unit of the Adam-learned students, from attractor states."""
    fig, ax = plt.subplots(figsize=PANEL)
    for i, (g, r) in enumerate(by_g.items()):
        if "pair" not in r:                   # in chaos: no teacher drawn was chaotic
            continue
        p = r["pair"]
        ax.semilogy(p["t"], p["rms"], color=f"C{i}", lw=0.5, alpha=0.5)
        ax.semilogy(p["t"], p["rms"].mean(axis=1), color=f"C{i}", lw=1.5, label=f"g = {g:g}, r(W, J) = {r['r']:.4f}")
    ax.axhline(delta, color="gray", ls="--", lw=0.8, label=rf"$\delta$ = {delta:g}")
    ax.set(xlabel="t", ylabel="RMS error per unit", title="students learned by Adam")
    legend(ax)
    fig.tight_layout()
    return fig


@styled
def teacher_student(ex):
    fig, ax = plt.subplots(figsize=(1.4 * PANEL[0], PANEL[1]))
    for i in range(ex["xT"].shape[1]):
        ax.plot(ex["t"], ex["xT"][:, i], "-", color=f"C{i}", lw=1)
        ax.plot(ex["t"], ex["xS"][:, i], "--", color=f"C{i}", lw=1)
    ax.set(xlabel="t", ylabel="$x_i$", title=rf"teacher (solid) and student (dashed), g = {ex['g']:g}, $\eta$ = {ex['eta']:g}")
    fig.tight_layout()
    return fig


@styled
def horizon(res, delta):
    etas = res["etas"]
    fig, axes = _panels(2)
    for i, (g, h) in enumerate(res["horizon"].items()):
        x = np.log(1 / etas)
        axes[0].plot(x, h["Tm"], "o", color=f"C{i}", label=f"g = {g:g}")
        f = h["fit"]
        axes[0].plot(x, f["intercept"] + f["slope"] * x, "-", color=f"C{i}", lw=0.8,
                     label=rf"fit: $\lambda_{{fit}}$ = {f['lam_fit']:.3f}, Benettin {1 / np.mean(1 / h['lam']):.3f}")
        # each student runs until all its states have crossed delta: D(t) while every network's student runs
        big, small = np.isfinite(h["D"][:, -1]), np.isfinite(h["D"][:, 0])
        axes[1].semilogy(h["t"][big], h["D"][big, -1], color=f"C{i}", label=f"g = {g:g}, eta = {etas[-1]:g}")
        axes[1].semilogy(h["t"][small], h["D"][small, 0], "--", color=f"C{i}", label=f"g = {g:g}, eta = {etas[0]:g}")
    axes[0].set(xlabel=r"$\ln(1/\eta)$", ylabel=r"$T_{pd}$ ($\sqrt{D}$ = %g)" % delta)
    legend(axes[0])
    axes[1].axhline(delta**2, color="gray", lw=0.8)
    axes[1].set(xlabel="t", ylabel="D(t)")
    legend(axes[1])
    fig.tight_layout()
    return fig


@styled
def one_step(res):
    fig, ax = plt.subplots(figsize=PANEL)
    for g, h in res["horizon"].items():
        ax.loglog(res["etas"], h["eps"], "o", label=f"measured, g = {g:g}")
        ax.loglog(res["etas"], h["eps_theory"], "-", lw=0.8, label=rf"$\Delta t\sqrt{{2Ng^2(1-\rho)\langle\phi^2\rangle}}$, g = {g:g}")
    ax.set(xlabel=r"$\eta$", ylabel=r"one-step error $\epsilon$")
    legend(ax)
    fig.tight_layout()
    return fig


@styled
def quiescent(res, delta: float = 0.3):
    q = res["quiescent"]
    fig, axes = _panels(2)
    axes[0].plot(q["t"], q["rms_over_eta"])
    axes[0].axhline(0.5, color="gray", ls="--", lw=0.8)
    axes[0].set(xlabel="t", ylabel=r"RMS error / $\eta$", title="g < 1: absolute error (any student's decays)")
    axes[1].semilogy(q["t"][1:], q["rel"][1:], label=r"student, $\eta$ = 0.1")
    axes[1].semilogy(q["t"][1:], q["rel_untrained"][1:], label=r"untrained ($\eta$ = 1)")
    axes[1].axhline(delta, color="gray", ls="--", lw=0.8)
    axes[1].set(xlabel="t", ylabel=r"RMS($x_S - x_T$) / RMS($x_T$)", title="relative to the teacher's state")
    legend(axes[1])
    fig.tight_layout()
    return fig


@styled
def data_size(res):
    """d_W against P (left) and T_pd against d_W (right); the right panel says so when the run had no horizons
    (ds_horizons off, as at quick)."""
    fig, axes = _panels(2)
    for r in res["data_size"]:
        axes[0].loglog(r["P"], r["d_W"], "o-", label=f"network {r['net']}")
        T = r["T_pd"]                      # (size, state), NaN where the run ended before the horizon
        if T is None:
            continue
        Tm = np.array([np.mean(t[np.isfinite(t)]) if np.isfinite(t).any() else np.nan for t in T])
        axes[1].semilogx(r["d_W"], Tm, "o-", label=rf"$\lambda$ = {r['lam']:.3f}")
    axes[0].set(xlabel="number of samples P", ylabel="$d_W$ (ridge, noisy data)")
    axes[1].set(xlabel="$d_W$", ylabel="$T_{pd}$")
    legend(axes[0])
    if any(r["T_pd"] is None for r in res["data_size"]):
        axes[1].text(0.5, 0.5, "horizons not run at this profile\n(ds_horizons off)", ha="center", va="center",
                     transform=axes[1].transAxes)
    else:
        axes[1].set_xscale("log")
        axes[1].invert_xaxis()
        legend(axes[1])
    fig.tight_layout()
    return fig


@styled
def stationary(res, max_lag):
    fig, axes = _panels(len(res["by_g"]))
    for ax, (g, r) in zip(axes, res["by_g"].items()):
        th = r["theory"]
        sel = th.tau <= max_lag
        ax.plot(th.tau[sel], th.Delta[sel], "k-", label="DMFT")
        ax.plot(r["tau"], r["D_sim"], "--", label="simulation")
        ax.set(xlabel=r"$\tau$", ylabel=r"$\Delta(\tau)$", title=f"g = {g:g}")
        legend(ax)
    fig.tight_layout()
    return fig


@styled
def two_replica(res):
    cases = [k for k in res["cases"] if k[0] != "sat"]
    fig, axes = _panels(len(cases))
    for ax, key in zip(axes, cases):
        c = res["cases"][key]
        ax.plot(c["t_th"], c["D_th"], "k-", label="two-replica DMFT")
        ax.plot(c["t_sim"], c["D_sim"], "--", label="simulation")
        ax.fill_between(c["t_sim"], c["D_sim"] - c["D_sd"], c["D_sim"] + c["D_sd"], alpha=0.3)
        ax.set(xlabel="t", ylabel="D(t)", title=f"g = {key[0]:g}, eta = {key[1]:g}")
        legend(ax)
    fig.tight_layout()
    return fig


@styled
def saturation(res):
    sats = [k for k in res["cases"] if k[0] == "sat"]
    fig, ax = plt.subplots(figsize=PANEL)
    for i, key in enumerate(sats):
        c = res["cases"][key]
        ax.semilogy(c["t_th"], c["D_th"], "-", color=f"C{i}", label=f"DMFT, g = {key[1]:g}, eta = {key[2]:g}")
        ax.semilogy(c["t_sim"], c["D_sim"], "--", color=f"C{i}", label="simulation")
        if c["two_delta0"] > 0:
            ax.axhline(c["two_delta0"], color=f"C{i}", lw=0.8, ls=":", label=r"$2\Delta_0$")
    ax.set(xlabel="t", ylabel="D(t)")
    legend(ax)
    fig.tight_layout()
    return fig


@styled
def running_estimates(stat_res):
    fig, ax = plt.subplots(figsize=PANEL)
    for i, (g, r) in enumerate(stat_res.items()):
        for j, (t, run) in enumerate(r["running"]):
            ax.plot(t, run, color=f"C{i}", lw=0.8, label=f"g = {g:g}" if j == 0 else None)
        ax.axhline(r["lam_dmft"], color=f"C{i}", ls="--", lw=0.8)
    ax.set(xlabel="averaging time", ylabel=r"running $\lambda$ estimate")
    legend(ax)
    fig.tight_layout()
    return fig


@styled
def spectrum(spec):
    fig, axes = _panels(2)
    axes[0].plot(np.arange(1, len(spec["lam"]) + 1), spec["lam"], "o")
    axes[0].axhline(0, color="gray", lw=0.8)
    axes[0].set(xlabel="index i", ylabel=r"$\lambda_i$")
    axes[1].plot(spec["times"], spec["running"][:, :5])
    axes[1].set(xlabel="averaging time", ylabel=r"running $\lambda_{1..5}$")
    fig.tight_layout()
    return fig
