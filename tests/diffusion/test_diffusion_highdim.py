"""Cloning and collapse in d dimensions (extension of arXiv:2405.11932; Biroli et al. arXiv:2402.18491)."""
import math

import numpy as np
import pytest

from common.errors import UserError
from common.seed import Streams
from papers.diffusion import highdim as hd
from papers.diffusion.mixture import GaussianMixture


def test_speciation_value_and_exact_curve_limits():
    assert hd.speciation_value() == pytest.approx(0.7752, abs=1e-4)
    # independent of |μ| when σ = 1 (depends on m = |μ|e^{−t} only)
    assert hd.speciation_value(1.0, 10.0) == pytest.approx(hd.speciation_value(), abs=1e-12)
    phi = hd.cloning_probability_exact(6.0, 1.0, [0.0, 30.0])
    assert phi[0] == pytest.approx(1.0, abs=1e-3) and phi[1] == pytest.approx(0.5, abs=1e-9)


def test_exact_curve_equals_the_integral_definition():
    t, mu, s2 = 0.4, 1.3, 0.5
    m = mu * math.exp(-t); v = 1 + (s2 - 1) * math.exp(-2 * t)
    x = np.linspace(-15, 15, 60001)
    g = lambda c: np.exp(-(x - c) ** 2 / (2 * v)) / math.sqrt(2 * math.pi * v)  # noqa: E731
    integral = 0.5 * np.trapezoid((g(m) ** 2 + g(-m) ** 2) / (g(m) + g(-m)), x)
    assert hd.cloning_probability_exact(mu, s2, t)[0] == pytest.approx(integral, abs=1e-9)


def test_monte_carlo_cloning_in_d_dimensions():
    d = 64
    mc = hd.CloningMC(GaussianMixture.two_gaussians(1.0, 1.0, d=d), 3000, Streams(0))
    ts = np.array([1.5, 0.5 * math.log(d), 2.6])
    mean, se = mc.curve(ts)
    exact = hd.cloning_probability_exact(math.sqrt(d), 1.0, ts)
    assert np.all(np.abs(mean - exact) < 4 * se)
    assert abs(mc.crossing(hd.speciation_value(), 1.0, 3.5) - 0.5 * math.log(d)) < 0.1


def test_collapse_theory_by_hand_and_overlap_limits():
    assert hd.collapse_time_theory(20000, 256) == pytest.approx(1.299, abs=1e-3)
    assert hd.collapse_time_theory(20000, 1024) == pytest.approx(1.978, abs=1e-3)
    ov = hd.EmpiricalOverlap(300, 16, 200, streams=Streams(0))
    assert ov.values(1e-4).mean() > 0.999
    assert ov.values(8.0).mean() < 3.0 / 300
    ov2 = hd.EmpiricalOverlap(300, 16, 200, streams=Streams(0))
    np.testing.assert_array_equal(ov.values(0.5), ov2.values(0.5))
    with pytest.raises(UserError):
        hd.collapse_time_theory(1, 10)
    with pytest.raises(UserError):
        hd.cloning_probability_exact(1.0, -1.0, 0.3)


def test_overlap_from_the_stored_products_is_the_written_out_posterior_and_nearest_point():
    """`EmpiricalOverlap` and `PopulationOverlap` read x_t·a_i from products made once per set-up; against the
    definitions written out from x_t = e^{-t} a_idx + sqrt(Delta_t) z at each t."""
    ov = hd.EmpiricalOverlap(120, 8, 50, streams=Streams(2), sigma2=0.7)
    pop = hd.PopulationOverlap(120, 8, 50, streams=Streams(2), sigma2=0.7)
    for t in (0.05, 0.4, 1.5):
        e, delta = math.exp(-t), -math.expm1(-2 * t)
        x = e * ov.a[ov.idx] + math.sqrt(delta) * ov.z
        d2 = ((x[:, None, :] - e * ov.a[None]) ** 2).sum(-1)
        w = np.exp(-(d2 - d2.min(1, keepdims=True)) / (2 * delta))
        w /= w.sum(1, keepdims=True)
        np.testing.assert_allclose(ov.values(t), (w * w).sum(1), rtol=1e-12)
        v = 0.7 * e * e + delta
        ends = [(e * 0.7 / v) * x + math.sqrt(0.7 * delta / v) * noise for noise in pop.w]
        near = [((end[:, None, :] - ov.a[None]) ** 2).sum(-1).argmin(1) for end in ends]
        np.testing.assert_array_equal(pop.values(t), (near[0] == near[1]).astype(float))
