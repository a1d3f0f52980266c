"""Gaussian mixtures and their exact OU marginals (arXiv:2405.11932, Sec. II)."""
import numpy as np
import pytest

from common.errors import UserError
from papers.diffusion.mixture import GaussianMixture, ou_delta

MIXES = [
    GaussianMixture.two_gaussians(1.0, 0.4),
    GaussianMixture.two_gaussians([1.0, -0.5, 2.0], 0.7),
    GaussianMixture.create([[1.0, 0.0], [-2.0, 1.0], [0.5, 3.0]], [0.3, 1.5, 0.8], [0.2, 0.5, 0.3]),
    GaussianMixture.single_gaussian([0.3, -1.0], 2.0),
]


@pytest.mark.parametrize("mix", MIXES)
@pytest.mark.parametrize("t", [0.0, 0.3, 2.0])
def test_score_is_gradient_of_log_density(mix, t):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(7, mix.d)) * 1.5
    h = 1e-5
    fd = np.stack([(mix.log_prob(x + h * e, t) - mix.log_prob(x - h * e, t)) / (2 * h) for e in np.eye(mix.d)], -1)
    np.testing.assert_allclose(mix.score(x, t), fd, atol=1e-6)


@pytest.mark.parametrize("mix", MIXES)
def test_hessian_is_jacobian_of_score(mix):
    x = np.random.default_rng(1).normal(size=(5, mix.d))
    h = 1e-5
    fd = np.stack([(mix.score(x + h * e, 0.2) - mix.score(x - h * e, 0.2)) / (2 * h) for e in np.eye(mix.d)], -1)
    np.testing.assert_allclose(mix.hessian_log_prob(x, 0.2), fd, atol=1e-6)


def test_pair_fast_path_matches_generic_log_sum_exp():
    pair = GaussianMixture.two_gaussians([0.8, -1.2], 0.5)
    # the same density written with three components (−μ split in two halves): the generic path
    generic = GaussianMixture.create(pair.means[[0, 1, 1]], pair.variances[[0, 1, 1]], [0.5, 0.25, 0.25])
    assert generic.symmetric_pair() is None and pair.symmetric_pair() is not None
    x = np.random.default_rng(2).normal(size=(9, 2)) * 2
    np.testing.assert_allclose(pair.log_prob(x, 0.7), generic.log_prob(x, 0.7), atol=1e-12)
    np.testing.assert_allclose(pair.score(x, 0.7), generic.score(x, 0.7), atol=1e-12)


def test_density_integrates_to_one_in_1d():
    mix = GaussianMixture.create([-1.0, 2.0], [0.1, 0.5], [0.3, 0.7])
    x = np.linspace(-12, 14, 20001)
    for t in (0.0, 0.5, 3.0):
        assert abs(np.trapezoid(mix.prob(x, t), x) - 1.0) < 1e-8


def test_marginal_moments_by_hand():
    # p_t of ½N(±μ, σ²): mean 0, variance e^{−2t}(μ² + σ²) + Δ_t
    mu, s2, t = 1.3, 0.4, 0.6
    mix = GaussianMixture.two_gaussians(mu, s2)
    x = mix.sample(400_000, np.random.default_rng(3), t=t)[:, 0]
    var = np.exp(-2 * t) * (mu * mu + s2) + ou_delta(t)
    assert abs(x.mean()) < 5 * np.sqrt(var / x.size)
    assert abs(x.var() - var) < 0.01
    np.testing.assert_allclose(mix.at(t).covariance(), [[var]], rtol=1e-12)


def test_marginal_equals_forward_kernel_applied_to_samples():
    mix = GaussianMixture.create([[2.0], [-1.0]], [0.2, 0.6], [0.3, 0.7])
    rng = np.random.default_rng(4)
    t = 0.8
    x0 = mix.sample(300_000, rng)
    xt = np.exp(-t) * x0 + np.sqrt(ou_delta(t)) * rng.standard_normal(x0.shape)
    # compare P(X_t < c) by Monte Carlo and by quadrature of the exact marginal
    grid = np.linspace(-10, 10, 40001)
    cdf = np.cumsum(mix.prob(grid, t)) * (grid[1] - grid[0])
    for c in (-1.0, 0.0, 0.7):
        assert abs(np.mean(xt[:, 0] < c) - np.interp(c, grid, cdf)) < 0.004


def test_flat_input_in_1d_keeps_shape():
    mix = GaussianMixture.two_gaussians(1.0, 1.0)
    x = np.linspace(-2, 2, 5)
    assert mix.score(x, 0.1).shape == (5,)
    assert mix.log_prob(x).shape == (5,)
    # σ = 1: ∇ln p_t = μ_t tanh(μ_t x) − x
    m = np.exp(-0.1)
    np.testing.assert_allclose(mix.score(x, 0.1), m * np.tanh(m * x) - x, atol=1e-14)


@pytest.mark.parametrize("bad", [
    lambda: GaussianMixture.two_gaussians(1.0, -0.1),
    lambda: GaussianMixture.create([0.0, 1.0], [1.0, 1.0], [0.6, 0.6]),
    lambda: GaussianMixture.create([[0.0, 1.0]], [1.0], d=3),
    lambda: GaussianMixture.two_gaussians([1.0, 2.0], 1.0, d=3),
    lambda: GaussianMixture.two_gaussians(1.0, 1.0, d=2).score(np.zeros((4, 3))),
    lambda: GaussianMixture.two_gaussians(1.0, 1.0).at(-1.0),
])
def test_bad_input_is_a_user_error(bad):
    with pytest.raises(UserError):
        bad()
