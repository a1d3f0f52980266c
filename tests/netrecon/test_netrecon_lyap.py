"""Lyapunov exponents on known answers (arXiv:2409.04240)."""
import numpy as np
import pytest

from common.errors import UserError
from papers.netrecon import lyap, rnn
from papers.netrecon.kernels import rows_times_JT


@pytest.mark.parametrize("method", ["two-trajectory", "tangent"])
def test_zero_coupling_exponent_is_log_one_minus_dt(method):
    J = np.zeros((10, 10))
    x0 = np.random.default_rng(0).standard_normal((3, 10))
    r = lyap.largest_exponent(J, x0, dt=0.01, t_transient=1.0, t_average=5.0, method=method)
    assert np.allclose(r.lam, np.log(1 - 0.01) / 0.01, atol=1e-9)


def test_zero_coupling_spectrum_is_degenerate():
    r = lyap.spectrum(np.zeros((6, 6)), np.ones(6), k=4, t_transient=0.0, t_ons_transient=0.0, t_average=3.0)
    assert np.allclose(r.lam, np.log(0.99) / 0.01, atol=1e-9)


def test_quiescent_exponent_matches_linear_theory():
    rng = np.random.default_rng(1)
    J = rnn.make_J(60, 0.5, rng)
    r = lyap.largest_exponent(J, rng.standard_normal((2, 60)), t_transient=20.0, t_align=20.0, t_average=40.0, rng=rng)
    assert abs(r.mean - lyap.quiescent_exponent(J)) < 0.02


def test_methods_agree_and_spectrum_top_matches_in_chaos():
    rng = np.random.default_rng(2)
    J = rnn.make_J(80, 3.0, rng)
    x0 = rng.standard_normal((1, 80))
    a = lyap.largest_exponent(J, x0, t_transient=20, t_average=60, method="two-trajectory", rng=np.random.default_rng(0))
    b = lyap.largest_exponent(J, x0, t_transient=20, t_average=60, method="tangent", rng=np.random.default_rng(0))
    s = lyap.spectrum(J, x0[0], k=3, t_transient=20, t_ons_transient=0, t_average=60, rng=np.random.default_rng(0))
    assert a.mean > 0
    assert abs(a.mean - b.mean) < 0.01
    assert abs(s.lam[0] - b.mean) < 0.01
    assert np.all(np.diff(s.lam) <= 1e-9)


def test_running_estimate_ends_at_final_value_and_is_deterministic():
    rng = np.random.default_rng(3)
    J = rnn.make_J(40, 2.0, rng)
    x0 = rng.standard_normal((2, 40))
    r1 = lyap.largest_exponent(J, x0, t_transient=5, t_average=20, rng=np.random.default_rng(7))
    r2 = lyap.largest_exponent(J, x0, t_transient=5, t_average=20, rng=np.random.default_rng(7))
    assert np.array_equal(r1.lam, r2.lam)
    assert np.allclose(r1.running[-1], r1.lam)


def test_bad_lyapunov_input():
    with pytest.raises(UserError):
        lyap.largest_exponent(np.zeros((4, 4)), np.zeros(4), t_average=-1)
    with pytest.raises(UserError):
        lyap.spectrum(np.zeros((4, 4)), np.zeros(4), k=9)


def test_single_precision_tangent_agrees_and_two_trajectory_refuses():
    rng = np.random.default_rng(4)
    J = rnn.make_J(100, 3.0, rng)
    x0 = rng.standard_normal((2, 100))
    a = lyap.largest_exponent(J, x0, t_transient=10, t_average=60, method="tangent", rng=np.random.default_rng(0))
    b = lyap.largest_exponent(J, x0, t_transient=10, t_average=60, method="tangent", dtype=np.float32,
                              rng=np.random.default_rng(0))
    assert abs(a.mean - b.mean) < 0.03
    with pytest.raises(UserError):
        lyap.largest_exponent(J, x0, dtype=np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tangent_map_equals_the_plain_formula_bit_for_bit(dtype):
    """The tangent loop writes into reused buffers (issue 43); every step is still
    x <- (1 - dt) x + dt J tanh(x), v <- (1 - dt) v + dt J (v / cosh(x)^2), so lambda, the running estimates and
    the recorded states equal the plain formula's bit for bit."""
    rng = np.random.default_rng(6)
    N, K, dt, n = 90, 8, 0.01, 300
    J = rnn.make_J(N, 2.5, rng)
    x = rng.standard_normal((K, N)).astype(dtype)
    got = lyap.largest_exponent(J, x, dt=dt, t_transient=0.0, t_average=n * dt, method="tangent", dtype=dtype,
                                fused=False, record_every=7, rng=np.random.default_rng(9))
    u = np.random.default_rng(9).standard_normal((K, N)).astype(dtype)
    v = u / np.linalg.norm(u, axis=1, keepdims=True)
    JT = np.ascontiguousarray(J.T).astype(dtype)
    log_sum, states = np.zeros(K), []
    for step in range(1, n + 1):
        sech2 = 1.0 / np.cosh(x) ** 2
        prod = np.concatenate([np.tanh(x), sech2 * v]) @ JT
        x = (1 - dt) * x + dt * prod[:K]
        v = (1 - dt) * v + dt * prod[K:]
        if step % 7 == 0:
            states.append(x.copy())
        nv = np.linalg.norm(v, axis=1)
        log_sum += np.log(nv)
        v /= nv[:, None]
    assert np.array_equal(got.lam, log_sum / (n * dt))
    assert np.array_equal(got.extra["x_final"], x) and np.array_equal(got.extra["u_final"], v)
    assert np.array_equal(got.extra["states"], np.array(states, dtype=np.float64))


@pytest.mark.parametrize("K, fused, renorm", [(1, True, 1), (2, True, 3), (3, False, 1)])
def test_two_trajectory_equals_the_plain_formula_bit_for_bit(K, fused, renorm):
    """The two-trajectory loop steps in place (issue 43); every step is still z <- (1 - dt) z + dt J tanh(z), every
    renormalisation d = z' - z, ln(|d| / eps) counted, z' <- z + d eps / |d|, so lambda, the running estimates,
    the recorded states and the final state and direction equal the plain formula's bit for bit."""
    rng = np.random.default_rng(7)
    N, dt, n, eps = 64, 0.01, 240, 1e-6
    J = rnn.make_J(N, 2.5, rng)
    x = rng.standard_normal((K, N))
    got = lyap.largest_exponent(J, x, dt=dt, t_transient=0.0, t_average=n * dt, eps=eps, renorm_every=renorm,
                                fused=fused, record_every=4, n_running=10, rng=np.random.default_rng(3))
    u = np.random.default_rng(3).standard_normal((K, N))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    JT = np.ascontiguousarray(J.T)
    z = np.concatenate([x, x + eps * u])
    log_sum, states, running = np.zeros(K), [], []
    for b in range(n // renorm):
        for s in range(renorm):
            z = (1.0 - dt) * z + dt * rows_times_JT(np.tanh(z), J, JT, fused)
            if (b * renorm + s + 1) % 4 == 0:
                states.append(z[:K].copy())
        d = z[K:] - z[:K]
        dist = np.linalg.norm(d, axis=1)
        log_sum += np.log(dist / eps)
        z[K:] = z[:K] + d * (eps / dist)[:, None]
        u = d / dist[:, None]
        if (b + 1) % max(1, (n // renorm) // 10) == 0:
            running.append(log_sum / ((b + 1) * renorm * dt))
    assert np.array_equal(got.lam, log_sum / (n * dt))
    assert np.array_equal(got.running, np.array(running))
    assert np.array_equal(got.extra["states"], np.array(states))
    assert np.array_equal(got.extra["x_final"], z[:K]) and np.array_equal(got.extra["u_final"], u)
