"""The studies' mapping from measurements to the claims' metrics, on inputs worked by hand (no run)."""
import math
from types import SimpleNamespace

import pytest

from papers.hetero import clusterbench as cb
from papers.hetero.studies import audit, cluster, correctness, projection, throughput


def _counter(payload, staged=0, copied=0, wire=0, engine=0):
    return {"payload_sent": payload, "staged_bytes": staged, "copied_bytes": copied, "wire_bytes": wire,
            "engine_bytes": engine}


def test_control_labels_name_each_kind_and_none_when_absent():
    labels = correctness.control_labels(["cpu_forward_bf16:2", "device_direct_staged", "cpu_forward_reassemble"])
    assert labels == {"cpu_forward_bf16": "cpu_forward_bf16:2", "device_direct_staged": "device_direct_staged",
                      "cpu_forward_reassemble": "cpu_forward_reassemble:1", "direct/nodp": None}
    assert correctness.variant_label("direct/nodp") == "direct/nodp"


def test_correctness_metrics_by_hand():
    genuine = ["direct", "cpu_forward:2", "device_direct"]
    ctl = correctness.control_labels(["cpu_forward_bf16:2", "device_direct_staged", "cpu_forward_reassemble:2",
                                      "direct/nodp"])
    labels = genuine + list(ctl.values())
    losses = {k: [1.0, 0.5] for k in labels}
    losses["cpu_forward_bf16:2"] = [1.0, 0.75]                      # the lossy control: 0.25 off at step 1
    digests = {(s, r): {k: f"s{s}" for k in labels} for s in range(2) for r in range(2)}
    for s, r in digests:
        digests[s, r]["cpu_forward_bf16:2"] = f"s{s}" if s else "other"   # differs on stage 0 (2 replicas)
    digests[0, 1]["direct/nodp"] = "drift"                              # the replicas of stage 0 differ
    stg = {k: correctness.staging([_counter(100)]) for k in labels}
    stg["cpu_forward:2"] = correctness.staging([_counter(50, 100, 100), _counter(50, 100, 100)])   # 2x and 2x
    stg["cpu_forward_reassemble:2"] = correctness.staging([_counter(100, 200, 300)])              # copies 3x
    stg["device_direct_staged"] = correctness.staging([_counter(100, 200, 200)])
    x = {"genuine": genuine, "controls": ctl, "losses": losses, "clip": 0.5,
         "reference": {"losses": [1.0, 0.5], "grad_norms": [2.0, 1.0]},
         "grad_norms": {k: [2.0, 1.0] for k in labels}, "local_norms": [1.0, 0.4],
         "digests": digests, "n_stages": 2, "dp": 2,
         "param_diffs": {"direct": 0.0, "cpu_forward:2": 0.0, "device_direct": 1e-7, "cpu_forward_bf16:2": 0.05},
         "staging": stg, "plan_violations": 0, "steps": 2, "wall_s": 3.0, "partition": (4, 2),
         "audit": {"violations": [], "unasked": [], "groups": 5, "backends": ["gloo"]},
         "audit_control": {"violations": ["wrong"], "unasked": ["lost"], "groups": 6, "backends": ["gloo"]}}
    m = correctness.correctness_metrics(x)
    assert m["links_max_loss_diff"] == 0.0 and m["links_max_loss_diff_control"] == 0.25
    assert m["links_param_mismatches"] == 0 and m["links_param_mismatches_control"] == 2
    assert m["dp_replica_mismatches"] == 0 and m["dp_replica_mismatches_control"] == 1
    assert m["ref_max_loss_diff"] == 0.0 and m["ref_max_loss_diff_control"] == 0.25
    assert m["ref_max_param_diff"] == 1e-7 and m["ref_max_param_diff_control"] == 0.05
    assert m["clip_fraction"] == 1.0 and m["clip_fraction_control"] == 0.0   # the local norm 1.0 is not the global 2.0
    assert m["cf_staged_deviation"] == 0.0 and m["cf_staged_deviation_control"] == 1.0
    assert m["dd_staged_bytes"] == 0 and m["dd_staged_bytes_control"] == 400
    assert m["staged_per_payload"]["cpu_forward:2"] == 2.0 and m["copied_per_payload"]["cpu_forward_reassemble:2"] == 3.0
    assert (m["audit_live_violations"], m["audit_live_violations_control"]) == (0, 2)
    assert (m["audit_live_groups"], m["audit_live_backends"], m["audit_violations"]) == (5, "gloo", 0)
    assert (m["correctness_steps"], m["correctness_wall_s"], m["partition"]) == (2, 3.0, [4, 2])


def test_a_control_not_run_maps_to_none():
    x = {"genuine": ["direct"], "controls": correctness.control_labels([]), "losses": {"direct": [1.0]}, "clip": 0.5,
         "reference": {"losses": [1.0], "grad_norms": [1.0]}, "grad_norms": {"direct": [1.0]}, "local_norms": [1.0],
         "digests": {(0, 0): {"direct": "a"}}, "n_stages": 1, "dp": 1, "param_diffs": {"direct": 0.0},
         "staging": {"direct": correctness.staging([_counter(10)])}, "plan_violations": 0, "steps": 1, "wall_s": 1.0,
         "partition": [6], "audit": {"violations": [], "unasked": [], "groups": 1, "backends": ["gloo"]},
         "audit_control": {"violations": [], "unasked": [], "groups": 1, "backends": ["gloo"]}}
    m = correctness.correctness_metrics(x)
    controls = [k for k in m if k.endswith("_control") and not k.startswith(("clip", "audit"))]
    assert len(controls) == 7 and all(m[k] is None for k in controls)
    assert m["cf_staged_deviation"] is None and m["dd_staged_bytes"] is None


def test_stability_metrics_by_hand():
    losses = [2.0] * 5 + [1.0] * 20                     # head mean 2, tail mean 1 over 25 steps
    frozen = {s: 3.0 for s in range(25)}
    m = correctness.stability_metrics(losses, frozen, [1.0, 2.0, float("nan")], 0.5, tokens_per_step=10, wall_s=5.0)
    assert m["stability_steps"] == 25 and m["stability_nonfinite"] == 0 and m["stability_unstable_steps"] == 0
    assert m["stability_unstable_steps_control"] == 2 and m["stability_control_steps"] == 3   # NaN, and 2 > 1
    assert (m["stability_initial_loss"], m["stability_final_loss"]) == (2.0, 1.0)
    assert m["stability_loss_ratio"] == 0.5 and m["stability_loss_ratio_control"] == 1.0
    assert m["stability_excess_fraction"] == pytest.approx(1 / 3) and m["stability_excess_fraction_control"] == 1.0
    assert m["corpus_entropy_rate"] == 0.5 and m["stability_tokens_per_s"] == 50.0


def test_throughput_summary_pairs_each_window_with_the_direct_one():
    r0 = {"tokens_per_s": {"direct": [100.0, 200.0], "device_direct": [50.0, 200.0], "cpu_forward:1": [100.0, 100.0]},
          "counters": {"device_direct": [{"staged_bytes": 0}, {"staged_bytes": 0}]}, "tokens_per_step": 64}
    m = throughput.throughput_summary(r0)["metrics"]
    assert m["tput_direct_median"] == 150.0 and m["tput_cpu_forward_1_median"] == 100.0
    assert m["dd_vs_homog_per_window"] == [0.5, 1.0] and m["device_direct_vs_homog_median"] == 0.75
    assert m["cf1_vs_homog_per_window"] == [1.0, 0.5] and m["cpu_forward_1_vs_homog_median"] == 0.75
    assert m["tput_dd_staged_bytes"] == 0


def test_p2p_summary_fits_alpha_beta_and_compares_k_at_large_sizes():
    big = 16 << 20
    line = {str(s): [1e-6 + s / 1e9] for s in (1000, 2000, big)}    # t = 1 us + bytes / (1 GB/s)
    r0 = {"one_way_s": {"direct": line, "cpu_forward:1": {str(big): [2.0, 4.0]}, "cpu_forward:2": {str(big): [1.0, 1.0]}}}
    m = throughput.p2p_summary([1000, 2000, big], r0)["metrics"]
    assert m["p2p_direct_alpha_us"] == pytest.approx(1.0, rel=1e-6) and m["p2p_direct_beta_gbps"] == pytest.approx(1.0)
    assert m["p2p_cpu_forward_2_vs_k1_large"] == [2.0, 4.0]
    assert m["p2p_max_gbps"]["cpu_forward:2"] == pytest.approx(big / 1e9)


def test_calibration_metrics_compare_with_the_direct_step():
    cal = throughput.calibration_metrics({"predicted_step_s": 0.2}, {"tokens_per_step": 100,
                                                                     "summary": {"direct": {"median": 1000.0}}})
    assert cal == {"predicted_step_s": 0.2, "measured_step_s": 0.1, "predicted_over_measured": 2.0}


def test_audit_metrics_total_the_vendor_maps():
    mat = {"a": {"groups": [1, 2, 3], "violations": [], "nccl_mixed": 0}, "b": {"groups": [1], "violations": [], "nccl_mixed": 0}}
    naive = {"a": {"groups": [1, 2, 3], "violations": ["x", "y"], "nccl_mixed": 2}, "b": {"groups": [1], "violations": ["z"]}}
    assert audit.audit_metrics(mat, naive) == {"audit_matrix_nccl_mixed": 0, "audit_matrix_violations": 0,
                                               "audit_matrix_violations_control": 3, "audit_matrix_groups": 4}


def test_projection_metrics_name_every_plan_per_model_family():
    def r(nv, amd):
        return {"vs_nv": nv, "vs_amd": amd}

    res = {"llama3-8b": {"ratios": {"device_direct": r(0.96, 1.02), "cpu_forward_k1": r(0.5, 0.52)}},
           "qwen2-7b": {"ratios": {"device_direct": r(0.95, 1.01), "cpu_forward_k1": r(0.6, 0.62)}}}
    m = projection.projection_metrics(res)
    assert m["proj_llama3_device_direct_vs_nv"] == 0.96 and m["proj_qwen2_cpu_forward_k1_vs_amd"] == 0.62
    assert m["proj_dd_vs_amd_min"] == 1.01 and m["proj_assumed_amd_over_nv"] == 0.945
    assert len(m) == 10


def test_cluster_metrics_on_an_exactly_paced_run():
    cfg = SimpleNamespace(cluster_p2p_size=1000, cluster_rate="8kbit", cluster_copy_over_nic=0.8, cluster_rho=0.5,
                          cluster_head_layers=0.5, cluster_n_micro=4)
    variants = cb.speed_variants(cfg.cluster_rho, 6400.0)  # with the staging link's windows (copy engine 6.4 kbit/s)
    nic = {"cpu_forward:1": {"1000": [2.0, 2.0]}, "cpu_forward:2": {"1000": [1.0, 1.0]},
           "cpu_forward_samenic:2": {"1000": [2.0, 2.0]}, "cpu_forward_onechannel:2": {"1000": [2.0, 2.0]}}
    staging = {"cpu_forward:1": {"500": [3.5, 3.5]}, "device_direct": {"500": [1.0, 1.0]},
               "device_direct_staged": {"500": [3.5, 3.5]}}
    fit = {"direct": {str(s): [1e-3 + s / 1e6] for s in (1000, 2000, 4000)}}   # alpha 1 ms, beta 1 MB/s
    counters = {"cpu_forward:1": [_counter(500, 1000, 0, 500, 1000)], "device_direct": [_counter(500, 0, 0, 1000)],
                "device_direct_staged": [_counter(500, 1000, 1000, 1000)]}
    act, overhead = 2000, 0.01
    cal = {1.0: {"F": (1e-3, 5e-4), "B": (2e-3, 1e-3)}, 0.5: {"F": (2e-3, 1e-3), "B": (4e-3, 2e-3)}}
    c = 1e-3 + act / 1e6
    step = {v["label"]: [cb.predict(v, cal, c, cfg.cluster_n_micro) + overhead] * 2 for v in variants}
    step[cb.CF1] = [step[cb.NV][0] / 0.9] * 2  # the staging link: 10 % slower than the homogeneous direct link
    ranks = []
    for s in (0, 1):
        pace = {v["label"]: cb.stage_pace(1.0, v["partition"][s], s == 1, 0.5, v["speeds"][s]) for v in variants}
        ranks.append({"p2p": {"nic": nic, "staging": staging, "fit": fit}, "p2p_counters": {"staging": counters},
                      "speed": {"step_s": step, "stage": s,
                                "pass_s": {lab: {"F": p[0], "B": p[1]} for lab, p in pace.items()}}})
    netinfo = {"nic_counters": [[{"tx_bytes": 300}, {"tx_bytes": 100}]], "shaping": {"delay_s": None}}
    m = cluster.cluster_metrics(ranks, cfg, variants, act, netinfo)
    assert m["cluster_cf2_vs_cf1"] == [2.0, 2.0] and m["cluster_cf2_samenic_vs_cf1"] == [1.0, 1.0]
    assert m["cluster_cf1_over_rate"] == 1000 * 8 / 2.0 / 8000
    assert m["cluster_dd_vs_cf1"] == [3.5, 3.5] and m["cluster_dd_staged_vs_cf1"] == [1.0, 1.0]
    assert (m["cluster_cf2_vs_cf1_expected"], m["cluster_dd_vs_cf1_expected"]) == (2.0, 3.5)
    assert m["cluster_dd_staged_bytes"] == 0 and m["cluster_dd_staged_bytes_control"] == 4000   # both ranks
    assert m["cluster_dd_own_memory_bytes_per_payload"] == 2.0 and m["cluster_cf1_engine_bytes_per_payload"] == 2.0
    assert m["cluster_direct_alpha_us"] == pytest.approx(1000.0) and m["cluster_direct_beta_gbit"] == pytest.approx(0.008)
    assert m["cluster_nic_tx_share"] == [0.75, 0.25] and m["cluster_delay_applied"] == 0
    assert m["cluster_rho_measured"] == pytest.approx(0.5)
    assert m["cluster_model_overhead_ms"] == pytest.approx(10.0)
    assert m["cluster_model_max_abs_err"] == pytest.approx(0.0, abs=1e-9)
    assert m["cluster_model_max_abs_err_control"] > 0.01 and math.isfinite(m["cluster_model_max_abs_err_speed_blind"])
    assert m["cluster_uneven_vs_even"] == [step["mixed_even"][0] / step["mixed_uneven"][0]] * 2
    # device-direct's training windows against the homogeneous direct link, and the staging link's (the control)
    assert m["cluster_dd_vs_homog"] == [step[cb.NV][0] / step["mixed_even_rho1"][0]] * 2
    assert m["cluster_cf1_vs_homog"] == [pytest.approx(0.9)] * 2
    assert m["cluster_n_micro"] == 4
    # the finding at the paper's rho: the calibrated model (exact here) with every pass at the NVIDIA times / rho
    at = cb.at_rho(cal, c, 4, overhead, [0.92])[0.92]
    cal92 = {1.0: cal[1.0], 0.92: {op: tuple(t / 0.92 for t in cal[1.0][op]) for op in ("F", "B")}}
    amd = cb.predict({"partition": [3, 3], "speeds": [0.92, 0.92]}, cal92, c, 4, overhead=overhead)
    best = min(cb.predict({"partition": [n, 6 - n], "speeds": [1.0, 0.92]}, cal92, c, 4, overhead=overhead) for n in range(1, 6))
    assert m["cluster_paper_rho092_mixed_vs_amd"] == pytest.approx(amd / best) == pytest.approx(at["mixed_vs_amd"])
    assert m["cluster_paper_rho092_best_split"] == at["best_split"]


def test_the_model_at_other_speeds_on_hand_cases():
    cal = {1.0: {"F": (1e-3, 5e-4), "B": (2e-3, 1e-3)}}
    same = cb.at_rho(cal, 0.0, 8, 0.0, [1.0])[1.0]
    assert same["mixed_vs_amd"] == pytest.approx(same["best_vs_even"])  # at rho = 1 AMD-homogeneous is the even mix
    slow = cb.at_rho(cal, 0.0, 8, 0.0, [0.5])[0.5]
    assert slow["best_split"][0] > 3 and slow["best_vs_even"] > 1.1  # a slow AMD stage: more layers on NVIDIA
