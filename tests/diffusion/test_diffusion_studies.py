"""The mapping from measurements to claim metrics in papers/diffusion/studies/: hand-computable inputs,
exact metric names and values, no notebook and no simulation."""
import math

import numpy as np
import pytest

from papers.diffusion.studies import entropy_rates as er
from papers.diffusion.studies import fluctuation_theorems as ft
from papers.diffusion.studies import franz_parisi as fps
from papers.diffusion.studies import high_dimension as hd
from papers.diffusion.studies import potential_phase_diagram as ppd


# ---- notebook 01 --------------------------------------------------------------------------------------

def test_path_metrics_name_the_ift_the_second_law_and_the_entropy_parts():
    m = ft.path_metrics("forward", {"mean": 1.01, "se": 0.02}, (0.16, 0.003), np.float64(-0.27), np.float64(0.43))
    assert m == {"ift_forward_mean": 1.01, "ift_forward_se": 0.02, "dstot_forward_mean": 0.16, "dstot_forward_se": 0.003,
                 "dsys_forward_mean": -0.27, "dmed_forward_mean": 0.43}
    assert all(type(v) is float for v in m.values())
    assert ft.ift_metrics("backward_T10", {"mean": 0.99, "se": 0.01, "n": 5}) == {"ift_backward_T10_mean": 0.99,
                                                                                  "ift_backward_T10_se": 0.01}


def test_dft_metrics_take_each_fit_under_its_own_prefix():
    def fit(k):
        return {"slope": k + 0.1, "slope_se": k + 0.2, "intercept": k + 0.3, "intercept_se": k + 0.4, "n_forward": 7}
    m = ft.dft_metrics(fit(1), fit(2), fit(3), fit(4), np.mean(np.array([-1.0, 2.0, -3.0, 4.0]) < 0))
    assert (m["dft_slope"], m["dft_slope_se"], m["dft_intercept"], m["dft_intercept_se"], m["dft_n"]) == (1.1, 1.2, 1.3, 1.4, 7)
    assert (m["dft_same_process_slope"], m["dft_same_process_slope_se"]) == (2.1, 2.2)
    assert (m["dft_ito_slope"], m["dft_ito_intercept_se"]) == (3.1, 3.4)
    assert (m["dft_wrong_noise_slope"], m["dft_wrong_noise_intercept"], m["dft_wrong_noise_intercept_se"]) == (4.1, 4.3, 4.4)
    assert m["dft_frac_negative"] == 0.5 and len(m) == 16


def test_heavy_tail_metrics_spread_of_the_means_and_the_first_seed_quantiles():
    stats = [{"mean": 0.9, "q50": 0.4, "q99": 9.0, "max": 50.0}, {"mean": 1.2, "q50": 0.5, "q99": 12.0, "max": 300.0},
             {"mean": 1.0, "q50": 0.6, "q99": 8.0, "max": 20.0}]
    m = ft.heavy_tail_metrics(stats, [0.1, 0.2, 0.3])
    assert m == {"heavy_ift_mean_min": 0.9, "heavy_ift_mean_max": 1.2, "heavy_ift_mean_median": 1.0, "heavy_q50": 0.4,
                 "heavy_q99": 9.0, "heavy_max": 300.0, "heavy_dstot_mean": pytest.approx(0.2, abs=1e-15)}


# ---- notebook 02 --------------------------------------------------------------------------------------

def test_closed_form_miss_where_speciation_happens_and_where_it_does_not():
    assert ppd.closed_form_miss(0.5, 0.25) == 0.25
    assert ppd.closed_form_miss(-0.1, float("nan")) == 0.0        # no speciation, and no root: agreement
    assert ppd.closed_form_miss(-0.1, 0.3) == 0.3                 # no speciation, but a root: the miss is the root


def test_phase_metrics_count_points_away_from_the_boundaries():
    ana = np.array([[0, 1], [2, 1]]); num = np.array([[0, 1], [2, 0]]); high = np.array([[1, 1], [2, 0]])
    away = np.array([[True, True], [True, False]])
    assert ppd.phase_metrics(ana, num, high, away) == {"phase_agreement": 1.0, "phase_points_checked": 3,
                                                       "phase_agreement_high_dim": 2 / 3, "phase_agreement_all": 0.75}


# ---- notebook 03 --------------------------------------------------------------------------------------

def _mc(pi, phi, t_mid, se=1.0):
    pi, phi = np.asarray(pi, float), np.asarray(phi, float)
    return {"t_mid": np.asarray(t_mid, float), "pi": pi, "pi_se": np.full_like(pi, se), "phi": phi,
            "phi_se": np.full_like(phi, se)}


def test_rates_metrics_by_hand():
    t_mid = [0.5, 1.5]
    zeros = {"pi": np.zeros(2), "phi": np.zeros(2), "phi_backward": np.zeros(2)}
    closed = {"pi": np.array([0.8, 0.2]), "phi": np.array([0.5, 0.1]), "phi_backward": np.array([0.3, 0.1]),
              "pi_backward": np.array([0.8, 0.2])}
    quad = {"pi": np.array([0.8, 0.25]), "phi": np.array([0.5, 0.1]), "phi_backward": np.array([0.3, 0.1])}
    fine = np.linspace(0.0, 2.0, 5)
    r = {"closed": closed, "quad": quad, "broken": {k: v + 1.0 for k, v in quad.items()},
         "mc_forward": _mc([1.0, 2.0], [0.0, 3.0], t_mid),
         "mc_backward": _mc([2.0, 1.0], [1.0, 1.0], t_mid[::-1]),          # bins in s = T − t
         "mc_backward_wrong": _mc([2.0, 9.0], [0.0, 0.0], t_mid[::-1]),
         "halves": (_mc([0, 0], [1.0, 2.0], t_mid, se=0.6), _mc([0, 0], [1.0, 0.0], t_mid, se=0.8)),
         "theory_forward": {"pi": np.array([1.0, 1.0]), "phi": np.array([0.0, 0.0])},
         "theory_backward": {"pi": np.array([2.0, 2.0]), "phi": np.array([1.0, -1.0])},
         "broken_forward": {"pi": np.array([4.0, 2.0]), "phi": np.array([0.0, 0.0])},
         "broken_backward": {"pi": np.array([2.0, 1.0]), "phi": np.array([1.0, 1.0])},
         "fine": fine, "closed_fine": {"pi": np.array([4.0, 3.0, 2.0, 1.0, 0.0]),
                                       "phi_backward": np.array([1.0, -1.0, -2.0, -1.0, 1.0])},
         "t_star": 1.0, "kl_drop": 3.5, "t_s": 0.39}
    m = er.rates_metrics(r)
    assert m["rates_closed_vs_quadrature_maxdiff"] == pytest.approx(0.05)
    assert m["rates_broken_vs_quadrature_maxdiff"] == 1.0
    assert (m["pi_forward_mc_max_z"], m["phi_forward_mc_max_z"], m["forward_mc_max_z"]) == (1.0, 3.0, 3.0)
    assert (m["pi_backward_mc_max_z"], m["phi_backward_mc_max_z"], m["backward_mc_max_z"]) == (1.0, 2.0, 2.0)
    assert (m["forward_mc_broken_max_z"], m["backward_mc_broken_max_z"]) == (3.0, 0.0)
    # backward bins reversed to t: pi (1, 2) against forward (1, 2), phi (1, 1) against (0, 3), SE √2
    assert m["pi_forward_backward_max_z"] == 0.0
    assert m["phi_forward_backward_max_z"] == pytest.approx(2.0 / math.sqrt(2.0))
    assert m["pi_forward_backward_wrong_score_max_z"] == pytest.approx(8.0 / math.sqrt(2.0))   # (9, 2) against (1, 2)
    assert m["phi_forward_halves_max_z"] == pytest.approx(2.0)                                 # |2 − 0| / √(0.36 + 0.64)
    assert (m["pi_backward_minus_forward_closed_maxabs"], m["phi_backward_minus_forward_closed_maxabs"]) == (0.0, 0.2)
    assert m["pi_at_0"] == 0.8 and m["pi_monotone_decreasing"] is True
    assert (m["argmin_phi_backward"], m["phi_backward_sign_change"]) == (1.0, 0.0)
    assert (m["pi_integral"], m["rates_kl_drop"], m["pi_integral_minus_kl"], m["speciation_t_rates"]) == (4.0, 3.5, 0.5, 0.39)


def test_rates_metrics_compare_directions_only_on_the_same_bins():
    t_mid = [0.5, 1.5]
    arr = {"pi": np.zeros(2), "phi": np.zeros(2), "phi_backward": np.zeros(2), "pi_backward": np.zeros(2)}
    th = {"pi": np.zeros(2), "phi": np.zeros(2)}
    r = {"closed": arr, "quad": arr, "broken": arr, "mc_forward": _mc([1, 1], [1, 1], t_mid),
         "mc_backward": _mc([1, 1], [1, 1], [0.4, 0.6]), "mc_backward_wrong": _mc([1, 1], [1, 1], [0.4, 0.6]),
         "halves": (_mc([1, 1], [1, 1], t_mid), _mc([1, 1], [1, 1], t_mid)), "theory_forward": th, "theory_backward": th,
         "broken_forward": th, "broken_backward": th, "fine": np.linspace(0, 1, 3),
         "closed_fine": {"pi": np.zeros(3), "phi_backward": np.ones(3)}, "t_star": 0.0, "kl_drop": 0.0, "t_s": 0.1}
    m = er.rates_metrics(r)
    assert all(math.isnan(m[k]) for k in ("pi_forward_backward_max_z", "phi_forward_backward_max_z",
                                          "pi_forward_backward_wrong_score_max_z", "phi_backward_sign_change"))


# ---- notebook 04 --------------------------------------------------------------------------------------

def test_panel_metrics_with_and_without_a_secondary_minimum():
    assert fps.time_tag(0.42) == "042" and fps.time_tag(0.015) == "0015" and fps.time_tag(0.01) == "001"
    sec = {"barrier": np.float64(0.7), "q_min": 3.2, "q_max": 1.5}
    assert fps.panel_metrics("042", sec, 1, np.float64(9.7), 0.005) == {
        "fp_t042_barrier": 0.7, "fp_t042_has_secondary_min": True, "fp_t042_q_min": 3.2, "fp_t042_q_max": 1.5,
        "fp_t042_inflections": 1, "fp_t042_V_at_8": 9.7, "fp_t042_barrier_se": 0.005}
    assert fps.panel_metrics("001", None, 3, None, 0.0) == {
        "fp_t001_barrier": 0.0, "fp_t001_has_secondary_min": False, "fp_t001_inflections": 3, "fp_t001_barrier_se": 0.0}


def test_threshold_metrics_against_the_fold_and_the_linear_law():
    m = fps.threshold_metrics(0.21, {"t_fold": 0.2}, 0.22, 1.3, 0.5)
    assert m == {"fp_threshold_time": 0.21, "fp_threshold_fold": 0.2, "fp_threshold_minus_fold": pytest.approx(0.01),
                 "fp_threshold_fold_linear": 0.22, "fp_threshold_minus_fold_linear": pytest.approx(-0.01),
                 "fp_fold_exponent": 1.3, "fp_threshold_fold_reversed": 0.5}
    m = fps.threshold_metrics(float("nan"), None, float("nan"), float("nan"), float("nan"))
    assert all(math.isnan(v) for v in m.values())


# ---- notebook 05 --------------------------------------------------------------------------------------

def test_worst_deviation_and_worst_relative_error():
    assert hd.worst_deviation([0.01, float("nan"), 0.03, 0.02], [1.0, 2.0, 3.0, 4.0]) == (0.03, 3.0)
    d, se = hd.worst_deviation([float("nan"), float("nan")], [5.0, 6.0])
    assert math.isnan(d) and se == 5.0                               # none finite: the first entry
    assert hd.worst_relative_error([(0.05, 0.01), (0.07, 0.02), (0.06, 0.5)]) == (0.07, 0.02)
    assert all(math.isnan(x) for x in hd.worst_relative_error([]))


def test_relative_errors_and_the_clone_check():
    assert hd.relative_error(1.1, 1.0) == pytest.approx(0.1) and hd.relative_se(0.02, 0.5) == 0.04
    assert math.isnan(hd.relative_error(1.0, 0.0)) and math.isnan(hd.relative_se(0.1, -1.0))
    m = hd.clone_check_metrics(0.78, 0.004, 0.77, 0.5, 0.005)
    assert m == {"clone_sim_probability": 0.78, "clone_sim_se": 0.004, "clone_sim_exact": 0.77,
                 "clone_sim_shuffled_probability": 0.5, "clone_sim_shuffled_se": 0.005,
                 "clone_sim_z": pytest.approx(2.5)}
    assert hd.clone_check_metrics(0.5, 0.0, 0.5, 0.5, 0.0)["clone_sim_z"] == 0.0   # SE floored, no division by 0


def test_learned_metrics_by_hand():
    crossings = {"learned": (0.9, 0.02), "empirical": (1.05, 0.01), "untrained": (0.8, 0.04),
                 "empirical_shuffled": (0.2, 0.0)}
    losses = np.arange(20, dtype=float)                           # the last tenth: 18, 19
    m = hd.learned_metrics(1.0, 7.5, crossings, losses, 300, 64)
    assert m["learned_lambda"] == 7.5 and m["learned_t_s_theory"] == 1.0 and m["learned_crossing"] == 0.9
    assert m["learned_rel_err"] == pytest.approx(0.1) and m["learned_rel_err_se"] == 0.02
    assert m["learned_empirical_rel_err"] == pytest.approx(0.05) and m["learned_empirical_rel_err_se"] == 0.01
    assert m["learned_untrained_rel_err"] == pytest.approx(0.2) and m["learned_untrained_crossing"] == 0.8
    assert m["learned_empirical_shuffled_rel_err"] == 0.8 and m["learned_empirical_shuffled_rel_err_se"] == 0.0
    assert m["learned_final_loss"] == 18.5 and (m["learned_n_train"], m["learned_dim"]) == (300, 64)
    assert len(m) == 17
    assert math.isnan(hd.learned_metrics(float("nan"), 0.9, crossings, losses, 3, 2)["learned_rel_err"])


def test_late_metrics_name_each_curves_agreement_past_speciation():
    m = hd.late_metrics(np.float64(2.5), 0.5, {"learned": (0.51, 0.01), "untrained": (np.float64(0.68), 0.02),
                                                "empirical": (0.52, 0.005)})
    assert m == {"learned_late_time": 2.5, "learned_independent_agreement": 0.5, "learned_late_agreement": 0.51,
                 "learned_late_agreement_se": 0.01, "learned_untrained_late_agreement": 0.68,
                 "learned_untrained_late_agreement_se": 0.02, "learned_empirical_late_agreement": 0.52,
                 "learned_empirical_late_agreement_se": 0.005}
    assert all(type(v) is float for v in m.values())
