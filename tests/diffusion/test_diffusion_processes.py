"""Forward/backward paths and their entropy functionals (arXiv:2405.11932, Secs. III-V)."""
import numpy as np
import pytest

from common.errors import UserError
from common.seed import Streams
from papers.diffusion.mixture import GaussianMixture
from papers.diffusion.processes import simulate_backward, simulate_forward
from papers.diffusion.thermo import ift_statistics, kl_to_standard_normal


def test_forward_medium_entropy_identity_per_path():
    mix = GaussianMixture.two_gaussians([1.0, -0.5], 0.3)
    p = simulate_forward(mix, 1.0, 0.01, 500, streams=Streams(1))
    # Stratonovich ∫ −X∘dX = (|X_0|² − |X_T|²)/2 exactly, path by path
    np.testing.assert_allclose(p.medium, 0.5 * ((p.x_start ** 2).sum(-1) - (p.x_end ** 2).sum(-1)), atol=1e-10)
    np.testing.assert_allclose(p.system, mix.log_prob(p.x_start, 0) - mix.log_prob(p.x_end, 1.0), atol=1e-12)


def test_forward_end_points_follow_exact_marginal():
    mix = GaussianMixture.single_gaussian(2.0, 0.25)
    p = simulate_forward(mix, 0.5, 0.05, 100_000, streams=Streams(2))
    e = np.exp(-0.5)
    assert abs(p.x_end.mean() - 2.0 * e) < 0.01
    assert abs(p.x_end.var() - (1 + (0.25 - 1) * e * e)) < 0.01


@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_integral_fluctuation_theorem_single_gaussian(direction):
    mix = GaussianMixture.single_gaussian(1.0, 0.6)
    sim = simulate_forward if direction == "forward" else simulate_backward
    p = sim(mix, 2.0, 0.01, 40_000, streams=Streams(3))
    st = ift_statistics(p.total)
    assert abs(st["mean"] - 1.0) <= max(4 * st["se"], 0.01)
    kl = kl_to_standard_normal(mix, 0.0) - kl_to_standard_normal(mix, 2.0)
    se = p.total.std() / np.sqrt(p.n)
    assert abs(p.total.mean() - kl) < 4 * se + (0.01 if direction == "backward" else 0.0)


def test_determinism_and_thread_independence():
    mix = GaussianMixture.two_gaussians(1.0, 0.5)
    a = simulate_backward(mix, 1.0, 0.02, 3000, streams=Streams(7), chunk=1000, workers=1)
    b = simulate_backward(mix, 1.0, 0.02, 3000, streams=Streams(7), chunk=1000, workers=2)
    c = simulate_backward(mix, 1.0, 0.02, 3000, streams=Streams(8), chunk=1000, workers=2)
    np.testing.assert_array_equal(a.total, b.total)
    assert not np.allclose(a.total, c.total)
    f1 = simulate_forward(mix, 1.0, 0.02, 2000, streams=Streams(7))
    f2 = simulate_forward(mix, 1.0, 0.02, 2000, streams=Streams(7))
    np.testing.assert_array_equal(f1.x_end, f2.x_end)


def test_backward_generic_drift_matches_pair_fast_path():
    pair = GaussianMixture.two_gaussians(1.0, 0.5)
    # the same density written with three components (−μ split in two halves): the generic path
    generic = GaussianMixture.create(pair.means[[0, 1, 1]], pair.variances[[0, 1, 1]], [0.5, 0.25, 0.25])
    a = simulate_backward(pair, 1.0, 0.05, 500, streams=Streams(4))
    b = simulate_backward(generic, 1.0, 0.05, 500, streams=Streams(4))
    np.testing.assert_allclose(a.total, b.total, atol=1e-9)


def test_binned_increments_add_up_to_totals():
    mix = GaussianMixture.two_gaussians(1.0, 0.4)
    for sim in (simulate_forward, simulate_backward):
        p = sim(mix, 1.0, 0.01, 300, streams=Streams(5), n_bins=7)
        np.testing.assert_allclose(p.medium_bins.sum(1), p.medium, atol=1e-10)
        np.testing.assert_allclose(p.system_bins.sum(1), p.system, atol=1e-10)


def test_keep_paths_shape_and_start():
    mix = GaussianMixture.two_gaussians(1.0, 1.0, d=2)
    p = simulate_forward(mix, 0.5, 0.1, 50, streams=Streams(0), keep_paths=4)
    assert p.paths.shape == (6, 4, 2)
    np.testing.assert_array_equal(p.paths[0], p.x_start[:4])


@pytest.mark.parametrize("kw", [dict(T=1.0, dt=1.0), dict(T=1.0, dt=2.0), dict(T=-1.0, dt=0.1),
                                dict(T=1.0, dt=0.0), dict(T=1.0, dt=0.1, n_paths=0)])
def test_bad_grid_is_a_user_error(kw):
    args = dict(n_paths=10, streams=Streams(0)) | kw
    with pytest.raises(UserError):
        simulate_forward(GaussianMixture.single_gaussian(), **args)
    with pytest.raises(UserError):
        simulate_backward(GaussianMixture.single_gaussian(), **args)


def test_forward_thread_independence_small_chunks():
    mix = GaussianMixture.two_gaussians(1.0, 0.5)
    a = simulate_forward(mix, 1.0, 0.01, 2000, streams=Streams(3), workers=1, n_bins=4)
    b = simulate_forward(mix, 1.0, 0.01, 2000, streams=Streams(3), workers=2, n_bins=4)
    np.testing.assert_array_equal(a.total, b.total)
    np.testing.assert_array_equal(a.system_bins, b.system_bins)
