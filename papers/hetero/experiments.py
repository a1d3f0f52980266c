"""One function per notebook section; each launches real multi-process runs and returns metrics.

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007
"""
from __future__ import annotations

import json
import math
import os
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from common.progress import progress

from . import clusterbench, perfmodel
from .config import job_for
from .groups import Groups, audit_violations, select_backend
from .launch import launch
from .reference import reference_run, stage_state, untrained_losses
from .model import CONFIGS
from .topology import build_topology, expand_vendors, parse_vendors


def emulation_device(requested: str | None = None) -> str:
    """The device the notebooks' runs compute on, as the run's manifest must record it: always "cpu".
    The notebooks emulate the cluster with every rank on the CPU (`Job.device` "cpu", the ranks see no
    GPU); a GPU asked for (`--device cuda` or $REPRO_DEVICE) is not used, and one line says so and
    where the real-device path is (`torchrun -m papers.hetero.train --device cuda`, README)."""
    req = str(requested or os.environ.get("REPRO_DEVICE") or "auto").strip().lower()
    if req not in ("cpu", "auto"):
        print(f"notice: device {req} not used: the hetero notebooks emulate the cluster on the CPU; the GPU path "
              "is `torchrun -m papers.hetero.train --device cuda`, one rank per GPU (papers/hetero/README.md)", flush=True)
    return "cpu"


def _deadline(cfg, steps: int, variants: int = 1) -> float:
    return 120.0 + 3.0 * steps * variants


NORM_RTOL = 1e-6  # the pipeline's clipping norm against the single-process norm


def _staging(counters: list[dict]) -> dict:
    """Measured bytes of one link over both ends of every boundary, per payload byte sent."""
    payload = max(1, sum(c["payload_sent"] for c in counters))
    staged, copied = sum(c["staged_bytes"] for c in counters), sum(c["copied_bytes"] for c in counters)
    return {"staged_per_payload": staged / payload, "copied_per_payload": copied / payload,
            "staged_bytes": staged, "copied_bytes": copied}


def _twice_deviation(st: dict) -> float:
    """|posted-from-host / payload - 2| and |copied / payload - 2|, the larger (one D2H + one H2D copy per transfer)."""
    return max(abs(st["staged_per_payload"] - 2.0), abs(st["copied_per_payload"] - 2.0))


def _clip_fraction(norms, ref_norms, clip: float) -> float:
    """Fraction of steps whose clipping norm equals the single-process whole-model norm and exceeds `clip`."""
    ok = [n > clip and abs(n - r) <= NORM_RTOL * r for n, r in zip(norms, ref_norms)]
    return sum(ok) / max(1, len(ref_norms))


def _label(spec: str) -> str:
    from .links import parse_link, parse_variant

    link, nodp = parse_variant(spec)
    name, k = parse_link(link)
    return (f"{name}:{k}" if name.startswith("cpu_forward") else name) + ("/nodp" if nodp else "")


def live_audit(ranks: list[dict], key: str = "audit", violations: str = "audit_live_violations") -> dict:
    """Merge every rank's view of its live groups: violations (by group) and groups no member asked."""
    asked, bad = {}, set()
    for r in ranks:
        for g in r[key]:
            asked.setdefault(g["name"], set())
            if g["live_backend"] is not None:
                asked[g["name"]].add(g["live_backend"])
        bad |= {v.split(":")[0] for v in r[violations]}
    unasked = sorted(n for n, b in asked.items() if not b)
    return {"violations": sorted(bad), "unasked": unasked, "groups": len(asked),
            "backends": sorted({b for v in asked.values() for b in v})}


def correctness(cfg, seed: int, workdir=None) -> dict:
    """Claim 1: every link gives bitwise-equal losses and parameters; all equal the single-process run.
    The control variants (`cfg.control_links`, deliberately broken) run in the same launch."""
    work = Path(workdir or tempfile.mkdtemp(prefix="hetero-correct-"))
    controls = list(getattr(cfg, "control_links", []) or [])
    job = job_for(cfg, links=list(cfg.correctness_links) + controls, steps=cfg.correctness_steps, seed=seed,
                  save_params=True, corpus=cfg.correctness_corpus, audit_control=True)
    t0 = time.perf_counter()
    ranks = launch(job, cfg.processes, workdir=work, deadline_s=_deadline(cfg, job.steps, len(job.links)))
    wall = time.perf_counter() - t0
    topo = build_topology(parse_vendors(cfg.vendors, cfg.processes), cfg.stages, cfg.partition, CONFIGS[cfg.model].n_layers)
    variants = ranks[-1]["variants"]
    genuine = [_label(s) for s in cfg.correctness_links]
    ctl = {kind: next((_label(s) for s in controls if _label(s).startswith(kind)), None)
           for kind in ("cpu_forward_bf16", "device_direct_staged", "cpu_forward_reassemble", "direct/nodp")}
    base = genuine[0]
    losses = {k: v["losses"] for k, v in variants.items()}

    def loss_diff(a, b):
        return max(abs(x - y) for x, y in zip(losses[a], b))

    digests = {(r["stage"], r["replica"]): {k: v["digest"] for k, v in r["variants"].items()} for r in ranks}
    ref = reference_run(job, dp=topo.dp)

    def param_diff(label):
        worst = 0.0
        for s in range(topo.n_stages):
            got = torch.load(work / f"params-{label.replace(':', '_').replace('/', '_')}-stage{s}.pt")
            want = stage_state(ref["model"], topo.layers(s), s == 0, s == topo.n_stages - 1)
            worst = max(worst, max(float((got[n] - want[n]).abs().max()) for n in want))
        return worst

    def replicas_differ(labels):
        return sum(len({digests[s, r][k] for r in range(topo.dp)}) > 1 for s in range(topo.n_stages) for k in labels)

    lossy = ctl["cpu_forward_bf16"]
    last = [r for r in ranks if r["stage"] == topo.n_stages - 1 and r["replica"] == 0][0]
    staging = {k: _staging([c for r in ranks for c in r["variants"][k]["counters"]]) for k in variants}
    audit, audit_ctl = live_audit(ranks), live_audit(ranks, "audit_control", "audit_control_violations")

    def opt(fn, label):
        return fn(label) if label in variants else None

    metrics = {
        "links_max_loss_diff": max(loss_diff(k, losses[base]) for k in genuine),
        "links_max_loss_diff_control": opt(lambda k: loss_diff(k, losses[base]), lossy),
        "links_param_mismatches": sum(len({d[k] for k in genuine}) > 1 for d in digests.values()),
        "links_param_mismatches_control": opt(lambda k: sum(d[k] != d[base] for d in digests.values()), lossy),
        "dp_replica_mismatches": replicas_differ(genuine),
        "dp_replica_mismatches_control": opt(lambda k: replicas_differ([k]), ctl["direct/nodp"]),
        "ref_max_loss_diff": max(loss_diff(k, ref["losses"]) for k in genuine),
        "ref_max_loss_diff_control": opt(lambda k: loss_diff(k, ref["losses"]), lossy),
        "ref_max_param_diff": max(param_diff(k) for k in genuine),
        "ref_max_param_diff_control": opt(param_diff, lossy),
        "clip_fraction": min(_clip_fraction(variants[k]["grad_norms"], ref["grad_norms"], job.clip) for k in genuine),
        "clip_fraction_control": _clip_fraction(last["variants"][base]["local_norms"], ref["grad_norms"], job.clip),
        "correctness_steps": job.steps, "correctness_wall_s": wall, "partition": list(topo.partition),
        "staged_per_payload": {k: v["staged_per_payload"] for k, v in staging.items()},
        "copied_per_payload": {k: v["copied_per_payload"] for k, v in staging.items()},
        "cf_staged_deviation": max((_twice_deviation(staging[k]) for k in genuine if k.startswith("cpu_forward")), default=None),
        "cf_staged_deviation_control": opt(lambda k: _twice_deviation(staging[k]), ctl["cpu_forward_reassemble"]),
        "dd_staged_bytes": opt(lambda k: staging[k]["staged_bytes"] + staging[k]["copied_bytes"], "device_direct"),
        "dd_staged_bytes_control": opt(lambda k: staging[k]["staged_bytes"] + staging[k]["copied_bytes"], ctl["device_direct_staged"]),
        "audit_live_violations": len(audit["violations"]) + len(audit["unasked"]),
        "audit_live_violations_control": len(audit_ctl["violations"]) + len(audit_ctl["unasked"]),
        "audit_live_groups": audit["groups"], "audit_live_backends": ",".join(audit["backends"]),
        "audit_violations": len(ranks[0]["audit_violations"]),
    }
    return {"metrics": metrics, "losses": {k: losses[k] for k in genuine + ([lossy] if lossy else [])},
            "reference": ref["losses"], "audit": ranks[0]["audit"], "grad_norms": variants[base]["grad_norms"],
            "clip": job.clip, "topology": ranks[0]["topology"], "live_audit": audit, "live_audit_control": audit_ctl}


STABILITY_HEAD, STABILITY_TAIL = 5, 20  # steps averaged at the start and at the end


def unstable_steps(losses) -> int:
    """Steps whose loss is not finite or lies above the first step's loss (divergence)."""
    x = np.asarray(losses, dtype=float)
    return int((~np.isfinite(x)).sum() + (x[np.isfinite(x)] > x[0]).sum()) if len(x) else 0


def _fall(head: float, tail: float, floor) -> dict:
    return {"ratio": tail / head, "excess": (tail - floor) / (head - floor) if floor is not None else None}


def stability(cfg, seed: int, workdir=None) -> dict:
    """Claim 2: a long run stays finite and its loss falls toward the corpus's entropy rate.
    Controls: the same measurements on the initial model never updated (on the same batches), and,
    for divergence, the single-process run without clipping at 100x the learning rate (its first
    `stability_control_steps` steps)."""
    if not cfg.stability_steps:  # not run at this profile
        return {"metrics": {}, "losses": [], "floor": None}
    job = job_for(cfg, links=[cfg.stability_link], steps=cfg.stability_steps, seed=seed)
    ranks = launch(job, cfg.processes, workdir=workdir, deadline_s=_deadline(cfg, job.steps))
    v = next(iter(ranks[-1]["variants"].values()))
    losses = np.array(v["losses"])
    floor = ranks[-1]["corpus"]["entropy_rate"]
    head, tail = losses[:STABILITY_HEAD].mean(), losses[-STABILITY_TAIL:].mean()
    dp = cfg.processes // cfg.stages
    n = len(losses)
    frozen = untrained_losses(job, dp, list(range(STABILITY_HEAD)) + list(range(n - STABILITY_TAIL, n)))
    f_head = float(np.mean([frozen[s] for s in range(STABILITY_HEAD)]))
    f_tail = float(np.mean([frozen[s] for s in range(n - STABILITY_TAIL, n)]))
    wild = reference_run(replace(job, lr=job.lr * 100, clip=0.0), dp=dp, steps=cfg.stability_control_steps)["losses"]
    real, null = _fall(head, tail, floor), _fall(f_head, f_tail, floor)
    metrics = {
        "stability_steps": n, "stability_nonfinite": int((~np.isfinite(losses)).sum()),
        "stability_unstable_steps": unstable_steps(losses),
        "stability_unstable_steps_control": unstable_steps(wild), "stability_control_steps": len(wild),
        "stability_initial_loss": float(head), "stability_final_loss": float(tail),
        "stability_loss_ratio": float(real["ratio"]), "stability_loss_ratio_control": float(null["ratio"]),
        "corpus_entropy_rate": floor,
        "stability_excess_fraction": real["excess"], "stability_excess_fraction_control": null["excess"],
        "stability_tokens_per_s": n * job.n_micro * job.micro_size * CONFIGS[cfg.model].seq_len * dp / v["wall_s"],
    }
    return {"metrics": metrics, "losses": losses.tolist(), "floor": floor, "diverging": wild}


def links_benchmark(cfg, seed: int, workdir=None) -> dict:
    """Claims 3-4: tokens/s per link in interleaved windows (rotating order) and point-to-point
    bandwidth against message size, both in one launch of 2 processes pinned to their own cores."""
    links = list(cfg.throughput_links)
    job = job_for(cfg, mode="throughput", links=links, vendors=cfg.tput_vendors, seed=seed,
                  windows=cfg.tput_windows, window_steps=cfg.tput_window_steps, warmup_steps=cfg.tput_warmup,
                  sizes=list(cfg.p2p_sizes), p2p_links=list(cfg.p2p_links), p2p_iters=cfg.p2p_iters,
                  pin_cores=True, steps=1)
    n_steps = (cfg.tput_windows * cfg.tput_window_steps + cfg.tput_warmup) * len(links)
    ranks = launch(job, cfg.tput_processes, workdir=workdir, deadline_s=_deadline(cfg, n_steps) + 120)
    tp, pp = _throughput(ranks[0]), _p2p(cfg, ranks[0])
    return {"metrics": {**tp["metrics"], **pp["metrics"]}, "throughput": tp, "p2p": pp}


def _throughput(r0: dict) -> dict:
    rates = r0["tokens_per_s"]
    base = rates["direct"]
    summary = {k: {"median": statistics.median(v), "min": min(v), "max": max(v)} for k, v in rates.items()}
    ratio = {k: [a / b for a, b in zip(v, base)] for k, v in rates.items() if k != "direct"}
    m = {"tput_" + k.replace(":", "_") + "_median": s["median"] for k, s in summary.items()}
    for k, v in ratio.items():
        m[k.replace(":", "_") + "_vs_homog_median"] = statistics.median(v)
    m["dd_vs_homog_per_window"] = ratio.get("device_direct")
    m["cf1_vs_homog_per_window"] = ratio.get("cpu_forward:1")  # the control: the staging link, measured the same way
    m["tput_dd_staged_bytes"] = sum(c["staged_bytes"] for c in r0["counters"].get("device_direct", []))
    return {"metrics": m, "rates": rates, "summary": summary, "ratios": ratio, "tokens_per_step": r0["tokens_per_step"]}


def _p2p(cfg, r0: dict) -> dict:
    one_way = r0["one_way_s"]
    gbps = {k: {int(s): [int(s) / t / 1e9 for t in ts] for s, ts in v.items()} for k, v in one_way.items()}
    large = [s for s in cfg.p2p_sizes if s >= 16 * (1 << 20)]
    m = {}
    for k in one_way:
        if k.startswith("cpu_forward") and k != "cpu_forward:1" and large and "cpu_forward:1" in gbps:
            per = [a / b for s in large for a, b in zip(gbps[k][s], gbps["cpu_forward:1"][s])]
            m[f"p2p_{k.replace(':', '_')}_vs_k1_large"] = per
    fit = fit_alpha_beta(one_way["direct"])
    m.update({"p2p_direct_alpha_us": fit[0] * 1e6, "p2p_direct_beta_gbps": fit[1] / 1e9,
              "p2p_max_gbps": {k: max(statistics.median(v) for v in d.values()) for k, d in gbps.items()}})
    return {"metrics": m, "gbps": gbps, "one_way": one_way, "fit": fit}


def fit_alpha_beta(one_way: dict) -> tuple[float, float]:
    """Least-squares t = alpha + bytes / beta on the medians."""
    x = np.array([int(s) for s in one_way], dtype=float)
    y = np.array([statistics.median(v) for v in one_way.values()])
    slope, alpha = np.polyfit(x, y, 1)
    return max(float(alpha), 0.0), 1.0 / max(float(slope), 1e-30)


AUDIT_CASES = {"nv,amd": 2, "nv:2,amd:2": 2, "nv,nv,amd,amd/4 stages": 4, "nv:8,amd:8": 2, "amd:4,nv:4": 2, "nv:4": 2}


def audit_matrix(cfg, rule=select_backend) -> dict:
    """Backend plan of every group for several vendor maps (no processes needed); `rule` picks the
    backends (`groups.naive_backend` is the control)."""
    out = {}
    for spec, stages in AUDIT_CASES.items():
        vendors = expand_vendors(spec.split("/")[0])
        topo = build_topology(vendors, stages, None, 8)
        groups = Groups(topo, 0, "cpu", 2, 30.0, create=False, rule=rule)
        recs = groups.audit()
        out[spec] = {"groups": recs, "violations": audit_violations(recs),
                     "nccl_mixed": sum(1 for g in recs if g["mixed"] and "nccl" in (g["backend"], g["cluster_backend"]))}
    return out


def projection(cfg) -> dict:
    """Claim 5 (a projection): LLaMA-8B and Qwen2-7B on a two-node NVIDIA+AMD cluster."""
    res = {m: perfmodel.project(m) for m in cfg.projection_models}
    sens = {m: perfmodel.sensitivity(m, [0.90, 0.92, 0.945, 0.97, 1.0]) for m in cfg.projection_models}
    metrics = {}
    for m, r in res.items():
        key = m.split("-")[0]
        for name, rr in r["ratios"].items():
            metrics[f"proj_{key}_{name}_vs_nv"] = rr["vs_nv"]
            metrics[f"proj_{key}_{name}_vs_amd"] = rr["vs_amd"]
    metrics["proj_dd_vs_amd_min"] = min(r["ratios"]["device_direct"]["vs_amd"] for r in res.values())
    metrics["proj_assumed_amd_over_nv"] = perfmodel.ASSUMPTIONS.amd_over_nv
    # the assumed AMD/NVIDIA speeds for which the projection lands in the paper's ranges (it follows the input)
    scan = [round(0.85 + 0.0025 * i, 4) for i in range(61)]
    for name, ok in (("in_paper_range", lambda r: 0.94 <= r["vs_nv"] <= 0.98), ("above_amd", lambda r: r["vs_amd"] >= 1.0)):
        hit = [rho for rho in scan if all(ok(perfmodel.project(m, replace(perfmodel.ASSUMPTIONS, amd_over_nv=rho), ks=(1,))
                                              ["ratios"]["device_direct"]) for m in cfg.projection_models)]
        metrics[f"proj_rho_{name}_low"], metrics[f"proj_rho_{name}_high"] = (min(hit), max(hit)) if hit else (None, None)
    metrics["proj_cf1_vs_amd_max"] = max(r["ratios"]["cpu_forward_k1"]["vs_amd"] for r in res.values())
    return {"metrics": metrics, "projections": res, "sensitivity": sens}


def calibrate_cpu(cfg, p2p_fit: tuple[float, float], repeats: int = 5) -> dict:
    """Per-layer forward+backward time of the tiny model on one thread, and the same performance
    model's prediction of the emulated step time with the measured p2p alpha/beta."""
    from .model import Decoder, lm_loss

    mcfg = CONFIGS[cfg.model]
    model = Decoder(mcfg, seed=0)
    x = torch.randint(0, mcfg.vocab, (cfg.micro_size, mcfg.seq_len))
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        def timed(fn):
            best = math.inf
            for _ in progress(range(repeats), desc="calibrate"):
                t0 = time.perf_counter()
                fn()
                best = min(best, time.perf_counter() - t0)
            return best

        h = torch.randn(cfg.micro_size, mcfg.seq_len, mcfg.d_model, requires_grad=True)
        layer = model.layers[0]
        t_layer = timed(lambda: layer(h, model.cos, model.sin).sum().backward())
        t_head = timed(lambda: lm_loss(model.head(model.norm(h)), x).backward())
    finally:
        torch.set_num_threads(old)
    alpha, beta = p2p_fit
    nbytes = cfg.micro_size * mcfg.seq_len * mcfg.d_model * 4
    c = alpha + nbytes / beta
    part = list(cfg.partition)
    ts = [part[0] * t_layer, part[1] * t_layer + t_head]
    pred = perfmodel.step_time(ts, c, cfg.n_micro)
    return {"layer_s": t_layer, "head_s": t_head, "transfer_s": c, "predicted_step_s": pred}


CLUSTER_CLAIMS = ("cluster-multi-nic-scales", "cluster-device-direct-beats-staging", "cluster-device-direct-zero-staging",
                  "cluster-uneven-beats-even", "cluster-mixed-beats-amd", "cluster-perfmodel-calibrated")


def cluster_bench(cfg, seed: int, workdir=None) -> dict:
    """The emulated-cluster claims in one launch of 2 ranks, one per network namespace (node), 2 shaped
    NICs each. Without the privileges (or tools) one line names the claims that cannot be tested and
    why, and `netcluster_available` = 0 marks them not run."""
    from common import netcluster

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
    variants = clusterbench.speed_variants(float(cfg.cluster_rho))
    job = job_for(cfg, mode="cluster", vendors="nv,amd", links=["direct"], partition=[4, 2], nics=2, seed=seed,
                  p2p_phases=phases, speed_variants=variants, layer_ms=float(cfg.cluster_layer_ms),
                  head_layers=float(cfg.cluster_head_layers), windows=int(cfg.cluster_windows),
                  window_steps=int(cfg.cluster_window_steps), warmup_steps=int(cfg.cluster_warmup),
                  p2p_iters=int(cfg.cluster_p2p_iters), pin_cores=True, steps=1)
    work = Path(workdir or tempfile.mkdtemp(prefix="hetero-cluster-"))
    t0 = time.perf_counter()
    ranks = launch(job, 2, workdir=work, deadline_s=600.0,
                   cluster={"rate": cfg.cluster_rate, "delay": cfg.cluster_delay})
    wall = time.perf_counter() - t0
    nic = json.loads((work / "netcluster.json").read_text()) if (work / "netcluster.json").exists() else None
    m = clusterbench.analyse(ranks, cfg, variants, act, nic)
    m.update({"netcluster_available": 1, "cluster_wall_s": wall, "cluster_rate_bps": rate, "cluster_copy_rate_bps": copy_rate,
              "cluster_layer_ms": float(cfg.cluster_layer_ms), "cluster_nodes": 2, "cluster_nics_per_node": 2,
              "cluster_shaping_note": (nic or {}).get("shaping", {}).get("note")})
    return {"metrics": m, "available": True, "ranks": ranks, "nic": nic, "variants": variants}
