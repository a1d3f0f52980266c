"""The trained null of ASQ's adaptivity (one scalar beta per layer) and the host-sync-free forward pass."""
from common.seed import Streams
import pytest
import torch

from papers.asq.convert import init_step_sizes, quant_layers, quantize_model
from papers.asq.models import build_model
from papers.asq.quantizers import ActQuantizer


def test_scalar_beta_gradient_is_the_sum_of_asqs_per_sample_gradients():
    gen = torch.Generator().manual_seed(4)
    x = torch.rand(5, 3, 4, 4, generator=gen, dtype=torch.float64) * 3
    gout = torch.randn(x.shape, generator=gen, dtype=torch.float64)
    q = ActQuantizer(4, "sbeta", 3).double()
    q.init_from(x)
    with torch.no_grad():
        q.beta_scalar.fill_(1.3)
    q(x).backward(gout)
    s, b = q.s.detach(), 1.3
    v = x / (s * b)
    d = torch.where(v > 15, torch.full_like(v, 15.0), v.clamp(0, 15).round() - v)
    gb = (gout * d).sum(dim=(1, 2, 3))                                   # G_b
    assert q.beta_scalar.grad.shape == (1,)
    assert torch.allclose(q.beta_scalar.grad, (s * gb.sum()).reshape(1), rtol=1e-12)   # s * sum_b G_b, unscaled
    assert q.adapter is None and q.beta(x).shape == (5, 1, 1, 1) and torch.all(q.beta(x) == 1.3)


def test_scalar_beta_starts_as_lsq_exactly():
    gen = torch.Generator().manual_seed(5)
    x = torch.rand(6, 8, 5, 5, generator=gen) * 2
    sb, lsq = ActQuantizer(3, "sbeta", 8), ActQuantizer(3, "lsq", 8)
    sb.init_from(x)
    lsq.init_from(x)
    gout = torch.randn(x.shape, generator=gen)
    ys, yl = sb(x), lsq(x)
    ys.backward(gout)
    yl.backward(gout)
    assert torch.equal(ys, yl) and torch.allclose(sb.s.grad, lsq.s.grad, rtol=1e-6)


@pytest.mark.parametrize("method,grid", [("lsq", "uniform"), ("asq", "post"), ("sbeta", "uniform"), ("asq", "apot")])
def test_training_step_reads_no_tensor_on_the_host(monkeypatch, method, grid):
    """After initialisation, forward and backward never read a tensor back (on a GPU each read is a device sync):
    no Tensor.__bool__ / item / tolist / __int__ / __float__ in the hot path."""
    model = build_model("small_resnet", 10, 1, streams=Streams(0), width=8)
    q = quantize_model(model, method, 3, 3, grid)
    x = torch.randn(8, 1, 28, 28)
    init_step_sizes(q, x)
    q(x)                                                                  # warm: the level tables are built
    def boom(*a, **k):
        raise AssertionError("host read of a tensor in the training step")
    for name in ("__bool__", "item", "tolist", "__int__", "__float__"):
        monkeypatch.setattr(torch.Tensor, name, boom)
    q.train()
    q(x).sum().backward()


def test_loaded_model_keeps_its_range_and_initialisation():
    model = build_model("small_resnet", 10, 1, streams=Streams(0), width=8)
    q = quantize_model(model, "asq", 2, 2, "post", first_last="8bit")
    x = torch.randn(4, 1, 28, 28)                                         # a signed input: the 8-bit first layer
    init_step_sizes(q, x)
    fresh = quantize_model(model, "asq", 2, 2, "post", first_last="8bit")
    fresh.load_state_dict(q.state_dict())
    for (_, a), (_, b) in zip(quant_layers(q), quant_layers(fresh)):
        assert (b.act_q._initialized, b.act_q._signed) == (True, bool(a.act_q.signed))
        assert (b.act_q.qn, b.act_q.qp) == (a.act_q.qn, a.act_q.qp)
    assert quant_layers(fresh)[0][1].act_q.qn == -128                      # signed input, 8 bits
    fresh.eval()
    q.eval()
    assert torch.equal(fresh(x), q(x))
