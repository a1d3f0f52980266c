"""The nulls the claims are judged against really lack what the claims measure (arXiv:2409.04240)."""
import math

import numpy as np
import pytest

from common.seed import torch_generator
from papers.netrecon import experiments, lyap, pipeline, predict, recon, rnn


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
    out = experiments.quiescent_pair_task(N=80, g=0.8, seed=1, eta=0.1, n_x0=2, t_max=20.0, ctrl_g=2.0,
                                          ctrl_eta_horizon=1e-3, ctrl_t_horizon=50.0, delta=0.3)
    good, untrained = out["rms_over_eta_each"].mean(axis=1), out["untrained_rms_over_eta_each"].mean(axis=1)
    chaos = out["chaos_rms_over_eta_each"].mean(axis=1)
    assert good.max() < 0.5 < untrained.max()              # the bound tells J from an unrelated J'
    assert good[-1] < 0.1 * good.max() and chaos[-1] > 1.0   # the decay is the quiescent regime's
    assert np.all(out["horizon_T_pd"] == 50.0) and out["horizon_max_rms"] < 0.3   # never crossed: censored


def test_broken_one_step_law_misses_by_the_attractor_statistics():
    assert pipeline.PHI2_GAUSS == pytest.approx(np.mean(np.tanh(np.random.default_rng(7).standard_normal(400_000)) ** 2),
                                                abs=2e-3)
    rng = np.random.default_rng(8)
    N, g, eta = 300, 3.0, 0.01
    J = rnn.make_J(N, g, rng)
    x0 = rnn.relax(J, rng.standard_normal((4, N)), 20.0)
    eps = predict.one_step_error(J, rnn.perturb(J, eta, g, rng), x0)
    phi2 = np.mean(np.tanh(x0) ** 2, axis=1)
    right = eps / predict.one_step_theory(N, g, eta, phi2)
    broken = eps / predict.one_step_theory(N, g, eta, pipeline.PHI2_GAUSS)
    assert np.mean(right) == pytest.approx(1.0, abs=0.05)
    assert np.mean(broken) == pytest.approx(np.mean(np.sqrt(phi2 / pipeline.PHI2_GAUSS)), rel=0.05)
    assert np.mean(broken) > 1.2                             # states on the attractor saturate tanh more
