"""The rate network: couplings, integrators, bad input (arXiv:2409.04240)."""
import numpy as np
import pytest

from common.errors import UserError
from papers.netrecon import rnn


def test_couplings_statistics_and_zero_diagonal():
    J = rnn.make_J(400, 1.5, np.random.default_rng(0))
    assert np.all(np.diag(J) == 0)
    off = J[~np.eye(400, dtype=bool)]
    assert abs(off.var() * 400 / 1.5**2 - 1) < 0.02


def test_circular_law_spectral_radius_near_g():
    for g in (0.5, 2.0):
        r = rnn.spectral_radius(rnn.make_J(400, g, np.random.default_rng(1)))
        assert abs(r / g - 1) < 0.08


def test_perturbed_student_variance_and_correlation():
    rng = np.random.default_rng(2)
    J = rnn.make_J(300, 2.0, rng)
    eta = 0.3
    JS = rnn.perturb(J, eta, 2.0, rng)
    m = ~np.eye(300, dtype=bool)
    assert abs(JS[m].var() / J[m].var() - 1) < 0.02
    assert abs(np.corrcoef(JS[m], J[m])[0, 1] - np.sqrt(1 - eta**2)) < 0.01
    stack = rnn.perturb(J, np.array([0.0, 0.5]), 2.0, rng)
    assert stack.shape == (2, 300, 300) and np.allclose(stack[0], J)


def _error(method, dt, J, x0, t_end):
    ref = rnn.simulate(J, x0, int(round(t_end / 1e-4)), dt=1e-4, method="rk4", record=False)
    x = rnn.simulate(J, x0, int(round(t_end / dt)), dt=dt, method=method, record=False)
    return np.linalg.norm(x - ref)


def test_integrator_orders_rk4_four_euler_one():
    rng = np.random.default_rng(3)
    J = rnn.make_J(20, 2.0, rng)
    x0 = rng.standard_normal(20)
    dts = np.array([0.1, 0.05, 0.025])
    for method, order in (("rk4", 4), ("euler", 1)):
        err = [_error(method, dt, J, x0, 1.0) for dt in dts]
        slope = np.polyfit(np.log(dts), np.log(err), 1)[0]
        assert abs(slope - order) < 0.25, (method, slope)


def test_euler_map_is_the_papers_update():
    rng = np.random.default_rng(4)
    J = rnn.make_J(5, 1.0, rng)
    x = rng.standard_normal(5)
    expected = (1 - 0.01) * x + 0.01 * J @ np.tanh(x)
    assert np.allclose(rnn.simulate(J, x, 1)[1], expected, atol=1e-15)


def test_batched_networks_match_single():
    rng = np.random.default_rng(5)
    Js = rnn.make_J(10, 2.0, rng, batch=3)
    x0 = rng.standard_normal((3, 2, 10))
    out = rnn.simulate(Js, x0, 50, record=False)
    for b in range(3):
        assert np.allclose(out[b], rnn.simulate(Js[b], x0[b], 50, record=False))


def test_recording_shape_and_subsampling():
    J = rnn.make_J(8, 1.0, np.random.default_rng(6))
    x = rnn.simulate(J, np.ones((2, 8)), 100, record_every=10)
    full = rnn.simulate(J, np.ones((2, 8)), 100)
    assert x.shape == (11, 2, 8) and np.allclose(x, full[::10])


@pytest.mark.parametrize("kwargs", [dict(N=10, g=-0.1), dict(N=1, g=1.0)])
def test_bad_network_parameters(kwargs):
    with pytest.raises(UserError):
        rnn.make_J(rng=np.random.default_rng(0), **kwargs)


@pytest.mark.parametrize("dt", [0.0, 1.0, -0.01, 1.5])
def test_bad_time_step(dt):
    J = rnn.make_J(4, 1.0, np.random.default_rng(0))
    with pytest.raises(UserError):
        rnn.simulate(J, np.zeros(4), 10, dt=dt)


def test_too_many_steps_for_memory():
    J = rnn.make_J(1000, 1.0, np.random.default_rng(0))
    with pytest.raises(UserError, match="GiB"):
        rnn.simulate(J, np.zeros((100, 1000)), 10**7)


def test_bad_eta():
    J = rnn.make_J(4, 1.0, np.random.default_rng(0))
    with pytest.raises(UserError):
        rnn.perturb(J, 1.5, 1.0, np.random.default_rng(0))
