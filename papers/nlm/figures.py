"""Figures for the NLM notebooks (arXiv:2506.23546); each takes a study's `measure` result (or the part of it
that one notebook section draws); the longest caption a notebook records is made here too (`sweep_caption`)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from common.plots import styled

from .visits import EXPLORE_MODELS


def _grid(ax, images, shape, ncol):
    h, w = shape
    n = len(images)
    nrow = int(np.ceil(n / ncol))
    canvas = np.full((nrow * (h + 1), ncol * (w + 1)), np.nan)      # NaN: the gaps between images, drawn white
    for i, im in enumerate(images):
        r, c = divmod(i, ncol)
        canvas[r * (h + 1): r * (h + 1) + h, c * (w + 1): c * (w + 1) + w] = (np.asarray(im).reshape(h, w) + 1) / 2
    cmap = plt.get_cmap("gray_r" if h <= 8 else "gray").with_extremes(bad="white")
    ax.imshow(canvas, cmap=cmap, vmin=0, vmax=1)
    ax.set_xticks([]); ax.set_yticks([])


@styled
def samples_over_age(res, n: int = 10, title: str = ""):
    steps = res["steps"]
    fig, axes = plt.subplots(len(steps) + 1, 1, figsize=(n * 0.6 + 1.5, 0.7 * (len(steps) + 1) + 0.6))
    _grid(axes[0], res["train"][:n], res["shape"], n); axes[0].set_ylabel("train", rotation=0, ha="right")
    for ax, s, imgs in zip(axes[1:], steps, res["images"]):
        _grid(ax, imgs[:n], res["shape"], n); ax.set_ylabel(f"t_age={s}", rotation=0, ha="right")
    fig.suptitle(title or "samples (generated from noise) over training age")
    fig.tight_layout()
    return fig


@styled
def age_curves(res, prefix="age"):
    m = res["metrics"]
    fig, ax = plt.subplots(1, 2, figsize=(9, 3.4))
    ax[0].semilogx(np.maximum(m[f"{prefix}_updates"], 1), m[f"{prefix}_e_aai_test"], "o-"); ax[0].set_ylabel("E_AAI (test)")
    ax[1].semilogx(np.maximum(m[f"{prefix}_updates"], 1), m[f"{prefix}_e2_test"], "o-"); ax[1].set_ylabel("E_2 (test)")
    for a in ax:
        a.set_xlabel("training age (updates)")
    fig.tight_layout()
    return fig


def _acc_panel(ax, m, P, tag, title):
    """Acc_S, Acc_T (± bootstrap SE) against the training set and the held-out images, one sample set."""
    for key, lab, style in (("acc_t_train", "Acc_T train", "o-"), ("acc_s_train", "Acc_S train", "s-"),
                            ("acc_t_test", "Acc_T held-out", "o--"), ("acc_s_test", "Acc_S held-out", "s--")):
        ax.errorbar(P, m[f"sweep{tag}_{key}"], yerr=m[f"sweep{tag}_{key}_se"], fmt=style, ms=3, capsize=2, label=lab)
    ax.errorbar(P, m["sweep_heldout_acc_mean_train"], yerr=m["sweep_heldout_acc_mean_train_se"], fmt="k:", capsize=2,
                label="held-out images as samples (null), (Acc_S+Acc_T)/2 train")
    ax.set_xscale("log")
    p_star, lo, hi, inside = (m[f"p_star{tag}{s}"] for s in ("", "_lo", "_hi", "_inside"))
    if np.isfinite(lo):                  # the interval over the bootstrap replicates that cross inside the range
        ax.axvspan(lo, hi, color="gray", alpha=0.15, label=f"crosses in {inside:.0%} of bootstraps")
    if np.isfinite(p_star):
        ax.axvline(p_star, ls="--", c="gray", label=f"P* = {p_star:.0f}")
    ax.axhline(0.5, c="gray", lw=0.8)
    ax.set_ylim(-0.03, 1.03); ax.set_title(title, fontsize=9); ax.legend(fontsize=6)


@styled
def sweep(res):
    """The P-sweep: the persistent chains (the claims' samples), the chains from noise, each against held-out
    images used as samples (the memorization null), held-out E_AAI of both against the untrained network's,
    and the memorized fraction (a secondary diagnostic) against the held-out images'."""
    m = res["metrics"]
    P = m["sweep_sizes"]
    fig, ax = plt.subplots(1, 4, figsize=(18, 3.8))
    _acc_panel(ax[0], m, P, "_pcd", "persistent chains (the claims' samples)")
    _acc_panel(ax[1], m, P, "", "chains from N(0, I)")
    for tag, lab in (("_pcd", "persistent chains"), ("", "from N(0, I)"), ("_untrained", "untrained network")):
        ax[2].errorbar(P, m[f"sweep{tag}_e_aai_test"], yerr=m[f"sweep{tag}_e_aai_test_se"], fmt="o-" if tag != "_untrained" else "k:",
                       ms=3, capsize=2, label=lab)
    ax[2].axhline(0.05, c="gray", lw=0.8, ls="--", label="0.05 (test-aai-large-p)")
    ax[2].set_xscale("log"); ax[2].set_ylabel("E_AAI (held-out)"); ax[2].legend(fontsize=6)
    ax[3].semilogx(P, m["sweep_memorized"], "o-", label="time-averaged")
    ax[3].semilogx(P, m["sweep_memorized_hot"], "s--", label="single samples")
    ax[3].semilogx(P, m["sweep_memorized_quench"], "^:", label="quenched")
    ax[3].semilogx(P, m["sweep_heldout_memorized"], "k:", label="held-out images (null)")
    ax[3].set_title("secondary diagnostic: memorized fraction (from noise)", fontsize=9)
    ax[3].set_ylim(-0.03, 1.03); ax[3].legend(fontsize=6)
    for a in ax:
        a.set_xlabel("training-set size P")
        a.set_xticks(P, [str(p) for p in P]); a.minorticks_off()
    fig.tight_layout()
    return fig


@styled
def sweep_samples(res, n: int = 8):
    """Replicate 0 at every P: persistent chains (left) and time-averaged chains from noise (right)."""
    per = res["per_model"]
    rows = [k for k, (p, r) in enumerate(per) if r == 0]
    fig, axes = plt.subplots(len(rows), 2, figsize=(2 * (n * 0.6 + 1.2), 0.7 * len(rows) + 0.7), squeeze=False)
    for i, k in enumerate(rows):
        _grid(axes[i, 0], res["images_pcd"][k][:n], res["shape"], n)
        _grid(axes[i, 1], res["images"][k][:n], res["shape"], n)
        axes[i, 0].set_ylabel(f"P={per[k][0]}", rotation=0, ha="right")
    axes[0, 0].set_title("persistent chains (single samples)", fontsize=9); axes[0, 1].set_title("from N(0, I), time-averaged", fontsize=9)
    fig.tight_layout()
    return fig


@styled
def ooe(res):
    m = res["metrics"]
    t = res["times"]
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.6))
    se_at = dict.fromkeys(m.get("ooe_boot_times", []))
    for name, lab in (("pcd", "PCD-k"), ("rdm", f"Rdm-{m['ooe_rdm_k']}")):
        line, = ax[0].loglog(t, np.maximum(res["curves"][name]["e_aai"], 1e-4), "o-", label=lab)
        if se_at:                                  # bootstrap SE at the time points of the windows
            se = dict(zip(m["ooe_boot_times"], m[f"ooe_boot_se_e_aai_{name}"]))
            tt = [x for x in t if x in se]
            yy = [res["curves"][name]["e_aai"][t.index(x)] for x in tt]
            ax[0].errorbar(tt, yy, yerr=[se[x] for x in tt], fmt="none", ecolor=line.get_color(), capsize=2)
        ax[1].loglog(t, res["curves"][name]["e2"], "o-", label=lab)
    ax[0].axvline(m["ooe_rdm_k"], ls="--", c="gray", label="Rdm training chain length")
    for key, c in (("near_k", "C2"), ("mid", "C4"), ("late", "C3")):
        w = m.get(f"ooe_window_{key}")
        if w:
            ax[0].axvspan(min(w) / 1.1, max(w) * 1.1, color=c, alpha=0.12, label=f"window {key}")
    ax[0].set_ylabel("E_AAI (test)"); ax[1].set_ylabel("E_2 (test)")
    for a in ax:
        a.set_xlabel("generation time (Langevin steps)"); a.legend(fontsize=7)
    fig.tight_layout()
    return fig


@styled
def exploration(res):
    """PCA trajectory of the trained model's chain 0; that chain's data-like windows after burn-in and
    their class (the claims' measure), against the nulls' (the quench from the same state first);
    classes and transitions per chain for every model."""
    m = res["metrics"]
    fig = plt.figure(figsize=(20, 4))
    ax = fig.add_subplot(1, 4, 1, projection="3d")
    for c in np.unique(res["train_labels"]):
        sel = res["train_labels"] == c
        ax.scatter(*res["pc_train"][sel].T, s=6, alpha=0.4, label=f"class {c}")
    ax.plot(*res["pc_frames"].T, c="k", lw=0.4, alpha=0.7, label="chain")
    ax.set_xlabel("PC1"); ax.set_ylabel("PC2"); ax.set_zlabel("PC3"); ax.legend(fontsize=7)
    ax2 = fig.add_subplot(1, 4, 2)
    start, w = res["burn_steps"], res["window_steps"]
    for name, mk in zip(EXPLORE_MODELS, ("o", "s", "x", "+", "d")):
        cls = np.asarray(res["window_classes"][name])
        t = start + w * (np.arange(len(cls)) + 0.5)
        ok = cls >= 0
        ax2.plot(t[ok], cls[ok], mk, ms=4, label=f"{name}: {ok.mean():.0%} of windows data-like")
    classes = np.unique(res["train_labels"])
    ax2.set_yticks(classes); ax2.set_ylim(classes.min() - 0.5, classes.max() + 0.5)
    ax2.set_xlim(start, start + w * len(cls))
    ax2.set_xlabel("Langevin step (window centre, after burn-in)"); ax2.set_ylabel("class of a data-like window")
    ax2.legend(fontsize=7)
    names = EXPLORE_MODELS
    ax3, ax4 = fig.add_subplot(1, 4, 3), fig.add_subplot(1, 4, 4)
    for i, name in enumerate(names):
        cl = np.asarray(m[f"explore_{name}_classes"], float)
        ax3.plot(i + np.linspace(-0.15, 0.15, len(cl)), cl, "o", ms=4)
        ax3.plot(i, m[f"explore_{name}_classes_median"], "_", c="k", ms=20)
        tr = np.asarray(m[f"explore_{name}_transitions"], float)
        ax4.plot(i + np.linspace(-0.15, 0.15, len(tr)), tr, "o", ms=4)
        ax4.errorbar(i, tr.mean(), yerr=m[f"explore_{name}_transitions_se"], fmt="_", c="k", ms=20, capsize=4)
    ax3.axhline(2, c="gray", lw=0.8, ls="--", label="2 (exploration-classes, on the median)")
    ax3.set_ylabel("classes visited per chain"); ax3.legend(fontsize=7)
    ax4.axhline(3, c="gray", lw=0.8, ls="--", label="3 (exploration-transitions, on the mean)")
    ax4.set_ylabel("class transitions per chain"); ax4.legend(fontsize=7)
    for a in (ax3, ax4):
        a.set_xticks(range(len(names)), [{"j0": "J = 0"}.get(n, n) for n in names])
    fig.tight_layout()
    return fig


@styled
def denoising(res):
    """The least-squares baseline: the clean patterns (top row), the flow's frames from the corrupted
    input, each pattern's pixel-error ratio at the end (≤ 0.3 counts as restored), and the energies."""
    frames = sorted(res["frames"])
    n = len(res["ratio"])
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.8), gridspec_kw={"width_ratios": [2, 1]})
    h, w = res["shape"]
    imgs = list(res["clean"]) + [res["frames"][f][i] for f in frames for i in range(n)]
    _grid(axes[0], imgs, (h, w), n)
    axes[0].set_title("rows: clean, then flow steps " + ", ".join(map(str, frames)), fontsize=9)
    axes[0].set_xlabel("error ratio: " + " ".join(f"{r:.2f}" for r in res["ratio"]), fontsize=8)
    e = res["energy"]
    axes[1].semilogy(np.maximum(e, 1e-12), lw=0.8); axes[1].set_xlabel("flow step"); axes[1].set_ylabel("E (kinetic energy)")
    fig.tight_layout()
    return fig


@styled
def denoising_by_nlm(res):
    """The 10 patterns, corrupted, and restored by the T = 1 Langevin dynamics (images averaged over the
    run, first noise replica) of the NLM-trained network, the untrained one it started from, and J = 0."""
    im = res["nlm_images"]
    keys = (("clean", "clean"), ("corrupted", "corrupted"), ("nlm", "NLM-trained"), ("nlm_untrained", "untrained"),
            ("nlm_j0", "J = 0"))
    n = len(im["clean"])
    fig, axes = plt.subplots(len(keys), 1, figsize=(n * 0.6 + 1.8, 0.75 * len(keys) + 0.3))
    for ax, (key, lab) in zip(axes, keys):
        _grid(ax, im[key], res["shape"], n); ax.set_ylabel(lab, rotation=0, ha="right")
    fig.tight_layout()
    return fig


@styled
def spectrum(res):
    steps = res["steps"]
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    for s in steps:
        ev = res["eig"][s]
        ax[0].scatter(ev.real, ev.imag, s=4, label=f"t_age={s}")
    th = np.linspace(0, 2 * np.pi, 200)
    ax[0].plot(2 * np.cos(th), 2 * np.sin(th), "k--", lw=0.6, label="g = 2 disk")
    ax[0].set_aspect("equal"); ax[0].legend(fontsize=6); ax[0].set_xlabel("Re λ"); ax[0].set_ylabel("Im λ")
    ax[1].semilogx(np.maximum(steps, 1), res["eta"], "o-"); ax[1].set_xlabel("training age (updates)")
    ax[1].set_ylabel("η = Σ J_ij J_ji / Σ J_ij²")
    fig.tight_layout()
    return fig


@styled
def rule_check(res):
    fig, ax = plt.subplots(figsize=(4, 4))
    ax.plot(res["fd"], res["rule"], "o")
    lim = np.abs(res["fd"]).max() * 1.1
    ax.plot([-lim, lim], [-lim, lim], "k--", lw=0.6)
    ax.set_xlabel("finite-difference ∂L/∂θ"); ax.set_ylabel("local rule")
    fig.tight_layout()
    return fig


SWEEP_CLAIMS = ["memorization-small-p", "memorization-small-p-from-noise", "generalization-large-p", "transition-in-range",
                "test-aai-large-p", "memorization-falls-with-p"]


def sweep_caption(cfg) -> str:
    """fig04's caption (notebook 02): what `sweep` draws, for the profile `cfg`."""
    return (f"The P-sweep (trained models per P: {cfg.sweep_replicates}). Adversarial accuracies against the training set (solid) and "
            f"held-out images (dashed), ± bootstrap SE, of the persistent chains continued at the final J, b (the samples the "
            f"memorization, generalization, transition and held-out E_AAI claims judge) and of "
            f"chains from N(0, I) after {cfg.sweep_gen_steps} steps (memorization-small-p-from-noise). Dotted: held-out images used "
            f"as the samples, (Acc_S + Acc_T)/2 ± SE: new data's level, against which the memorization claims (max(Acc_S, Acc_T) at "
            f"the smallest P, paired bootstrap: mem_gap_small_p*) and the transition (the samples' curve below that level at the "
            f"smallest P and above it at the largest, p_cross_rel_pcd_inside) are judged; their controls, the untrained network "
            f"and new data against new data, are in the metrics. P* (logged): where (Acc_S + Acc_T)/2 on the training set rises "
            f"through 1/2, shaded its 95 % interval over the bootstrap replicates that cross inside the range. Third panel: "
            f"held-out E_AAI against the untrained network's (the generalization claims' control, the training set returned as "
            f"samples, is in the metrics: large_p_copies_*). Fourth: the memorized fraction, a secondary diagnostic, against the "
            f"held-out images' (memorization-falls-with-p: its fall from the smallest to the largest P, and its control's).")
