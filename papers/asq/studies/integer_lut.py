"""Notebook 03: integer / LUT inference against fake quantization, and the storage and op accounting.

Paper: "Precision Neural Network Quantization via Learnable Adaptive Modules",
arXiv:2504.17263, https://arxiv.org/abs/2504.17263. POST stays cheap at inference through a look-up table
(abstract, "LUT inference"; the release has no LUT code, `integer.py` is a reconstruction) whose size is
"< 0.002 % of the model parameters" (abstract; the official README). Claims: `int-logits`, `int-argmax`,
`int-logits-fp32`, `int-argmax-fp32` (agreements: the integer path against the fake-quant model, each against
a near miss of the path, `integer.NEAR_MISSES`) and `lut-size` (the LUT's share of the exported model,
against one LUT per output channel).

The trained ASQ W4A4 POST model of the first training replicate comes from notebook 02's grid where the
profile's weight-grid ablation trains it (full), and is trained here otherwise (quick). The accounting of
ImageNet-size networks (ResNet-18 and `lut_arch`) uses untrained shapes (initialised from the run's stream
"accounting"): counts do not depend on values.
"""
from __future__ import annotations

import pandas as pd
import torch

from .. import integer
from ..convert import quant_layers, quantize_model
from ..models import build_model
from ..qat_grid import QATGrid

ACCOUNTING_GRIDS = ("uniform", "pot", "post", "post_released")
SHOWN = ["model", "grid", "model_params", "bits_per_quantized_weight", "compression_vs_float", "lut_entries", "lut_bytes",
         "lut_entries_pct_of_params", "lut_bytes_pct_of_model_bytes", "adapter_params_pct", "adapter_macs_pct"]


def path_metrics(cmp: dict, n_test: int) -> dict:
    """The integer-path claims' metrics from `integer.compare_paths` (against the float64 and float32
    fake-quant model), the two accuracies, and the number of test images."""
    return {"int_max_abs_logit_diff": cmp["max_abs_logit_diff"], "int_argmax_agreement": cmp["argmax_agreement"],
            "int_max_abs_logit_diff_vs_fp32": cmp["max_abs_logit_diff_fp32"],
            "int_argmax_agreement_vs_fp32": cmp["argmax_agreement_fp32"],
            "int_frac_images_diff_gt_1e3_fp32": cmp["frac_images_diff_gt_1e-3_fp32"],
            "int_frac_images_code_flip_fp32": cmp["frac_images_code_flip_fp32"],
            "int_frac_images_diff_gt_1e3_without_flip_fp32": cmp["frac_images_diff_gt_1e-3_without_flip_fp32"],
            "int_median_abs_logit_diff_fp32": cmp["median_abs_logit_diff_fp32"],
            "acc_integer_w4_post": cmp["acc_integer"], "acc_fakequant_w4_post": cmp["acc_fakequant_fp32"],
            "int_n_test": n_test}


def near_miss_metrics(cmp: dict) -> dict:
    """The logged controls of the integer-path claims from `compare_paths(..., near_misses=NEAR_MISSES)`:
    `int_<near miss>_<measure>` for the four measures the claims judge, and the near miss's accuracy."""
    measures = {"max_abs_logit_diff": "max_abs_logit_diff", "argmax_agreement": "argmax_agreement",
                "argmax_agreement_vs_fp32": "argmax_agreement_fp32",
                "frac_images_diff_gt_1e3_without_flip_fp32": "frac_images_diff_gt_1e-3_without_flip_fp32",
                "max_abs_logit_diff_vs_fp32": "max_abs_logit_diff_fp32"}
    out = {}
    for nm in integer.NEAR_MISSES:
        if f"{nm}_acc_integer" not in cmp:
            continue
        out.update({f"int_{nm}_{k}": cmp[f"{nm}_{v}"] for k, v in measures.items()})
        out[f"acc_integer_w4_post_{nm}"] = cmp[f"{nm}_acc_integer"]
    return out


def accounting_table(qmodel, shape, arch: str, lut_arch: str, acct_size: int, streams) -> pd.DataFrame:
    """`integer.accounting` of the trained model (first row) and of untrained ResNet-18 and `lut_arch` at W4A4 on
    each of `ACCOUNTING_GRIDS`, inputs 3 x acct_size x acct_size (their weights drawn from `streams`)."""
    rows = [{"model": f"{arch} (trained)", "grid": "post", **integer.accounting(qmodel, shape),
             "lut_entries_per_channel_lut": per_channel_lut_entries(qmodel)}]
    for name in sorted({"resnet18", lut_arch}):
        float_net = build_model(name, 1000, 3, streams=streams.child(name))
        macs = None   # the same layers and input on every grid: counted once per network (`integer.accounting`)
        for grid in ACCOUNTING_GRIDS:
            q = quantize_model(float_net, "asq", 4, 4, grid, streams=streams.child(name, grid))
            acct = integer.accounting(q, (3, acct_size, acct_size), macs=macs)
            macs = macs or {"model": acct["model_macs"], "adapter": acct["adapter_macs"]}
            rows.append({"model": name, "grid": grid, **acct, "lut_entries_per_channel_lut": per_channel_lut_entries(q)})
    return pd.DataFrame(rows).drop(columns=["int_multiplies_per_mac"])


def per_channel_lut_entries(qmodel) -> int:
    """LUT entries if every output channel of every log-grid layer had its own table (its scale folded in): the
    broken variant of the `lut-size` identity. A layer's table holds its grid's nonzero magnitudes."""
    from ..quantizers import is_log_grid

    return int(sum(layer.weight.shape[0] * (layer.weight_q.levels.numel() - 1) // 2
                   for _, layer in quant_layers(qmodel) if is_log_grid(layer.weight_q.grid) and layer.w_bits != 32))


def lut_metrics(acct: pd.DataFrame, art: dict, art_per_channel: dict, lut_arch: str) -> dict:
    """The LUT-size claim's metric (LUT bytes / bytes of the exported trained model, `integer.artefact_bytes`)
    and control (one LUT per output channel), and the accounting figures beside them: shares of the LUT and
    the adapters on `lut_arch` / ResNet-18 / the trained model (first row of `acct`), bits per weight."""
    pick = lambda m, g: acct[(acct.model == m) & (acct.grid == g)].iloc[0]   # noqa: E731
    big, small = pick(lut_arch, "post"), acct.iloc[0]
    r18 = pick("resnet18", "post")
    return {"lut_bytes_pct_trained_model": 100.0 * art["lut_bytes"] / art["total_bytes"],
            "lut_bytes_pct_trained_model_per_channel_lut": 100.0 * art_per_channel["lut_bytes"] / art_per_channel["total_bytes"],
            "trained_model_bytes": art["total_bytes"], "trained_lut_bytes": art["lut_bytes"],
            "lut_entries_pct_params_lut_arch": float(big.lut_entries_pct_of_params),
            "lut_entries_pct_params_lut_arch_per_channel_lut": 100.0 * float(big.lut_entries_per_channel_lut)
            / float(big.model_params),
            "lut_bytes_pct_model_lut_arch": float(big.lut_bytes_pct_of_model_bytes),
            "lut_entries_pct_params_resnet18": float(r18.lut_entries_pct_of_params),
            "lut_entries_pct_params_trained": float(small.lut_entries_pct_of_params),
            "bits_per_weight_post_w4": float(big.bits_per_quantized_weight),
            "bits_per_weight_post_released_w4": float(pick(lut_arch, "post_released").bits_per_quantized_weight),
            "adapter_params_pct_resnet18": float(r18.adapter_params_pct),
            "adapter_macs_pct_resnet18": float(r18.adapter_macs_pct),
            "adapter_params_pct_trained": float(small.adapter_params_pct)}


def ops_table() -> pd.DataFrame:
    """Operations per MAC and per output of each grid on the integer path (README "Integer inference")."""
    return pd.DataFrame([{"grid": "uniform", "per MAC": "1 int multiply (b x b bits)", "per output": "1 real multiply"},
                         {"grid": "POT", "per MAC": "shift + add", "per output": "1 real multiply"},
                         {"grid": "POST", "per MAC": "LUT read + multiply, or shift into one of two accumulators",
                          "per output": "1 real multiply (+1 by 1/sqrt 2 with two accumulators)"}])


def code_table(int_layers: dict) -> pd.DataFrame:
    """Per exported layer: the codes' shape, their range and the largest integer weight."""
    return pd.DataFrame([{"layer": n, "codes": tuple(il.w_codes.shape), "min code": int(il.w_codes.min()),
                          "max code": int(il.w_codes.max()), "max |w_int|": int(il.w_int.abs().max())}
                         for n, il in int_layers.items()])


def measure(cfg, run) -> dict:
    """Export the trained ASQ W4A4 POST model of the first training replicate, compare the integer path (and its
    near misses) with fake quantization on the whole test set, and account for storage and operations."""
    grid = QATGrid.of_run(cfg, run)
    qmodel, acc = grid.qat_model(cfg.seeds[0], "asq", cfg.ablation_bits, "post")
    int_layers = {name: integer.export_layer(layer) for name, layer in quant_layers(qmodel)}
    first = next(iter(int_layers))
    # controls: the same integer path with one near-miss bug each (a truncated LUT; the top activation code off by one)
    cmp = integer.compare_paths(qmodel, grid.test, cfg.eval_batch, near_misses=integer.NEAR_MISSES)
    metrics = path_metrics(cmp, len(grid.test))
    metrics.update(near_miss_metrics(cmp))
    codes, counts = torch.unique(int_layers[first].w_codes.cpu(), return_counts=True)
    fakequant, diff = integer.logit_differences(qmodel, grid.test, n=500)
    acct = accounting_table(qmodel, grid.info["shape"], cfg.arch, cfg.lut_arch, cfg.acct_size,
                            run.streams.child("accounting"))
    art = integer.artefact_bytes(qmodel)  # the trained W4 POST model as deployed: packed codes, scales, LUT, float rest
    art_per_channel = integer.artefact_bytes(qmodel, lut_per_channel=True)  # null: one LUT per output channel
    metrics.update(lut_metrics(acct, art, art_per_channel, cfg.lut_arch))
    return {"metrics": metrics, "acc": acc, "lut": None if int_layers[first].lut is None else int_layers[first].lut.tolist(),
             "codes": code_table(int_layers),
            "comparison": pd.Series(cmp), "first_layer": first, "code_values": codes, "code_counts": counts,
            "fakequant_logits": fakequant, "logit_diff": diff, "accounting": acct[SHOWN],
            "artefact": art, "artefact_per_channel_lut": art_per_channel, "ops": ops_table()}
