"""Figures: fixed-noise sample grids, synthetic scatter plots, metric bars, region curves.

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from common.plots import styled

from .synthetic import mixture


def tile(images: np.ndarray, cols: int = 8) -> np.ndarray:
    """(N, C, H, W) in [0, 1] -> one (rows*H, cols*W[, C]) mosaic."""
    images = np.asarray(images)
    n, c, h, w = images.shape
    rows = int(np.ceil(n / cols))
    out = np.ones((rows * h, cols * w, c))
    for i in range(n):
        r, k = divmod(i, cols)
        out[r * h:(r + 1) * h, k * w:(k + 1) * w] = images[i].transpose(1, 2, 0)
    return out[..., 0] if c == 1 else out


@styled
def sample_grids(grids: dict, title: str = "", cols: int = 8):
    """One panel per method, each a tile of the same fixed-noise samples."""
    names = list(grids)
    fig, axes = plt.subplots(1, len(names), figsize=(2.6 * len(names), 2.9), squeeze=False)
    for ax, name in zip(axes[0], names):
        ax.imshow(tile(grids[name], cols), cmap="gray", vmin=0, vmax=1)
        ax.set_title(name, fontsize=9)
        ax.axis("off")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


@styled
def synthetic_scatter(results: list[dict], replicate: int = 0):
    """Samples of each method on each mixture (replicate `replicate`), modes marked."""
    mixes = sorted({r["mixture"] for r in results}, reverse=True)
    methods = ["acl_ae", "ae_mmd_gc", "ae_normal", "ae_gauss", "ae_gmm", "gan", "aclgan", "aclganmmd", "uniform"]
    fig, axes = plt.subplots(len(mixes), len(methods), figsize=(2.2 * len(methods), 2.3 * len(mixes)), squeeze=False)
    for i, mix in enumerate(mixes):
        means, _ = mixture(mix)
        pts = {k: np.array(v["points"]) for r in results if r["mixture"] == mix and r["replicate"] == replicate
               for k, v in r.items() if isinstance(v, dict) and "points" in v}
        for j, m in enumerate(methods):
            ax = axes[i, j]
            ax.scatter(means[:, 0], means[:, 1], c="r", s=12, marker="x")
            if m in pts:
                ax.scatter(pts[m][:, 0], pts[m][:, 1], s=1, alpha=0.4)
            ax.set_xlim(-2.2, 2.2)
            ax.set_ylim(-2.2, 2.2)
            ax.set_xticks([])
            ax.set_yticks([])
            if i == 0:
                ax.set_title(m, fontsize=9)
        axes[i, 0].set_ylabel(mix)
    fig.tight_layout()
    return fig


def fid_boxplot(table, floor_fid: float):
    """FID per sampler over the replicates (notebook 02), the real-vs-real floor dashed."""
    fig, ax = plt.subplots(figsize=(6, 3.5))
    t = table.copy()
    t.boxplot(column="fid", by="method", ax=ax)
    ax.axhline(floor_fid, color="k", ls="--", lw=1, label="real-vs-real floor")
    ax.set_ylabel("FID on local classifier features")
    ax.set_title("")
    ax.legend()
    return fig


def class_histograms(results: list[dict], classes):
    """Notebook 03: the class histogram of ACL-classifier samples read by the evaluation network, and by the
    classifier's own head on G_c(z); one bar per replicate, uniform dashed."""
    import pandas as pd

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    frac = pd.DataFrame([r["metrics"]["acl"]["class_frac"] for r in results], columns=classes)
    frac.T.plot.bar(ax=axes[0], legend=False)
    axes[0].axhline(0.1, color="k", ls="--", lw=1)
    axes[0].set_title("class histogram of ACL-classifier samples (eval net)")
    own = pd.DataFrame([r["own_head_class_frac"] for r in results], columns=classes)
    own.T.plot.bar(ax=axes[1], legend=False)
    axes[1].axhline(0.1, color="k", ls="--", lw=1)
    axes[1].set_title("the classifier's own head on G_c(z)")
    fig.tight_layout()
    return fig


def region_curves(reg):
    """Notebook 05: mean density and precision per region of the prior (`prior_regions.region_table`), one
    line per study."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for study, g in reg.groupby("study"):
        mean = g.groupby("region", sort=False)[["density", "precision"]].mean()
        axes[0].plot(range(len(mean)), mean.density, "o-", label=study)
        axes[1].plot(range(len(mean)), mean.precision, "o-", label=study)
        ticks = list(mean.index)
    for ax, lab in zip(axes, ("density", "precision")):
        ax.set_xticks(range(len(ticks)), ticks, rotation=60, fontsize=7)
        ax.set_ylabel(lab)
    axes[0].legend()
    fig.tight_layout()
    return fig
