"""Figures of Yu & Huang (https://arxiv.org/abs/2405.11932), regenerated from the results of `studies`
(one module per notebook: each `measure(cfg, ...)` returns the arrays a figure here plots).

Each function returns a matplotlib Figure; the notebooks save it through
`run.save_figure(fig, name, caption=..., claims=[...])`. One style for all: 10-point labels,
8-point legends, panels of about 4.5 x 3.5 inches and no figure wider than 10 inches.
"""
from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import numpy as np

from common.plots import styled

from .franz_parisi import fold_fit
from .landscape import PHASES, potential
from .mixture import GaussianMixture


@styled
def ift_running_mean(res: dict):
    """Figs 2 and 7: ⟨e^{−ΔS_tot}⟩ against the number of trajectories, forward and backward."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharey=True)
    for ax, name in zip(axes, ("forward", "backward")):
        st = res["ift_" + name]
        n = st["running_n"]
        ax.plot(n, st["running_mean"], marker="o", ms=3, color="salmon")
        se_n = st["se"] * np.sqrt(st["n"] / n)
        ax.fill_between(n, 1 - 2 * se_n, 1 + 2 * se_n, color="grey", alpha=0.2, label="1 ± 2 SE")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xlabel("number of trajectories")
        ax.set_title(f"{name}: {st['mean']:.4f} ± {st['se']:.4f}")
        ax.set_ylim(0.9, 1.1)
    axes[0].set_ylabel(r"$\langle e^{-\Delta S_{tot}}\rangle$")
    axes[0].legend()
    fig.tight_layout()
    return fig


@styled
def entropy_histograms(paths, title: str):
    """Figs 3 and 8: histograms of ΔS, ΔS_E, ΔS_tot and e^{−ΔS_tot}."""
    fig, axes = plt.subplots(2, 2, figsize=(8, 6))
    items = [(paths.system, r"$\Delta S$"), (paths.medium, r"$\Delta S_E$"),
             (paths.total, r"$\Delta S_{tot}$"), (np.exp(-paths.total), r"$e^{-\Delta S_{tot}}$")]
    for ax, (vals, lab) in zip(axes.ravel(), items):
        hi = np.quantile(vals, 0.995) if lab.startswith("$e") else None
        ax.hist(vals if hi is None else vals[vals <= hi], bins=80, density=True, color="steelblue", alpha=0.8)
        ax.set_xlabel(lab)
        ax.set_title(f"mean {vals.mean():.3f}")
        ax.set_ylabel("density")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


@styled
def heavy_tail_running(ht: dict):
    """Running means of e^{−ΔS_tot} for several seeds where the estimator is heavy-tailed."""
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for k, r in enumerate(ht["runs"]):
        st = r["stats"]
        ax.plot(st["running_n"], st["running_mean"], lw=1, label=f"seed {k}: max {st['max']:.0f}")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("number of trajectories")
    ax.set_ylabel(r"running $\langle e^{-\Delta S_{tot}}\rangle$")
    ax.set_title(r"$\sigma^2=0.1$, T=1: heavy tails, no SE criterion")
    ax.legend()
    fig.tight_layout()
    return fig


@styled
def potential_profiles(cases, times):
    """Figs 4 and 6: U(x, t) for each (μ, σ) in `cases` at the given times (x range ±3·max(1, μ))."""
    fig, axes = plt.subplots(1, len(cases), figsize=(min(10.0, 4.5 * len(cases)), 3.4), squeeze=False)
    for ax, (mu, sigma) in zip(axes[0], cases):
        mix = GaussianMixture.two_gaussians(mu, sigma * sigma)
        x = np.linspace(-3 * max(1.0, mu), 3 * max(1.0, mu), 801)
        for t in times:
            ax.plot(x, potential(mix, x, t), label=f"t = {t:g}")
        ax.set_title(rf"$\mu$={mu:g}, $\sigma$={sigma:g}")
        ax.set_xlabel("x")
        ax.legend()
    axes[0][0].set_ylabel("U(x, t) − U(0, t)")
    fig.tight_layout()
    return fig


@styled
def phase_diagram(pd_res: dict):
    """Fig 5: the (μ, σ) phase diagram with the analytic boundaries over the numeric phases."""
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    mus, sig = pd_res["mus"], pd_res["sigmas"]
    cmap = matplotlib.colors.ListedColormap(["#dddddd", "#9ecae1", "#fdae6b"])
    ax.pcolormesh(mus, sig, pd_res["numeric"], cmap=cmap, vmin=-0.5, vmax=2.5, shading="nearest")
    s = np.linspace(0.01, np.sqrt(2), 400)
    ax.plot(np.sqrt(np.clip(s ** 2 - s ** 4 / 2, 0, None)), s, "k-", label=r"$\mu^2=\sigma^2-\sigma^4/2$")
    ax.axhline(np.sqrt(2), color="k", ls="--", label=r"$\sigma=\sqrt{2}$")
    for i, name in enumerate(PHASES):
        ax.scatter([], [], color=cmap(i), label=name, marker="s")
    ax.set_xlabel(r"$\mu$"); ax.set_ylabel(r"$\sigma$")
    ax.legend(loc="lower right")
    ax.set_title("phases (numeric colours, analytic lines)")
    fig.tight_layout()
    return fig


@styled
def rates_figure(r: dict, direction: str):
    """Fig 9 (forward) or Fig 10 (backward): π, φ, dS/dt; lines: closed form, dots: binned MC."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    c = r["closed"]
    if direction == "forward":
        lines = [("pi", r"$\pi$"), ("phi", r"$\phi$"), ("dSdt", r"$dS/dt$")]
        mc = r["mc_forward"]; keys = ["pi", "phi", "dS"]
    else:
        lines = [("pi_backward", r"$\pi^*$"), ("phi_backward", r"$\phi^*$"), ("dSds_backward", r"$dS/ds$")]
        mc = r["mc_backward"]; keys = ["pi", "phi", "dS"]
    for (key, lab), mk, col in zip(lines, keys, ("C0", "C1", "C2")):
        ax.plot(r["t"], c[key], color=col, label=lab)
        ax.errorbar(mc["t_mid"], mc[mk], yerr=2 * mc[mk + "_se"], fmt="o", ms=3, color=col, alpha=0.7)
    ts = r["metrics"]["speciation_t_rates"]
    ax.axvline(ts, color="k", ls="--", lw=0.8, label=f"$t_S$={ts:.4f}")
    if direction == "backward":
        ax.axvline(r["t_star"], color="grey", ls=":", lw=1, label=rf"argmin $\phi^*$={r['t_star']:.3f}")
    ax.axhline(0, color="k", lw=0.5)
    ax.set_xlabel("t")
    ax.set_title(f"{direction} entropy rates (lines: closed form; dots: MC ± 2 SE)")
    ax.legend()
    fig.tight_layout()
    return fig


@styled
def franz_parisi_figure(res: dict):
    """Fig 11: V(q), V'(q), V''(q) (rows) at each t (columns)."""
    times = list(res["curves"])
    fig, axes = plt.subplots(3, len(times), figsize=(min(10.0, 3.3 * len(times)), 7.5), squeeze=False, sharex=True)
    for j, t in enumerate(times):
        c = res["curves"][t]
        for i, (key, lab) in enumerate((("V", "V(q)"), ("dV", "V'(q)"), ("ddV", "V''(q)"))):
            ax = axes[i][j]
            ax.plot(c["q"], c[key], lw=1.5)
            ax.set_ylabel(lab)
            if key == "ddV":
                lo, hi = np.quantile(c[key], [0.02, 0.98])
                ax.set_ylim(lo - 0.1 * abs(hi - lo), hi + 0.1 * abs(hi - lo))
            if key != "V":
                ax.axhline(0, color="k", lw=0.5)
        axes[0][j].set_title(f"t = {t:g}")
        axes[2][j].set_xlabel("q")
    fig.tight_layout()
    return fig


@styled
def cloning_figure(res: dict):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for k, (d, c) in enumerate(res["curves"].items()):
        x = c["t"] - c["t_s"]
        ax.plot(x, c["exact"], color=f"C{k}", lw=1)
        ax.errorbar(x, c["mc"], yerr=2 * c["se"], fmt="o", ms=2.5, color=f"C{k}", label=f"d={d}: crossing {c['crossing'] - c['t_s']:+.3f}")
    ax.axhline(res["metrics"]["cloning_speciation_value"], color="k", ls="--", lw=0.8)
    ax.axvline(0, color="k", lw=0.5)
    for k, (d, c) in enumerate(res["curves"].items()):
        ax.axvline(c["t_u"] - c["t_s"], color=f"C{k}", ls=":", lw=0.8)
    ax.set_xlabel(r"$t - \frac{1}{2}\ln\Lambda$ (dotted: the U-curvature time $t_S$)")
    ax.set_ylabel("cloning probability")
    ax.set_title("Biroli-Mézard cloning, lines exact, dots MC")
    ax.legend()
    fig.tight_layout()
    return fig


@styled
def collapse_figure(res: dict):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for k, (d, c) in enumerate(res["curves"].items()):
        ax.plot(c["t"], c["Y"], color=f"C{k}", label=f"d={d}: {c['crossing']:.3f} vs $t_C$={c['t_C']:.3f}")
        ax.axvline(c["t_C"], color=f"C{k}", ls="--", lw=0.8)
    ax.axhline(0.5, color="k", lw=0.5)
    ax.set_xlabel("t"); ax.set_ylabel(r"self-overlap $Y(t)=E\sum_i P(i|x_t)^2$")
    ax.set_title("collapse of the empirical score (dashed: Biroli-Mézard $t_C$)")
    ax.legend()
    fig.tight_layout()
    return fig


@styled
def learned_figure(res: dict):
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    loss = res["losses"]
    k = max(1, len(loss) // 50)
    axes[0].plot(np.convolve(loss, np.ones(k) / k, mode="valid"))
    axes[0].set_xlabel("step"); axes[0].set_ylabel("DSM loss (moving average)"); axes[0].set_yscale("log")
    axes[1].errorbar(res["t"], res["prob"], yerr=2 * res["se"], fmt="o-", ms=3, label="learned score (± 2 SE)")
    axes[1].plot(res["t"], res["empirical"], "s--", ms=3, color="C2", label="exact empirical score")
    if res.get("untrained") is not None:      # the controls: a network that learned nothing, labels shuffled
        axes[1].plot(res["t"], res["untrained"], "^:", ms=3, color="C4", label="untrained network (null)")
        axes[1].plot(res["t"], res["empirical_shuffled"], "v:", ms=3, color="C7", label="empirical, labels shuffled (null)")
    axes[1].axvline(res["t_s"], color="k", ls="--", label=rf"$\frac{{1}}{{2}}\ln\Lambda$={res['t_s']:.3f}")
    axes[1].axhline(res["level"], color="grey", ls=":", label=f"level {res['level']:.4f}")
    axes[1].axvline(res["crossing"], color="C3", ls=":", label=f"crossing {res['crossing']:.3f}")
    if res.get("independent") is not None:    # learned-clones-independent: the late agreement against Σ_c w_c²
        axes[1].axhline(res["independent"], color="C1", ls="-.", lw=0.8, label=r"independent draws $\sum_c w_c^2$")
    axes[1].set_xlabel("t"); axes[1].set_ylabel("P(clones agree)")
    axes[1].legend()
    fig.tight_layout()
    return fig


@styled
def schematic_2d(res: dict):
    """Fig 1: data and noise clouds with a few forward (left) and backward (right) paths."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 4.2), sharex=True, sharey=True)
    for ax, name in zip(axes, ("forward", "backward")):
        p = res[name]
        ax.scatter(*p.x_start.T, s=2, alpha=0.3, color="C0", label="start")
        ax.scatter(*p.x_end.T, s=2, alpha=0.3, color="C1", label="end")
        for k in range(p.paths.shape[1]):
            ax.plot(p.paths[:, k, 0], p.paths[:, k, 1], lw=0.6, color="k", alpha=0.6)
        ax.set_title(f"{name}, T = {p.T:g}")
        ax.set_xlabel("$x_1$")
        ax.legend(markerscale=4)
    axes[0].set_ylabel("$x_2$")
    fig.tight_layout()
    return fig


@styled
def dft_figure(res: dict, bins: int = 60):
    """Detailed FT: ln P(ΔS_tot = s)/P̃(ΔS̃_tot = −s) from histograms (dots) against the line y = s
    and the logistic fit (which uses no bins)."""
    f, r = res["forward"], -res["reverse"]
    lo, hi = np.quantile(np.concatenate([f, r]), [0.005, 0.995])
    edges = np.linspace(lo, hi, bins + 1)
    cf, _ = np.histogram(f, edges); cr, _ = np.histogram(r, edges)
    mid = 0.5 * (edges[1:] + edges[:-1])
    ok = (cf > 20) & (cr > 20)
    y = np.log(cf[ok] / cr[ok]) - np.log(f.size / r.size)
    err = np.sqrt(1.0 / cf[ok] + 1.0 / cr[ok])
    fit = res["fit"]
    fig, ax = plt.subplots(figsize=(5.5, 4))
    ax.errorbar(mid[ok], y, yerr=2 * err, fmt="o", ms=3, label="histograms (± 2 SE)")
    ax.plot(mid, mid, "k--", lw=1, label="theorem: y = s")
    ax.plot(mid, fit["intercept"] + fit["slope"] * mid, color="C3", lw=1,
            label=f"fit: slope {fit['slope']:.3f} ± {fit['slope_se']:.3f}")
    ax.set_xlabel(r"$s$")
    ax.set_ylabel(r"$\ln P(\Delta S_{tot}=s)\,/\,\tilde P(\Delta\tilde S_{tot}=-s)$")
    ax.set_title(r"detailed FT, $\sigma^2=0.4$, T = 1")
    ax.legend()
    fig.tight_layout()
    return fig


@styled
def fp_threshold_figure(res: dict):
    """The barrier against t above the threshold, the fold law B ∝ (t − t_f)^{3/2} and the competing
    linear law fitted to the same points, and the bisection threshold."""
    fold = res["fold"]
    fig, ax = plt.subplots(figsize=(5.5, 4))
    if fold is not None:
        ok = np.isfinite(fold["barriers"])
        ax.plot(fold["ts"][ok], fold["barriers"][ok], "o", label="barrier (MC)")
        t_lin, s1, c1 = fold_fit(fold["ts"], fold["barriers"], exponent=1.0)
        slope, icpt = fold["fit"]
        lo = min(fold["t_fold"], t_lin, res["threshold"]) if np.isfinite(t_lin) else fold["t_fold"]
        tt = np.linspace(lo, fold["ts"].max(), 100)
        ax.plot(tt, np.clip(slope * tt + icpt, 0, None) ** 1.5, "C1-", lw=1, label=f"fold law (3/2): $t_f$ = {fold['t_fold']:.4f}")
        ax.plot(tt, np.clip(s1 * tt + c1, 0, None), "C2--", lw=1, label=f"linear law: $t_f$ = {t_lin:.4f}")
    ax.axvline(res["threshold"], color="k", ls=":", label=f"bisection: {res['threshold']:.4f}")
    ax.axhline(0, color="k", lw=0.5)
    ax.set_xlabel("t"); ax.set_ylabel(r"barrier $V(q_{max}) - V(q_{min})$")
    ax.set_title("where the secondary minimum disappears")
    ax.legend()
    fig.tight_layout()
    return fig
