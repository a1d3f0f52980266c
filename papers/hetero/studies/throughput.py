"""Notebook 02: tokens/s per link, point-to-point bandwidth, and the performance model calibrated on this CPU.

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007
(abstract: device-direct at up to 98 % of NVIDIA-homogeneous throughput, CPU-forwarding's "multi-NIC
parallel data transfer"; claims `device-direct-throughput` and `cpu-forward-multichannel-not-slower`).

`links_benchmark` launches two pinned processes that time every link in interleaved windows and then
ping-pong every p2p link (`p2p`); `throughput_summary` and `p2p_summary` map them to the claims' metrics.
`calibrate_cpu` times one layer and the head on one thread and predicts the emulated step time with the
closed-form step time and the fitted alpha-beta link cost (`perfmodel`); `calibration_metrics` compares it
with the measured direct-link step.
"""
from __future__ import annotations

import math
import statistics
import time

import torch

from common import netcluster
from common.progress import progress
from common.runner.kernel import runs_later

from .. import perfmodel
from ..config import job_for
from ..launch import close_zygote, launch, run_deadline, warm_zygote
from ..model import CONFIGS, Decoder, lm_loss


CALIBRATION_REPEATS = 5  # timed repeats of the CPU calibration (the best is kept)


def measure(cfg, run) -> dict:
    """Notebook 02: the links benchmark (its ranks seeded from the run's stream "throughput", its files under
    run.dir), then the CPU calibration of the performance model. {"metrics", "throughput", "p2p", "calibration"}."""
    bench = links_benchmark(cfg, run.streams.seed_for("throughput"), workdir=run.dir / "work" / "throughput")
    close_zygote()   # reaped here, before the calibration times the CPU: its ranks' CPU time is then the kernel's (`cores_used`)
    cal = calibration_metrics(calibrate_cpu(cfg, bench["p2p"]["fit"], run.streams.child("calibration"), CALIBRATION_REPEATS),
                              bench["throughput"])
    if runs_later("04-cluster") and netcluster.available()[0]:   # notebook 04's ranks' zygote, where the runner runs 04
        warm_zygote()              # in this kernel and 04 can build its cluster: its imports run beside this end and 03
    return {"metrics": {**bench["metrics"], **{"calib_" + k: v for k, v in cal.items()}},
            "throughput": bench["throughput"], "p2p": bench["p2p"], "calibration": cal}


def links_benchmark(cfg, seed: int, workdir=None) -> dict:
    """Claims 3-4: tokens/s per link in interleaved windows (rotating order) and point-to-point
    bandwidth against message size, both in one launch of 2 processes pinned to their own cores."""
    links = list(cfg.throughput_links)
    job = job_for(cfg, mode="throughput", links=links, vendors=cfg.tput_vendors, seed=seed,
                  windows=cfg.tput_windows, window_steps=cfg.tput_window_steps, warmup_steps=cfg.tput_warmup,
                  sizes=list(cfg.p2p_sizes), p2p_links=list(cfg.p2p_links), p2p_iters=cfg.p2p_iters,
                  pin_cores=True, steps=1)
    n_steps = (cfg.tput_windows * cfg.tput_window_steps + cfg.tput_warmup) * len(links)
    ranks = launch(job, cfg.tput_processes, workdir=workdir, deadline_s=run_deadline(n_steps) + 120)
    tp, pp = throughput_summary(ranks[0]), p2p_summary(cfg.p2p_sizes, ranks[0])
    return {"metrics": {**tp["metrics"], **pp["metrics"]}, "throughput": tp, "p2p": pp}


def throughput_summary(r0: dict) -> dict:
    """Rank 0's tokens/s per link and window -> per-window ratios to the direct (homogeneous) link of the
    same round, their medians, and the device-direct staged bytes."""
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


def p2p_summary(sizes, r0: dict) -> dict:
    """Rank 0's one-way seconds {link: {size: [per window]}} -> GB/s, the per-window ratio of each
    multi-channel CPU-forwarding link to k = 1 at the sizes of 16 MiB and up, the direct link's fitted
    (alpha, beta) (`perfmodel.fit_alpha_beta`) and each link's best median GB/s."""
    one_way = r0["one_way_s"]
    gbps = {k: {int(s): [int(s) / t / 1e9 for t in ts] for s, ts in v.items()} for k, v in one_way.items()}
    large = [s for s in sizes if s >= 16 * (1 << 20)]
    m = {}
    for k in one_way:
        if k.startswith("cpu_forward") and k != "cpu_forward:1" and large and "cpu_forward:1" in gbps:
            per = [a / b for s in large for a, b in zip(gbps[k][s], gbps["cpu_forward:1"][s])]
            m[f"p2p_{k.replace(':', '_')}_vs_k1_large"] = per
    fit = perfmodel.fit_alpha_beta(one_way["direct"])
    m.update({"p2p_direct_alpha_us": fit[0] * 1e6, "p2p_direct_beta_gbps": fit[1] / 1e9,
              "p2p_max_gbps": {k: max(statistics.median(v) for v in d.values()) for k, d in gbps.items()}})
    return {"metrics": m, "gbps": gbps, "one_way": one_way, "fit": fit}


def calibrate_cpu(cfg, p2p_fit: tuple[float, float], streams, repeats: int = 5) -> dict:
    """Per-layer forward+backward time of the tiny model on one thread, and the same performance
    model's prediction of the emulated step time (`perfmodel.step_time`, the closed-form 1F1B step:
    sum of stages + (M - 1) x slowest + 2 (S - 1 + M - 1) c) with the measured p2p alpha/beta. The model,
    tokens and activations are drawn from `streams` (`common.seed.Streams`)."""
    mcfg = CONFIGS[cfg.model]
    model = Decoder(mcfg, seed=streams.seed_for("model"))
    x = torch.randint(0, mcfg.vocab, (cfg.micro_size, mcfg.seq_len), generator=streams.torch_generator("tokens"))
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

        h = torch.randn(cfg.micro_size, mcfg.seq_len, mcfg.d_model, requires_grad=True,
                        generator=streams.torch_generator("activations"))
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


def calibration_metrics(cal: dict, tp: dict) -> dict:
    """`cal` (from `calibrate_cpu`) with the measured direct-link step time (tokens per step / median
    tokens/s of the direct link, from `throughput_summary`) and the ratio predicted / measured."""
    cal = dict(cal)
    cal["measured_step_s"] = tp["tokens_per_step"] / tp["summary"]["direct"]["median"]
    cal["predicted_over_measured"] = cal["predicted_step_s"] / cal["measured_step_s"]
    return cal
