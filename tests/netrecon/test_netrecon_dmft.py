"""Dynamical mean-field theory: stationary and two-replica (arXiv:2409.04240)."""
import numpy as np
import pytest

from common.errors import UserError
from papers.netrecon import dmft


def test_quiescent_phase_has_no_fluctuations():
    assert dmft.delta0(0.8) == 0.0
    assert dmft.lyapunov(0.8)["lam"] == pytest.approx(-0.2)


def test_delta0_solves_energy_condition():
    z, w = dmft.gauss_grid()
    D0 = dmft.delta0(2.0)
    Phi = dmft.log_cosh(np.sqrt(D0) * z)
    var = (w * Phi**2).sum() - (w * Phi).sum() ** 2
    assert D0**2 / 2 == pytest.approx(4.0 * var, rel=1e-10)


def test_zero_mode_and_reference_exponent():
    s = dmft.stationary(2.0)
    L = dmft.lyapunov(2.0, stat=s)
    assert abs(L["E"][1]) < 1e-4               # psi = Delta'(tau) has zero energy
    assert L["zero_mode_overlap"] > 0.999
    assert L["lam"] == pytest.approx(0.1125, abs=0.001)
    assert s.Delta[0] == pytest.approx(s.Delta0) and s.Delta[-1] < 1e-3 * s.Delta0
    assert np.all(np.diff(s.Delta) <= 1e-12)   # monotone decay


def test_bivariate_expectation_limits():
    nodes = dmft.gauss_grid(61, 8.0)
    z, w = dmft.gauss_grid(401, 10.0)
    same = dmft.bivariate_phi(2.0, np.array([2.0]), np.array([2.0]), nodes)[0]
    assert same == pytest.approx((w * np.tanh(np.sqrt(2.0) * z) ** 2).sum(), abs=1e-6)
    assert dmft.bivariate_phi(2.0, np.array([3.0]), np.array([0.0]), nodes)[0] == pytest.approx(0.0, abs=1e-12)
    small = dmft.bivariate_phi(1e-4, np.array([1e-4]), np.array([5e-5]), nodes)[0]
    assert small == pytest.approx(5e-5, rel=1e-3)   # tanh ~ identity for small arguments


def test_two_replica_identical_student_has_zero_distance():
    r = dmft.two_replica(2.0, 0.0, T=2.0, dt=0.05)
    assert np.max(np.abs(r.D)) < 1e-12


def test_two_replica_variance_relaxes_to_delta0():
    r = dmft.two_replica(2.0, 0.5, T=12.0, dt=0.05, n_nodes=31)
    assert r.C_TT[-1] == pytest.approx(dmft.delta0(2.0), rel=0.05)
    assert r.D[0] == 0.0 and r.D[-1] > r.D[len(r.D) // 2] > 0


def test_two_replica_decays_below_onset():
    r = dmft.two_replica(0.5, 0.3, T=10.0, dt=0.05, n_nodes=31)
    assert r.D[-1] < 0.05 * r.D.max()


def test_bad_dmft_input():
    with pytest.raises(UserError):
        dmft.two_replica(2.0, 1.5)
    with pytest.raises(UserError):
        dmft.stationary(-1.0)


def test_static_mean_field_solves_its_own_fixed_point_and_lies_above_dmft():
    z, w = dmft.gauss_grid()
    for g in (2.0, 3.0):
        d = dmft.static_delta0(g)
        assert d == pytest.approx(g**2 * np.sum(w * np.tanh(np.sqrt(d) * z) ** 2), rel=1e-10)
        assert 1.05 < d / dmft.delta0(g) < 1.25          # the frozen field overestimates the variance
    assert dmft.static_delta0(0.8) == 0.0


def test_annealed_exponent_is_g_minus_one_at_the_origin_and_overestimates_chaos():
    assert dmft.annealed_lyapunov(0.8, 0.0) == pytest.approx(-0.2, abs=1e-12)     # phi'(0) = 1
    assert dmft.annealed_lyapunov(2.0, 0.0) == pytest.approx(1.0, abs=1e-12)
    # Monte Carlo of g sqrt(<sech^4(sqrt(D) z)>) - 1
    zz = np.random.default_rng(0).standard_normal(2_000_000)
    assert dmft.annealed_lyapunov(2.0, 1.5) == pytest.approx(2 * np.sqrt(np.mean(np.cosh(np.sqrt(1.5) * zz) ** -4)) - 1,
                                                             abs=2e-3)
    for g in (2.0, 3.0):
        assert dmft.annealed_lyapunov(g) > 1.5 * dmft.lyapunov(g)["lam"]


def _bivariate_direct(s1, s2, c12, nodes):
    """The tensor-product rule with one tanh per (z1, z2) node (the kernel before its factorisation)."""
    z, w = nodes
    r = np.clip(c12 / np.sqrt(s1 * s2), -1.0, 1.0)
    v = np.sqrt(s2)[:, None, None] * (r[:, None, None] * z[:, None] + np.sqrt(1 - r**2)[:, None, None] * z[None, :])
    return (np.tanh(v) @ w) @ (np.tanh(np.sqrt(s1) * z) * w)


def test_factorised_kernel_matches_the_direct_rule():
    nodes = dmft.gauss_grid(41, 7.0)
    rng = np.random.default_rng(3)
    s2 = rng.uniform(1e-6, 20.0, 50)
    c12 = rng.uniform(-1, 1, 50) * np.sqrt(1.7 * s2)
    c12[:3] = np.sqrt(1.7 * s2[:3])                    # r = 1: the diagonal of the kernel
    got = dmft.bivariate_phi(1.7, s2, c12, nodes)
    np.testing.assert_allclose(got, _bivariate_direct(1.7, s2, c12, nodes), rtol=1e-12, atol=1e-15)


def test_logistic_quadrature_fused_equals_numpy_blocks(monkeypatch):
    from papers.netrecon import kernels

    rng = np.random.default_rng(4)
    e1, e2, w = np.exp(rng.normal(0, 3, (70, 41))), np.exp(rng.normal(0, 3, (70, 41))), rng.random(41)
    fused = kernels.logistic_quadrature(e1, e2, w)
    monkeypatch.setattr(kernels, "njit", None)
    plain = kernels.logistic_quadrature(e1, e2, w)
    np.testing.assert_allclose(fused, plain, rtol=1e-13)
    np.testing.assert_allclose(plain[5, 7], (w / (1 + e1[5, 7] * e2[5])).sum(), rtol=1e-13)


def test_batched_two_replica_equals_separate_runs():
    runs = [(0.3, 4.0), (0.1, 6.0), (0.3, 2.0), (1.0, 3.0)]
    batch = dmft.two_replica_batch(0.8, [e for e, _ in runs], [T for _, T in runs], dt=0.05, n_nodes=21)
    for (e, T), b in zip(runs, batch):
        one = dmft.two_replica(0.8, e, T=T, dt=0.05, n_nodes=21)
        assert b.eta == e and np.array_equal(b.t, one.t)
        assert np.array_equal(b.D, one.D) and np.array_equal(b.C_TT, one.C_TT)   # bitwise: same rows
    with pytest.raises(UserError):
        dmft.two_replica_batch(0.8, [0.1, 0.2], [1.0], dt=0.05)


def test_folded_kernel_equals_the_unfolded_rule_on_every_profile_grid():
    """The symmetric (folded) quadrature is the same rule as the full n x n one: equal to rounding on the
    profiles' grids, for the diagonal (r = 1), anticorrelated entries and variances past the clip at 300."""
    rng = np.random.default_rng(7)
    s2 = rng.uniform(1e-8, 25.0, 400)
    c12 = rng.uniform(-1, 1, 400) * np.sqrt(1.3 * s2)
    c12[:3] = np.sqrt(1.3 * s2[:3])                     # r = 1
    c12[3:6] = -np.sqrt(1.3 * s2[3:6])                  # r = -1
    s2[6:9], c12[6:9] = [600.0, 3000.0, 1e4], [10.0, -50.0, 0.0]   # past s2 < (150 / max z)^2: clipped
    for n, hw in ((21, 7.0), (41, 7.0), (61, 8.0)):
        nodes = dmft.gauss_grid(n, hw)
        assert dmft.symmetric_grid(nodes[0])
        folded = dmft.bivariate_phi(1.3, s2, c12, nodes)
        np.testing.assert_allclose(folded, dmft.unfolded_bivariate_phi(1.3, s2, c12, nodes), rtol=0, atol=5e-15)
        np.testing.assert_allclose(folded[9:], _bivariate_direct(1.3, s2[9:], c12[9:], nodes), rtol=0, atol=5e-15)
    assert not dmft.symmetric_grid(dmft.gauss_grid(40, 7.0)[0])       # no node at 0: the unfolded rule
    assert not dmft.symmetric_grid(np.array([-2.0, -0.5, 0.0, 1.0, 2.0]))


def test_folded_kernel_numba_and_numpy_agree(monkeypatch):
    from papers.netrecon import kernels

    nodes = dmft.gauss_grid(41, 7.0)
    rng = np.random.default_rng(8)
    s2 = rng.uniform(1e-6, 20.0, 200)
    c12 = rng.uniform(-1, 1, 200) * np.sqrt(0.9 * s2)
    fused = dmft.bivariate_phi(0.9, s2, c12, nodes)
    monkeypatch.setattr(kernels, "njit", None)
    np.testing.assert_allclose(dmft.bivariate_phi(0.9, s2, c12, nodes), fused, rtol=0, atol=2e-15)


def test_two_replica_with_the_folded_kernel_equals_the_unfolded_solver(monkeypatch):
    """Notebook 04's solver (a teacher and students at g < 1 and in chaos) with the folded kernel against the same
    propagation with the unfolded rule: C_TT to 1e-12 relative, D = 2 (C_TT - C_TS) to 1e-13 of C_TT (a difference
    of two O(C_TT) numbers; the claims' tolerances are percent-level)."""
    runs = [(0.3, 6.0), (1.0, 6.0), (0.05, 3.0)]
    new = {g: dmft.two_replica_batch(g, [e for e, _ in runs], [T for _, T in runs], dt=0.05, n_nodes=41)
           for g in (0.8, 3.0)}
    monkeypatch.setattr(dmft, "bivariate_phi",
                        lambda s1, s2, c12, nodes=None: dmft.unfolded_bivariate_phi(s1, s2, c12, nodes))
    for g in (0.8, 3.0):
        old = dmft.two_replica_batch(g, [e for e, _ in runs], [T for _, T in runs], dt=0.05, n_nodes=41)
        for a, b in zip(old, new[g]):
            np.testing.assert_allclose(b.C_TT, a.C_TT, rtol=1e-12)
            np.testing.assert_allclose(b.D, a.D, rtol=0, atol=1e-13 * np.max(a.C_TT))
