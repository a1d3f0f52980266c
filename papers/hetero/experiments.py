"""One function per notebook section; each launches real multi-process runs and returns metrics.

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007
"""
from __future__ import annotations

import math
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from common.progress import progress

from . import perfmodel
from .config import job_for
from .groups import Groups, audit_violations
from .launch import launch
from .reference import reference_run, stage_state
from .model import CONFIGS
from .topology import build_topology, expand_vendors, parse_vendors


def _deadline(cfg, steps: int, variants: int = 1) -> float:
    return 120.0 + 3.0 * steps * variants


def correctness(cfg, seed: int, workdir=None) -> dict:
    """Claim 1: every link gives bitwise-equal losses and parameters; all equal the single-process run."""
    work = Path(workdir or tempfile.mkdtemp(prefix="hetero-correct-"))
    job = job_for(cfg, links=list(cfg.correctness_links), steps=cfg.correctness_steps, seed=seed, save_params=True,
                  corpus=cfg.correctness_corpus)
    t0 = time.perf_counter()
    ranks = launch(job, cfg.processes, workdir=work, deadline_s=_deadline(cfg, job.steps, len(job.links)))
    wall = time.perf_counter() - t0
    topo = build_topology(parse_vendors(cfg.vendors, cfg.processes), cfg.stages, cfg.partition, CONFIGS[cfg.model].n_layers)
    variants = ranks[-1]["variants"]
    base = next(iter(variants))
    losses = {k: v["losses"] for k, v in variants.items()}
    max_loss_diff = max(abs(a - b) for k in losses for a, b in zip(losses[k], losses[base]))
    digests = {(r["stage"], r["replica"]): {k: v["digest"] for k, v in r["variants"].items()} for r in ranks}
    differing = sum(len(set(d.values())) > 1 for d in digests.values())
    replicas_differ = sum(len({digests[s, r][k] for r in range(topo.dp)}) > 1
                          for s in range(topo.n_stages) for k in variants)
    ref = reference_run(job, dp=topo.dp)
    ref_loss_diff = max(abs(a - b) for a, b in zip(ref["losses"], losses[base]))
    ref_param_diff = 0.0
    for s in range(topo.n_stages):
        for label in variants:
            got = torch.load(work / f"params-{label.replace(':', '_')}-stage{s}.pt")
            want = stage_state(ref["model"], topo.layers(s), s == 0, s == topo.n_stages - 1)
            ref_param_diff = max(ref_param_diff, max(float((got[n] - want[n]).abs().max()) for n in want))
    clipped = min(v["clipped"] for v in variants.values()) / job.steps
    staged = {}
    for k in variants:  # both ends of every boundary
        cs = [c for r in ranks for c in r["variants"][k]["counters"]]
        staged[k] = sum(c["staged_bytes"] for c in cs) / max(1, sum(c["payload_sent"] for c in cs))
    metrics = {
        "links_max_loss_diff": max_loss_diff, "links_param_mismatches": differing,
        "dp_replica_mismatches": replicas_differ,
        "ref_max_loss_diff": ref_loss_diff, "ref_max_param_diff": ref_param_diff,
        "clip_fraction": clipped, "correctness_steps": job.steps, "correctness_wall_s": wall,
        "partition": list(topo.partition),
        "staged_per_payload": staged,
        "cf_staged_deviation": max((abs(v - 2.0) for k, v in staged.items() if k.startswith("cpu_forward")), default=None),
        "dd_staged_bytes": sum(c["staged_bytes"] for r in ranks for c in r["variants"]["device_direct"]["counters"])
        if "device_direct" in variants else None,
        "audit_nccl_mixed_groups": sum(1 for g in ranks[0]["audit"] if g["mixed"] and "nccl" in (g["backend"], g["cluster_backend"])),
        "audit_violations": len(ranks[0]["audit_violations"]),
    }
    return {"metrics": metrics, "losses": losses, "reference": ref["losses"], "audit": ranks[0]["audit"],
            "grad_norms": variants[base]["grad_norms"], "clip": job.clip, "topology": ranks[0]["topology"]}


def stability(cfg, seed: int, workdir=None) -> dict:
    """Claim 2: a long run stays finite and its loss falls toward the corpus's entropy rate."""
    if not cfg.stability_steps:  # not run at this profile
        return {"metrics": {}, "losses": [], "floor": None}
    job = job_for(cfg, links=[cfg.stability_link], steps=cfg.stability_steps, seed=seed)
    ranks = launch(job, cfg.processes, workdir=workdir, deadline_s=_deadline(cfg, job.steps))
    v = next(iter(ranks[-1]["variants"].values()))
    losses = np.array(v["losses"])
    floor = ranks[-1]["corpus"]["entropy_rate"]
    head, tail = losses[:5].mean(), losses[-20:].mean()
    metrics = {
        "stability_steps": len(losses), "stability_nonfinite": int((~np.isfinite(losses)).sum()),
        "stability_initial_loss": float(head), "stability_final_loss": float(tail),
        "stability_loss_ratio": float(tail / head), "corpus_entropy_rate": floor,
        "stability_excess_fraction": float((tail - floor) / (head - floor)) if floor is not None else None,
        "stability_tokens_per_s": len(losses) * job.n_micro * job.micro_size * CONFIGS[cfg.model].seq_len * (cfg.processes // cfg.stages) / v["wall_s"],
    }
    return {"metrics": metrics, "losses": losses.tolist(), "floor": floor}


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


def audit_matrix(cfg) -> dict:
    """Backend plan of every group for several vendor maps (no processes needed)."""
    cases = {"nv,amd": 2, "nv:2,amd:2": 2, "nv,nv,amd,amd/4 stages": 4, "nv:8,amd:8": 2, "amd:4,nv:4": 2, "nv:4": 2}
    out = {}
    for spec, stages in cases.items():
        vendors = expand_vendors(spec.split("/")[0])
        topo = build_topology(vendors, stages, None, 8)
        groups = Groups(topo, 0, "cpu", 2, 30.0, create=False)
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
