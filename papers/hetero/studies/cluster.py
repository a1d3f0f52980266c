"""Notebook 04: the emulated two-vendor cluster (network namespaces, shaped NICs): multi-NIC, costed
staging, vendor speed, and the performance model calibrated on it.

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007
(abstract: CPU-forwarding's "multi-NIC parallel data transfer" and device-direct exchange "without
host-memory staging"; third-party summaries: the mixed cluster above AMD-homogeneous through
"appropriate pipeline-parallel partitioning"; claims `cluster-*` of claims.yaml).

`measure` launches the two ranks (the job mode `cluster`, `clusterbench.run_cluster`) in one emulated
cluster of 2 nodes x 2 NICs; `cluster_metrics` maps their results to the claims' metrics. Without the
privileges for network namespaces one line names the claims that cannot be tested and they are not run.
"""
from __future__ import annotations

import json
import statistics
import time

from common import netcluster

from .. import clusterbench as cb
from .. import perfmodel
from ..config import job_for
from ..launch import launch
from ..model import CONFIGS

PAPER_RHOS = (0.92, 0.945, 0.97)  # AMD/NVIDIA speeds the paper's own ratios imply (98-94 % of NVIDIA / 1.009-1.023)
CLUSTER_CLAIMS = ("cluster-multi-nic-scales", "cluster-device-direct-beats-staging", "cluster-device-direct-zero-staging",
                  "cluster-uneven-beats-even", "cluster-mixed-beats-amd", "cluster-perfmodel-calibrated",
                  "device-direct-throughput")


def measure(cfg, run) -> dict:
    """The emulated-cluster claims in one launch of 2 ranks, one per network namespace (node), 2 shaped
    NICs each (the ranks seeded from the run's stream "cluster", their files under run.dir). Without the privileges (or tools) one line names the claims that cannot be tested and
    why, and `netcluster_available` = 0 marks them not run."""
    ok, why = netcluster.available()
    if not ok:
        print(f"notice: cluster claims {', '.join(CLUSTER_CLAIMS)} cannot be tested here: {why}", flush=True)
        return {"metrics": {"netcluster_available": 0}, "available": False, "why": why}
    mcfg = CONFIGS[cfg.model]
    act = cfg.micro_size * mcfg.seq_len * mcfg.d_model * 4  # one activation (fp32)
    size, rate = int(cfg.cluster_p2p_size), netcluster.parse_rate(cfg.cluster_rate)
    copy_rate = rate * float(cfg.cluster_copy_over_nic)
    pw = int(cfg.cluster_p2p_windows)
    phases = [
        {"name": "nic", "links": ["cpu_forward:1", "cpu_forward:2", "cpu_forward_samenic:2", "cpu_forward_onechannel:2"],
         "sizes": [size], "copy_rate_bps": 0.0, "windows": pw},
        {"name": "staging", "links": ["device_direct", "cpu_forward:1", "device_direct_staged"],
         "sizes": [int(cfg.cluster_staging_size)],
         "copy_rate_bps": copy_rate, "windows": pw},
        {"name": "fit", "links": ["direct"], "sizes": sorted({act, 256 * 1024, size}), "windows": 2},
    ]
    variants = cb.speed_variants(float(cfg.cluster_rho), copy_rate)
    job = job_for(cfg, mode="cluster", vendors="nv,amd", links=["direct"], partition=[4, 2], nics=2,
                  seed=run.streams.seed_for("cluster"),
                  n_micro=int(cfg.cluster_n_micro),
                  p2p_phases=phases, speed_variants=variants, layer_ms=float(cfg.cluster_layer_ms),
                  head_layers=float(cfg.cluster_head_layers), windows=int(cfg.cluster_windows),
                  window_steps=int(cfg.cluster_window_steps), warmup_steps=int(cfg.cluster_warmup),
                  p2p_iters=int(cfg.cluster_p2p_iters), pin_cores=True, steps=1)
    work = run.dir / "work" / "cluster"
    t0 = time.perf_counter()
    ranks = launch(job, 2, workdir=work, deadline_s=600.0,
                   cluster={"rate": cfg.cluster_rate, "delay": cfg.cluster_delay})
    wall = time.perf_counter() - t0
    nic = json.loads((work / "netcluster.json").read_text()) if (work / "netcluster.json").exists() else None
    m = cluster_metrics(ranks, cfg, variants, act, nic)
    m.update({"netcluster_available": 1, "cluster_wall_s": wall, "cluster_rate_bps": rate, "cluster_copy_rate_bps": copy_rate,
              "cluster_layer_ms": float(cfg.cluster_layer_ms), "cluster_nodes": 2, "cluster_nics_per_node": 2,
              "cluster_shaping_note": (nic or {}).get("shaping", {}).get("note")})
    return {"metrics": m, "available": True, "ranks": ranks, "nic": nic, "variants": variants}


def cluster_metrics(ranks: list[dict], cfg, variants: list[dict], act_bytes: int, nic: dict | None) -> dict:
    """The cluster claims' metrics from the two ranks' results (rank 0 times the ping-pong and the windows):
    per-window ratios of the p2p phases `nic` and `staging`, where the staging bytes went, the direct
    link's alpha-beta fit (`perfmodel.fit_alpha_beta`, phase `fit`), each NIC's share of node 0's bytes
    (`nic`, the launcher's counters), the step-time ratios of the vendor-speed windows, and the 1F1B
    simulation and its competitor calibrated on the homogeneous windows and judged on the others
    (`clusterbench.calibrate`, `predict`, `predict_bottleneck`, `calibrated_errors`)."""
    r0 = ranks[0]
    m, p2p = {}, r0["p2p"]
    def one_size(phase):  # {link: [one-way seconds per window]} of a phase with one message size
        return {k: next(iter(v.values())) for k, v in p2p[phase].items()}

    t = one_size("nic")
    m["cluster_cf2_vs_cf1"] = cb.per_window(t["cpu_forward:1"], t["cpu_forward:2"])
    m["cluster_cf2_samenic_vs_cf1"] = cb.per_window(t["cpu_forward:1"], t["cpu_forward_samenic:2"])
    m["cluster_cf2_onechannel_vs_cf1"] = cb.per_window(t["cpu_forward:1"], t["cpu_forward_onechannel:2"])
    m["cluster_cf1_over_rate"] = cfg.cluster_p2p_size * 8 / statistics.median(t["cpu_forward:1"]) / nic_rate_bps(cfg)
    st = one_size("staging")
    m["cluster_dd_vs_cf1"] = cb.per_window(st["cpu_forward:1"], st["device_direct"])
    m["cluster_dd_staged_vs_cf1"] = cb.per_window(st["cpu_forward:1"], st["device_direct_staged"])
    m["cluster_copy_rate_over_nic_rate"] = cfg.cluster_copy_over_nic
    # what the emulation's inputs set these two ratios to (an implementation check, not hardware):
    # k channels on k tbf-shaped NICs move k times the bytes; a staged transfer is copy in + NIC + copy out
    m["cluster_cf2_vs_cf1_expected"] = cb.expected_nic_ratio(2, 2)
    m["cluster_dd_vs_cf1_expected"] = cb.expected_staging_ratio(cfg.cluster_copy_over_nic)
    cnt = {k: [c for r in ranks for c in r["p2p_counters"]["staging"][k]] for k in st}

    def moved(k, field):
        return sum(c[field] for c in cnt[k])

    payload = {k: max(1, moved(k, "payload_sent")) for k in cnt}
    m["cluster_dd_staged_bytes"] = moved("device_direct", "staged_bytes") + moved("device_direct", "copied_bytes")
    m["cluster_dd_staged_bytes_control"] = (moved("device_direct_staged", "staged_bytes")
                                            + moved("device_direct_staged", "copied_bytes"))
    m["cluster_dd_own_memory_bytes_per_payload"] = (moved("device_direct", "wire_bytes")
                                                    - moved("device_direct", "staged_bytes")) / payload["device_direct"]
    m["cluster_cf1_engine_bytes_per_payload"] = moved("cpu_forward:1", "engine_bytes") / payload["cpu_forward:1"]
    alpha, beta = perfmodel.fit_alpha_beta(p2p["fit"]["direct"])
    m["cluster_direct_alpha_us"], m["cluster_direct_beta_gbit"] = alpha * 1e6, beta * 8 / 1e9
    if nic:  # bytes each NIC of node 0 sent over the whole run (kernel counters)
        tx = [n["tx_bytes"] for n in nic["nic_counters"][0]]
        m["cluster_nic_tx_share"] = [x / max(1, sum(tx)) for x in tx]
        m["cluster_delay_applied"] = int(nic["shaping"].get("delay_s") is not None)
    sp = r0["speed"]["step_s"]
    m["cluster_uneven_vs_even"] = cb.per_window(sp["mixed_even"], sp["mixed_uneven"])
    m["cluster_uneven_vs_even_rho1"] = cb.per_window(sp["mixed_even_rho1"], sp["mixed_uneven_rho1"])
    m["cluster_mixed_vs_amd"] = cb.per_window(sp["amd_homog"], sp["mixed_uneven"])
    m["cluster_mixed_vs_amd_rho1"] = cb.per_window(sp[cb.NV], sp["mixed_uneven_rho1"])
    # the control of cluster-mixed-beats-amd: the same mixed cluster without the partitioning the paper
    # credits (even 3/3 split), against the same AMD-homogeneous windows: what "half the GPUs are faster" gives
    m["cluster_mixed_even_vs_amd"] = cb.per_window(sp["amd_homog"], sp["mixed_even"])
    m["cluster_mixed_vs_nv"] = cb.per_window(sp[cb.NV], sp["mixed_uneven"])
    # device-direct's training throughput against the homogeneous direct link (same 3/3 split, rho = 1), and its
    # control, CPU-forwarding k = 1 with the staging copies through the copy engine, in the same windows
    if cb.CF1 in sp:
        m["cluster_dd_vs_homog"] = cb.per_window(sp[cb.NV], sp["mixed_even_rho1"])
        m["cluster_cf1_vs_homog"] = cb.per_window(sp[cb.NV], sp[cb.CF1])
    m["cluster_step_s_median"] = {k: statistics.median(v) for k, v in sp.items()}
    pass_s = {lab: {r["speed"]["stage"]: r["speed"]["pass_s"][lab] for r in ranks} for lab in sp}
    rho = cfg.cluster_rho
    m["cluster_rho"] = rho
    m["cluster_rho_measured"] = (pass_s[cb.NV][1]["F"] / pass_s["amd_homog"][1]["F"])
    cal = cb.calibrate(pass_s, variants, cfg.cluster_head_layers)
    c = alpha + act_bytes / beta
    # calibrated on the two homogeneous windows: pass times per speed, and the per-step cost outside the
    # pipeline passes (optimizer, gradient-norm and loss all-reduces, barriers); judged on the mixed ones
    n_micro = int(cfg.cluster_n_micro)
    variants = cb.model_variants(variants)
    measured = {v["label"]: statistics.median(sp[v["label"]]) for v in variants}
    homog = [v for v in variants if v["label"] in cb.HOMOGENEOUS]
    overhead = statistics.mean(measured[v["label"]] - cb.predict(v, cal, c, n_micro) for v in homog)
    err = cb.calibrated_errors(lambda v, o: cb.predict(v, cal, c, n_micro, overhead=o), variants, measured)
    # the control: the simplest competing model, calibrated the same way (M x the slowest stage)
    err_ctl = cb.calibrated_errors(lambda v, o: cb.predict_bottleneck(v, cal, n_micro, overhead=o), variants, measured)
    # reported, no longer the control: the simulation blind to the vendor speeds (it ignores the paced rho)
    err_blind = {v["label"]: cb.predict(v, cal, c, n_micro, ignore_speed=True, overhead=overhead) / measured[v["label"]] - 1
                 for v in variants}
    held = [v["label"] for v in variants if v["label"] not in cb.HOMOGENEOUS]
    m["cluster_model_rel_err"] = err
    m["cluster_model_rel_err_control"] = err_ctl
    m["cluster_model_overhead_ms"] = overhead * 1e3
    m["cluster_model_max_abs_err"] = max(abs(err[k]) for k in held)
    m["cluster_model_max_abs_err_control"] = max(abs(err_ctl[k]) for k in held)
    m["cluster_model_max_abs_err_speed_blind"] = max(abs(err_blind[k]) for k in held)
    m["cluster_model_transfer_ms"] = c * 1e3
    m["cluster_n_micro"] = n_micro
    # a finding, not a claim: the same calibrated model at the AMD speeds the paper's own ratios imply
    # (0.92-0.97): the best split and its gain over AMD-homogeneous and over the even split
    for rho, r in cb.at_rho(cal, c, n_micro, overhead, PAPER_RHOS).items():
        tag = f"{rho:g}".replace(".", "")
        m[f"cluster_paper_rho{tag}_mixed_vs_amd"] = r["mixed_vs_amd"]
        m[f"cluster_paper_rho{tag}_best_vs_even"] = r["best_vs_even"]
        m[f"cluster_paper_rho{tag}_best_split"] = r["best_split"]
    return m


def nic_rate_bps(cfg) -> float:
    """The shaped NIC rate of the profile (`cluster_rate`, e.g. '100mbit') in bits per second."""
    return float(netcluster.parse_rate(cfg.cluster_rate))
