"""The nulls the claims are judged against really lack what the claims measure (arXiv:2409.04240)."""
import math

import numpy as np
import pytest

from common.seed import Streams, torch_generator
from papers.netrecon import lyap, predict, recon, rnn, tasks


def test_shuffled_time_keeps_the_states_and_breaks_least_squares():
    rng = np.random.default_rng(0)
    N = 30
    J = rnn.make_J(N, 2.0, rng)
    traj = rnn.simulate(J, rng.standard_normal((4, N)), 300)
    sh = recon.shuffle_time(traj, np.random.default_rng(1))
    assert sh.shape == traj.shape
    for i in range(traj.shape[1]):        # each trajectory keeps its own states, in another order
        a = traj[:, i][np.lexsort(traj[:, i].T)]
        b = sh[:, i][np.lexsort(sh[:, i].T)]
        assert np.array_equal(a, b)
    assert not np.array_equal(sh, traj)
    assert recon.rel_frobenius(recon.fit_least_squares(traj, rnn.DT), J) < 1e-8
    assert recon.rel_frobenius(recon.fit_least_squares(sh, rnn.DT), J) > 1.0


def test_untrained_student_is_the_adam_start_and_knows_nothing_of_J():
    N = 60
    J = rnn.make_J(N, 2.0, np.random.default_rng(2))
    W0 = recon.adam_init(N, torch_generator(5, "adam", 2.0))
    assert W0.min() >= 0.0 and W0.max() < 1.0
    assert abs(recon.pearson_r(W0, J)) < 5.0 / N           # independent entries: r ~ N(0, 1/N^2)
    traj = rnn.simulate(J, np.random.default_rng(3).standard_normal((10, N)), 40)
    W1, _ = recon.fit_adam(traj, rnn.DT, epochs=1, lr=1e-12, generator=torch_generator(5, "adam", 2.0))
    assert np.max(np.abs(W1 - W0)) < 1e-9                    # fit_adam starts from exactly this draw


def test_zero_coupling_exponent_is_analytic():
    J = rnn.make_J(50, 0.0, np.random.default_rng(4))
    assert not J.any()
    res = lyap.largest_exponent(J, np.random.default_rng(5).standard_normal((2, 50)), t_transient=2.0,
                                t_align=1.0, t_average=5.0, rng=np.random.default_rng(6))
    assert res.lam == pytest.approx([math.log(1 - rnn.DT) / rnn.DT] * 2, abs=1e-9)


def test_quiescent_controls_fail_where_the_claim_holds():
    out = tasks.quiescent_pair_task(N=80, g=0.8, streams=Streams(1), eta=0.1, n_x0=2, t_max=20.0,
                                          ctrl_eta_horizon=1e-3, ctrl_t_horizon=50.0, delta=0.3)
    good, untrained = out["rms_over_eta_each"].mean(axis=1), out["untrained_rms_over_eta_each"].mean(axis=1)
    assert good.max() < 0.5 < untrained.max()              # the bound tells J from an unrelated J'
    # every state decays below onset: the untrained student's absolute error decays too (the decay is the regime's)
    assert good[-1] < 0.1 * good.max() and untrained[-1] < 0.1 * untrained.max()
    # relative to the teacher's own state the untrained student is lost (about sqrt 2), the student is not
    rel, rel_un = out["rel_each"][-1], out["untrained_rel_each"][-1]
    assert np.all(rel < 0.5 * rel_un) and np.all(rel_un > 0.7)
    assert np.all(out["horizon_T_pd"] == 50.0) and out["horizon_max_rms"] < 0.3   # never crossed: censored


def test_relative_error_is_the_distance_in_units_of_the_teachers_state():
    D = np.array([[0.04, 0.0], [1e-6, 2.0]])
    ms = np.array([[1.0, 0.0], [1e-4, 2.0]])
    assert np.allclose(predict.relative_error(D, ms), [[0.2, 0.0], [0.1, 1.0]])


def test_linearised_one_step_law_misses_by_the_saturation_of_tanh():
    rng = np.random.default_rng(8)
    N, g, eta = 300, 3.0, 0.01
    J = rnn.make_J(N, g, rng)
    x0 = rnn.relax(J, rng.standard_normal((4, N)), 20.0)
    eps = predict.one_step_error(J, rnn.perturb(J, eta, g, rng), x0)
    phi2, x2 = np.mean(np.tanh(x0) ** 2, axis=1), np.mean(x0**2, axis=1)
    right = eps / predict.one_step_theory(N, g, eta, phi2)
    linear = eps / predict.one_step_theory(N, g, eta, x2)
    assert np.mean(right) == pytest.approx(1.0, abs=0.05)
    assert linear == pytest.approx(right * np.sqrt(phi2 / x2), rel=1e-12)    # the same norm over another law
    assert np.mean(linear) < 0.6                             # states on the attractor saturate tanh


def test_float32_rounding_is_a_near_miss_of_the_least_squares_identity():
    rng = np.random.default_rng(11)
    N = 40
    J = rnn.make_J(N, 2.0, rng)
    traj = rnn.simulate(J, rng.standard_normal((6, N)), 300)
    exact = recon.rel_frobenius(recon.fit_least_squares(traj, rnn.DT), J)
    rounded = recon.rel_frobenius(recon.fit_least_squares(traj.astype(np.float32).astype(np.float64), rnn.DT), J)
    assert exact < 1e-9 and 1e-6 < rounded < 1e-2


def test_repeated_trajectories_add_samples_but_no_new_dynamics():
    out = tasks.data_size_task(N=20, g=2.0, streams=Streams(3), n_trajs=[4, 8, 12], n_steps=60, noise=0.0, ridge=0.0,
                                     t_burn=2.0, n_x0=1, t_max=2.0, delta=0.3, t_lyap=1.0)
    # without noise, copies repeat the same equations: least squares returns the first set's couplings at
    # every size (J to rounding), while new trajectories were J already
    assert out["d_W"][0] < 1e-12 and max(out["d_W_repeat"]) < 1e-12
    noisy = tasks.data_size_task(N=20, g=2.0, streams=Streams(3), n_trajs=[4, 8, 12], n_steps=60, noise=1e-2, ridge=1e-6,
                                       t_burn=2.0, n_x0=1, t_max=2.0, delta=0.3, t_lyap=1.0)
    assert noisy["d_W_repeat"][0] == pytest.approx(noisy["d_W"][0], rel=0.5)   # the same set, other noise
    assert noisy["d_W"][-1] < noisy["d_W_repeat"][-1]                        # new dynamics beat repeats


def test_data_size_without_horizons_fits_the_same_students():
    """ds_horizons off (quick, issue 43): no T_pd and no exponent, and every other entry bit for bit as with them
    (the skipped runs draw last from the task's stream)."""
    kw = dict(N=30, g=3.0, n_trajs=[4, 8], n_steps=60, noise=1e-3, ridge=1e-5, t_burn=2.0, n_x0=2, t_max=5.0,
              delta=0.3, t_lyap=2.0, t_align=0.5)
    on = tasks.data_size_task(streams=Streams(5), **kw)
    off = tasks.data_size_task(streams=Streams(5), horizons=False, **kw)
    assert off["T_pd"] is None and off["lam"] is None
    assert on["T_pd"].shape == (2, 2) and np.isfinite(on["lam"])
    for k in ("n_trajs", "P", "eps", "d_W", "r", "d_W_repeat", "net"):
        assert off[k] == on[k], k
