"""Teacher-student distance, horizon and one-step error (arXiv:2409.04240)."""
import numpy as np
import pytest

from common.errors import UserError
from common.seed import Streams
from papers.netrecon import predict, rnn, tasks


def test_first_crossing_interpolates():
    t = np.array([0.0, 1.0, 2.0, 3.0])
    rms = np.array([[0.0, 0.0], [0.5, 0.1], [1.5, 0.2], [2.0, 0.3]])
    T = predict.first_crossing(rms, t, 1.0)
    assert T[0] == pytest.approx(1.5) and np.isnan(T[1])


def test_log_slope_fit_recovers_line():
    eta = np.logspace(-6, -1, 6)
    f = predict.fit_log_slope(eta, 3.0 + 5.0 * np.log(1 / eta))
    assert f["slope"] == pytest.approx(5.0) and f["r2"] == pytest.approx(1.0) and f["lam_fit"] == pytest.approx(0.2)


def test_identical_student_never_departs():
    rng = np.random.default_rng(0)
    J = rnn.make_J(30, 2.0, rng)
    out = predict.run_pair(J, J.copy(), rng.standard_normal((2, 30)), t_max=5.0, delta=0.1)
    assert np.all(out["D"] == 0) and np.all(np.isnan(out["T_pd"]))
    assert np.all(predict.one_step_error(J, J, rng.standard_normal(30)) == 0)


def test_one_step_error_law():
    rng = np.random.default_rng(1)
    N, g, eta = 400, 2.0, 0.1
    J = rnn.make_J(N, g, rng)
    JS = rnn.perturb(J, eta, g, rng)
    x0 = rng.standard_normal((20, N))
    eps = predict.one_step_error(J, JS, x0).mean()
    theory = predict.one_step_theory(N, g, eta, float(np.mean(np.tanh(x0) ** 2)))
    assert eps == pytest.approx(theory, rel=0.05)


def test_chaotic_student_crosses_and_horizon_shrinks_with_eta():
    rng = np.random.default_rng(2)
    J = rnn.make_J(200, 3.0, rng)
    JS = rnn.perturb(J, np.array([1e-4, 1e-2]), 3.0, rng)
    x0 = rnn.relax(J, rng.standard_normal((2, 200)), 20.0)
    out = predict.run_pair(J, JS, x0, t_max=200.0, delta=0.3, record_every=5)
    assert np.all(np.isfinite(out["T_pd"]))
    assert np.all(out["T_pd"][0] > out["T_pd"][1])


def test_task_is_deterministic_for_a_seed():
    kw = dict(N=40, g=2.0, streams=Streams(3), eta=0.1, n_x0=2, T=1.0)
    a, b = tasks.pair_distance_task(**kw), tasks.pair_distance_task(**kw)
    assert np.array_equal(a["D"], b["D"])
    c = tasks.pair_distance_task(**dict(kw, streams=Streams(4)))
    assert not np.array_equal(a["D"], c["D"])


def test_horizon_formula_and_bad_tolerance():
    assert predict.horizon_formula(0.5, 1.0, np.exp(-2.0)) == pytest.approx(4.0)
    J = np.zeros((3, 3))
    with pytest.raises(UserError):
        predict.run_pair(J, J, np.zeros(3), t_max=1.0, delta=-1.0)


def test_official_os_rate_renormalises_to_the_one_step_error():
    """dp.py protocol: eps is ||x_S(1) - x_T(1)||; the rate is ~ln(2)/dt in chaos, ~lambda below onset."""
    rng = np.random.default_rng(3)
    J = rnn.make_J(100, 2.0, rng)
    JS = rnn.perturb(J, 0.01, 2.0, rng)
    x0 = rng.standard_normal((1, 100))
    out = predict.mismatch_rate(J, JS, x0, t_total=6.0, t_discard=2.0)
    assert out["eps"][0] == pytest.approx(predict.one_step_error(J, JS, x0)[0], rel=1e-12)
    assert 30 < out["rate"][0] < 150                      # ln(d/eps)/dt with d ~ 2 eps, far above lambda ~ 0.1
    fixed = predict.mismatch_rate(J, JS, x0, t_total=6.0, t_discard=2.0, eps=1e-6)
    assert fixed["rate"][0] > 5 * out["rate"][0]          # the "rate" depends on eps: it is no exponent
    Jq = rnn.make_J(100, 0.5, rng)                        # below onset x -> 0 switches the forcing off
    Jqs = rnn.perturb(Jq, 0.01, 0.5, rng)
    q = predict.mismatch_rate(Jq, Jqs, x0, t_total=40.0, t_discard=30.0)
    assert q["rate"][0] == pytest.approx(-0.5, abs=0.1)


def test_power_law_fit_is_exact_on_a_power_law_and_loses_to_the_line_on_a_logarithm():
    eta = np.logspace(-5, -2, 7)
    pw = predict.fit_power_law(eta, 3.0 * eta ** -0.2)
    assert pw["exponent"] == pytest.approx(0.2, abs=1e-12) and pw["A"] == pytest.approx(3.0, rel=1e-12)
    assert pw["r2"] == pytest.approx(1.0, abs=1e-12)
    T = 5.0 + 4.0 * np.log(1 / eta)                     # the logarithmic horizon
    assert predict.fit_log_slope(eta, T)["r2"] == pytest.approx(1.0, abs=1e-12)
    assert predict.fit_power_law(eta, T)["r2"] < 0.999


def test_students_that_stop_once_crossed_give_the_same_horizons_bit_for_bit():
    """`run_pair(stop_crossed=True)` steps only the students still below delta: the same T_pd, NaN D after."""
    rng = np.random.default_rng(7)
    J = rnn.make_J(200, 3.0, rng)
    JS = rnn.perturb(J, np.array([1e-1, 1e-2, 1e-3]), 3.0, rng)
    x0 = rnn.relax(J, rng.standard_normal((3, 200)), 20.0)
    full = predict.run_pair(J, JS, x0, t_max=150.0, delta=0.3, record_every=5)
    fast = predict.run_pair(J, JS, x0, t_max=150.0, delta=0.3, record_every=5, stop_crossed=True)
    assert np.isfinite(full["T_pd"]).all() and full["T_pd"][0].max() < full["T_pd"][2].min()
    np.testing.assert_array_equal(fast["T_pd"], full["T_pd"])
    assert np.isnan(fast["D"][-1, 0]).all() and np.isfinite(full["D"][-1]).all()      # the first student stopped
    before = full["t"] < full["T_pd"][0].max() - 0.1
    np.testing.assert_array_equal(fast["D"][before], full["D"][before])


def test_the_curvature_ratio_is_zero_for_the_log_law_and_one_for_a_power_law():
    etas = np.array([1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2])
    assert abs(predict.law_curvature_ratio(etas, 4.0 + np.log(1 / etas) / 0.2)) < 1e-9
    assert predict.law_curvature_ratio(etas, 2.0 * etas ** -0.2) == pytest.approx(1.0)
    assert predict.law_curvature_ratio(etas, 2.0 * etas ** -0.8) == pytest.approx(1.0)    # whatever the exponent
    with pytest.raises(UserError):
        predict.law_curvature_ratio(etas[:3], np.array([1.0, 2.0, 3.0]))


def test_the_adam_students_task_gives_a_horizon_for_every_state():
    """The horizon claim averages each chaotic teacher's student over its adam_n_x0 states (not the first one only):
    one T_pd per state, each between the records around its own RMS error curve's first crossing of delta."""
    out = tasks.adam_student_task(N=30, g=2.0, streams=Streams(0).child("net", 0), n_traj=4, n_steps=50, epochs=1,
                                  lr=0.1, batch_size=25, window=4, n_x0=3, t_burn=2.0, t_max=30.0, delta=0.3)
    assert out["T_pd"].shape == (3,) and out["rms"].shape == (len(out["t"]), 3)
    first = np.argmax(out["rms"] >= 0.3, axis=0)                           # every state crossed by t = 30
    assert (first > 0).all() and (out["t"][first - 1] <= out["T_pd"]).all() and (out["T_pd"] <= out["t"][first]).all()
    assert len(set(out["T_pd"].tolist())) == 3                                # three states, three horizons


def test_a_teacher_simulated_once_gives_the_same_distances_and_horizons_bit_for_bit():
    """`run_pair(teacher=...)` reads the teacher's recorded states instead of stepping it again (the g < 1 task
    runs four students against one teacher, issue 43): the same D and T_pd bit for bit, also when the record runs
    past t_max or the run stops once every state crossed; a record too short, or of single-precision runs, is refused."""
    rng = np.random.default_rng(11)
    J = rnn.make_J(120, 2.5, rng)
    JS = rnn.perturb(J, np.array([1e-1, 1e-2]), 2.5, rng)
    x0 = rnn.relax(J, rng.standard_normal((3, 120)), 20.0)
    teacher = rnn.simulate(J, x0, 6000, record_every=10)             # to t = 60
    for kw in (dict(t_max=30.0), dict(t_max=60.0, delta=0.3), dict(t_max=60.0, delta=0.3, stop_crossed=True)):
        plain = predict.run_pair(J, JS, x0, record_every=10, **kw)
        read = predict.run_pair(J, JS, x0, record_every=10, teacher=teacher, **kw)
        assert plain.keys() == read.keys()
        for k in plain:
            assert np.array_equal(plain[k], read[k], equal_nan=True), k
    assert np.isfinite(plain["T_pd"]).all() and np.isnan(plain["D"][-1, 0]).all()   # crossed; the first one stopped
    with pytest.raises(UserError):
        predict.run_pair(J, JS, x0, t_max=61.0, record_every=10, teacher=teacher)
    with pytest.raises(UserError):
        predict.run_pair(J, JS, x0, t_max=10.0, record_every=10, teacher=teacher, dtype=np.float32)


def test_the_linear_exponent_is_left_out_only_when_asked():
    """`lyapunov_task(linear=False)` skips the eigenvalues of J (no reader of the near-miss and grid runs takes
    them, issue 43): NaN in their place, lambda the same bit for bit."""
    kw = dict(N=60, g=0.6, streams=Streams(3), n_traj=1, t_transient=1.0, t_average=2.0)
    full, bare = tasks.lyapunov_task(**kw), tasks.lyapunov_task(**kw, linear=False)
    assert np.isfinite(full["lam_linear"]) and np.isnan(bare["lam_linear"])
    assert full["lam"] == bare["lam"] and np.array_equal(full["running"], bare["running"])
