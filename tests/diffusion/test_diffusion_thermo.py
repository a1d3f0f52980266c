"""Ensemble entropy rates and KL identities (arXiv:2405.11932, Eqs. 24-30, 54-64)."""
import numpy as np
import pytest

from common.errors import UserError
from common.seed import Streams
from papers.diffusion.mixture import GaussianMixture
from papers.diffusion.processes import simulate_forward
from papers.diffusion.thermo import (binned_rates, bin_average, ift_statistics, kl_to_standard_normal,
                                     rates_closed_form, rates_quadrature)


@pytest.mark.parametrize("mu,s2", [(1.0, 0.4), (1.0, 1.0), (2.0, 0.1), (0.3, 2.5)])
def test_closed_form_rates_equal_quadrature(mu, s2):
    mix = GaussianMixture.two_gaussians(mu, s2)
    t = np.linspace(0, 3, 13)
    a, b = rates_closed_form(mix, t), rates_quadrature(mix, t)
    for k in ("pi", "phi", "phi_backward", "dSdt", "dSds_backward"):
        np.testing.assert_allclose(a[k], b[k], atol=1e-7)
    np.testing.assert_array_equal(a["pi_backward"], a["pi"])


def test_single_gaussian_rates_by_hand():
    m0, s2 = 0.7, 0.3
    mix = GaussianMixture.single_gaussian(m0, s2)
    t = np.array([0.0, 0.5, 2.0])
    v = 1 + (s2 - 1) * np.exp(-2 * t)
    r = rates_closed_form(mix, t)
    np.testing.assert_allclose(r["pi"], (v - 1) ** 2 / v + m0 ** 2 * np.exp(-2 * t), atol=1e-14)
    np.testing.assert_allclose(r["dSdt"], 1 / v - 1, atol=1e-14)
    np.testing.assert_allclose(rates_quadrature(mix, t)["pi"], r["pi"], atol=1e-8)


def test_pair_in_d_dimensions_adds_orthogonal_terms():
    mix = GaussianMixture.two_gaussians(1.0, 0.5, d=3)
    one = GaussianMixture.two_gaussians(np.sqrt(3.0), 0.5)
    t = np.array([0.2, 1.0]); v = 1 + (0.5 - 1) * np.exp(-2 * t)
    np.testing.assert_allclose(rates_closed_form(mix, t)["pi"], rates_closed_form(one, t)["pi"] + 2 * (v - 1) ** 2 / v)


def test_integral_of_pi_is_the_kl_drop():
    for mix in (GaussianMixture.two_gaussians(1.0, 0.4), GaussianMixture.single_gaussian(0.5, 2.0),
                GaussianMixture.two_gaussians(1.0, 0.3, d=4)):
        t = np.linspace(0, 4, 8001)
        integral = np.trapezoid(rates_closed_form(mix, t)["pi"], t)
        assert abs(integral - (kl_to_standard_normal(mix, 0) - kl_to_standard_normal(mix, 4.0))) < 1e-5


def test_kl_single_gaussian_closed_form():
    mix = GaussianMixture.single_gaussian(0.5, 2.0)
    assert abs(kl_to_standard_normal(mix) - 0.5 * (2.0 - 1 - np.log(2.0) + 0.25)) < 1e-12
    # the 1-D quadrature agrees with the Gaussian formula
    two = GaussianMixture.create([0.5, 0.5], [2.0, 2.0], [0.5, 0.5])
    assert abs(kl_to_standard_normal(two) - kl_to_standard_normal(mix)) < 1e-9


def test_binned_monte_carlo_rates_match_theory():
    mix = GaussianMixture.two_gaussians(1.0, 0.4)
    p = simulate_forward(mix, 1.5, 0.01, 40_000, streams=Streams(0), n_bins=5)
    mc = binned_rates(p)
    th = bin_average(lambda t: rates_closed_form(mix, t)["pi"], p)
    assert np.all(np.abs(mc["pi"] - th) < 4.5 * mc["pi_se"])


def test_ift_statistics_tolerance_floor():
    st = ift_statistics(np.zeros(100))
    assert st["mean"] == 1.0 and st["se"] == 0.0 and st["tol"] == 0.01
    with pytest.raises(UserError):
        ift_statistics(np.zeros(1))


def test_crooks_fit_gaussian_case():
    # ΔS_tot ~ N(m, 2m) satisfies P(s) = e^s P(−s); the reversed-protocol ΔS̃ then has the same law
    from papers.diffusion.thermo import crooks_fit
    rng = np.random.default_rng(0)
    m = 0.5
    f = rng.normal(m, np.sqrt(2 * m), 50_000); r = rng.normal(m, np.sqrt(2 * m), 40_000)
    fit = crooks_fit(f, r)
    assert abs(fit["slope"] - 1) < 4 * fit["slope_se"] and abs(fit["intercept"]) < 4 * fit["intercept_se"]
    # a variance twice too large breaks the theorem: the slope halves
    wrong = crooks_fit(rng.normal(m, np.sqrt(4 * m), 50_000), rng.normal(m, np.sqrt(4 * m), 50_000))
    assert abs(wrong["slope"] - 0.5) < 4 * wrong["slope_se"]


def test_crooks_fit_is_the_logistic_regression_of_the_labels():
    """The fit's Newton steps read s alone (the labels enter through n_f and the sum of the forward s); against a
    logistic regression of the labels 1 (forward) and 0 (negated reverse) on (1, s) by Newton's method on the
    labels, written out."""
    from papers.diffusion.thermo import crooks_fit
    rng = np.random.default_rng(3)
    f, r = rng.normal(0.4, 1.1, 3000), rng.normal(0.3, 0.9, 2000)
    s = np.concatenate([f, -r]); y = np.concatenate([np.ones(f.size), np.zeros(r.size)])
    X = np.stack([np.ones_like(s), s], 1)
    beta = np.zeros(2)
    for _ in range(50):
        p = 1 / (1 + np.exp(-X @ beta))
        beta = beta + np.linalg.solve(X.T @ (X * (p * (1 - p))[:, None]), X.T @ (y - p))
    p = 1 / (1 + np.exp(-X @ beta))
    cov = np.linalg.inv(X.T @ (X * (p * (1 - p))[:, None]))
    fit = crooks_fit(f, r)
    assert fit["slope"] == pytest.approx(beta[1], abs=1e-10)
    assert fit["intercept"] == pytest.approx(beta[0] - np.log(f.size / r.size), abs=1e-10)
    assert fit["slope_se"] == pytest.approx(np.sqrt(cov[1, 1]), rel=1e-8)
    assert fit["intercept_se"] == pytest.approx(np.sqrt(cov[0, 0]), rel=1e-8)
