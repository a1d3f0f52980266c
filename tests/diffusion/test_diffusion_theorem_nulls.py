"""The nulls of issue #36 (arXiv:2405.11932): a mis-specified score in the backward sampler, the
wrong noise scale at T = 1, the density's own speciation readings, the fixed cloning level, the
exact population score for collapse, and the fold exponent, each checked on a case worked by hand."""
import math

import numpy as np
import pytest
import torch
from scipy.optimize import brentq

from common.errors import UserError
from common.seed import Streams
from papers.diffusion import franz_parisi as fp
from papers.diffusion import highdim, landscape, learned, thermo
from papers.diffusion.mixture import GaussianMixture
from papers.diffusion.processes import simulate_backward, simulate_forward, wrong_noise_score


def test_wrong_noise_score_is_the_score_of_the_noise_scaled_process():
    mu, s2, c, t = 1.0, 0.4, 2.0, 0.3
    mix = GaussianMixture.two_gaussians(mu, s2)
    x = np.linspace(-3, 3, 13)[:, None]
    np.testing.assert_allclose(wrong_noise_score(mix, 1.0)(x, t), mix.score(x, t), atol=1e-14)
    # dX = −X dt + √(2c) dW: p_t = ½N(±μe^{−t}, c + (σ² − c)e^{−2t}); its score written out at t = 0
    e = math.exp(-t)
    hot = GaussianMixture.create([[mu * e], [-mu * e]], [c + (s2 - c) * e * e] * 2)
    np.testing.assert_allclose(wrong_noise_score(mix, c)(x, t), hot.score(x, 0.0), atol=1e-12)


def test_sampler_score_drives_only_the_steps_and_the_exact_score_changes_nothing():
    mix = GaussianMixture.two_gaussians(1.0, 1.0)
    plain = simulate_backward(mix, 1.0, 0.02, 3000, streams=Streams(3))
    same = simulate_backward(mix, 1.0, 0.02, 3000, streams=Streams(3), sampler_score=mix.score)
    np.testing.assert_allclose(same.total, plain.total, atol=1e-9)
    wrong = simulate_backward(mix, 1.0, 0.02, 3000, streams=Streams(3), sampler_score=wrong_noise_score(mix, 2.0))
    np.testing.assert_array_equal(wrong.x_start, plain.x_start)     # the same start from p_T
    assert not np.allclose(wrong.x_end, plain.x_end)


def test_mis_specified_weights_break_the_ift_at_t1_but_not_the_exact_ones():
    mix = GaussianMixture.two_gaussians(1.0, 1.0)
    n = 20000
    exact_f = thermo.ift_statistics(simulate_forward(mix, 1.0, 0.05, n, streams=Streams(11)).total)
    wrong_f = thermo.ift_statistics(simulate_forward(mix, 1.0, 0.05, n, streams=Streams(11), noise_scale=2.0).total)
    exact_b = thermo.ift_statistics(simulate_backward(mix, 1.0, 0.01, n, streams=Streams(11)).total)
    wrong_b = thermo.ift_statistics(simulate_backward(mix, 1.0, 0.01, n, streams=Streams(11),
                                                      sampler_score=wrong_noise_score(mix, 2.0)).total)
    assert abs(exact_f["mean"] - 1) < 4 * exact_f["se"] and abs(exact_b["mean"] - 1) < 0.015
    assert wrong_f["mean"] - 1 > 8 * wrong_f["se"] and wrong_b["mean"] - 1 > 8 * wrong_b["se"]


def test_forward_ift_at_equilibrium_holds_path_by_path_whatever_the_noise():
    # p_0 = N(0, 1): e^{−ΔS_tot} = e^{−X_0²/2 + X_T²/2} N(X_T)/N(X_0) = 1 on every path, even with the wrong noise
    mix = GaussianMixture.single_gaussian(0.0, 1.0)
    p = simulate_forward(mix, 1.0, 0.05, 500, streams=Streams(2), noise_scale=2.0)
    np.testing.assert_allclose(np.exp(-p.total), 1.0, atol=1e-10)


@pytest.mark.parametrize("mu,s2", [(1.0, 0.4), (1.0, 0.1), (0.7, 0.2), (2.0, 3.0)])
def test_bimodality_time_and_the_modes_pitchfork_are_half_log_mu2_plus_1_minus_sigma2(mu, s2):
    mix = GaussianMixture.two_gaussians(mu, s2)
    expect = 0.5 * math.log(mu * mu + 1 - s2)        # m² = v: ∂²ln p_t(0) = −1/v + m²/v² = 0
    assert abs(landscape.bimodality_time_numeric(mix) - expect) < 1e-9
    if s2 < 2.0:   # the modes split where ln p_t turns convex at 0 (no unstable phase)
        assert abs(landscape.speciation_time_pitchfork(mix, field="modes") - expect) < 1e-6
    assert abs(landscape.bimodality_time_numeric(mix) - landscape.speciation_time_closed_form(mu, s2)) > 0.04


def test_bimodality_time_is_nan_when_p_t_is_never_bimodal():
    assert math.isnan(landscape.bimodality_time_numeric(GaussianMixture.two_gaussians(0.3, 1.0)))
    with pytest.raises(UserError):
        landscape.pitchfork_branch(GaussianMixture.two_gaussians(1.0, 0.4), [0.1], field="ode")


@pytest.mark.parametrize("d,s2", [(1, 0.4), (16, 0.4), (256, 0.25), (1024, 0.9)])
def test_fixed_speciation_level_is_crossed_exactly_where_m2_equals_v(d, s2):
    # φ depends on m/√v alone, and the level is φ at m = v = 1, so the crossing is ½ ln(|μ|² + 1 − σ²)
    level = highdim.speciation_value()
    assert abs(level - 0.7752) < 1e-4
    t_x = 0.5 * math.log(d + 1 - s2)
    assert abs(highdim.cloning_probability_exact(math.sqrt(d), s2, t_x)[0] - level) < 1e-10
    root = brentq(lambda t: highdim.cloning_probability_exact(math.sqrt(d), s2, t)[0] - level, 0.01, 10)
    assert abs(root - t_x) < 1e-8
    # Biroli's ½ ln Λ is off by ½ ln((d + σ²)/(d + 1 − σ²)); the U-curvature time by about ½ ln 2
    assert abs((0.5 * math.log(d + s2) - root) - 0.5 * math.log((d + s2) / (d + 1 - s2))) < 1e-8
    if d >= 16:
        assert abs(landscape.speciation_time_closed_form(math.sqrt(d), s2) - root - 0.5 * math.log(2)) < 0.02


def test_population_overlap_uses_the_empirical_starts_and_the_gaussian_posterior():
    n, d, m = 50, 6, 40
    emp = highdim.EmpiricalOverlap(n, d, m, streams=Streams(4))
    pop = highdim.PopulationOverlap(n, d, m, streams=Streams(4))
    np.testing.assert_array_equal(pop.a, emp.a)
    np.testing.assert_array_equal(pop.idx, emp.idx)
    t = 0.4
    e, delta = math.exp(-t), -math.expm1(-2 * t)
    x = e * emp.a[emp.idx] + math.sqrt(delta) * emp.z
    # σ² = 1: v_t = 1, the posterior of X_0 given x_t is N(e^{−t} x_t, Δ_t I)
    near = [np.argmin((((e * x + math.sqrt(delta) * w)[:, None, :] - emp.a[None]) ** 2).sum(-1), axis=1)
            for w in pop.w]
    np.testing.assert_array_equal(pop.values(t), (near[0] == near[1]).astype(float))
    assert pop.values(1e-4).mean() == 1.0              # no noise: both clones sit on their training point
    assert pop.values(8.0).mean() < 0.3                # at equilibrium: independent draws of N(0, I)


def test_grid_crossing_and_its_standard_error_by_hand():
    ts, v, se = [0.0, 1.0, 2.0], [1.0, 0.6, 0.2], [0.0, 0.1, 0.1]
    assert highdim.grid_crossing(ts, v, 0.5) == pytest.approx(1.25)
    # λ = ¼, slope 0.4: hypot(¾·0.1, ¼·0.1)/0.4
    assert highdim.grid_crossing_se(ts, v, se, 0.5) == pytest.approx(math.hypot(0.075, 0.025) / 0.4)
    assert math.isnan(highdim.grid_crossing(ts, v, 0.1))
    assert learned.crossing_time is highdim.grid_crossing


def test_fold_exponent_reads_three_halves_and_one_and_the_linear_law_misses_a_fold():
    ts = 0.2 + np.array([0.02, 0.04, 0.06, 0.08, 0.10])
    fold = 2.0 * (ts - 0.2) ** 1.5
    assert fp.fold_exponent(ts, fold, 0.2) == pytest.approx(1.5)
    assert fp.fold_exponent(ts, 3.0 * (ts - 0.2), 0.2) == pytest.approx(1.0)
    assert fp.fold_fit(ts, fold)[0] == pytest.approx(0.2)
    t_lin = fp.fold_fit(ts, fold, exponent=1.0)[0]
    assert t_lin - 0.2 > 0.01                          # a line through a 3/2 law hits zero late
    assert math.isnan(fp.fold_exponent(ts[:1], fold[:1], 0.2))


def test_untrained_score_leaves_every_global_generator_alone():
    data = learned.TwoClassData(np.zeros((4, 3)), np.array([0, 1, 0, 1]), np.zeros((2, 3)), np.array([0, 1]), (0, 1), [])
    torch.manual_seed(123)
    before = torch.random.get_rng_state().clone()
    a = learned.untrained_score(data, streams=Streams(5), hidden=8, device="cpu")
    b = learned.untrained_score(data, streams=Streams(5), hidden=8, device=torch.device("cpu"))
    assert torch.equal(torch.random.get_rng_state(), before)
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert torch.equal(pa, pb)
