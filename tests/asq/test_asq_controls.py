"""The controls the claims are judged against: each removes what the paper credits (ASQ's adaptivity),
is the simplest competing explanation (a uniform grid in place of POST, LSQ in place of ASQ), or is a near
miss of the integer path whose failure shows the checks' resolution."""
from common.seed import Streams
import copy
import math

import pandas as pd
import pytest
import torch

from papers.asq import weight_error
from papers.asq.analysis import allbits_delta
from papers.asq.betas import collect_betas, frozen_beta_model
from papers.asq.convert import init_step_sizes, quant_layers, quantize_model
from papers.asq.data import Split
from papers.asq.integer import NEAR_MISSES, IntegerLayer, artefact_bytes, compare_paths, export_layer, lut_for
from papers.asq.levels import LUT_FRAC_BITS, magnitudes
from papers.asq.models import build_model
from papers.asq.studies.integer_lut import near_miss_metrics
from papers.asq.studies.qat_comparison import claim_metrics


def qmodel(grid, method="asq", bits=4):
    torch.manual_seed(0)
    q = quantize_model(build_model("small_resnet", 10, 1, streams=Streams(0), width=8), method, bits, bits, grid, streams=Streams(0))
    init_step_sizes(q, torch.randn(32, 1, 28, 28))
    return q.eval()


# ---- ASQ without adaptivity ---------------------------------------------------------------------------
def adaptive(q):
    """Make every adapter strongly input-dependent (beta spreads over samples), as trained adapters may."""
    with torch.no_grad():
        for _, l in quant_layers(q):
            last = l.act_q.adapter.net[-2]
            last.weight.normal_(0.0, 2.0, generator=torch.Generator().manual_seed(3))
    return q


def test_frozen_beta_is_each_layers_mean_and_only_beta_changes():
    q = adaptive(qmodel("uniform"))
    train = Split(torch.randn(40, 1, 28, 28), torch.randint(0, 10, (40,)), None, None)
    frozen = frozen_beta_model(q, train, n=30, batch_size=8)
    betas = collect_betas(q, train, n=30, batch_size=8)
    assert (betas.groupby("layer").beta.std() > 1e-3).mean() > 0.5    # the original adapts per input
    for (name, l), (_, f) in zip(quant_layers(q), quant_layers(frozen)):
        assert l.act_q.fixed_beta is None                               # the trained model is untouched
        sub = betas[betas.layer == name].beta
        assert len(sub) == 30 and f.act_q.fixed_beta == pytest.approx(float(sub.mean()), rel=1e-12)
        assert torch.equal(f.weight, l.weight) and torch.equal(f.act_q.s, l.act_q.s)
    # every test image sees one beta per layer (no input dependence left)
    fb = collect_betas(frozen, train, n=40, batch_size=8)
    assert fb.groupby("layer").beta.std().max() == 0.0
    # with beta fixed at the value the adapter outputs for every input, the frozen model is the model
    const = qmodel("uniform")
    with torch.no_grad():
        for _, l in quant_layers(const):
            l.act_q.adapter.net[-2].weight.zero_()                     # beta = relu(bias) = 1 for every input
    fz = frozen_beta_model(const, train, n=16, batch_size=8)
    x = torch.randn(8, 1, 28, 28)
    with torch.no_grad():
        assert torch.equal(fz(x), const(x))


def test_frozen_control_lists_pair_with_lsq():
    rows = [{"seed": s, "config": c, "acc": a} for s in (0, 1) for c, a in
            (("fp", 90.0), ("lsq-w2a2-uniform", 80.0 + s), ("asq-w2a2-uniform", 81.0 + s), ("frozen-asq-w2a2-uniform", 80.5),
             ("lsq-w4a4-uniform", 89.0), ("asq-w4a4-uniform", 89.5), ("frozen-asq-w4a4-uniform", 88.0 + 2 * s))]
    m = claim_metrics(pd.DataFrame(rows), [2, 4], 4, ("uniform",))
    assert m["acc_asq_frozen_w2_per_seed"] == [80.5, 80.5] and m["acc_asq_frozen_w4_per_seed"] == [88.0, 90.0]
    # per seed, mean over W2 and W4 of (frozen - LSQ): ((0.5 - 1) / 2, (-0.5 + 1) / 2)
    assert m["delta_asq_frozen_lsq_allbits_per_seed"] == [-0.25, 0.25]
    assert m["delta_asq_lsq_allbits_per_seed"] == [0.75, 0.75]
    assert "delta_lsq_asq_allbits_per_seed" not in m                   # the swapped competitor is gone
    assert allbits_delta(m, "asq", [2]) == [1.0, 1.0]


# ---- the uniform grid in place of POST ------------------------------------------------------------------
def test_uniform_in_place_of_post_takes_the_uniform_column():
    df = pd.DataFrame([{"model": "m", "layer": l, "grid": g, "bits": 4, "nmse": v}
                       for l, vals in (("a", (1.0, 2.0, 0.5)), ("b", (1.0, 2.0, 2.5)), ("c", (3.0, 2.0, 1.0)))
                       for g, v in zip(("post", "pot", "uniform"), vals)])
    assert weight_error.post_vs_pot_fraction(df, 4) == pytest.approx(2 / 3)
    assert weight_error.post_vs_pot_fraction(df, 4, "uniform", "pot") == pytest.approx(2 / 3)


def test_uniform_grid_beats_pot_on_gaussian_rows_as_post_does():
    # what else could produce "POST below POT on most layers": any grid denser than POT in the bulk
    w = torch.randn(20, 800, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    df = weight_error.layer_errors  # noqa: F841 (the notebook's path; rows here stand for layers)
    from papers.asq.levels import weight_mse

    post, pot, uni = (weight_mse(w, g, 4) for g in ("post", "pot", "uniform"))
    assert bool((post < pot).all()) and bool((uni < pot).all())


# ---- near misses of the integer path --------------------------------------------------------------------
def test_truncated_lut_differs_by_at_most_one_unit():
    exact, trunc = lut_for("post", 4), lut_for("post", 4, rounding="floor")
    scaled = [2.0**LUT_FRAC_BITS * 2.0 ** (-j / 2) for j in range(7)]   # 32768, 23170.48, ..., 5792.62, 4096
    assert trunc.tolist() == [0] + [math.floor(v) for v in scaled]
    assert exact.tolist() == [0] + [round(v) for v in scaled]
    assert (exact - trunc).tolist() == [0, 0, 0, 0, 0, 0, 1, 0]          # only 5792.62: 5793 -> 5792
    assert torch.equal(magnitudes("post", 4), torch.tensor(scaled, dtype=torch.float64).round() / 2**LUT_FRAC_BITS)
    assert torch.equal(magnitudes("post", 4, exact=True), torch.tensor(scaled, dtype=torch.float64) / 2**LUT_FRAC_BITS)
    assert lut_for("pot", 4, rounding="floor").tolist() == lut_for("pot", 4).tolist()   # powers of two are exact


def test_near_misses_move_only_what_they_name():
    q = qmodel("post")
    layer = quant_layers(q)[0][1]
    right, trunc = export_layer(layer), export_layer(layer, "lut_truncated")
    assert torch.equal(right.w_codes, trunc.w_codes)
    assert set((right.w_int.abs() - trunc.w_int.abs()).unique().tolist()) <= {0, 1}
    uni = quant_layers(qmodel("uniform", "lsq"))[0][1]
    assert torch.equal(export_layer(uni, "lut_truncated").w_int, export_layer(uni).w_int)   # no LUT, no change
    # top code off by one: only inputs in the top code change, by one code
    l64 = copy.deepcopy(layer).double()
    il = IntegerLayer(l64, near_miss="act_top_off_by_one")
    x = torch.rand(4, layer.in_channels, 6, 6, dtype=torch.float64) * (layer.act_q.qp + 3) * float(layer.act_q.s.detach())
    with torch.no_grad():
        codes, _ = l64.act_q.codes(x)
    assert int(codes.max()) == layer.act_q.qp and int((codes == layer.act_q.qp).sum()) > 10   # inputs in the top code
    seen = []
    orig = il.int_layer
    from papers.asq import integer

    real = integer.accumulate
    integer.accumulate = lambda c, lyr, backend: seen.append(c) or real(c, lyr, backend)
    try:
        il(x)
    finally:
        integer.accumulate = real
    assert torch.equal(seen[0], codes.clamp(max=layer.act_q.qp - 1)) and orig is il.int_layer


def test_near_miss_controls_are_logged_and_the_real_path_stays_exact():
    q = qmodel("post")
    data = Split(torch.randn(32, 1, 28, 28), torch.randint(0, 10, (32,)), None, None)
    r = compare_paths(q, data, batch_size=16, near_misses=NEAR_MISSES)
    assert r["max_abs_logit_diff"] < 1e-10 and r["frac_images_diff_gt_1e-3_without_flip_fp32"] == 0.0
    assert r["lut_truncated_max_abs_logit_diff"] > 1e-12                 # one unit of 2^-15 in a level shows
    assert r["act_top_off_by_one_max_abs_logit_diff"] > 1e-6
    m = near_miss_metrics(r)
    assert m["int_lut_truncated_max_abs_logit_diff"] == r["lut_truncated_max_abs_logit_diff"]
    assert m["int_act_top_off_by_one_argmax_agreement_vs_fp32"] == r["act_top_off_by_one_argmax_agreement_fp32"]
    assert not near_miss_metrics(compare_paths(q, data, batch_size=16))


def test_unknown_near_miss_is_one_line():
    from common.errors import UserError

    with pytest.raises(UserError, match="near miss"):
        compare_paths(qmodel("post"), Split(torch.randn(2, 1, 28, 28), torch.zeros(2, dtype=torch.int64), None, None),
                      near_misses=("wrong_lut",))


def test_per_channel_lut_prices_one_table_per_output_channel():
    q = qmodel("post")
    layers = quant_layers(q)
    per_layer, per_channel = artefact_bytes(q), artefact_bytes(q, lut_per_channel=True)
    assert per_channel["lut_bytes"] == sum(l.weight.shape[0] for _, l in layers) * 7 * 2
    assert per_channel["scales_bytes"] == per_layer["scales_bytes"] - sum(4 * l.weight.shape[0] for _, l in layers)
    assert per_channel["codes_bytes"] == per_layer["codes_bytes"] and per_channel["lut_bytes"] > 4 * per_layer["lut_bytes"]
