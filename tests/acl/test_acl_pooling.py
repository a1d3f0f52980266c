"""`pooling.max_pool_2x2` (the evaluation network's pooling): torch's `max_pool2d(x, 2)` bit for bit without a
gradient (ties, NaNs, odd sizes); with a gradient, torch's maxima, indices and gradient bit for bit through the
channels-last copy (`_MaxPool2x2Indices`); and the evaluation network's training and features unchanged."""
import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from papers.acl.nets import Classifier
from papers.acl.pooling import MaxPool2x2, max_pool_2x2


def images(shape=(6, 3, 12, 10), seed=0):
    """ReLU outputs rounded to quarters: many windows with tied maxima, zeros among them."""
    g = torch.Generator().manual_seed(seed)
    return torch.relu(torch.round(torch.randn(shape, generator=g) * 4) / 4)


def test_values_equal_torchs_with_ties_and_nans():
    x = images()
    x[0, 0, 0, 1] = float("nan")
    x[1, 2, 3, 3] = float("nan")
    with torch.no_grad():
        got, ref = max_pool_2x2(x), F.max_pool2d(x, 2)
    assert got.shape == ref.shape == (6, 3, 6, 5)
    assert torch.equal(got.isnan(), ref.isnan()) and bool(got.isnan().any())
    assert torch.equal(torch.nan_to_num(got), torch.nan_to_num(ref))


@pytest.mark.parametrize("shape", [(2, 3, 7, 8), (2, 3, 8, 5), (3, 8, 8)])
def test_odd_sizes_and_other_ranks_take_torchs_kernel(shape):
    x = images(shape)
    with torch.no_grad():
        assert torch.equal(max_pool_2x2(x), F.max_pool2d(x, 2))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_with_a_gradient_values_and_gradient_are_torchs(seed):
    """The training path (channels-last copy, torch's kernels): the same maxima, a channels-first output, and the same
    gradient as torch's max_pool2d, with tied maxima (zeros of both signs among them) and NaNs in some windows."""
    x = images((6, 3, 12, 10), seed=seed)
    x[0, 0, 0, 1] = float("nan")
    x[1, 2, 3, 3] = float("nan")
    x[2, 1, 4, 4] = -0.0
    x = x.requires_grad_(True)
    y = x.detach().clone().requires_grad_(True)
    w = torch.randn(6, 3, 6, 5, generator=torch.Generator().manual_seed(seed))
    got, ref = max_pool_2x2(x), F.max_pool2d(y, 2)
    assert type(got.grad_fn).__name__ == "_MaxPool2x2IndicesBackward"   # not torch's channels-first kernel
    assert got.is_contiguous() and got.shape == ref.shape
    assert torch.equal(got.isnan(), ref.isnan()) and torch.equal(torch.nan_to_num(got), torch.nan_to_num(ref))
    (torch.nan_to_num(got) * w).sum().backward()
    (torch.nan_to_num(ref) * w).sum().backward()
    assert torch.equal(x.grad, y.grad)   # each window's gradient to its first maximum, as torch routes it


def test_with_a_gradient_other_layouts_take_torchs_kernel():
    x = images().contiguous(memory_format=torch.channels_last).requires_grad_(True)
    assert type(max_pool_2x2(x).grad_fn).__name__ != "_MaxPool2x2IndicesBackward"


def test_classifier_features_and_training_equal_those_with_torchs_pooling():
    """The evaluation network with `MaxPool2x2` and the same network with `nn.MaxPool2d(2)`: the same training steps
    (gradients through torch's kernel), then the same features and logits bit for bit."""
    torch.manual_seed(0)
    net = Classifier(1, 12, 10, width=8, feat_dim=16)
    ref = copy.deepcopy(net)
    ref.trunk[2], ref.trunk[5] = nn.MaxPool2d(2), nn.MaxPool2d(2)
    assert isinstance(net.trunk[2], MaxPool2x2) and isinstance(net.trunk[5], MaxPool2x2)
    x, y = images((64, 1, 12, 12), seed=1), torch.randint(10, (64,), generator=torch.Generator().manual_seed(2))
    for model in (net, ref):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(5):
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
    assert all(torch.equal(a, b) for a, b in zip(net.parameters(), ref.parameters()))
    with torch.no_grad():
        assert torch.equal(net.features(x), ref.features(x)) and torch.equal(net(x), ref(x))
