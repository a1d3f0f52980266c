"""The nulls behind the controls of claims.yaml (arXiv:2405.11932): each really is what its
`control_is` says (a left-point sum, the noise variance doubled, a broken or competitor closed
form, data without the structure, a network that learned nothing), and it really differs."""
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
from papers.diffusion.processes import simulate_backward, simulate_forward


# ---- left-point (Itô) medium entropy ------------------------------------------------------------

def test_forward_ito_sum_adds_half_the_quadratic_variation():
    mix = GaussianMixture.single_gaussian(0.0, 1.0)      # stationary start: E(ΔX)² = 2(1 − e^{−dt}) per step
    T, dt = 2.0, 0.01
    plain = simulate_forward(mix, T, dt, 4000, streams=Streams(5))
    p = simulate_forward(mix, T, dt, 4000, streams=Streams(5), ito=True)
    np.testing.assert_array_equal(p.total, plain.total)   # asking for the null changes nothing else
    extra = p.medium_ito - p.medium                       # Itô − Stratonovich = ½ Σ (ΔX)² ≥ 0
    assert np.all(extra > 0)
    expect = 200 * (1 - math.exp(-dt))                    # ½ · steps · 2(1 − e^{−dt}) ≈ T
    assert abs(extra.mean() - expect) < 0.02 * expect
    st = thermo.ift_statistics(p.total_ito)
    assert st["mean"] < 2 * math.exp(-T)                  # the IFT fails by e^{−T}
    with pytest.raises(UserError):
        plain.total_ito


def test_backward_ito_sum_differs_by_the_divergence_of_the_drift():
    # at equilibrium (p_t = N(0, 1)) f* = −x, so Stratonovich − Itô = −½ Σ (ΔX)² ≈ −T
    mix = GaussianMixture.single_gaussian(0.0, 1.0)
    T = 1.0
    p = simulate_backward(mix, T, 0.01, 4000, streams=Streams(6), ito=True, n_bins=4)
    diff = p.medium_ito - p.medium
    assert abs(diff.mean() - T) < 0.05
    np.testing.assert_allclose(p.medium_ito_bins.sum(1), p.medium_ito, atol=1e-10)
    ito = thermo.binned_rates(p, medium="ito")
    strat = thermo.binned_rates(p)
    np.testing.assert_allclose(ito["pi"] - strat["pi"], 1.0, atol=0.1)   # π per unit time shifted by ≈ 1
    with pytest.raises(UserError):
        thermo.binned_rates(simulate_backward(mix, T, 0.1, 50, streams=Streams(0), n_bins=2), medium="ito")


def test_binned_rates_of_two_halves_average_to_the_whole():
    mix = GaussianMixture.two_gaussians(1.0, 0.4)
    p = simulate_forward(mix, 1.0, 0.01, 2000, streams=Streams(7), n_bins=5)
    whole = thermo.binned_rates(p)
    a, b = thermo.binned_rates(p, rows=slice(0, 1000)), thermo.binned_rates(p, rows=slice(1000, None))
    np.testing.assert_allclose(0.5 * (a["phi"] + b["phi"]), whole["phi"], atol=1e-12)
    assert not np.allclose(a["phi"], b["phi"])            # independent halves: they differ by noise only


# ---- the wrong noise scale ------------------------------------------------------------------------

def test_forward_with_doubled_noise_relaxes_to_variance_two():
    mix = GaussianMixture.single_gaussian(0.0, 1.0)
    p = simulate_forward(mix, 5.0, 0.05, 20000, streams=Streams(8), noise_scale=2.0)
    assert abs(p.x_end.var() - 2.0) < 0.1
    # √c times the unit-noise process on the rescaled data: the same marginal variance
    scaled = mix.noise_scaled(2.0).at(5.0)
    assert abs(2.0 * scaled.variances[0] - p.x_end.var()) < 0.1
    with pytest.raises(UserError):
        simulate_forward(mix, 1.0, 0.1, 10, Streams(0), noise_scale=0.0)
    with pytest.raises(UserError):
        mix.noise_scaled(-1.0)


def test_speciation_of_the_rescaled_mixture_is_that_of_the_temperature_two_process():
    mu, s2, c = 1.0, 0.4, 2.0

    def curvature(t):   # −1 − 2c ∂²ln p_t(0) for dX = −X dt + √(2c) dW: means μe^{−t}, variance c + (σ²−c)e^{−2t}
        e = math.exp(-t)
        hot = GaussianMixture.create([[mu * e], [-mu * e]], [c + (s2 - c) * e * e] * 2)
        return -1.0 - 2.0 * c * hot.hessian_log_prob(np.zeros((1, 1)), 0.0)[0, 0, 0]
    direct = brentq(curvature, 1e-9, 10.0, xtol=1e-13)
    wrong = GaussianMixture.two_gaussians(mu, s2).noise_scaled(c)
    assert landscape.speciation_time_numeric(wrong) == pytest.approx(direct, abs=1e-9)
    assert abs(direct - landscape.speciation_time_closed_form(mu, s2)) > 0.1   # a real shift


def test_cloning_crossing_with_doubled_noise_is_half_ln_of_half_mu_squared():
    d = 64
    mc = highdim.CloningMC(GaussianMixture.two_gaussians(1.0, 1.0, d=d).noise_scaled(2.0), 2000, streams=Streams(1))
    ts = 0.5 * math.log(d)
    cross = mc.crossing(highdim.speciation_value(), ts - 2, ts + 2)
    assert abs(cross - 0.5 * math.log(d / 2)) < 0.06     # |μ|² halves: the crossing moves by ½ ln 2


# ---- broken and competitor closed forms -----------------------------------------------------------

def test_broken_rates_differ_from_quadrature_only_when_there_are_two_clusters():
    t = np.linspace(0, 2, 9)
    pair = GaussianMixture.two_gaussians(1.0, 0.4)
    quad = thermo.rates_quadrature(pair, t)
    br = thermo.rates_closed_form(pair, t, broken=True)
    assert np.abs(br["pi"] - quad["pi"]).max() > 0.1
    np.testing.assert_allclose(br["phi"], quad["phi"], atol=1e-7)   # φ has no Fisher term
    merged = GaussianMixture.two_gaussians(0.0, 0.4)                 # μ = 0: one cluster, nothing dropped
    np.testing.assert_allclose(thermo.rates_closed_form(merged, t, broken=True)["pi"],
                               thermo.rates_quadrature(merged, t)["pi"], atol=1e-7)


def test_competitor_speciation_formula_and_phase_map():
    assert landscape.speciation_time_high_dim(1.0, 1.0) == pytest.approx(0.5 * math.log(2.0))
    assert landscape.speciation_time_high_dim(1.0, 1.0) == pytest.approx(landscape.speciation_time_closed_form(1.0, 1.0))
    assert abs(landscape.speciation_time_high_dim(1.0, 0.4) - landscape.speciation_time_closed_form(1.0, 0.4)) > 0.1
    # μ = 0.5, σ = 1: no speciation in 1-D (μ² < σ² − σ⁴/2), but Λ = 1.25 > 1
    assert landscape.phase(0.5, 1.0) == 0 and landscape.phase_high_dim(0.5, 1.0) == 1
    assert landscape.phase_high_dim(1.0, 1.5) == landscape.phase(1.0, 1.5) == 2


def test_curvature_read_at_the_origin_finds_speciation_not_usb():
    mix = GaussianMixture.two_gaussians(1.0, 3.0)
    at0 = landscape.usb_time_from_potential(mix, x_far=0.0, h=1e-3)
    assert at0 == pytest.approx(landscape.speciation_time_closed_form(1.0, 3.0), abs=1e-6)
    assert abs(at0 - landscape.usb_time(3.0)) > 0.1


# ---- Franz-Parisi nulls ---------------------------------------------------------------------------

def test_franz_parisi_nulls():
    q = 0.075 + 0.02 * np.arange(300)
    gauss = GaussianMixture.two_gaussians(0.0, 1.1)       # N(0, 1.1): the pair with μ = 0
    assert gauss.symmetric_pair() is not None
    assert fp.secondary_minimum(fp.fp_potential(gauss, 0.42, q, fp.draw_samples(gauss, 5000, Streams(0)))) is None
    mix = GaussianMixture.two_gaussians(1.0, 0.1)
    s = fp.draw_samples(mix, 5000, Streams(0))
    frozen = s.drawn_at(0.015)
    np.testing.assert_array_equal(frozen.xt(0.42), s.xt(0.015))
    assert fp.secondary_minimum(fp.fp_potential(mix, 0.015, q, s)) is None
    sec = fp.secondary_minimum(fp.fp_potential(mix, 0.42, q, frozen))
    assert sec is not None and sec["barrier"] > 0.1      # the wrong noise level restores the other cluster


def test_fold_fit_recovers_the_fold_and_its_nulls_do_not():
    ts = 0.2 + np.array([0.005, 0.01, 0.02, 0.03, 0.04])
    b = 3.0 * (ts - 0.2) ** 1.5
    assert fp.fold_fit(ts, b)[0] == pytest.approx(0.2, abs=1e-12)
    assert abs(fp.fold_fit(ts, b[::-1])[0] - 0.2) > 0.03
    assert fp.fold_fit(ts, b, exponent=1.0)[0] > 0.2
    assert math.isnan(fp.fold_fit(ts[:2], b[:2])[0])


# ---- clones, labels, networks ---------------------------------------------------------------------

def test_shuffled_clone_pairs_agree_half_the_time():
    mix = GaussianMixture.two_gaussians(1.0, 1.0, d=8)
    t = 0.5 * math.log(8)
    p, se = highdim.cloning_by_clones(mix, t, 1500, 0.05, streams=Streams(2))
    p2, se2, ps, ses = highdim.cloning_by_clones(mix, t, 1500, 0.05, streams=Streams(2), shuffled=True)
    assert (p2, se2) == (p, se)
    assert abs(ps - 0.5) < 4 * ses + 0.02                 # independent starts: Σ_k P(k)² = ½
    assert p - ps > 0.15


def test_untrained_network_is_the_training_start_and_labels_shuffle():
    data = learned.load_two_classes("digits", (0, 1))
    net = learned.untrained_score(data, streams=Streams(4), hidden=16)
    frozen, _ = learned.train_score(data, 3, streams=Streams(4), batch=8, hidden=16, lr=0.0)   # Adam with lr 0 never moves
    for a, b in zip(net.parameters(), frozen.parameters()):
        torch.testing.assert_close(a, b)
    trained, _ = learned.train_score(data, 3, streams=Streams(4), batch=8, hidden=16)
    assert any(not torch.equal(a, b) for a, b in zip(net.parameters(), trained.parameters()))
    sh = learned.shuffled_labels(data, streams=Streams(0))
    np.testing.assert_array_equal(sh.x_train, data.x_train)
    assert sorted(sh.y_train) == sorted(data.y_train) and not np.array_equal(sh.y_train, data.y_train)
    # without class structure, two clones agree on the class by chance (½) once the image is forgotten
    far = learned.empirical_cloning_curve(sh, [3.0], 40, streams=Streams(0), n_noise=2)
    assert abs(far[0] - 0.5) < 0.02
    assert learned.empirical_cloning_curve(data, [0.6], 40, streams=Streams(0), n_noise=2)[0] > \
        learned.empirical_cloning_curve(sh, [0.6], 40, streams=Streams(0), n_noise=2)[0] + 0.1
