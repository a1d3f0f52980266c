"""Encoding round trip and metrics on known answers."""
import numpy as np
import pytest

from papers.nlm import encoding, metrics
from papers.nlm.experiments import count_transitions, crossing


def test_encoding_round_trip():
    p = np.linspace(0, 1, 11)
    x = encoding.encode(p)
    np.testing.assert_allclose(encoding.decode(x), np.clip(2 * p - 1, -0.97, 0.97), atol=1e-12)
    assert encoding.decode(encoding.encode(0.5)) == pytest.approx(0.0)
    assert np.abs(x).max() == pytest.approx(np.arctanh(0.97))


def test_adversarial_accuracy_known_answers():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((200, 5))
    copy = metrics.adversarial_accuracy(a, a.copy())
    assert copy["acc_t"] == 0.0 and copy["acc_s"] == 0.0 and copy["e_aai"] == pytest.approx(0.25)
    fresh = metrics.adversarial_accuracy(a, rng.standard_normal((200, 5)))
    assert abs(fresh["acc_t"] - 0.5) < 0.1 and abs(fresh["acc_s"] - 0.5) < 0.1 and fresh["e_aai"] < 0.01
    far = metrics.adversarial_accuracy(a, rng.standard_normal((200, 5)) + 100)
    assert far["acc_t"] == 1.0 and far["acc_s"] == 1.0


def test_memorization_covariance_distances():
    train = np.eye(4) * 3
    samples = train + 0.01
    assert metrics.memorized_fraction(samples, train) == 1.0
    mid = np.array([[1.5, 1.5, 0, 0]])                       # equidistant from two images
    assert metrics.memorized_fraction(mid, train) == 0.0
    d1, d2, i = metrics.nearest_two(np.array([[3.0, 0, 0, 0]]), train)
    assert d1[0] == pytest.approx(0.0, abs=1e-6) and d2[0] == pytest.approx(np.sqrt(18)) and i[0] == 0
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5000, 3))
    assert metrics.covariance_error(x, x) == 0.0
    assert metrics.covariance_error(x, 2 * x) == pytest.approx(np.mean((3 * np.cov(x.T)) ** 2))
    labels = metrics.nearest_centroid_labels(np.array([[2.9, 0, 0, 0], [0, 0, 0, 2.5]]), train, np.array([7, 8, 9, 9]))
    assert labels.tolist() == [7, 9]


def test_digits_split_and_heldout_accuracy():
    d = encoding.load("digits")
    assert d.x_train.shape == (396, 64) and d.x_test.shape == (150, 64)
    assert set(np.unique(d.y_train)) == {1, 3, 6}
    tr, te = d.images("train"), d.images("test")
    assert not (metrics.pairwise(te, tr).min() < 1e-9)       # held-out images are not in the training list
    same = metrics.quality(tr[:150], tr[:150], te)
    assert same["acc_t_train"] == 0.0 and same["acc_s_train"] == 0.0 and same["memorized"] == 1.0
    held = metrics.adversarial_accuracy(tr[:150], te)
    assert abs(held["acc_t"] - 0.5) < 0.15 and abs(held["acc_s"] - 0.5) < 0.15


def test_helpers():
    assert crossing([10, 100], [1.0, 0.0]) == pytest.approx(np.sqrt(1000))
    assert np.isnan(crossing([10, 100], [0.2, 0.1]))
    n, runs = count_transitions([1, 1, 1, 3, 1, 1, 1, 6, 6, 6])
    assert n == 1 and runs == [[1, 6], [6, 3]]
