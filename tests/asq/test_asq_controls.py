"""The nulls the claims are judged against: each really lacks the effect, or really breaks the mechanism."""
import pandas as pd
import torch

from papers.asq import weight_error
from papers.asq.analysis import claim_metrics
from papers.asq.convert import init_step_sizes, quant_layers, quantize_model
from papers.asq.data import Split
from papers.asq.integer import artefact_bytes, compare_paths, export_layer, lut_for
from papers.asq.levels import level_set, project, weight_mse
from papers.asq.models import build_model


def qmodel(grid, method="asq", bits=4):
    torch.manual_seed(0)
    q = quantize_model(build_model("small_resnet", 10, 1, seed=0, width=8), method, bits, bits, grid, seed=0)
    init_step_sizes(q, torch.randn(32, 1, 28, 28))
    return q.eval()


def test_rescaled_pot_is_pot_at_clips_shrunk_by_sqrt2():
    # the null grid adds no resolution: its best-clip error is POT's error minimised over the clips r / sqrt 2
    gen = torch.Generator().manual_seed(1)
    w = torch.randn(6, 500, generator=gen, dtype=torch.float64) * torch.rand(6, 1, generator=gen, dtype=torch.float64)
    amax = w.abs().amax(1, keepdim=True)
    pot = level_set("pot", 4)
    manual = torch.stack([((project(torch.clamp(w / (amax * r * 2**-0.5), -1, 1), pot) * amax * r * 2**-0.5 - w) ** 2).mean(1)
                          for r in torch.linspace(0.05, 1.0, 64, dtype=torch.float64)]).amin(0)
    assert torch.allclose(weight_error.grid_mse(w, "pot_rescaled", 4), manual, rtol=1e-12, atol=0)
    # the levels differ from POT's (the measurement is not handed POT itself)
    assert not torch.allclose(weight_error.NULL_GRIDS["pot_rescaled"](4), pot)


def test_rescaled_pot_null_fails_where_post_wins_on_bell_shaped_rows():
    gen = torch.Generator().manual_seed(2)
    w = torch.randn(40, 800, generator=gen, dtype=torch.float64)
    post, pot = weight_mse(w, "post", 4), weight_mse(w, "pot", 4)
    null = weight_error.grid_mse(w, "pot_rescaled", 4)
    assert (post < pot).double().mean() == 1.0                         # POST: more levels where the mass is
    assert (null < pot).double().mean() < 0.9                          # no resolution gained: the 90% bar is missed
    assert (null / pot).min() > 0.99 and (post / pot).max() < 0.6      # where it wins, only by the clip search's step


def test_post_vs_pot_fraction_takes_the_null_columns():
    df = pd.DataFrame([{"model": "m", "layer": l, "grid": g, "bits": 4, "nmse": v}
                       for l, vals in (("a", (1.0, 2.0, 2.5)), ("b", (1.0, 2.0, 1.5)))
                       for g, v in zip(("post", "pot", "pot_rescaled"), vals)])
    assert weight_error.post_vs_pot_fraction(df, 4) == 1.0
    assert weight_error.post_vs_pot_fraction(df, 4, "pot_rescaled", "pot") == 0.5


def test_wrong_lut_control_breaks_only_the_control_path():
    q = qmodel("post")
    data = Split(torch.randn(32, 1, 28, 28), torch.randint(0, 10, (32,)), None, None)
    r = compare_paths(q, data, batch_size=32, control_lut="pot")
    assert r["max_abs_logit_diff"] < 1e-10 and r["frac_images_diff_gt_1e-3_without_flip_fp32"] == 0.0   # real path exact
    assert r["control_max_abs_logit_diff"] > 1e-4                       # POT's table for POST codes: other weights
    assert r["control_frac_images_diff_gt_1e-3_without_flip_fp32"] > 0.5  # not explained by float32 code flips
    assert not any(k.startswith("control_") for k in compare_paths(q, data, batch_size=32))


def test_wrong_lut_leaves_uniform_layers_alone():
    layer = quant_layers(qmodel("uniform", "lsq"))[0][1]
    assert torch.equal(export_layer(layer, lut_grid="pot").w_int, export_layer(layer).w_int)
    post_layer = quant_layers(qmodel("post"))[0][1]
    wrong, right = export_layer(post_layer, lut_grid="pot"), export_layer(post_layer)
    assert torch.equal(wrong.w_codes, right.w_codes) and torch.equal(wrong.lut, lut_for("pot", 4))
    assert not torch.equal(wrong.w_int, right.w_int)


def test_per_channel_lut_prices_one_table_per_output_channel():
    q = qmodel("post")
    layers = quant_layers(q)
    per_layer, per_channel = artefact_bytes(q), artefact_bytes(q, lut_per_channel=True)
    assert per_channel["lut_bytes"] == sum(l.weight.shape[0] for _, l in layers) * 7 * 2
    assert per_channel["scales_bytes"] == per_layer["scales_bytes"] - sum(4 * l.weight.shape[0] for _, l in layers)
    assert per_channel["codes_bytes"] == per_layer["codes_bytes"] and per_channel["lut_bytes"] > 4 * per_layer["lut_bytes"]


def test_competitor_and_ptq_lists():
    rows = [{"seed": s, "config": c, "acc": a} for s in (0, 1) for c, a in
            (("fp", 90.0 + s), ("lsq-w4a4-uniform", 89.0), ("asq-w4a4-uniform", 89.5 + s), ("ptq-asq-w4a4-uniform", 87.0 - s))]
    m = claim_metrics(pd.DataFrame(rows), [4], 4, ("uniform",))
    assert m["delta_lsq_asq_allbits_per_seed"] == [-d for d in m["delta_asq_lsq_allbits_per_seed"]] == [-0.5, -1.5]
    assert m["acc_ptq_asq_w4_per_seed"] == [87.0, 86.0]
