"""Integer / LUT inference: bit-exact accumulation, model-level equality, accounting."""
from common.seed import Streams
import pytest
import torch

from papers.asq.convert import init_step_sizes, quant_layers, quantize_model
from papers.asq.data import Split
from papers.asq.integer import (IntegerLayer, accounting, accumulate, artefact_bytes, compare_paths, export_layer,
                                integer_model, lut_for, pack_codes, unpack_codes)
from papers.asq.levels import LUT_FRAC_BITS, level_set
from papers.asq.models import build_model


def qmodel(grid, method="asq", bits=4):
    torch.manual_seed(0)
    q = quantize_model(build_model("small_resnet", 10, 1, streams=Streams(0), width=8), method, bits, bits, grid, streams=Streams(0))
    init_step_sizes(q, torch.randn(32, 1, 28, 28))
    return q.eval()


def test_post_lut_values():
    assert lut_for("post", 4).tolist() == [0, 32768, 23170, 16384, 11585, 8192, 5793, 4096]
    assert lut_for("pot", 3).tolist() == [0, 32768, 16384, 8192]
    assert lut_for("uniform", 4) is None


@pytest.mark.parametrize("grid", ["uniform", "pot", "post", "post_released"])
def test_integer_accumulation_bit_exact_vs_float64_reference(grid):
    q = qmodel(grid)
    name, layer = quant_layers(q)[2]
    il = export_layer(layer)
    x_codes = torch.randint(0, 16, (3, layer.in_channels, 7, 7))
    acc = accumulate(x_codes, il, "int64")
    assert acc.dtype == torch.int64
    # float64 reference from the same rounded levels: w_ref = level * 2^F exactly (dyadic)
    lv = level_set(grid, 4)
    if grid == "uniform":
        w_ref = il.w_codes.double()
    else:
        mags = il.lut.double() / 2**LUT_FRAC_BITS
        w_ref = il.w_codes.sign().double() * mags[il.w_codes.abs()]
        assert torch.isin(w_ref, lv).all()
    ref = torch.nn.functional.conv2d(x_codes.double(), w_ref, None, il.stride, il.padding)
    scaled = acc.double() if grid == "uniform" else acc.double() * 2.0**-LUT_FRAC_BITS
    assert torch.equal(scaled, ref)                                     # bit-exact
    assert torch.equal(accumulate(x_codes, il, "float64"), acc)         # BLAS path is exact too


def test_integer_layer_matches_fake_quant_float64():
    q = qmodel("post").double()
    _, layer = quant_layers(q)[0]
    x = torch.rand(4, layer.in_channels, 9, 9, dtype=torch.float64)
    with torch.no_grad():
        ref = layer(x)
        out = IntegerLayer(layer, "int64")(x)
    assert (out - ref).abs().max() < 1e-12


@pytest.mark.parametrize("grid,method", [("post", "asq"), ("uniform", "lsq")])
def test_model_level_integer_path_equals_fake_quant(grid, method):
    q = qmodel(grid, method)
    data = Split(torch.randn(64, 1, 28, 28), torch.randint(0, 10, (64,)), None, None)
    r = compare_paths(q, data, batch_size=32)
    assert r["max_abs_logit_diff"] < 1e-10
    assert r["argmax_agreement"] == 1.0
    assert r["frac_images_diff_gt_1e-3_fp32"] == 0.0 and r["median_abs_logit_diff_fp32"] < 1e-4


def test_compare_paths_flags_a_wrong_lut():
    q = qmodel("post")
    data = Split(torch.randn(32, 1, 28, 28), torch.randint(0, 10, (32,)), None, None)
    import papers.asq.integer as integer

    orig = integer.lut_for
    integer.lut_for = lambda grid, bits, frac_bits=LUT_FRAC_BITS, rounding="round": orig("pot", bits, frac_bits)  # POT table for POST codes
    try:
        r = compare_paths(q, data, batch_size=32)
    finally:
        integer.lut_for = orig
    assert r["max_abs_logit_diff"] > 1e-4 and r["frac_images_diff_gt_1e-3_fp32"] > 0.5
    assert r["frac_images_diff_gt_1e-3_without_flip_fp32"] > 0.5       # not explained by float32 code flips


def test_code_flips_are_found_where_activation_codes_differ():
    from papers.asq.integer import code_flips, bake_weights
    from papers.asq.quantizers import ActQuantizer

    q = qmodel("post")
    data = Split(torch.randn(48, 1, 28, 28), torch.randint(0, 10, (48,)), None, None)
    fq64 = bake_weights(q).double()
    _, _, flips = code_flips(q, fq64, data, batch_size=16)
    assert flips.double().mean() < 0.1                                  # float32 vs float64 alone: rare flips
    first32 = next(m for m in q.modules() if isinstance(m, ActQuantizer))
    first64 = next(m for m in fq64.modules() if isinstance(m, ActQuantizer))
    seen = []
    hook = first32.register_forward_pre_hook(lambda mod, args: seen.append(args[0]))
    with torch.no_grad():
        q(data.x)
        hook.remove()
        first64.s.mul_(1.01)                                            # a 1% larger step moves some codes
        direct = (first32.codes(seen[0])[0] != first64.codes(seen[0].double())[0]).flatten(1).any(1)
    logits, _, flips = code_flips(q, fq64, data, batch_size=16)
    assert direct.any() and bool(flips[direct].all())                   # every image with a changed code is flagged
    assert torch.equal(logits, q(data.x).detach().double())


@pytest.mark.parametrize("nbits", [2, 3, 4, 5])
def test_pack_codes_round_trip_and_size(nbits):
    codes = torch.arange(-(2 ** (nbits - 1)), 2 ** (nbits - 1)).repeat(7)
    packed = pack_codes(codes, nbits)
    assert packed.nbytes == -(-len(codes) * nbits // 8)                  # ceil(n b / 8) bytes
    assert torch.equal(unpack_codes(packed, nbits, len(codes)), codes)
    with pytest.raises(Exception):
        pack_codes(torch.tensor([2 ** (nbits - 1)]), nbits)


def test_artefact_bytes_post_w4():
    q = qmodel("post")
    layers = quant_layers(q)
    a = artefact_bytes(q)
    assert a["lut_bytes"] == len(layers) * 7 * 2                        # one 7-entry uint16 LUT per layer
    assert a["codes_bytes"] == sum(-(-l.weight.numel() * 4 // 8) for _, l in layers)
    assert a["total_bytes"] == sum(v for k, v in a.items() if k != "total_bytes")
    n_float = sum(p.numel() for p in q.parameters()) + sum(b.numel() for b in q.buffers() if b.is_floating_point())
    assert a["total_bytes"] < 4 * n_float                                # packed codes beat float32 storage
    assert artefact_bytes(qmodel("uniform"))["lut_bytes"] == 0


def test_accounting_resnet18_post():
    q = quantize_model(build_model("resnet18", 1000, 3), "asq", 4, 4, "post")
    a = accounting(q, (3, 64, 64))
    assert a["lut_layers"] == 19 and a["lut_entries"] == 19 * 7
    assert a["lut_entries_pct_of_params"] < 0.002
    assert a["bits_per_quantized_weight"] == 4.0
    assert 2.0 < a["adapter_params_pct"] < 3.0                       # ~0.31M of 11.7M
    assert a["adapter_macs_pct"] < 0.5                               # 64x64 input; ~0.017% at 224x224


def test_integer_model_deterministic():
    q = qmodel("post")
    x = torch.randn(8, 1, 28, 28, dtype=torch.float64)
    with torch.no_grad():
        assert torch.equal(integer_model(q)(x), integer_model(q)(x))


@pytest.mark.parametrize("c_in,a_max,signed", [(8, 15, False), (64, 15, False), (64, 255, False), (512, 15, False),
                                               (32, 8, True)])
def test_float32_digit_accumulation_equals_int64_bit_for_bit(c_in, a_max, signed):
    """The CPU's "float64" backend convolves base-2^8 digits of w_int in float32 where every sum stays below 2^24
    (`float32_parts`), else in float64: either way the int64 accumulator of the int64 backend, bit for bit, for
    POST LUT weights (up to 2^15) at the largest codes, for convolutions and a linear layer; where a digit's sums
    could reach 2^24 the float64 path is taken."""
    from papers.asq.integer import IntLayer, float32_parts

    gen = torch.Generator().manual_seed(c_in + a_max)
    lut = lut_for("post", 4)
    codes = torch.randint(-7, 8, (16, c_in, 3, 3), generator=gen)
    codes[0] = 1                                                          # one output channel all at the top level
    w_int = codes.sign() * lut[codes.abs()]
    lo = -a_max - 1 if signed else 0
    x = torch.randint(lo, a_max + 1, (5, c_in, 6, 6), generator=gen)
    x[0] = a_max                                                          # the largest activation code everywhere
    conv = IntLayer("conv", codes, w_int, torch.ones(16, dtype=torch.float64), lut, None, (1, 1), (1, 1))
    acc = accumulate(x, conv, "float64")
    assert acc.dtype == torch.int64 and torch.equal(acc, accumulate(x, conv, "int64"))
    ref = torch.nn.functional.conv2d(x.double(), w_int.double(), None, 1, 1)   # exact in float64 (< 2^53)
    assert torch.equal(acc.double(), ref)
    x_max = a_max + (1 if signed else 0)
    parts = float32_parts(w_int, x_max)
    if parts is not None:                                                 # None: the float64 path (checked above)
        assert torch.equal(sum(p.to(torch.int64) * (1 << s) for p, s in parts), w_int)
        assert all(x_max * float(p.abs().reshape(16, -1).sum(1).max()) < 2**24 for p, _ in parts)
    assert float32_parts(torch.full((2, 4608), 255), 15) is None         # 15 * 255 * 4608 >= 2^24: the float64 path
    assert len(float32_parts(torch.full((2, 4608), 3), 15)) == 1         # small weights: one float32 pass
    lin = IntLayer("linear", codes[:, :, 0, 0], w_int[:, :, 0, 0], torch.ones(16, dtype=torch.float64), lut, None)
    xl = x[:, :, 0, 0]
    assert torch.equal(accumulate(xl, lin, "float64"), accumulate(xl, lin, "int64"))


def test_accounting_with_counted_macs_equals_counting_again():
    """MACs depend on the layers and the input size only: the accounting of every grid with the first grid's counts
    (as `studies.integer_lut.accounting_table` does) is the accounting that counts them itself."""
    float_net = build_model("resnet18", 1000, 3, streams=Streams(0))
    macs = None
    for grid in ("uniform", "pot", "post", "post_released"):
        q = quantize_model(float_net, "asq", 4, 4, grid, streams=Streams(0).child(grid))
        own = accounting(q, (3, 32, 32))
        if macs is not None:
            assert accounting(q, (3, 32, 32), macs=macs) == own
        macs = {"model": own["model_macs"], "adapter": own["adapter_macs"]}


def test_float32_digits_only_where_float32_is_ieee(monkeypatch):
    """With a reduced-precision float32 matmul setting the float64 path is taken (still the int64 accumulator)."""
    from papers.asq.integer import ieee_float32

    assert ieee_float32()
    q = qmodel("post")
    il = export_layer(quant_layers(q)[2][1])
    x = torch.randint(0, 16, (2, il.w_int.shape[1], 5, 5))
    monkeypatch.setattr(torch, "get_float32_matmul_precision", lambda: "medium")
    assert not ieee_float32()
    assert torch.equal(accumulate(x, il, "float64"), accumulate(x, il, "int64"))
