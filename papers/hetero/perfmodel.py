"""A performance model of pipeline training across vendors. A PROJECTION, not a measurement.

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007
(reports, on a two-node AMD+NVIDIA cluster, Device-Direct at 94-98% of NVIDIA-homogeneous and
0.9-2.3% above AMD-homogeneous throughput for LLaMA-8B and Qwen2-7B; none of its hardware
parameters are public, so every number below is an assumption stated in `ASSUMPTIONS`).

Step time of a pipeline with S stages and M micro-batches (1F1B, synchronous p2p on the critical path):

    T = sum_s t_s + (M - 1) max_s t_s + 2 (S - 1 + M - 1) c        (fill/drain + steady state + transfers)

t_s = tokens * FLOPs(stage s) / (TP * F_vendor(s)) is stage compute (forward + backward) per
micro-batch; c = alpha + bytes / beta is one activation (or gradient) transfer over the link, per
TP rank (each TP rank sends its 1/TP share over its own NIC). CPU-forwarding adds two PCIe staging
copies and runs over k gloo TCP streams. The layer split is chosen per cluster by exhaustive
search (the "appropriate partitioning"), the head counted on the last stage.

The step time used (`pipeline_time`) is an event simulation of the same 1F1B schedule the ranks run
(backward = 2 x forward), which also exposes only the transfers the schedule cannot hide; the closed
form above (`step_time`) is its upper bound. The simulation is the model calibrated on the emulated
cluster (`clusterbench.calibrate`), where it predicts the measured step times (README).
"""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, replace
from functools import lru_cache

import numpy as np

from .model import CONFIGS, ModelConfig, flops_per_token
from .schedule import order as schedule_order


@dataclass(frozen=True)
class Assumptions:
    tp: int = 8                      # GPUs per node, tensor parallel inside the node
    micro_batches: int = 32          # M per step
    micro_batch: int = 1             # sequences per micro-batch
    seq_len: int = 4096
    bytes_per_elem: int = 2          # bf16 activations
    nv_flops: float = 400e12         # achieved training FLOP/s per NVIDIA GPU (~40% of an H100's dense bf16 peak)
    amd_over_nv: float = 0.945       # achieved AMD/NVIDIA per-GPU speed: the midpoint of the 0.92-0.97 the paper's figures imply
    rdma_alpha: float = 10e-6        # NCCL/RCCL or device-direct RDMA latency per transfer
    rdma_beta: float = 25e9          # one 200 Gb/s NIC per GPU
    proxy_alpha: float = 15e-6       # device-direct: proxy thread post + completion poll
    proxy_efficiency: float = 0.9    # device-direct bandwidth relative to the vendor library
    pcie_beta: float = 20e9          # pinned device<->host copy (PCIe Gen4 x16, achieved)
    tcp_alpha: float = 50e-6         # gloo over TCP, per message
    tcp_beta: float = 1.1e9          # one gloo TCP stream (gloo#248 measured ~1.07 GB/s)
    nic_beta: float = 25e9           # cap of k streams on one NIC


ASSUMPTIONS = Assumptions()
LINK_KINDS = ("nccl", "device_direct", "cpu_forward")


def stage_flops(cfg: ModelConfig, n_layers: int, last: bool) -> float:
    """Training FLOPs per token of a stage of `n_layers` layers (the head on the last): t_s's numerator in the
    module docstring's step time."""
    return n_layers * flops_per_token(cfg, "layer") + (flops_per_token(cfg, "head") if last else 0.0)


def transfer_time(link: str, nbytes: float, a: Assumptions, k: int = 1) -> float:
    """One activation/gradient transfer per TP rank (its 1/TP share): the alpha-beta cost c = alpha + bytes /
    beta of the module docstring per link: the vendor library or device-direct over RDMA (abstract: device-
    direct "without host-memory staging"), CPU-forwarding with two PCIe staging copies and k TCP streams
    capped by the NIC (abstract: "multi-NIC parallel data transfer"). Parameters: `Assumptions`."""
    share = nbytes / a.tp
    if link == "nccl":
        return a.rdma_alpha + share / a.rdma_beta
    if link == "device_direct":
        return a.proxy_alpha + share / (a.rdma_beta * a.proxy_efficiency)
    if link == "cpu_forward":
        return a.tcp_alpha + 2 * share / a.pcie_beta + share / min(k * a.tcp_beta, a.nic_beta)
    raise ValueError(link)


def fit_alpha_beta(one_way: dict) -> tuple[float, float]:
    """The link's (alpha, beta) of the cost model c = alpha + bytes / beta (module docstring; `transfer_time`),
    by least squares on the medians of measured one-way times {size in bytes: [seconds]}; alpha clipped at
    0. Fitted on the loopback ping-pong (notebook 02) and on the emulated cluster's shaped NIC (notebook 04)."""
    x = np.array([int(s) for s in one_way], dtype=float)
    y = np.array([statistics.median(v) for v in one_way.values()])
    slope, alpha = np.polyfit(x, y, 1)
    return max(float(alpha), 0.0), 1.0 / max(float(slope), 1e-30)


def step_time(stage_times: list[float], c: float, m: int) -> float:
    """The closed-form 1F1B step time of the module docstring (README "What is reconstructed", Performance
    model): T = sum_s t_s + (M - 1) max_s t_s + 2 (S - 1 + M - 1) c; the upper bound of `pipeline_time`."""
    s = len(stage_times)
    return sum(stage_times) + (m - 1) * max(stage_times) + 2 * (s - 1 + m - 1) * c


def pipeline_time(forward: list[float], backward: list[float], c: float, m: int, schedule: str = "1f1b") -> float:
    """Makespan of one step by event simulation (README "What is reconstructed", Performance model; the
    schedule of `schedule.order`): stage s runs `schedule.order` in sequence; F of micro-batch
    j on stage s starts once stage s is free and F j of stage s-1 finished c earlier (its activation
    arrived), B j once B j of stage s+1 finished c earlier; sends do not block their sender."""
    n = len(forward)
    ops = _plan(schedule, n, m)
    done, free, pos = {}, [0.0] * n, [0] * n
    todo = [s for s in range(n) if ops[s]]
    while todo:
        moved = False
        for s in todo:
            seq, p, t_f, t_b = ops[s], pos[s], forward[s], backward[s]
            while p < len(seq):
                key, dep, is_f = seq[p]
                if dep is None:
                    ready = 0.0
                elif dep in done:
                    ready = done[dep] + c
                else:
                    break
                free[s] = max(free[s], ready) + (t_f if is_f else t_b)
                done[key] = free[s]
                p += 1
                moved = True
            pos[s] = p
        if not moved:
            raise ValueError("schedule deadlocks")
        todo = [s for s in todo if pos[s] < len(ops[s])]
    return max(free)


@lru_cache(maxsize=64)
def _plan(schedule: str, n: int, m: int) -> tuple:
    """Per stage, the `schedule.order` of its operations as (key, the key it waits for or None, is forward)."""
    out = []
    for s in range(n):
        seq = []
        for op, j in schedule_order(schedule, s, n, m):
            dep = (s - 1, "F", j) if op == "F" and s > 0 else (s + 1, "B", j) if op == "B" and s < n - 1 else None
            seq.append(((s, op, j), dep, op == "F"))
        out.append(tuple(seq))
    return tuple(out)


def best_split(cfg: ModelConfig, vendors: tuple[str, str], link: str, a: Assumptions, k: int = 1) -> dict:
    """Exhaustive search of the two-stage layer split; returns the fastest plan: the "appropriate
    pipeline-parallel partitioning" the paper credits (third-party summary), with the head on the last stage."""
    tokens = a.micro_batch * a.seq_len
    speed = {"nv": a.nv_flops, "amd": a.nv_flops * a.amd_over_nv}
    nbytes = tokens * cfg.d_model * a.bytes_per_elem
    c = transfer_time(link, nbytes, a, k)
    best = None
    for n0 in range(1, cfg.n_layers):
        ts = [tokens * stage_flops(cfg, n, last) / (a.tp * speed[v])
              for n, last, v in ((n0, False, vendors[0]), (cfg.n_layers - n0, True, vendors[1]))]
        t = pipeline_time([x / 3 for x in ts], [2 * x / 3 for x in ts], c, a.micro_batches)  # backward = 2 x forward
        if best is None or t < best["step_s"]:
            best = {"split": [n0, cfg.n_layers - n0], "stage_s": ts, "transfer_s": c, "step_s": t,
                    "tokens_per_s": a.micro_batches * tokens / t}
    return best


def project(model: str, a: Assumptions = ASSUMPTIONS, ks=(1, 2, 4)) -> dict:
    """Tokens/s of NVIDIA- and AMD-homogeneous clusters and of the mixed cluster with each link: the
    projection of the paper's two-node result (abstract: LLaMA-8B and Qwen2-7B, device-direct at 98-94 % of
    NVIDIA-homogeneous; 0.9-2.3 % above AMD-homogeneous per a third-party summary)."""
    cfg = CONFIGS[model]
    plans = {"nv_homogeneous": best_split(cfg, ("nv", "nv"), "nccl", a),
             "amd_homogeneous": best_split(cfg, ("amd", "amd"), "nccl", a)}
    for order in (("nv", "amd"), ("amd", "nv")):
        for link, kk in [("device_direct", 1)] + [("cpu_forward", k) for k in ks]:
            name = link if link == "device_direct" else f"cpu_forward_k{kk}"
            p = best_split(cfg, order, link, a, kk)
            p["order"] = list(order)
            if name not in plans or p["tokens_per_s"] > plans[name]["tokens_per_s"]:
                plans[name] = p
    nv, amd = plans["nv_homogeneous"]["tokens_per_s"], plans["amd_homogeneous"]["tokens_per_s"]
    ratios = {name: {"vs_nv": p["tokens_per_s"] / nv, "vs_amd": p["tokens_per_s"] / amd} for name, p in plans.items()}
    return {"model": model, "plans": plans, "ratios": ratios, "assumptions": asdict(a), "label": "projection"}


def sensitivity(model: str, values, field: str = "amd_over_nv", a: Assumptions = ASSUMPTIONS) -> list[dict]:
    """Device-direct ratios as one assumption varies."""
    out = []
    for v in values:
        r = project(model, replace(a, **{field: v}), ks=(1,))["ratios"]["device_direct"]
        out.append({field: v, **r})
    return out
