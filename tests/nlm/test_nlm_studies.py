"""The mapping from measurements to the metric names the claims judge, one study module per notebook: hand-made
measurements in, exact keys and values out (no training, no notebook run)."""
import math

import numpy as np
import pytest
import torch

from common.seed import Streams
from papers.nlm.studies import denoising, exploration, memorization_sweep, out_of_equilibrium, rule_and_spectrum
from papers.nlm.studies import training_samples


def test_age_metrics_name_each_age_and_the_last_one():
    rows = [{"e_aai_test": 0.4, "e2_test": 0.2, "memorized": 0.5, "d_gen_median": 1.0, "d_test_median": 2.0},
            {"e_aai_test": 0.1, "e2_test": 0.05, "memorized": 0.25, "d_gen_median": 3.0, "d_test_median": 2.0}]
    m = training_samples.age_metrics("age", [0, 30], rows, {"e_aai_test": 0.3}, 1.5)
    assert m == {"age_updates": [0, 30], "age_e_aai_test": [0.4, 0.1], "age_e2_test": [0.2, 0.05],
                 "age_final_e_aai_test": 0.1, "age_final_memorized": 0.25, "age_final_dgen_over_dtest": 1.5,
                 "age_pcd_e_aai_test": 0.3, "age_chain_abs_x": 1.5}
    assert set(training_samples.age_metrics("fashion", [0, 30], rows, {"e_aai_test": 0.3}, 1.5)) == {
        k.replace("age_", "fashion_", 1) for k in m}


def _curves(tag, acc_s, acc_t, e_aai, acc_max, se=0.01):
    """Sweep curves over three sizes of one sample set (`tag`), as `sweep.sweep_accuracies` names them."""
    m = {}
    for name, v in (("acc_s", acc_s), ("acc_t", acc_t), ("e_aai", e_aai), ("acc_max", acc_max)):
        for ref in ("train", "test"):
            m[f"sweep{tag}_{name}_{ref}"] = list(v)
            m[f"sweep{tag}_{name}_{ref}_se"] = [se * (i + 1) for i in range(len(v))]
    return m


def test_paper_terms_read_the_smallest_p_for_memorization_and_the_largest_for_generalization():
    m = {**_curves("", [0.1, 0.4, 0.7], [0.2, 0.5, 0.45], [0.3, 0.1, 0.05], [0.2, 0.5, 0.7]),
         **_curves("_untrained", [1, 1, 1], [1, 1, 1], [0.5, 0.5, 0.5], [1, 1, 1]),
         **_curves("_pcd", [0.3, 0.5, 0.5], [0.2, 0.5, 0.62], [0.2, 0.0, 0.01], [0.3, 0.5, 0.62])}
    out = memorization_sweep.paper_terms(m)
    assert out["mem_acc_small_p"] == 0.2 and out["mem_acc_small_p_se"] == 0.01
    assert out["gen_acc_dev_large_p"] == pytest.approx(0.2)          # |0.7 - 0.5| beats |0.45 - 0.5|: Acc_S's SE
    assert out["gen_acc_dev_large_p_se"] == pytest.approx(0.03)
    assert out["gen_acc_dev_large_p_pcd"] == pytest.approx(0.12)     # Acc_T this time
    assert out["e_aai_test_large_p_pcd_se"] == pytest.approx(0.03)
    assert out["mem_acc_small_p_untrained"] == 1
    assert set(out) == {f"{k}{t}{s}" for t in ("", "_untrained", "_pcd") for k, s in
                        (("mem_acc_small_p", ""), ("mem_acc_small_p", "_se"), ("e_aai_test_large_p", "_se"),
                         ("gen_acc_dev_large_p", ""), ("gen_acc_dev_large_p", "_se"))}


def test_relative_terms_judge_each_sample_set_against_new_data_with_paired_replicates():
    """mem_gap = max(Acc) of a set minus new data's at the smallest P, SE over the paired differences of the
    replicates; p_cross_rel = the share of replicates below new data at the smallest P and above at the largest;
    cross_margin = the smaller of (new data - set) at the smallest P and (set - new data) at the largest, SE over the
    same minimum of the paired replicates."""
    from papers.nlm.sweep import crossing_margin, paired_gap, relative_crossing

    assert paired_gap([0.2, 0.7], np.array([[0.1, 0.6], [0.3, 0.8]]), [0.45, 0.5], np.array([[0.4, 0.5], [0.5, 0.5]])) == (
        pytest.approx(-0.25), pytest.approx(np.std([-0.3, -0.2], ddof=1)))
    a = np.array([[0.2, 0.6], [0.5, 0.6], [0.2, 0.4], [0.1, 0.9]])
    b = np.array([[0.4, 0.5], [0.4, 0.5], [0.4, 0.5], [0.4, 0.5]])
    assert relative_crossing(a, b) == 0.5                               # replicates 0 and 3 cross inside
    # replicates' minima: min(0.2, 0.1) = 0.1, min(-0.1, 0.1) = -0.1, min(0.2, -0.1) = -0.1, min(0.3, 0.4) = 0.3
    v, se = crossing_margin([0.2, 0.7], a, [0.4, 0.5], b)
    assert v == pytest.approx(0.2) and se == pytest.approx(np.std([0.1, -0.1, -0.1, 0.3], ddof=1))
    assert crossing_margin([0.45, 0.52], a, [0.4, 0.5], b)[0] == pytest.approx(-0.05)   # above new data at both ends: < 0
    boots, m = {}, {}
    sets = {"pcd": ("_pcd", [0.2, 0.7]), "noise": ("", [0.5, 0.7]), "untrained": ("_untrained", [1.0, 1.0]),
            "heldout": ("_heldout", [0.45, 0.5]), "heldout_a": ("_heldout_a", [0.44, 0.5]), "heldout_b": ("_heldout_b", [0.46, 0.49])}
    for key, (tag, v) in sets.items():
        rep = np.array([v, v]) + np.array([[0.01], [-0.01]])               # two replicates around the estimate
        boots[key] = {("train", "acc_max"): rep, ("train", "acc_mean"): rep}
        m[f"sweep{tag}_acc_max_train"] = m[f"sweep{tag}_acc_mean_train"] = v
    out = memorization_sweep.relative_terms(m, boots)
    assert out["mem_gap_small_p_pcd"] == pytest.approx(-0.25) and out["mem_gap_small_p_pcd_se"] == pytest.approx(0.0)
    assert out["mem_gap_small_p_untrained"] == pytest.approx(0.55) and out["mem_gap_small_p"] == pytest.approx(0.05)
    assert out["mem_gap_small_p_heldout_split"] == pytest.approx(-0.02)            # half against the other half
    assert out["p_cross_rel_pcd_inside"] == 1.0 and out["p_cross_rel_untrained_inside"] == 0.0
    assert out["cross_margin_rel_pcd"] == pytest.approx(0.2) and out["cross_margin_rel_pcd_se"] == pytest.approx(0.0)
    assert out["cross_margin_rel_heldout_split"] == pytest.approx(0.01)            # min(0.46 - 0.44, 0.50 - 0.49)
    assert out["rel_acc_mean_large_p_pcd"] == pytest.approx(0.2) and out["rel_acc_mean_large_p_heldout_split"] == pytest.approx(0.01)
    fall = memorization_sweep.fall_terms([0.5, 0.2, 0.1], [0.02, 0.0, 0.0], 100, 50)
    assert fall["mem_fall"] == pytest.approx(0.4) and fall["mem_fall_heldout"] == pytest.approx(0.02)
    assert fall["mem_fall_se"] == pytest.approx(math.sqrt(0.25 / 100 + 0.09 / 100))
    assert fall["mem_fall_heldout_se"] == pytest.approx(math.sqrt(0.02 * 0.98 / 50))


def test_per_p_metrics_and_the_nulls_scalars():
    acc = _curves("", [0.1, 0.4, 0.7], [0.2, 0.5, 0.45], [0.3, 0.1, 0.05], [0.2, 0.5, 0.7])
    m = memorization_sweep.per_p_metrics(acc, [5, 20, 60])
    assert m["sweep_p20_acc_s_test"] == 0.4 and m["sweep_p60_e_aai_train_se"] == pytest.approx(0.03) and len(m) == 36
    pcd = memorization_sweep.per_p_metrics(_curves("_pcd", [1, 2, 3], [4, 5, 6], [0, 0, 0], [0, 0, 0]), [5, 20, 60], "_pcd",
                                           names=("acc_s", "acc_t"), se=False)
    assert pcd["sweep_pcd_p60_acc_t_train"] == 6 and len(pcd) == 12 and not any(k.endswith("_se") for k in pcd)
    assert memorization_sweep.heldout_terms({"sweep_heldout_acc_max_train": [0.45, 0.5],
                                             "sweep_heldout_acc_max_train_se": [0.02, 0.03]}) == {
        "mem_acc_small_p_heldout": 0.45, "mem_acc_small_p_heldout_se": 0.02}
    assert memorization_sweep.copies_terms({"sweep_copies_acc_s_test": [0.0], "p_star_copies": 3.0}) == {
        "large_p_copies_acc_s_test": 0.0}
    assert memorization_sweep.binomial_terms({"gen_large_p": 0.5, "gen_large_p_untrained": 0.0}, 100) == {
        "gen_large_p_se": 0.05, "gen_large_p_untrained_se": 0.0}


def test_large_p_terms_take_the_worst_reference_for_every_sample_set():
    m = {}
    for tag in ("", "_untrained", "_pcd"):
        m |= _curves(tag, [0.5, 0.6], [0.5, 0.3], [0.1, 0.02], [0.5, 0.6])
    m |= {f"large_p_copies_{k}_{r}{s}": 0.0 for k in ("acc_s", "acc_t", "e_aai") for r in ("train", "test") for s in ("", "_se")}
    out = memorization_sweep.large_p_terms(m)
    assert out["gen_acc_dev_both_large_p_pcd"] == pytest.approx(0.2) and out["gen_acc_dev_both_large_p_pcd_se"] == pytest.approx(0.02)
    assert out["gen_acc_dev_both_large_p_copies"] == 0.5
    assert (out["e_aai_test_large_p"], out["e_aai_test_large_p_untrained"], out["e_aai_test_large_p_pcd"]) == (0.02, 0.02, 0.02)


def test_fraction_metrics_summarise_the_memorized_fraction_over_p():
    per = {"avg_memorized": [1.0, 0.5, 0.0], "untrained_memorized": [0.0, 0.0, 0.0], "d_gen_median": [1.0, 2.0, 3.0],
           "d_test_median": [2.0, 2.0, 2.0], "avg_generalized": [0.0, 0.2, 0.9], "untrained_generalized": [0.0, 0.0, 0.1]}
    m = memorization_sweep.fraction_metrics([5, 20, 80], lambda key: per.get(key, [0.0, 0.0, 0.0]))
    assert m["mem_small_p"] == 1.0 and m["mem_large_p"] == 0.0 and m["mem_spearman"] == pytest.approx(-1.0)
    assert m["p_star_memorized_fraction"] == pytest.approx(20.0)     # 0.5 is reached exactly at P = 20
    assert m["mem_spearman_untrained"] == 0.0 and m["sweep_dgen_over_dtest"] == [0.5, 1.0, 1.5]
    assert (m["gen_large_p"], m["gen_large_p_untrained"]) == (0.9, 0.1)


def test_out_of_equilibrium_curve_and_reach_metrics():
    curves = {"rdm": {"e_aai": np.array([0.3, 0.1, 0.2]), "e2": np.array([1.0, 0.5, 0.7])},
              "pcd": {"e_aai": np.array([0.4, 0.2, 0.15]), "e2": np.array([2.0, 1.0, 0.9])}}
    m = out_of_equilibrium.curve_metrics([10, 300, 1000], 100, 2, curves, 2400)
    assert m["rdm_best_time"] == 300 and m["rdm_best_log3_ratio"] == pytest.approx(1.0)
    assert m["rdm_long_excess"] == pytest.approx(0.1) and m["pcd_long_excess"] == 0.0 and m["pcd_final_e_aai"] == 0.15
    assert (m["ooe_rdm_updates"], m["ooe_replicates"], m["ooe_rdm_e_aai"]) == (2400, 2, [0.3, 0.1, 0.2])
    r = out_of_equilibrium.reach_metrics(np.array([0.05, 0.5, 0.2]), curves)
    assert r == {"ooe_pcd_chains_e_aai_test": 0.05, "ooe_pcd_chains_e2_test": 0.5, "ooe_pcd_gen_end_e_aai_test": 0.15,
                 "ooe_pcd_gen_end_e2_test": 0.9, "ooe_pcd_chains_vs_gen_end_e_aai": 0.2}


def test_exploration_chain_metrics_count_visits_that_last_the_dwell():
    classes = [np.array([1, 1, 3, 3, -1, 3, 1]), np.array([6, 6, 6, 6, 6, 6, 6])]
    m = exploration.chain_metrics("trained", classes, 2)
    assert m["explore_trained_classes"] == [2, 1] and m["explore_trained_transitions"] == [1, 0]
    assert m["explore_trained_classes_median"] == 1.5 and m["explore_trained_transitions_mean"] == 0.5
    assert m["explore_trained_transitions_se"] == pytest.approx(np.std([1, 0], ddof=1) / math.sqrt(2))
    assert m["explore_trained_data_like"] == pytest.approx((6 / 7 + 1) / 2)
    assert m["explore_trained_transitions_dwell1_mean"] == 1.0     # 1 3 1 counts twice at dwell 1
    assert math.isnan(exploration.chain_metrics("j0", classes[:1], 2)["explore_j0_transitions_se"])
    assert exploration.ungated_metrics("quench", [1, 1, 1, 3, 3, 3, 1]) == {
        "explore_quench_classes_ungated": 2, "explore_quench_transitions_ungated": 1}


def test_exploration_pools_trained_models_with_the_se_between_them():
    """The claims' numbers over K models: classes' median over every chain, transitions' mean over models and the
    SE between the models' means (issue #41); model 0's own numbers kept as explore_model0_*."""
    from papers.nlm.visits import EXPLORE_MODELS

    per = []
    for cls in ([np.array([1, 1, 3, 3]), np.array([1, 1, 1, 1])], [np.array([6, 6, 1, 1]), np.array([3, 3, 6, 6])],
                [np.array([1, 1, 1, 1]), np.array([-1, -1, -1, -1])]):
        m = {}
        for name in EXPLORE_MODELS:
            m.update(exploration.chain_metrics(name, cls, 2))
        per.append(m)
    out = exploration.pooled_metrics(per)
    assert out["explore_trained_transitions_models"] == [0.5, 1.0, 0.0]
    assert out["explore_trained_transitions_mean"] == pytest.approx(0.5)
    assert out["explore_trained_transitions_se"] == pytest.approx(0.5 / math.sqrt(3))     # sd of (0.5, 1, 0) is 0.5
    assert out["explore_trained_transitions"] == [1, 0, 1, 1, 0, 0]
    assert out["explore_trained_classes_median"] == 1.5 and out["explore_models"] == 3      # classes 2 1 2 2 1 0
    assert out["explore_model0_trained_transitions_mean"] == 0.5
    assert out["explore_trained_data_like"] == pytest.approx((1 + 1 + 0.5) / 3)
    root = Streams(4)                                   # model 0 is the run's own model; the others their own streams
    assert exploration.model_streams(root, 0) is root
    assert len({exploration.model_streams(root, r).seed_for("train") for r in range(3)}) == 3


def test_denoising_metrics_count_restored_patterns_at_three_tenths():
    ratio = np.array([[0.1, 0.3, 0.5, 0.9], [0.2, 0.31, 0.0, 1.0]])
    assert denoising.restoration_metrics("nlm", ratio) == {"denoise_nlm_ratio_median": pytest.approx(0.305),
                                                           "denoise_nlm_n_good": 2.0}
    assert denoising.nlm_flow_metrics(np.array([0.1, 0.4, 0.2]), 0.5) == {
        "denoise_nlm_flow_ratio_median": 0.2, "denoise_nlm_flow_n_good": 2, "denoise_nlm_euler_stability": 0.5}


def test_rule_metrics_measure_the_rule_against_the_gradient_and_its_asymmetry():
    fd = torch.tensor([1.0, -2.0, 0.5])
    rJ = torch.tensor([[0.0, 1.0], [0.0, 0.0]])
    hJ = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
    m = rule_and_spectrum.rule_metrics(fd + torch.tensor([0.0, 0.2, 0.0]), fd, fd * 0, rJ, hJ)
    assert m == {"grad_rel_err": pytest.approx(0.1), "grad_rel_err_symmetrised": 1.0,
                 "rule_asymmetry": pytest.approx(math.sqrt(2)), "rule_asymmetry_hebbian": 0.0}
    ep = {"sigma_nlm": 0.01, "sigma_nlm_se": 0.02, "sigma_rnn": 3.0, "sigma_rnn_se": 0.1, "sigma_nlm_euler_loop": 0.0,
          "sigma_nlm_euler_loop_se": 0.01, "rev_asym_nlm": 0.001, "other": 1}
    r = rule_and_spectrum.reversibility_metrics(ep)
    assert r["sigma_nlm_abs_z"] == 0.5 and r["rev_asym_nlm"] == 0.001 and "other" not in r
    s = rule_and_spectrum.spectrum_metrics([0, 10], {0: np.array([1 + 1j, -0.5]), 10: np.array([3.0, 0.0])}, [0.1, 0.4])
    assert s == {"spectrum_updates": [0, 10], "spectrum_asymmetry": [0.1, 0.4], "spectrum_radius": [pytest.approx(math.sqrt(2)), 3.0]}


def test_spread_starts_workers_from_a_kernel_whose_namespace_was_reset(monkeypatch):
    """`workers.spread` is pmap (results in task order) and works where `__main__.__spec__` is gone, as after the
    runner's `%reset -f` in a shared kernel (multiprocessing's spawn reads it)."""
    import sys
    import types

    from papers.nlm import workers
    from papers.nlm.sweep import binomial_se

    main = types.ModuleType("__main__")
    del main.__spec__                                                   # as IPython's %reset -f leaves it
    monkeypatch.setitem(sys.modules, "__main__", main)
    assert not hasattr(sys.modules["__main__"], "__spec__")
    out = workers.spread(binomial_se, [dict(fraction=0.5, n=4), dict(fraction=0.5, n=100)])
    assert out == [0.25, 0.05] and sys.modules["__main__"].__spec__ is None
