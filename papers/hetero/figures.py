"""Figures of the hetero notebooks.

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007
"""
from __future__ import annotations

import statistics

import matplotlib.pyplot as plt
import numpy as np

from common.plots import styled


@styled
def loss_curves(res: dict):
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4))
    for k, v in res["losses"].items():
        ax.plot(v, label=k, lw=1)
    ax.plot(res["reference"], "k--", lw=1, label="single process")
    ax.set(xlabel="step", ylabel="loss (nats/token)", title="per-step loss, every link")
    ax.legend(fontsize=8)
    ref = np.array(res["reference"])
    for k, v in res["losses"].items():
        d = np.abs(np.array(v) - ref)
        bx.semilogy(np.maximum(d, 1e-12), label=k, lw=1)
    bx.set(xlabel="step", ylabel="|loss - single-process loss| (1e-12 = equal)", title="difference to one process")
    bx.legend(fontsize=8)
    fig.tight_layout()
    return fig


@styled
def grad_norms(res: dict):
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.semilogy(res["grad_norms"], label="global gradient norm (before clipping)")
    ax.axhline(res["clip"], color="r", ls="--", label=f"clip = {res['clip']}")
    ax.set(xlabel="step", ylabel="norm")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


@styled
def stability(res: dict):
    fig, ax = plt.subplots(figsize=(6, 4))
    if not res["losses"]:
        ax.text(0.5, 0.5, "not run at this profile", ha="center", transform=ax.transAxes)
        return fig
    ax.plot(res["losses"], lw=1, label="pipeline loss")
    if res["floor"] is not None:
        ax.axhline(res["floor"], color="k", ls="--", label=f"entropy rate {res['floor']:.3f}")
    ax.set(xlabel="step", ylabel="loss (nats/token)", title="Markov corpus: loss toward its floor")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


@styled
def throughput(res: dict):
    fig, ax = plt.subplots(figsize=(6, 4))
    names = list(res["rates"])
    for i, k in enumerate(names):
        v = res["rates"][k]
        ax.scatter(np.full(len(v), i), v, s=14, alpha=0.6)
        ax.hlines(statistics.median(v), i - 0.3, i + 0.3, color="k")
    ax.set_xticks(range(len(names)), names, rotation=20)
    ax.set(ylabel="tokens/s (each dot a window; bar: median)", title="emulated pipeline throughput per link")
    fig.tight_layout()
    return fig


@styled
def p2p_bandwidth(res: dict):
    fig, ax = plt.subplots(figsize=(6, 4))
    for k, d in res["gbps"].items():
        sizes = sorted(d)
        ax.loglog(sizes, [statistics.median(d[s]) for s in sizes], "o-", label=k)
    ax.set(xlabel="message bytes", ylabel="one-way GB/s (median)", title="point-to-point bandwidth (loopback)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


@styled
def projection(res: dict):
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, (m, r) in zip(axes, res["projections"].items()):
        names = list(r["ratios"])
        vals = [r["ratios"][n]["vs_nv"] for n in names]
        ax.barh(names, vals, color=["C0" if "homog" in n else "C2" if n == "device_direct" else "C1" for n in names])
        ax.axvspan(0.94, 0.98, color="g", alpha=0.15, label="paper: 94-98% (device-direct)")
        ax.set(xlim=(0.6, 1.02), xlabel="tokens/s relative to NVIDIA-homogeneous", title=f"{m} (PROJECTION)")
        ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    return fig


@styled
def sensitivity(res: dict):
    fig, ax = plt.subplots(figsize=(6, 4))
    for m, rows in res["sensitivity"].items():
        x = [r["amd_over_nv"] for r in rows]
        ax.plot(x, [r["vs_nv"] for r in rows], "o-", label=f"{m} vs NVIDIA")
        ax.plot(x, [r["vs_amd"] for r in rows], "s--", label=f"{m} vs AMD")
    ax.axhline(1.0, color="k", lw=0.5)
    ax.set(xlabel="assumed AMD/NVIDIA per-GPU speed", ylabel="device-direct throughput ratio", title="projection sensitivity")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


CLUSTER_PANELS = (  # (claim metric, its control, criterion, title)
    ("cluster_cf2_vs_cf1", "cluster_cf2_samenic_vs_cf1", 1.8, "bandwidth k=2 / k=1\n(control: 2 channels on NIC 0)"),
    ("cluster_dd_vs_cf1", "cluster_dd_staged_vs_cf1", 1.2, "device-direct / CPU-fwd k=1\n(control: staging forced on)"),
    ("cluster_uneven_vs_even", "cluster_uneven_vs_even_rho1", 1.05, "uneven / even split\n(control: rho = 1)"),
    ("cluster_mixed_vs_amd", "cluster_mixed_even_vs_amd", 1.05, "mixed / AMD-homogeneous\n(control: even split)"),
    ("cluster_dd_vs_homog", "cluster_cf1_vs_homog", 0.97, "training: device-direct / direct\n(control: CPU-fwd k=1, staged)"),
)


@styled
def cluster(metrics: dict):
    fig, axes = plt.subplots(1, len(CLUSTER_PANELS), figsize=(15, 3.6))
    for ax, (m, c, crit, title) in zip(axes, CLUSTER_PANELS):
        for x, key, mark in ((0, m, "o"), (1, c, "x")):
            v = metrics.get(key) or []
            ax.plot(np.full(len(v), x) + np.linspace(-0.1, 0.1, len(v)), v, mark, ms=5)
        ax.axhline(crit, color="r", ls="--", lw=1)
        ax.axhline(1.0, color="k", lw=0.5)
        ax.set_xticks([0, 1], ["claim", "control"])
        ax.set_xlim(-0.5, 1.5)
        ax.set_title(title, fontsize=9)
    axes[0].set_ylabel("per-window ratio")
    fig.tight_layout()
    return fig
