"""Model conversion, bits = 32, first/last policy, models, bad input."""
from common.seed import Streams
import pytest
import torch
from torch import nn

from common.errors import UserError
from papers.asq.convert import init_step_sizes, quant_layers, quantize_model
from papers.asq.layers import QConv2d, QLinear
from papers.asq.models import build_model


def small():
    return build_model("small_resnet", 10, 1, streams=Streams(0), width=8)


def test_bits32_reproduces_float_model():
    m = small().eval()
    q = quantize_model(m, "asq", 32, 32, "uniform").eval()
    x = torch.randn(5, 1, 28, 28)
    with torch.no_grad():
        assert torch.equal(q(x), m(x))


def test_first_last_fp_by_default_and_downsample_quantized():
    q = quantize_model(small(), "lsq", 4, 4, "post")
    names = [n for n, _ in quant_layers(q)]
    assert "conv1" not in names and "fc" not in names
    assert "layers.1.0.downsample.0" in names and len(names) == 8
    assert isinstance(q.conv1, nn.Conv2d) and not isinstance(q.conv1, QConv2d)
    q8 = quantize_model(small(), "asq", 4, 4, "post", first_last="8bit")
    assert isinstance(q8.conv1, QConv2d) and isinstance(q8.fc, QLinear)
    assert q8.conv1.weight_q.bits == 8 and q8.conv1.weight_q.grid == "uniform"


def test_input_model_untouched_and_lsq_has_no_adapter():
    m = small()
    before = {k: v.clone() for k, v in m.state_dict().items()}
    q = quantize_model(m, "lsq", 3, 3)
    assert all(torch.equal(before[k], v) for k, v in m.state_dict().items())
    assert all(l.act_q.adapter is None for _, l in quant_layers(q))


def test_conversion_deterministic_for_seed():
    a = quantize_model(small(), "asq", 4, 4, streams=Streams(3))
    b = quantize_model(small(), "asq", 4, 4, streams=Streams(3))
    for (ka, va), (kb, vb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert ka == kb and torch.equal(va, vb)


def test_init_step_sizes_from_batch():
    q = quantize_model(small(), "asq", 4, 4)
    x = torch.randn(16, 1, 28, 28)
    init_step_sizes(q, x)
    for _, l in quant_layers(q):
        assert bool(l.act_q.initialized) and float(l.act_q.s.detach()) > 0


@pytest.mark.parametrize("arch,shape,n", [("resnet18", (3, 32, 32), 19), ("resnet20", (3, 32, 32), 20),
                                          ("digits_cnn", (1, 8, 8), 2)])
def test_models_convert_and_run(arch, shape, n):
    m = build_model(arch, 10, shape[0])
    q = quantize_model(m, "asq", 4, 4, "post")
    assert len(quant_layers(q)) == n
    with torch.no_grad():
        assert q.eval()(torch.randn(2, *shape)).shape == (2, 10)


@pytest.mark.parametrize("arch,n_convs", [("resnet34", 36), ("resnet50", 53)])
def test_big_resnets_layer_count(arch, n_convs):
    # every conv incl. the 1x1 downsamples, plus the FC; the first conv and FC stay float
    m = build_model(arch, 10, 3)
    layers = [n for n, mod in m.named_modules() if isinstance(mod, (nn.Conv2d, nn.Linear))]
    assert len(layers) == n_convs + 1
    assert sum("downsample" in n for n in layers) == 4 - (arch == "resnet34")


@pytest.mark.parametrize("kwargs", [
    dict(method="dorefa"), dict(weight_grid="nope"), dict(w_bits=6, weight_grid="post"),
    dict(w_bits=1), dict(a_bits=9), dict(first_last="4bit"),
])
def test_bad_input_raises_user_error(kwargs):
    with pytest.raises(UserError):
        quantize_model(small(), **kwargs)


def test_no_quantizable_layer():
    with pytest.raises(UserError):
        quantize_model(nn.Sequential(nn.ReLU(), nn.Flatten()))
    with pytest.raises(UserError):
        quantize_model(nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2)))   # only first and last
    with pytest.raises(UserError):
        quantize_model(quantize_model(small()))                                         # already quantized
    with pytest.raises(UserError):
        build_model("vgg", 10, 3)
