"""The notebooks' figures: each function takes a study's output (`studies/<topic>.py: measure`) and returns
`[(name, figure, {"caption": ..., "claims": [...]})]`, which the notebook saves with `run.save_figure`.

Paper: "Precision Neural Network Quantization via Learnable Adaptive Modules",
arXiv:2504.17263, https://arxiv.org/abs/2504.17263
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import seaborn as sns

from . import levels

ASQ_VS_LSQ = ["asq-vs-lsq-w2", "asq-vs-lsq-w3", "asq-vs-lsq-w4"]


# -- 01 level sets ---------------------------------------------------------------------------------
def grid_levels():
    """The 4-bit normalised level sets of uniform, POT, POST and the released POST set on one axis."""
    fig, ax = plt.subplots(figsize=(7, 2.8))
    for i, g in enumerate(["uniform", "pot", "post", "post_released"]):
        lv = levels.level_set(g, 4).numpy()
        ax.scatter(lv, [i] * len(lv), s=22, label=f"{g} ({len(lv)} levels)")
    ax.set_yticks(range(4), ["uniform", "POT", "POST", "POST released"])
    ax.set_xlabel("normalised level (w / alpha)")
    ax.set_title("4-bit weight grids")
    return fig


def synthetic_error(syn):
    """Best-clip weight error per grid and width on Gaussian and Laplace samples (log scale)."""
    g = sns.catplot(data=syn, x="bits", y="nmse", hue="grid", col="distribution", kind="bar", height=3.4, aspect=1.2)
    g.set(yscale="log", ylabel="MSE / var at best clip")
    return g.figure


def layer_error(layers, model: str):
    """Weight error per quantized layer of one trained float model, per grid, at 3 and 4 bits."""
    sub = layers[layers.model == model]
    g = sns.catplot(data=sub, x="layer", y="nmse", hue="grid", col="bits", kind="point", height=3.4, aspect=1.4)
    g.set(yscale="log", ylabel="MSE / var")
    g.set_xticklabels(rotation=60, ha="right")
    return g.figure


def level_sets(out: dict, cfg) -> list:
    """Notebook 01's figures."""
    s0 = cfg.seeds[0]
    return [
        ("fig01-level-sets", grid_levels(), {"caption": "The 4-bit normalised weight grids: uniform, POT, the b-bit POST set used here and the released 2^b+1-level set with the sqrt 2 base restored."}),
        ("fig01-synthetic-error", synthetic_error(out["synthetic"]), {"caption": "Weight error (MSE / variance at the best clip) of each grid on Gaussian and Laplace samples, per bit width (log scale)."}),
        ("fig01-layer-error", layer_error(out["layers"], f"seed{s0}"), {"caption": f"Weight error per quantized layer of the trained float model (training replicate {s0}) for uniform, POT, POST and APoT at 3 and 4 bits.", "claims": ["post-vs-apot-mse-w4"]}),
    ]


# -- 02 QAT comparison -----------------------------------------------------------------------------
def lsq_vs_asq(df, fp_mean: float, dataset: str, arch: str):
    """Accuracy of LSQ, ASQ, the scalar-beta null and frozen-beta ASQ per width (mean and sd over seeds); dashed:
    the float model."""
    uni = df[df.method.isin(["fp", "lsq", "asq", "sbeta", "frozen-asq"]) & df.grid.isin(["uniform", "float"])].copy()
    fig, ax = plt.subplots(figsize=(6, 4))
    sns.pointplot(data=uni[uni.method != "fp"], x="bits", y="acc", hue="method", dodge=0.25, errorbar="sd", ax=ax)
    ax.axhline(fp_mean, color="k", ls="--", lw=1, label=f"FP {fp_mean:.2f}")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(f"{dataset} / {arch}: LSQ vs ASQ (mean +- sd over seeds)")
    ax.legend()
    return fig


def paired_deltas(pdf):
    """Per-seed paired differences (`qat_comparison.paired_deltas`), their means as bars."""
    fig, ax = plt.subplots(figsize=(7, 3.6))
    sns.stripplot(data=pdf, x="comparison", y="delta (pp)", hue="seed", s=7, ax=ax)
    ax.axhline(0, color="k", lw=1)
    means = pdf.groupby("comparison", sort=False)["delta (pp)"].mean()
    ax.scatter(range(len(means)), means.to_numpy(), marker="_", s=600, color="k", zorder=3)
    ax.set_title("paired differences per training seed (bar: mean)")
    ax.tick_params(axis="x", rotation=20)
    return fig


def grid_ablation(df, fp_mean: float, bits: int, grids):
    """Accuracy per weight grid at W`bits`A`bits` with ASQ activations (bars: mean, dots: seeds)."""
    abl = df[(df.method == "asq") & (df.bits == bits)]
    fig, ax = plt.subplots(figsize=(5, 3.6))
    sns.barplot(data=abl, x="grid", y="acc", order=grids, errorbar="sd", ax=ax, color="C2")
    sns.stripplot(data=abl, x="grid", y="acc", order=grids, color="k", ax=ax)
    lo = abl.acc.min() - 1
    ax.set_ylim(lo, max(abl.acc.max(), fp_mean) + 0.5)
    ax.axhline(fp_mean, color="k", ls="--", lw=1)
    ax.set_title(f"weight grid at W{bits}A{bits} (ASQ activations)")
    return fig


def qat_comparison(out: dict, cfg) -> list:
    """Notebook 02's figures."""
    df, b = out["table"], cfg.ablation_bits
    fp_mean = df[df.method == "fp"].acc.mean()
    if not (df.method != "fp").any():    # no QAT grid in the run (quick, `qat_grid` off): nothing to compare
        return []
    figs = [
        ("fig02-lsq-vs-asq", lsq_vs_asq(df, fp_mean, cfg.dataset, cfg.arch), {"caption": "Test accuracy of LSQ, ASQ, the trained scalar-beta null (sbeta: one trained beta per layer, no adapter) and ASQ with beta frozen at each layer's mean (a diagnostic) at W2A2, W3A3, W4A4 (mean and sd over the training seeds of this run); dashed: float model.", "claims": ASQ_VS_LSQ + ["asq-vs-sbeta-w2", "asq-w4-vs-fp"]}),
        ("fig02-paired-deltas", paired_deltas(out["pairs"]), {"caption": "Per-seed paired accuracy differences (same float checkpoint and data order): ASQ - LSQ, scalar beta - LSQ (the trained null) and frozen-beta ASQ - LSQ (a diagnostic) per bit width, POST - POT and POST - uniform at W4A4.", "claims": ASQ_VS_LSQ + ["post-vs-pot-acc-w4", "post-vs-uniform-w4"]}),
    ]
    if len(cfg.ablation_grids) > 1:   # the ablation runs at full only (quick trains none)
        figs.append(("fig02-grid-ablation", grid_ablation(df, fp_mean, b, cfg.ablation_grids), {"caption": f"Test accuracy per weight grid at W{b}A{b} with ASQ activations (bars: mean, dots: seeds); dashed: float model.", "claims": ["post-vs-pot-acc-w4", "post-vs-uniform-w4"]}))
    return figs


# -- 03 integer / LUT ------------------------------------------------------------------------------
def codes_and_logits(out: dict):
    """Left: the signed POST weight codes of the first quantized layer; right: integer minus fake-quant logits."""
    name = out["first_layer"]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    axes[0].bar(out["code_values"].numpy(), out["code_counts"].numpy())
    axes[0].set_xlabel("signed magnitude code")
    axes[0].set_title(f"weight codes, {name}")
    axes[1].scatter(out["fakequant_logits"].flatten(), out["logit_diff"].flatten(), s=3)
    axes[1].set_xlabel("fake-quant logit")
    axes[1].set_ylabel("integer - fake-quant")
    axes[1].set_title("logit difference (float64 reference)")
    fig.tight_layout()
    return fig


def integer_lut(out: dict) -> list:
    """Notebook 03's figure."""
    return [("fig03-codes-and-logits", codes_and_logits(out), {"caption": f"Left: histogram of the signed POST weight codes of {out['first_layer']}. Right: integer-path minus fake-quant logits (float64 reference) on 500 test images.", "claims": ["int-logits", "int-argmax"]})]


# -- 04 adapter ------------------------------------------------------------------------------------
def beta_per_layer(betas, seed: int):
    """beta over test images per quantized layer, one box per width."""
    fig, ax = plt.subplots(figsize=(8, 3.8))
    layers = list(dict.fromkeys(betas["layer"]))                      # in the order the layers were collected
    widths = list(dict.fromkeys(betas["width"]))
    span = 0.8 / len(widths)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for j, w in enumerate(widths):
        # matplotlib's own boxplot, vertical by default: seaborn 0.13's passes the `vert` argument Matplotlib
        # 3.11 deprecates (a warning in every run log)
        sub = betas[betas.width == w]
        at = [(i, sub.beta[sub.layer == name].to_numpy()) for i, name in enumerate(layers)]
        at = [(i, v) for i, v in at if len(v)]
        ax.boxplot([v for _, v in at], positions=[i - 0.4 + span * (j + 0.5) for i, _ in at], widths=0.9 * span,
                   patch_artist=True, manage_ticks=False, boxprops={"facecolor": colours[j % len(colours)]},
                   medianprops={"color": "k"}, flierprops={"markersize": 1})
        ax.plot([], [], "s", color=colours[j % len(colours)], label=w)
    ax.set_xticks(range(len(layers)), layers)
    ax.set_xlabel("layer")
    ax.set_ylabel("beta")
    ax.legend(title="width")
    ax.axhline(1, color="k", ls="--", lw=1)
    ax.tick_params(axis="x", rotation=45)
    ax.set_title(f"beta per layer over test images (ASQ, replicate {seed})")
    return fig


def beta_hist(betas, bits: int):
    """Histogram of beta over test images per layer at one width (each panel its own axes)."""
    top = betas[betas.bits == bits]
    g = sns.displot(data=top, x="beta", col="layer", col_wrap=4, height=2.6, aspect=1.2, bins=40, facet_kws={"sharex": False, "sharey": False})
    g.set_titles("{col_name}", size=11)
    for ax in g.axes.flat:
        ax.tick_params(labelsize=9)
    return g.figure


def beta_per_class(per_class, bits: int):
    """Mean beta per class label in each layer at one width."""
    fig, ax = plt.subplots(figsize=(8, 3.6))
    sns.lineplot(data=per_class[per_class.bits == bits], x="label", y="beta", hue="layer", marker="o", ax=ax)
    ax.set_title(f"mean beta per class, W{bits}A{bits}")
    ax.legend(fontsize=9, ncol=2, title="layer")
    return fig


def adapter(out: dict, cfg) -> list:
    """Notebook 04's figures (the narrowest width studied; at quick the ASQ W4A4 POST model of notebook 03)."""
    s0, b = cfg.seeds[0], int(out["betas"].bits.min())
    grid = str(out["betas"].grid.iloc[0])
    model = f"W{b}A{b}" + ("" if grid == "uniform" else f" {grid.upper()} weights")
    return [
        ("fig04-beta-per-layer", beta_per_layer(out["betas"], s0), {"caption": f"Distribution of the adapter factor beta over test images in each quantized layer, per bit width (ASQ, training replicate {s0})."}),
        ("fig04-beta-hist", beta_hist(out["betas"], b), {"caption": f"Histogram of beta over test images per layer at {model} (each panel its own axes)."}),
        ("fig04-beta-per-class", beta_per_class(out["per_class"], b), {"caption": f"Mean beta per class label in each layer at {model}."}),
    ]
