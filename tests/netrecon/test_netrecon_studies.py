"""The measurement-to-metric mapping of each study module (papers/netrecon/studies/), on hand-computable
inputs: exact metric keys and values, no notebook and no simulation (arXiv:2409.04240)."""
from types import SimpleNamespace

import numpy as np
import pytest

from papers.netrecon import dmft as theory, predict
from papers.netrecon.studies import dmft, gain_key, lyapunov, pool_workers, prediction, reconstruction, regimes


def test_gain_key_and_pool_workers():
    assert [gain_key(g) for g in (0.5, 0.8, 2.0, 3.0, 2.1)] == ["g0p5", "g0p8", "g2", "g3", "g2p1"]
    assert pool_workers(SimpleNamespace(workers=0)) is None and pool_workers(SimpleNamespace(workers=2)) == 2


# -- 01 regimes -----------------------------------------------------------------------------------
def test_quiescent_lambda_is_a_mean_over_networks_with_the_near_miss_beside_it():
    sub = [{"g": 0.5, "lam": [-0.4, -0.6], "lam_linear": -0.5}, {"g": 0.5, "lam": [-0.7], "lam_linear": -0.3}]
    near = [{"g": 0.5 + 0.05, "lam": [-0.45]}, {"g": 0.5 + 0.05, "lam": [-0.35]}]
    m = regimes.quiescent_metrics([0.5], sub, near, 0.05)
    assert set(m) == {"lam_sim_g0p5", "lam_sim_se_g0p5", "lam_linear_g0p5", "ctrl_lam_sim_near_g0p5",
                      "ctrl_lam_sim_near_se_g0p5"}
    assert m["lam_sim_g0p5"] == pytest.approx(-0.6) and m["lam_sim_se_g0p5"] == pytest.approx(0.1)
    assert m["lam_linear_g0p5"] == pytest.approx(-0.4)
    assert m["ctrl_lam_sim_near_g0p5"] == pytest.approx(-0.4) and m["ctrl_lam_sim_near_se_g0p5"] == pytest.approx(0.05)
    lone = regimes.quiescent_metrics([0.5], sub, near[:1], 0.05)         # one near-miss network: no error
    assert np.isnan(lone["ctrl_lam_sim_near_se_g0p5"])
    assert np.isnan(regimes.quiescent_metrics([0.5], sub, [], 0.05)["ctrl_lam_sim_near_g0p5"])


# -- 02 reconstruction ----------------------------------------------------------------------------
def test_reconstruction_scores_and_controls_keep_their_names():
    ls, ad = {"rel_fro": 1e-13, "r": 1.0}, {"rel_fro": 0.1, "r": 0.99, "d_W": 2e-4, "eta": 0.1}
    assert reconstruction.fit_metrics("g2", ls, ad) == {"ls_relfro_g2": 1e-13, "adam_r_g2": 0.99, "adam_dW_g2": 2e-4,
                                                        "adam_eta_g2": 0.1, "adam_relfro_g2": 0.1}
    assert reconstruction.control_metrics("g0p8", 7e-8, 96.0, 0.01, -0.005) == {
        "ctrl_ls_relfro_g0p8": 7e-8, "shuffled_ls_relfro_g0p8": 96.0, "ctrl_ls_r_g0p8": 0.01, "ctrl_adam_r_g0p8": -0.005}


def test_the_adam_students_horizon_is_censored_at_the_runs_end():
    rms = np.array([[0.1, 0.3], [0.2, 0.2], [0.0, 0.1]])                # (time, state)
    m = reconstruction.student_metrics("g0p8", 0.8, np.array([10.0, np.nan]), rms, 150.0)
    assert m == {"adam_Tpd_g0p8": 80.0, "adam_Tpd_se_g0p8": pytest.approx(70.0), "adam_max_rms_g0p8": pytest.approx(0.2)}
    chaos = reconstruction.student_metrics("g2", 2.0, np.array([20.0, 30.0]), rms, 150.0)
    assert set(chaos) == {"adam_Tpd_g2", "adam_Tpd_se_g2"} and chaos["adam_Tpd_g2"] == 25.0


def test_the_horizon_claim_averages_chaotic_teachers_and_reports_the_rejected_draws():
    res = [{"T_pd": np.array([20.0, np.nan]), "r": 0.99}, {"T_pd": np.array([30.0, 40.0]), "r": 0.97}]
    m = reconstruction.chaotic_student_metrics("g2", res, [0.1, -0.02, 0.05], 0.02, 150.0)
    assert m["adam_Tpd_g2"] == pytest.approx((85.0 + 35.0) / 2)                  # censored at 150, then per teacher
    assert m["adam_Tpd_se_g2"] == pytest.approx(25.0)                             # over teachers: sd 35.36 / sqrt 2
    assert (m["adam_h_teachers_g2"], m["adam_h_draws_g2"]) == (2.0, 3.0)
    assert m["adam_h_nonchaotic_frac_g2"] == pytest.approx(1 / 3) and m["adam_h_teacher_lam_g2"] == pytest.approx(0.075)
    none = reconstruction.chaotic_student_metrics("g2", [], [-0.1], 0.02, 150.0)
    assert np.isnan(none["adam_Tpd_g2"]) and none["adam_h_nonchaotic_frac_g2"] == 1.0


def test_the_chaotic_teachers_are_chosen_by_their_own_exponent_in_draw_order(monkeypatch):
    from types import SimpleNamespace
    from common.seed import Streams

    lams = {0: -0.02, 1: 0.08, 2: 0.0, 3: 0.05, 4: 0.09}
    monkeypatch.setattr(reconstruction.tasks, "teacher_exponent_task", lambda N, g, s, *a, **k: lams[s.keys[-1]])
    cfg = SimpleNamespace(adam_h_max_draws=5, adam_h_nets=2, adam_h_min_lam=0.02, rec_N=20, pred_t_burn=1.0,
                          adam_h_t_lyap=1.0, dt=0.01)
    chosen, drawn = reconstruction.chaotic_teachers(cfg, Streams(0), 2.0)
    assert [s.keys[-1] for s in chosen] == [1, 3] and drawn == [-0.02, 0.08, 0.0, 0.05]   # stops at the second
    cfg.adam_h_max_draws = 2
    chosen, drawn = reconstruction.chaotic_teachers(cfg, Streams(0), 2.0)
    assert [s.keys[-1] for s in chosen] == [1] and len(drawn) == 2                       # at most max_draws


# -- 03 prediction --------------------------------------------------------------------------------
def horizon_results(lam=0.5, N=100, g=2.0, dt=0.01):
    """Two networks whose T_pd is exactly ln(1/eta) / lam and whose one-step error follows the law."""
    etas = np.array([1e-4, 1e-3, 1e-2])
    rs = []
    for phi2 in (0.4, 0.6):
        phi2_each = np.array([phi2, phi2])
        eps_each = predict.one_step_theory(N, g, etas[:, None], phi2_each[None], dt)      # (eta, state)
        rs.append({"g": g, "lam": lam, "T_pd": np.repeat((np.log(1 / etas) / lam)[:, None], 2, axis=1),
                   "r": [0.9, 0.99, 0.999], "eps": eps_each.mean(axis=1), "eps_each": eps_each, "phi2": phi2,
                   "phi2_each": phi2_each, "x2_each": 4 * phi2_each, "t": np.arange(3.0), "D_mean": np.ones((3, 3))})
    return etas, rs


# The exact log law below leaves the power-law comparison a residual of 0: its log ratio is -inf by design (the
# metric, its exp, is 0), which NumPy reports as a division by zero.
@pytest.mark.filterwarnings("ignore:divide by zero encountered in log:RuntimeWarning")
def test_the_horizon_slope_is_lambda_and_the_one_step_law_holds_exactly():
    etas, rs = horizon_results()
    m, data = prediction.horizon_gain(2.0, rs, etas, 100, 0.01)
    assert m["pred_lam_fit_g2"] == pytest.approx(0.5) and m["pred_lam_benettin_g2"] == pytest.approx(0.5)
    assert m["pred_lam_ratio_g2"] == pytest.approx(1.0) and m["pred_r2_g2"] == pytest.approx(1.0)
    assert m["pred_lam_ratio_se_g2"] == pytest.approx(0.0, abs=1e-9)
    assert m["pred_Tpd_eta1e-3_g2"] == pytest.approx(2 * np.log(1e3)) and m["pred_r_eta1e-3_g2"] == 0.99
    assert m["pred_finite_frac_g2"] == 1.0 and m["pred_resid_ratio_g2"] == 0.0     # the log law fits exactly
    assert m["eps_ratio_g2"] == pytest.approx(1.0) and m["eps_ratio_se_g2"] == pytest.approx(0.0, abs=1e-12)
    assert m["ctrl_eps_ratio_g2"] == pytest.approx(0.5)                 # <x^2> = 4 <phi^2>: half the law
    assert m["ctrl_pred_r2_g2"] < 1.0                                   # a power law misses a logarithm
    assert data["T"].shape == (2, 3, 2) and data["D"].shape == (3, 3)
    ann = prediction.annealed_slope_metrics(2.0, data, etas)
    assert ann["lam_annealed_g2"] == theory.annealed_lyapunov(2.0)
    assert ann["ctrl_pred_lam_ratio_g2"] == pytest.approx(0.5 / theory.annealed_lyapunov(2.0))


def test_the_quiescent_error_in_units_of_eta_and_relative_to_the_teacher():
    q = {"t": np.array([0.0, 5.0, 10.0]),
         "rms_over_eta_each": np.array([[0.2, 0.4], [0.3, 0.3], [0.1, 0.1]]),
         "untrained_rms_over_eta_each": np.array([[1.0, 1.0], [9.0, 11.0], [4.0, 6.0]]),
         "rel_each": np.array([[0.0, 0.0], [0.01, 0.03], [0.02, 0.02]]),
         "untrained_rel_each": np.array([[0.0, 0.0], [1.0, 1.0], [1.2, 1.4]]),
         "teacher_rms_each": np.array([[1.0, 1.0], [0.5, 0.5], [0.2, 0.4]]),
         "horizon_T_pd": np.array([80.0, 80.0]), "horizon_max_rms": 3e-4}
    m, curves = prediction.quiescent_metrics([q])
    assert m["q_max_rms_over_eta"] == pytest.approx(0.3) and m["q_final_rms_over_eta"] == pytest.approx(0.1)
    assert m["ctrl_q_max_rms_over_eta"] == pytest.approx(10.0) and m["ctrl_q_final_rms_over_eta"] == pytest.approx(5.0)
    assert m["ctrl_q_final_rms_over_eta_se"] == pytest.approx(1.0)
    assert m["q_rel_final"] == pytest.approx(0.02) and m["ctrl_q_rel_final"] == pytest.approx(1.3)
    assert m["q_rel_t5"] == pytest.approx(0.02) and m["q_teacher_rms_final"] == pytest.approx(0.3)
    assert m["q_Tpd_eta_ctrl"] == 80.0 and m["q_max_rms_eta_ctrl"] == 3e-4
    assert np.allclose(curves["rms_over_eta"], [0.3, 0.3, 0.1]) and np.allclose(curves["rel_untrained"], [0, 1, 1.3])


def data_size_results(lam=0.25):
    """Two networks whose T_pd is exactly ln(1/eps) / lam, with d_W = eps^2 (isotropic error)."""
    eps = np.array([1e-2, 1e-3, 1e-4])
    T = np.log(1 / eps) / lam
    return [{"P": [100, 200, 400], "d_W": list(eps**2), "d_W_repeat": [3.0, 2.0, 1.5], "eps": list(eps),
             "r": [0.995, 0.999, 0.9999], "lam": lam, "T_pd": np.stack([T, T], axis=1)} for _ in range(2)]


def test_the_data_size_rate_is_one_for_a_logarithmic_horizon():
    d_res = data_size_results()
    units = [(i, j) for i in range(2) for j in range(2)]
    assert prediction.ds_slope(d_res, units, "eps", 0.99) == pytest.approx(1.0)
    assert prediction.ds_slope(d_res, units, "d_W", 0.99) == pytest.approx(1.0)        # 2 lambda b against d_W
    assert prediction.ds_slope(d_res, units, "eps", 0.99, lam=0.5) == pytest.approx(2.0)
    assert np.isnan(prediction.ds_slope(d_res, units, "eps", 0.9991))                   # one good size only
    perms = [np.array([[2, 1, 0]]), np.array([[0, 1, 2]])]        # network 0 reversed, network 1 kept
    assert prediction.ds_slope(d_res, units, "eps", 0.99, size_perms=perms, shuffled=True) == pytest.approx(0.0)
    m = prediction.data_size_metrics(d_res, perms, 0.5, 0.99)
    assert m["ds_spearman_dW_P"] == -1.0 and m["ctrl_ds_spearman_dW_P"] == -1.0
    assert m["shuffled_ds_spearman_dW_P"] == 0.0
    assert m["ds_slope_times_lam"] == pytest.approx(1.0) and m["ds_slope_times_2lam"] == pytest.approx(1.0)
    assert m["ctrl_ds_slope_times_lam"] == pytest.approx(2.0) and m["shuffled_ds_slope_times_lam"] == pytest.approx(0.0)
    assert m["ds_dW_drop"] == pytest.approx(1e4) and m["ds_eps_drop"] == pytest.approx(1e2)
    assert m["ds_dW_repeat_drop"] == pytest.approx(2.0) and m["ds_r_max_P"] == 0.9999
    assert m["ds_Tpd_gain"] == pytest.approx(8 * np.log(10)) and m["ds_Tpd_max_P"] == pytest.approx(16 * np.log(10))


HORIZON_METRICS = {"ds_slope_times_lam", "ds_slope_times_lam_se", "ds_slope_times_2lam", "shuffled_ds_slope_times_lam",
                   "ctrl_ds_slope_times_lam", "ctrl_ds_slope_times_lam_se", "ds_Tpd_gain", "ds_Tpd_max_P"}


def test_data_size_without_horizons_logs_every_metric_but_the_horizons_and_draws_its_figure():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from papers.netrecon import figures

    perms = [np.array([[2, 1, 0]]), np.array([[0, 1, 2]])]
    on = prediction.data_size_metrics(data_size_results(), perms, 0.5, 0.99)
    d_res = [r | {"T_pd": None, "lam": None, "net": i} for i, r in enumerate(data_size_results())]
    off = prediction.data_size_metrics(d_res, perms, 0.5, 0.99)
    assert HORIZON_METRICS <= set(on) and set(off) == set(on) - HORIZON_METRICS
    assert all(off[k] == on[k] for k in off)
    fig = figures.data_size({"data_size": d_res})
    assert "not run at this profile" in " ".join(t.get_text() for t in fig.axes[1].texts)
    assert len(fig.axes[0].lines) == 2 and not fig.axes[1].lines
    plt.close(fig)
    fig = figures.data_size({"data_size": [r | {"net": i} for i, r in enumerate(data_size_results())]})
    assert len(fig.axes[1].lines) == 2 and not fig.axes[1].texts
    plt.close(fig)


# -- 04 DMFT --------------------------------------------------------------------------------------
def test_stationary_deviations_are_relative_to_the_theory_and_to_its_competitors():
    each = np.array([[2.0, 1.0, 0.5], [2.2, 1.2, 0.7]])                # (network, lag); mean 2.1, 1.1, 0.6
    th = {"Delta": np.array([2.1, 1.0, 0.5]), "Delta0": 2.1, "lam": 0.1}
    near = {"Delta": np.array([2.1, 1.3, 0.6]), "Delta0": 2.1, "lam": 0.12}
    m = dmft.stationary_metrics("g2", each, np.array([0.09, 0.11]), np.array([True, True, False]), th, near,
                                {"delta0_static": 2.52, "lam_annealed": 0.2}, 1000)
    assert m["delta0_ratio_g2"] == pytest.approx(1.0) and m["delta0_dev_g2"] == pytest.approx(0.0, abs=1e-12)
    assert m["ctrl_delta0_dev_g2"] == pytest.approx(1 / 6) and m["delta0_dev_se_g2"] == pytest.approx(0.1 / 2.1)
    assert m["delta_maxdev_g2"] == pytest.approx(0.1 / 2.1) and m["delta_maxdev_all_g2"] == pytest.approx(0.1 / 2.1)
    assert m["ctrl_delta_maxdev_g2"] == pytest.approx(0.2 / 2.1)
    assert m["delta_tail_g2"] == pytest.approx(0.1 / 2.1)
    assert m["lam_dev_g2"] == pytest.approx(0.0, abs=1e-12) and m["ctrl_lam_dev_g2"] == pytest.approx(0.5)
    assert m["lam_sim_N1000_g2"] == pytest.approx(0.1) and m["lam_dmft_near_g2"] == 0.12
    assert m["delta0_static_g2"] == 2.52 and m["lam_annealed_g2"] == 0.2 and m["lam_dmft_g2"] == 0.1
    assert dmft.rel_dev([1.0, 3.0], 4.0) == 0.5


def test_two_replica_transients_below_and_above_onset():
    t = np.array([0.0, 1.0, 2.0, 3.0])
    each = np.array([[1.0, 2.0, 4.0, 8.0], [1.0, 2.0, 4.0, 8.0]])       # (network x state, time)
    chaos = dmft.transient_metrics("", "g2", 2.0, t, each, each[0] * np.e, 3.0)
    assert chaos == {"tr_maxlog_g2": pytest.approx(1.0), "tr_maxlog_se_g2": pytest.approx(0.0)}
    quiet = dmft.transient_metrics("ctrl_", "g0p8", 0.8, t, each, each[0] + np.array([0, 0, 0, 0.8]), 3.0)
    assert quiet == {"ctrl_tr_maxrel_g0p8": pytest.approx(0.1), "ctrl_tr_maxrel_se_g0p8": pytest.approx(0.0)}


def test_saturation_against_two_delta0_and_relative_to_the_teacher_below_onset():
    r = {"t": np.array([0.0, 10.0, 40.0]), "D": np.array([0.0, 4.0, 1.0]), "C_TT": np.array([1.0, 4.0, 4.0])}
    un = {"D": np.array([0.0, 8.0, 4.0]), "C_TT": np.array([1.0, 4.0, 4.0])}
    q = dmft.saturation_metrics("g0p8", 0.8, r, np.array([0.1, 0.3]), un, np.nan, np.nan)
    assert q == {"sat_dmft_final_over_max_g0p8": 0.25, "sat_dmft_rel_final_g0p8": 0.5,
                 "ctrl_sat_dmft_rel_final_g0p8": 1.0, "ctrl_sat_dmft_final_over_max_g0p8": 0.5,
                 "sat_dmft_rel_t10_g0p8": 1.0}
    c = dmft.saturation_metrics("g3", 3.0, {"t": r["t"], "D": np.array([0.0, 9.0, 10.0])}, np.array([9.0, 11.0]),
                                None, 10.0, 12.5)
    assert c["sat_dmft_over_2delta0_g3"] == 1.0 and c["sat_dmft_dev_g3"] == 0.0
    assert c["ctrl_sat_dmft_dev_g3"] == pytest.approx(0.2) and c["sat_sim_over_2delta0_g3"] == 1.0
    assert c["sat_sim_over_2delta0_se_g3"] == pytest.approx(0.1) and c["ctrl_sat_sim_dev_g3"] == pytest.approx(0.2)
    assert "sat_dmft_rel_final_g3" not in c


# -- 05 Lyapunov ----------------------------------------------------------------------------------
def test_the_official_os_rate_is_averaged_over_networks():
    res = [{"g": 2.0, "os_rate": 70.0, "eps": 0.002, "os_rate_eps1e-6": 760.0, "lam": 0.1},
           {"g": 2.0, "os_rate": 80.0, "eps": 0.004, "os_rate_eps1e-6": 770.0, "lam": 0.0},
           {"g": 0.5, "os_rate": -0.5, "eps": 0.001, "os_rate_eps1e-6": -0.5, "lam": -0.5}]
    m = lyapunov.os_metrics([0.5, 2.0], res)
    assert m == {"os_rate_g0p5": -0.5, "os_eps_g0p5": 0.001, "os_rate_eps1e-6_g0p5": -0.5, "os_true_lam_g0p5": -0.5,
                 "os_rate_g2": 75.0, "os_eps_g2": pytest.approx(0.003), "os_rate_eps1e-6_g2": 765.0,
                 "os_true_lam_g2": pytest.approx(0.05)}
