"""Potential, speciation, unstable symmetry breaking, phases (arXiv:2405.11932, Sec. VI)."""
import numpy as np
import pytest

from common.errors import UserError
from papers.diffusion import landscape as ls
from papers.diffusion.mixture import GaussianMixture


@pytest.mark.parametrize("mu,s2", [(1.0, 1.0), (1.0, 0.4), (1.0, 0.1), (2.0, 3.0), (0.8, 0.5)])
def test_speciation_closed_form_equals_numeric_root(mu, s2):
    assert abs(ls.speciation_time_closed_form(mu, s2)
               - ls.speciation_time_numeric(GaussianMixture.two_gaussians(mu, s2))) < 1e-9


def test_speciation_by_hand():
    assert ls.speciation_time_closed_form(1.0, 1.0) == pytest.approx(0.5 * np.log(2.0), abs=1e-15)
    assert ls.speciation_time_closed_form(3.0, 1.0) == pytest.approx(0.5 * np.log(18.0), abs=1e-14)
    # two deltas at ±1: ½ ln(1 + √2)
    assert ls.speciation_time_closed_form(1.0, 1e-12) == pytest.approx(0.5 * np.log(1 + np.sqrt(2)), abs=1e-9)
    assert ls.speciation_time_closed_form(1.0, 0.4) == pytest.approx(0.38649, abs=1e-5)
    assert ls.speciation_time_closed_form(1.0, 0.1) == pytest.approx(0.42622, abs=1e-5)
    # no speciation below the boundary μ² = σ² − σ⁴/2
    assert ls.speciation_time_closed_form(0.4, 1.0) < 0
    assert np.isnan(ls.speciation_time_numeric(GaussianMixture.two_gaussians(0.4, 1.0)))


def test_speciation_in_d_dimensions_uses_norm():
    mix = GaussianMixture.two_gaussians(1.0, 1.0, d=8)
    assert ls.speciation_time_numeric(mix) == pytest.approx(0.5 * np.log(16.0), abs=1e-9)


def test_potential_sigma_one_by_hand():
    mix = GaussianMixture.two_gaussians(1.0, 1.0)
    x = np.linspace(-3, 3, 11)
    t = 0.35
    u = 0.5 * x ** 2 - 2 * np.log(np.cosh(x * np.exp(-t)))
    np.testing.assert_allclose(ls.potential(mix, x, t), u - u[5], atol=1e-12)


def test_usb_and_phases():
    assert ls.usb_time(2.25) == pytest.approx(0.5 * np.log(1.25))
    assert np.isnan(ls.usb_time(1.5))
    assert ls.phase(1.0, 0.8) == 1 and ls.phase(0.4, 1.0) == 0 and ls.phase(4.0, 1.5) == 2
    for mu, s in [(1.0, 0.8), (0.4, 1.0), (4.0, 1.5), (0.2, 0.3), (1.5, 1.2)]:
        assert ls.phase_numeric(mu, s) == ls.phase(mu, s)
    with pytest.raises(UserError):
        ls.speciation_time_closed_form(1.0, -1.0)


@pytest.mark.parametrize("mu,s2", [(1.0, 0.4), (1.0, 0.1), (3.0, 0.5)])
def test_pitchfork_of_the_sampler_drift_is_born_at_speciation(mu, s2):
    mix = GaussianMixture.two_gaussians(mu, s2)
    t_s = ls.speciation_time_closed_form(mu, s2)
    assert abs(ls.speciation_time_pitchfork(mix) - t_s) < 1e-7
    # no non-zero fixed point after t_S; one at x* with f*(x*) = 0 before it
    amp = ls.pitchfork_branch(mix, [t_s + 0.05, t_s - 0.05])
    assert amp[0] == 0.0 and amp[1] > 0.0
    x = amp[1]; t = t_s - 0.05
    assert abs(x + 2.0 * mix.score(np.array([[x]]), t)[0, 0]) < 1e-10


def test_usb_read_from_the_potential():
    for s2 in (2.25, 4.0):
        assert abs(ls.usb_time_from_potential(GaussianMixture.two_gaussians(1.0, s2)) - 0.5 * np.log(s2 - 1)) < 1e-9
    assert np.isnan(ls.usb_time_from_potential(GaussianMixture.two_gaussians(1.0, 1.5)))   # σ < √2: confines
