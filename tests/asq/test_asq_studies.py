"""The studies' mappings from measurements to the metrics the notebooks log, on hand-computable inputs (no
training, no notebook): exact keys and values."""
import math
from types import SimpleNamespace

import pandas as pd
import pytest
import torch

from papers.asq.studies import adapter, integer_lut, level_sets, qat_comparison


# ---- 01 level sets --------------------------------------------------------------------------------------------
def test_synthetic_metrics_name_distribution_grid_and_width():
    syn = pd.DataFrame([{"distribution": d, "grid": g, "bits": b, "nmse": v}
                        for d, b, g, v in (("gaussian", 4, "post", 0.25), ("gaussian", 4, "pot", 0.5),
                                           ("laplace", 2, "post", 1.0), ("laplace", 2, "pot", 2.0))])
    wide = syn.pivot_table(index=["distribution", "bits"], columns="grid", values="nmse")
    assert level_sets.synthetic_metrics(wide) == {"nmse_gaussian_pot_w4": 0.5, "nmse_gaussian_post_w4": 0.25,
                                                  "nmse_laplace_pot_w2": 2.0, "nmse_laplace_post_w2": 1.0}


def layer_table():
    # (layer, bits): errors of post, pot, uniform, apot
    errs = {("a", 4): (1.0, 2.0, 0.5, 1.5), ("b", 4): (1.0, 2.0, 1.5, 0.9), ("c", 4): (3.0, 2.0, 1.0, 3.5),
            ("d", 4): (1.05, 4.0, 1.0, 1.1),
            ("a", 3): (3.0, 2.0, 1.0, 1.0), ("b", 3): (1.0, 2.0, 1.0, 1.0), ("c", 3): (3.0, 2.0, 1.0, 1.0),
            ("d", 3): (3.0, 2.0, 1.0, 1.0)}
    return pd.DataFrame([{"model": "seed0", "layer": l, "grid": g, "bits": b, "nmse": v}
                         for (l, b), vals in errs.items() for g, v in zip(("post", "pot", "uniform", "apot"), vals)])


def test_layer_metrics_are_shares_of_layers():
    m = level_sets.layer_metrics(layer_table())
    assert list(m) == ["frac_layers_post_lower_mse_w4", "frac_layers_post_lower_mse_vs_apot_w4",
                       "frac_layers_pot_lower_mse_vs_apot_w4", "frac_layers_post_lower_mse_w3",
                       "frac_layers_uniform_lower_mse_w4", "median_post_over_uniform_mse_w4",
                       "frac_layers_post_within_10pct_uniform_w4"]
    assert m["frac_layers_post_lower_mse_vs_apot_w4"] == 0.75  # the identity: a, c, d below APoT; b above
    assert m["frac_layers_pot_lower_mse_vs_apot_w4"] == 0.25   # its broken variant: POT below APoT only on c
    assert m["frac_layers_post_lower_mse_w4"] == 0.75          # a, b, d below POT; c above
    assert m["frac_layers_post_lower_mse_w3"] == 0.25          # only b
    assert m["frac_layers_uniform_lower_mse_w4"] == 1.0        # a figure: uniform below POT on every layer
    # post / uniform at 4 bits: 2, 2/3, 3, 1.05 -> median 1.525; within 10 %: b (2/3) and d (1.05)
    assert m["median_post_over_uniform_mse_w4"] == pytest.approx(1.525)
    assert m["frac_layers_post_within_10pct_uniform_w4"] == 0.5


def test_level_table_counts_levels_and_storage():
    t = level_sets.level_table().set_index(["grid", "bits"])
    assert t.loc[("post", 4), "levels"] == 15 and t.loc[("post", 4), "storage bits"] == 4
    assert t.loc[("post_released", 4), "levels"] == 17 and t.loc[("post_released", 4), "storage bits"] == 5
    assert t.loc[("post", 3), "positive levels"] == "0.5, 0.7071, 1"


# ---- 02 QAT comparison --------------------------------------------------------------------------------------
def grid_table():
    acc = {"fp": [90.0, 92.0], "lsq-w2a2-uniform": [80.0, 81.0], "asq-w2a2-uniform": [81.0, 83.0],
           "frozen-asq-w2a2-uniform": [80.0, 80.0], "lsq-w4a4-uniform": [89.0, 90.0], "asq-w4a4-uniform": [89.5, 91.5],
           "frozen-asq-w4a4-uniform": [89.0, 91.0], "ptq-asq-w4a4-uniform": [70.0, 72.0], "asq-w4a4-pot": [88.0, 90.0],
           "asq-w4a4-post": [89.0, 92.0]}
    return pd.DataFrame([{"seed": s, "config": c, "acc": a} for c, vals in acc.items() for s, a in zip((1, 0), vals)])


def cfg(**kw):
    return SimpleNamespace(**{"bits": [2, 4], "ablation_bits": 4, "ablation_grids": ["uniform", "pot", "post"],
                              "dataset": "fashion_mnist", "arch": "small_resnet", **kw})


def test_qat_metrics_pair_per_seed_lists_and_means():
    out = qat_comparison.grid_metrics(cfg(), grid_table())
    m = out["metrics"]
    assert m["seeds"] == [0, 1] and m["n_seeds"] == 2
    assert m["acc_fp_per_seed"] == [92.0, 90.0] and m["acc_fp_mean"] == 91.0 and m["acc_fp_std"] == pytest.approx(math.sqrt(2))
    assert m["acc_asq_w2_per_seed"] == [83.0, 81.0] and m["acc_asq_frozen_w2_per_seed"] == [80.0, 80.0]
    assert m["acc_ptq_asq_w4_per_seed"] == [72.0, 70.0]
    assert m["acc_post_w4_per_seed"] == [92.0, 89.0] and m["acc_uniform_w4_per_seed"] == m["acc_asq_w4_per_seed"]
    # per seed, mean over W2 and W4 of ASQ - LSQ: seed 0 (2 + 1.5) / 2, seed 1 (1 + 0.5) / 2
    assert m["delta_asq_lsq_allbits_per_seed"] == [1.75, 0.75]
    assert m["delta_asq_frozen_lsq_allbits_per_seed"] == [(-1.0 + 1.0) / 2, (0.0 + 0.0) / 2]
    assert m["delta_asq_lsq_w2"] == 1.5 and m["asq_ahead_frac_w2"] == 1.0
    assert m["delta_post_pot_w4"] == 1.5 and m["post_ahead_pot_frac_w4"] == 1.0
    assert m["delta_post_uniform_w4"] == 0.0
    assert "fp_floor_w4" not in m and m["delta_asq_fp_w4"] == 90.5 - 91.0   # no threshold from the run's own data
    assert not any(k.startswith("imagenet_") for k in m)
    assert list(out["table"].columns) == ["seed", "config", "acc"] and len(out["table"]) == 20


def test_imagenet_lists_only_for_imagenet_resnet34():
    m = qat_comparison.grid_metrics(cfg(dataset="imagenet", arch="resnet34"), grid_table())["metrics"]
    assert list(m)[-3:] == ["imagenet_r34_acc_asq_w4_per_seed", "imagenet_r34_acc_fp_per_seed",
                            "imagenet_r34_acc_lsq_w4_per_seed"]
    assert m["imagenet_r34_acc_asq_w4_per_seed"] == [91.5, 89.5] and m["imagenet_r34_acc_lsq_w4_per_seed"] == [90.0, 89.0]
    assert qat_comparison.imagenet_metrics(m, "imagenet", "resnet18", [4]) == {}
    assert qat_comparison.imagenet_metrics(m, "imagenet", "resnet34", [2, 3]) == {}


def test_paired_deltas_per_seed():
    pdf = qat_comparison.paired_deltas(grid_table(), [2, 4], 4, ["uniform", "pot", "post"])
    got = {(r.comparison, r.seed): r._3 for r in pdf.itertuples()}
    assert got[("ASQ-LSQ W2", 0)] == 2.0 and got[("frozen-LSQ W4", 1)] == 0.0
    assert got[("POST-POT W4", 1)] == 1.0 and got[("POST-uniform W4", 0)] == 0.5
    assert list(pdf.comparison.unique()) == ["ASQ-LSQ W2", "ASQ-LSQ W4", "frozen-LSQ W2", "frozen-LSQ W4",
                                             "POST-POT W4", "POST-uniform W4"]


# ---- 03 integer / LUT ---------------------------------------------------------------------------------------
def comparison():
    base = {"max_abs_logit_diff": 1e-15, "argmax_agreement": 1.0, "max_abs_logit_diff_fp32": 0.25,
            "argmax_agreement_fp32": 0.999, "frac_images_diff_gt_1e-3_fp32": 0.01, "frac_images_code_flip_fp32": 0.02,
            "frac_images_diff_gt_1e-3_without_flip_fp32": 0.0, "median_abs_logit_diff_fp32": 1e-7,
            "acc_integer": 88.5, "acc_fakequant_fp32": 88.25, "logit_scale": 9.0}
    for i, nm in enumerate(("lut_truncated", "act_top_off_by_one")):
        base.update({f"{nm}_max_abs_logit_diff": 0.5 + i, f"{nm}_argmax_agreement": 0.99 - i / 10,
                     f"{nm}_max_abs_logit_diff_fp32": 0.75 + i, f"{nm}_argmax_agreement_fp32": 0.98 - i / 10,
                     f"{nm}_frac_images_diff_gt_1e-3_fp32": 0.5, f"{nm}_frac_images_diff_gt_1e-3_without_flip_fp32": 0.25 + i / 2,
                     f"{nm}_median_abs_logit_diff_fp32": 0.1, f"{nm}_acc_integer": 87.0 + i})
    return base


def test_path_and_near_miss_metrics():
    cmp = comparison()
    assert integer_lut.path_metrics(cmp, 60) == {
        "int_max_abs_logit_diff": 1e-15, "int_argmax_agreement": 1.0, "int_max_abs_logit_diff_vs_fp32": 0.25,
        "int_argmax_agreement_vs_fp32": 0.999, "int_frac_images_diff_gt_1e3_fp32": 0.01,
        "int_frac_images_code_flip_fp32": 0.02, "int_frac_images_diff_gt_1e3_without_flip_fp32": 0.0,
        "int_median_abs_logit_diff_fp32": 1e-7, "acc_integer_w4_post": 88.5, "acc_fakequant_w4_post": 88.25,
        "int_n_test": 60}
    nm = integer_lut.near_miss_metrics(cmp)
    assert nm["int_lut_truncated_max_abs_logit_diff"] == 0.5 and nm["int_act_top_off_by_one_max_abs_logit_diff"] == 1.5
    assert nm["int_act_top_off_by_one_argmax_agreement_vs_fp32"] == pytest.approx(0.88)
    assert nm["int_lut_truncated_frac_images_diff_gt_1e3_without_flip_fp32"] == 0.25
    assert nm["int_lut_truncated_max_abs_logit_diff_vs_fp32"] == 0.75
    assert nm["acc_integer_w4_post_lut_truncated"] == 87.0 and nm["acc_integer_w4_post_act_top_off_by_one"] == 88.0
    assert len(nm) == 12
    assert integer_lut.near_miss_metrics({k: v for k, v in cmp.items() if not k.startswith("act_top")}).keys() == \
        {k for k in nm if "act_top" not in k}


def test_lut_metrics_read_the_right_rows():
    row = lambda model, grid, i: {"model": model, "grid": grid, "lut_entries_pct_of_params": 1.0 + i,   # noqa: E731
                                  "lut_bytes_pct_of_model_bytes": 10.0 + i, "bits_per_quantized_weight": 4.0 + i,
                                  "adapter_params_pct": 20.0 + i, "adapter_macs_pct": 30.0 + i,
                                  "model_params": 1000 * (i + 1), "lut_entries_per_channel_lut": 7 * (i + 1)}
    acct = pd.DataFrame([row("net (trained)", "post", 0), row("resnet18", "post", 1), row("resnet18", "post_released", 2),
                         row("resnet34", "post", 3), row("resnet34", "post_released", 4)])
    m = integer_lut.lut_metrics(acct, {"lut_bytes": 14, "total_bytes": 1400}, {"lut_bytes": 280, "total_bytes": 1000}, "resnet34")
    assert m == {"lut_bytes_pct_trained_model": 1.0, "lut_bytes_pct_trained_model_per_channel_lut": 28.0,
                 "trained_model_bytes": 1400, "trained_lut_bytes": 14,
                 "lut_entries_pct_params_lut_arch": 4.0, "lut_bytes_pct_model_lut_arch": 13.0,
                 "lut_entries_pct_params_lut_arch_per_channel_lut": 0.7,      # 100 * 28 / 4000
                 "lut_entries_pct_params_resnet18": 2.0, "lut_entries_pct_params_trained": 1.0,
                 "bits_per_weight_post_w4": 7.0, "bits_per_weight_post_released_w4": 8.0,
                 "adapter_params_pct_resnet18": 21.0, "adapter_macs_pct_resnet18": 31.0, "adapter_params_pct_trained": 20.0}


def test_code_table_per_layer():
    il = SimpleNamespace(w_codes=torch.tensor([[-3, 0], [2, 7]]), w_int=torch.tensor([[-9, 0], [4, 100]]))
    t = integer_lut.code_table({"layer1": il})
    assert t.to_dict(orient="records") == [{"layer": "layer1", "codes": (2, 2), "min code": -3, "max code": 7,
                                            "max |w_int|": 100}]


# ---- 04 adapter ---------------------------------------------------------------------------------------------
def test_beta_metrics_separate_layers_from_inputs():
    # W2: layer a betas 1, 3 (mean 2, sd sqrt 2), layer b 4, 4 (mean 4, sd 0); W4: every beta 1
    betas = pd.DataFrame([{"bits": b, "layer": l, "beta": v} for b, l, v in
                          ((2, "a", 1.0), (2, "a", 3.0), (2, "b", 4.0), (2, "b", 4.0),
                           (4, "a", 1.0), (4, "a", 1.0), (4, "b", 1.0), (4, "b", 1.0))])
    m = adapter.beta_metrics(betas, [2, 4])
    assert list(m) == ["beta_mean_w2", "beta_cv_within_layer_w2", "beta_layer_mean_range_w2",
                       "beta_mean_w4", "beta_cv_within_layer_w4", "beta_layer_mean_range_w4"]
    assert m["beta_mean_w2"] == 3.0 and m["beta_layer_mean_range_w2"] == 2.0
    assert m["beta_cv_within_layer_w2"] == pytest.approx((math.sqrt(2) / 2 + 0.0) / 2)
    assert (m["beta_mean_w4"], m["beta_cv_within_layer_w4"], m["beta_layer_mean_range_w4"]) == (1.0, 0.0, 0.0)


def test_beta_per_layer_draws_a_box_per_layer_and_width_without_deprecation_warnings():
    import warnings

    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd

    from papers.asq.figures import beta_per_layer

    rng = np.random.default_rng(0)
    betas = pd.DataFrame([{"layer": f"l{i}", "beta": float(rng.normal(1, 0.1)), "width": w}
                          for w in ("W2A2", "W4A4") for i in range(3) for _ in range(20)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")                                     # seaborn 0.13's boxplot warned (vert)
        fig = beta_per_layer(betas, 0)
    ax = fig.axes[0]
    assert len(ax.patches) == 6 and [t.get_text() for t in ax.get_xticklabels()] == ["l0", "l1", "l2"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["W2A2", "W4A4"]
    plt.close(fig)
