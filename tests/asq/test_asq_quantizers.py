"""LSQ / ASQ autograd functions and quantizer modules."""
import math

import pytest
import torch

from common.errors import UserError
from papers.asq.levels import level_set
from papers.asq.quantizers import ActQuantizer, Adapter, GridFunction, WeightQuantizer, lsq_quantize


def test_lsq_forward_hand_computed():
    x = torch.tensor([-1.0, 0.2, 0.74, 0.76, 3.0, 10.0], dtype=torch.float64)
    s = torch.tensor([0.5], dtype=torch.float64)
    y = lsq_quantize(x, s, 0, 3, 1.0)
    assert y.tolist() == [0.0, 0.0, 0.5, 1.0, 1.5, 1.5]


def test_lsq_step_gradient_equals_formula_float64():
    gen = torch.Generator().manual_seed(0)
    x = (torch.randn(4, 3, 5, 5, generator=gen, dtype=torch.float64) * 2).requires_grad_()
    s = torch.tensor([0.3], dtype=torch.float64, requires_grad=True)
    qn, qp = -8, 7
    g = 1 / math.sqrt(qp * x.numel())
    gout = torch.randn(x.shape, generator=gen, dtype=torch.float64)
    lsq_quantize(x, s, qn, qp, g).backward(gout)
    v = x.detach() / s.detach()
    d = torch.where(v < qn, torch.full_like(v, qn), torch.where(v > qp, torch.full_like(v, qp), v.round() - v))
    expected = (gout * d).sum() * g                           # dL/ds = g * sum dL/dx_hat (-v + round v | Qn | Qp)
    assert torch.allclose(s.grad, expected.reshape(1), rtol=1e-12, atol=1e-15)
    inside = ((v >= qn) & (v <= qp)).double()
    assert torch.equal(x.grad, gout * inside)                 # straight-through mask


def test_asq_gradients_equal_formula_float64():
    gen = torch.Generator().manual_seed(1)
    x = torch.rand(3, 2, 4, 4, generator=gen, dtype=torch.float64) * 3
    s = torch.tensor([0.2], dtype=torch.float64, requires_grad=True)
    beta = (torch.rand(3, 1, 1, 1, generator=gen, dtype=torch.float64) + 0.5).requires_grad_()
    gout = torch.randn(x.shape, generator=gen, dtype=torch.float64)
    lsq_quantize(x, s, 0, 15, 0.1, beta).backward(gout)
    v = x / (s.detach() * beta.detach())
    d = torch.where(v > 15, torch.full_like(v, 15.0), v.clamp(0, 15).round() - v)
    gb = (gout * d).sum(dim=(1, 2, 3), keepdim=True)                      # G_b
    assert torch.allclose(s.grad, (0.1 * (gb * beta.detach()).sum()).reshape(1), rtol=1e-12)
    assert torch.allclose(beta.grad, gb * s.detach(), rtol=1e-12)          # no gradient scaling on beta


def test_asq_with_beta_one_equals_lsq_exactly():
    gen = torch.Generator().manual_seed(2)
    x = torch.rand(8, 16, 6, 6, generator=gen) * 2
    torch.manual_seed(0)
    asq = ActQuantizer(4, "asq", 16, generator=torch.Generator().manual_seed(3))
    lsq = ActQuantizer(4, "lsq", 16)
    asq.init_from(x)
    lsq.init_from(x)
    asq.fixed_beta = 1.0
    gout = torch.randn(x.shape, generator=gen)
    xa, xl = x.clone().requires_grad_(), x.clone().requires_grad_()
    ya, yl = asq(xa), lsq(xl)
    ya.backward(gout)
    yl.backward(gout)
    assert torch.equal(ya, yl)
    assert torch.equal(asq.s.grad, lsq.s.grad)
    assert torch.equal(xa.grad, xl.grad)


def test_adapter_starts_near_one():
    a = Adapter(64, generator=torch.Generator().manual_seed(0))
    beta = a(torch.rand(32, 64, 5, 5))
    assert beta.shape == (32, 1, 1, 1)
    assert (beta - 1).abs().max() < 0.05
    small = Adapter(3, generator=torch.Generator().manual_seed(0))
    assert len(small.net) == 2 and small(torch.rand(4, 3, 5, 5)).shape == (4, 1, 1, 1)


def test_adapter_is_deterministic_for_a_seed():
    a = Adapter(32, generator=torch.Generator().manual_seed(5))
    b = Adapter(32, generator=torch.Generator().manual_seed(5))
    for p, q in zip(a.parameters(), b.parameters()):
        assert torch.equal(p, q)


@pytest.mark.parametrize("grid", ["uniform", "pot", "post", "post_released"])
@pytest.mark.parametrize("bits", [2, 3, 4])
def test_weight_quantizer_on_grid_and_idempotent(grid, bits):
    gen = torch.Generator().manual_seed(bits)
    w = torch.randn(8, 4, 3, 3, generator=gen, dtype=torch.float64)
    wq = WeightQuantizer(bits, grid, w).double()
    q = wq(w)
    scale = wq.scale.detach()
    normalised = q / scale
    lv = level_set(grid, bits) * (2 ** (bits - 1) if grid == "uniform" else 1)
    assert torch.isin(normalised.round(decimals=9), lv.round(decimals=9)).all()
    assert torch.equal(wq(q), q)                               # quantizing twice changes nothing


def test_grid_function_gradients():
    w = torch.tensor([[-2.0, -0.3, 0.1, 0.6, 1.5]], dtype=torch.float64, requires_grad=True)
    alpha = torch.tensor([[1.0]], dtype=torch.float64, requires_grad=True)
    lv = level_set("post", 3)
    y = GridFunction.apply(w, alpha, lv, 1.0)
    y.sum().backward()
    assert w.grad.tolist() == [[0.0, 1.0, 1.0, 1.0, 0.0]]       # STE inside [-alpha, alpha]
    q = y.detach() / alpha.detach()
    v = w.detach()
    expected = torch.where(v.abs() <= 1, q - v, q).sum()
    assert torch.allclose(alpha.grad.sum(), expected)


def test_act_quantizer_bits32_is_identity_and_signed_detection():
    x = torch.randn(4, 3, 5, 5)
    assert torch.equal(ActQuantizer(32, "asq", 3)(x), x)
    q = ActQuantizer(8, "lsq", 3)
    y = q(x)
    assert bool(q.signed) and q.qn == -128 and q.qp == 127
    assert torch.isin((y / q.s.detach()).round(), torch.arange(-128, 128).float()).all()


@pytest.mark.parametrize("kwargs", [dict(bits=1, method="lsq"), dict(bits=9, method="asq"), dict(bits=4, method="dorefa")])
def test_act_quantizer_bad_input(kwargs):
    with pytest.raises(UserError):
        ActQuantizer(channels=4, **kwargs)


@pytest.mark.parametrize("method,grid", [("lsq", "uniform"), ("asq", "uniform"), ("sbeta", "uniform"), ("asq", "post"),
                                         ("asq", "pot")])
def test_evaluation_without_autograd_gives_the_training_forward_bit_for_bit(method, grid):
    """Without autograd (`torch.no_grad`, evaluation) the quantizers skip what only the backward reads; the
    output must be the training forward's own, bit for bit (activations and weights), in float32 and float64."""
    from papers.asq.layers import QConv2d

    g = torch.Generator().manual_seed(3)
    for dtype in (torch.float32, torch.float64):
        conv = torch.nn.Conv2d(8, 16, 3, padding=1, bias=False)
        with torch.no_grad():
            conv.weight.copy_(torch.randn(conv.weight.shape, generator=g) * 0.2)
        q = QConv2d.from_float(conv, method, 4, 4, grid, generator=torch.Generator().manual_seed(0)).to(dtype)
        x = torch.randn(5, 8, 6, 6, generator=g, dtype=torch.float64).abs().to(dtype)
        q.act_q.init_from(x)
        with torch.no_grad():
            fast_w, fast = q.quantized_weight(), q(x)
        with torch.enable_grad():
            slow_w, slow = q.quantized_weight().detach(), q(x).detach()
        assert torch.equal(fast_w, slow_w) and torch.equal(fast, slow)
        assert not torch.equal(fast, conv.to(dtype)(x))     # it did quantize


def test_lsq_quantize_without_autograd_keeps_ties_and_clamps_of_the_training_forward():
    """Values on and next to the half-steps (where x/s and x*(1/s) round apart) and beyond the range."""
    g = torch.Generator().manual_seed(5)
    for dtype in (torch.float32, torch.float64):
        s = torch.tensor([0.0731], dtype=dtype)
        half = (torch.arange(-40, 40, dtype=dtype) + 0.5) * s
        x = torch.cat([half, torch.nextafter(half, half + 1), torch.randn(20000, generator=g, dtype=dtype)])
        beta = 0.5 + torch.rand(x.shape, generator=g, dtype=dtype)
        for b in (None, beta):
            with torch.no_grad():
                fast = lsq_quantize(x, s, -8, 7, 0.1, b)
            slow = lsq_quantize(x, s.clone().requires_grad_(), -8, 7, 0.1, b).detach()
            assert torch.equal(fast, slow)


def test_row_quantile_is_torch_quantile_bit_for_bit():
    """The log grids' clip init (99th percentile of |w| per output channel) through `row_quantile` (topk) gives
    torch.quantile's values exactly: random rows of many lengths, rows full of ties, and a trained-size layer."""
    from papers.asq.models import build_model
    from papers.asq.quantizers import row_quantile
    from common.seed import Streams

    gen = torch.Generator().manual_seed(3)
    for trial in range(120):
        rows, n = int(torch.randint(1, 40, (1,), generator=gen)), int(torch.randint(1, 3000, (1,), generator=gen))
        x = torch.randn(rows, n, generator=gen).abs()
        if trial % 3 == 0:
            x = (x * 4).round() / 4                                         # many equal values
        for q in (0.99, 0.999, 0.9, 0.5):
            assert torch.equal(row_quantile(x, q), torch.quantile(x, q, dim=1)), (rows, n, q)
    for _, m in build_model("resnet18", 1000, 3, streams=Streams(0)).named_modules():
        if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)):
            w = m.weight.detach().reshape(m.weight.shape[0], -1).abs()
            assert torch.equal(row_quantile(w, 0.99), torch.quantile(w, 0.99, dim=1))
