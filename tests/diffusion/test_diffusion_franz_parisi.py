"""Franz-Parisi potential (arXiv:2405.11932, Sec. VII, Fig. 11)."""
import numpy as np
import pytest

from common.errors import UserError
from common.seed import Streams
from papers.diffusion import franz_parisi as fp
from papers.diffusion.mixture import GaussianMixture

MIX = GaussianMixture.two_gaussians(1.0, 0.1)


def test_derivatives_match_finite_differences():
    s = fp.draw_samples(MIX, 500, Streams(0))
    q = np.array([0.3, 1.0, 2.5, 5.0])
    h = 1e-5
    c = fp.fp_potential(MIX, 0.3, q, s)
    cp, cm = fp.fp_potential(MIX, 0.3, q + h, s), fp.fp_potential(MIX, 0.3, q - h, s)
    np.testing.assert_allclose(c["dV"], (cp["V"] - cm["V"]) / (2 * h), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(c["ddV"], (cp["dV"] - cm["dV"]) / (2 * h), rtol=1e-5, atol=1e-5)


def test_fast_path_equals_generic_and_definition():
    s = fp.draw_samples(MIX, 300, Streams(1))
    q = np.linspace(0.1, 6, 17)
    a, b = fp.fp_potential(MIX, 0.2, q, s), fp.fp_potential(MIX, 0.2, q, s, fast=False)
    for k in ("V", "dV", "ddV"):
        np.testing.assert_allclose(a[k], b[k], atol=1e-10)
    # V(q) = −⟨ln[(e^{−H(X0'+√q)} + e^{−H(X0'−√q)})/(2√q)]⟩ written out directly
    t = 0.2; e = np.exp(-t); dlt = 1 - e * e; xt = s.xt(t)
    h = lambda y: (xt - e * y) ** 2 / (2 * dlt) - MIX.log_prob(y, 0.0)  # noqa: E731
    v = [-np.mean(np.log((np.exp(-h(s.x0 + np.sqrt(qq))) + np.exp(-h(s.x0 - np.sqrt(qq)))) / (2 * np.sqrt(qq)))) for qq in q]
    np.testing.assert_allclose(a["V"], v, atol=1e-9)


def test_secondary_minimum_present_at_042_absent_at_0015():
    s = fp.draw_samples(MIX, 20_000, Streams(0))
    q = 0.075 + 0.02 * np.arange(300)
    sec = fp.secondary_minimum(fp.fp_potential(MIX, 0.42, q, s))
    assert sec is not None and 2.5 < sec["q_min"] < 4.0 and 1.0 < sec["q_max"] < 2.0 and sec["barrier"] > 0.3
    assert fp.secondary_minimum(fp.fp_potential(MIX, 0.015, q, s)) is None


def test_determinism_and_bad_input():
    a, b = fp.draw_samples(MIX, 100, Streams(3)), fp.draw_samples(MIX, 100, Streams(3))
    np.testing.assert_array_equal(a.x0, b.x0)
    with pytest.raises(UserError):
        fp.fp_potential(MIX, 0.3, np.array([0.0, 1.0]), a)
    with pytest.raises(UserError):
        fp.draw_samples(GaussianMixture.two_gaussians(1.0, 0.1, d=2), 100, Streams(0))


def test_per_sample_ln_z_and_barrier_match_the_curve():
    s = fp.draw_samples(MIX, 3000, Streams(1))
    q = np.array([0.8, 3.2])
    c = fp.fp_potential(MIX, 0.42, q, s)
    for qi, v in zip(q, c["V"]):
        assert abs(-fp.ln_z_per_sample(MIX, 0.42, qi, s).mean() - v) < 1e-10
    b, se = fp.barrier_with_se(MIX, 0.42, s, q[0], q[1])
    assert abs(b - (c["V"][0] - c["V"][1])) < 1e-10 and 0 < se < abs(b)


def test_the_q_tiling_changes_no_number_beyond_rounding():
    """fp_potential's q_block only decides how many q values share a tile: V bit for bit, V' and V'' to rounding
    (a BLAS product whose blocking follows the tile)."""
    s = fp.draw_samples(MIX, 5000, Streams(4))
    q = 0.075 + 0.01 * np.arange(37)
    ref = fp.fp_potential(MIX, 0.3, q, s, q_block=4, block=1024)
    for q_block in (1, 2, 5):
        c = fp.fp_potential(MIX, 0.3, q, s, q_block=q_block, block=1024)
        assert np.array_equal(c["V"], ref["V"])
        for k in ("dV", "ddV"):
            np.testing.assert_allclose(c[k], ref[k], rtol=1e-13, atol=1e-12)
