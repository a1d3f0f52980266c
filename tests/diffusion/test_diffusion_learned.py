"""Learned score by denoising score matching (extension of arXiv:2405.11932)."""
import numpy as np
import pytest
import torch

from common.errors import UserError
from common.seed import Streams
from papers.diffusion import learned


def test_train_is_deterministic_and_clones_run():
    data = learned.load_two_classes("digits", (0, 1))
    assert data.dim == 64 and set(np.unique(data.y_train)) == {0, 1}
    assert data.x_train.min() >= -1 and data.x_train.max() <= 1
    m1, l1 = learned.train_score(data, 5, streams=Streams(3), batch=16, hidden=16)
    m2, l2 = learned.train_score(data, 5, streams=Streams(3), batch=16, hidden=16)
    np.testing.assert_array_equal(l1, l2)
    p, se = learned.cloning_curve(m1, data, [0.3, 1.0], 6, 3, streams=Streams(0))
    assert p.shape == (2,) and np.all((0 <= p) & (p <= 1))


def test_network_score_scaling():
    net = learned.ScoreNet(4, hidden=8)
    x = torch.zeros(3, 4); t = torch.tensor([0.1, 1.0, 2.0])
    eps = net(x, t)
    np.testing.assert_allclose(net.score(x, t).detach().numpy(),
                               (-eps / torch.sqrt(1 - torch.exp(-2 * t))[:, None]).detach().numpy(), rtol=1e-6)


def test_crossing_time_by_hand_and_bad_classes():
    assert learned.crossing_time([0, 1, 2], [1.0, 0.8, 0.6], 0.7) == pytest.approx(1.5)
    assert np.isnan(learned.crossing_time([0, 1], [0.5, 0.4], 0.9))
    with pytest.raises(UserError):
        learned.load_two_classes("digits", (3, 3))


def test_crossing_time_and_its_standard_error_by_hand():
    ts, vals, ses = [0.0, 1.0, 2.0], [1.0, 0.5, 0.2], [0.1, 0.1, 0.1]
    assert learned.crossing_time(ts, vals, 0.75) == pytest.approx(0.5)
    # t = λ-weighted interpolation, λ = ½, slope ½: SE = √(0.05² + 0.05²)/0.5
    assert learned.crossing_time_se(ts, vals, ses, 0.75) == pytest.approx(np.hypot(0.05, 0.05) / 0.5)
    assert np.isnan(learned.crossing_time_se(ts, vals, ses, 0.1))


def test_independent_agreement_is_the_sum_of_squared_class_weights():
    x = np.zeros((4, 2))
    three_to_one = learned.TwoClassData(x, np.array([1, 1, 1, 0]), x, np.array([0, 1, 0, 1]), (0, 1), [])
    assert three_to_one.independent_agreement() == pytest.approx(0.75 ** 2 + 0.25 ** 2)     # 0.625, the test labels ignored
    balanced = learned.TwoClassData(x, np.array([0, 1, 0, 1]), x, np.array([1, 1, 1, 1]), (0, 1), [])
    assert balanced.independent_agreement() == 0.5
