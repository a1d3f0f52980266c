"""Measurements on the emulated cluster (network namespaces, shaped NICs): multi-NIC bandwidth,
costed staging, vendor compute speed, and the performance model calibrated on them.

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007
(multi-NIC parallel transfer; device-direct "without host-memory staging"; the mixed cluster
above AMD-homogeneous through the partition).

Rank side (`run_cluster`, the job mode `cluster`, 2 ranks, one per node): the job's `p2p_phases`
(ping-pong one-way times, links interleaved per window, each phase with its staging engine rate),
then the `speed_variants` in interleaved windows: each variant is a (link, partition, per-stage
speed), the stage's passes paced to `layer_ms * layers / speed` (`schedule.run_step`), so "vendor
AMD" is a stage whose emulated device computes at `speed` < 1 of NVIDIA's.

Parent side: the windows of the vendor-speed claims (`speed_variants`), per-window ratios paired inside
each window (the sides interleaved), what the emulation's inputs imply for two of them, and the
perfmodel calibrated on the homogeneous windows (`calibrate`, `predict`, the competitor
`predict_bottleneck`, `calibrated_errors`); `studies.cluster` maps them to the claims' metrics.
"""
from __future__ import annotations

import statistics
import time

import torch.distributed as dist

from . import perfmodel
from .devsync import now
from .p2p import p2p_times

NV = "nv_homog"


def stage_pace(layer_ms: float, layers: int, last: bool, head_layers: float, speed: float):
    """(forward_s, backward_s) of one micro-batch on a stage of the emulated device; None when unpaced. The
    vendor speed of the paper's mixed cluster is emulated, not measured (README "Emulated cluster":
    forward = layer_ms x (layers + head) / speed, backward 2x)."""
    if layer_ms <= 0:
        return None
    f = layer_ms / 1000.0 * (layers + (head_layers if last else 0.0)) / speed
    return (f, 2.0 * f)


def run_cluster(me) -> dict:
    """The cluster job on one rank: p2p phases, then the vendor-speed windows."""
    j = me.job
    out = {"p2p": {}, "p2p_counters": {}}
    for ph in j.p2p_phases or []:
        times, counters = p2p_times(me, list(ph["links"]), list(ph["sizes"]), int(ph.get("iters", j.p2p_iters)),
                                    int(ph.get("windows", j.windows)), float(ph.get("copy_rate_bps", 0.0)))
        out["p2p"][ph["name"]], out["p2p_counters"][ph["name"]] = times, counters
    if j.speed_variants:
        out["speed"] = _speed_windows(me)
    return out


def _link_key(v: dict) -> tuple:
    return v.get("link", "direct"), float(v.get("copy_rate_bps", 0.0))


def _speed_windows(me) -> dict:
    j = me.job
    variants = {v["label"]: v for v in j.speed_variants}
    # one link pair per (link, staging copy-engine rate)
    links = {key: me.links(*key) for key in dict.fromkeys(_link_key(v) for v in variants.values())}
    models = {lab: me.new_model(v["partition"]) for lab, v in variants.items()}
    pace = {lab: stage_pace(j.layer_ms, v["partition"][me.stage], me.last, j.head_layers, v["speeds"][me.stage])
            for lab, v in variants.items()}
    timings = {lab: {} for lab in variants}
    labels, step = list(variants), 0

    def run(lab, log):
        nonlocal step
        mod, opt = models[lab]
        me.step(mod, opt, step, *links[_link_key(variants[lab])], pace=pace[lab],
                timings=timings[lab] if log else None)
        step += 1

    for lab in labels:
        for _ in range(j.warmup_steps):
            run(lab, False)
    step_s = {lab: [] for lab in labels}
    for w in range(j.windows):
        for lab in labels[w % len(labels):] + labels[:w % len(labels)]:
            dist.barrier()
            t0 = now(me.device)  # timers read after the device's queued work (devsync)
            for _ in range(j.window_steps):
                run(lab, True)
            now(me.device)
            dist.barrier()
            step_s[lab].append((time.perf_counter() - t0) / j.window_steps)
    for pair in links.values():
        for lk in pair:
            if lk is not None:
                lk.close()
    med = {lab: {op: statistics.median(ts) for op, ts in t.items()} for lab, t in timings.items()}
    return {"step_s": step_s, "pass_s": med, "stage": me.stage, "pace": pace}


# ---- parent side -----------------------------------------------------------------------------------

CF1 = "cf1_even_rho1"  # CPU-forwarding k = 1 through the copy engine: the staging link's training windows


def speed_variants(rho: float, copy_rate_bps: float = 0.0) -> list[dict]:
    """The windows of the vendor-speed claims: at rho and at rho = 1 (the control: no speed difference);
    and, with `copy_rate_bps` > 0, CPU-forwarding k = 1 at rho = 1 with its staging copies through the
    copy engine (the control of the device-direct throughput claim; `model` False: not a perfmodel window)."""
    def v(label, link, part, speeds):
        return {"label": label, "link": link, "partition": part, "speeds": speeds}

    out = [v("mixed_uneven", "device_direct", [4, 2], [1.0, rho]), v("mixed_even", "device_direct", [3, 3], [1.0, rho]),
           v("amd_homog", "direct", [3, 3], [rho, rho]), v(NV, "direct", [3, 3], [1.0, 1.0]),
           v("mixed_uneven_rho1", "device_direct", [4, 2], [1.0, 1.0]),
           v("mixed_even_rho1", "device_direct", [3, 3], [1.0, 1.0])]
    if copy_rate_bps > 0:
        out.append(dict(v(CF1, "cpu_forward:1", [3, 3], [1.0, 1.0]), copy_rate_bps=float(copy_rate_bps), model=False))
    return out


def model_variants(variants: list[dict]) -> list[dict]:
    """The windows the performance model is calibrated on and judged against (not the staging-link ones)."""
    return [v for v in variants if v.get("model", True)]


def at_rho(cal: dict, c: float, n_micro: int, overhead: float, rhos, n_layers: int = 6) -> dict:
    """The calibrated model at other AMD speeds (a finding, not a claim): for each rho, the mixed cluster's
    best split (layers on the NVIDIA stage, the rest on AMD) and its step-time ratios to AMD-homogeneous
    (even split at rho) and to the mixed cluster's even split. Pass times at rho are the NVIDIA calibration
    / rho (the pacing's own model). {rho: {"best_split", "mixed_vs_amd", "best_vs_even"}}."""
    out = {}
    half = n_layers // 2
    for rho in rhos:
        cal_r = {1.0: cal[1.0], rho: {op: tuple(t / rho for t in cal[1.0][op]) for op in ("F", "B")}}

        def t(part, speeds):
            return predict({"partition": part, "speeds": speeds}, cal_r, c, n_micro, overhead=overhead)

        amd, even = t([half, n_layers - half], [rho, rho]), t([half, n_layers - half], [1.0, rho])
        best_t, best_n = min((t([n, n_layers - n], [1.0, rho]), n) for n in range(1, n_layers))
        out[rho] = {"best_split": [best_n, n_layers - best_n], "mixed_vs_amd": amd / best_t, "best_vs_even": even / best_t}
    return out


def expected_nic_ratio(k: int, nics: int) -> float:
    """t(k = 1) / t(k channels) that the emulation's inputs imply for a NIC-bound transfer: the channels
    spread over min(k, nics) NICs of equal tbf rate."""
    return float(min(k, nics))


def expected_staging_ratio(copy_over_nic: float) -> float:
    """t(CPU-forwarding k = 1) / t(device-direct) that the inputs imply when the copies and the NIC are
    serial: (copy in + wire + copy out) / wire = 1 + 2 / (copy rate / NIC rate)."""
    return 1.0 + 2.0 / float(copy_over_nic)


def per_window(num: list, den: list) -> list[float]:
    """Paired ratios num_w / den_w of one window's two sides."""
    return [a / b for a, b in zip(num, den)]


def calibrate(pass_s: dict, variants: list[dict], head_layers: float) -> dict:
    """The calibration of claim `cluster-perfmodel-calibrated` (ours; README "Emulated cluster"):
    per-layer forward/backward seconds and the head's, per stage speed, from the homogeneous windows
    (stage 0: layers only; stage 1: layers + head): {speed: {"F": (layer, head), "B": (layer, head)}}."""
    cal = {}
    for v in variants:
        if v["label"] not in ("amd_homog", NV):
            continue
        speed = v["speeds"][0]
        n0, n1 = v["partition"]
        cal[speed] = {}
        for op in ("F", "B"):
            u = pass_s[v["label"]][0][op] / n0
            cal[speed][op] = (u, max(0.0, pass_s[v["label"]][1][op] - n1 * u))
    return cal


HOMOGENEOUS = ("amd_homog", NV)


def predict(v: dict, cal: dict, c: float, n_micro: int, ignore_speed: bool = False, overhead: float = 0.0) -> float:
    """The perfmodel's step time of variant `v` (the 1F1B simulation `perfmodel.pipeline_time` with the
    alpha-beta transfer `c`) from the calibrated pass times plus the calibrated
    per-step `overhead` (`ignore_speed`: the control model, every stage at the NVIDIA calibration)."""
    fwd, bwd = [], []
    for s, (layers, speed) in enumerate(zip(v["partition"], v["speeds"])):
        k = 1.0 if ignore_speed else speed
        last = s == len(v["partition"]) - 1
        fwd.append(layers * cal[k]["F"][0] + (cal[k]["F"][1] if last else 0.0))
        bwd.append(layers * cal[k]["B"][0] + (cal[k]["B"][1] if last else 0.0))
    return perfmodel.pipeline_time(fwd, bwd, c, n_micro) + overhead


def predict_bottleneck(v: dict, cal: dict, n_micro: int, overhead: float = 0.0) -> float:
    """The competitor of the 1F1B simulation, calibrated the same way: M x the slowest stage's pass time
    (forward + backward of one micro-batch, from the same calibrated per-speed layer and head times),
    plus its own calibrated per-step `overhead`; no fill/drain, no transfers."""
    slowest = 0.0
    for s, (layers, speed) in enumerate(zip(v["partition"], v["speeds"])):
        last = s == len(v["partition"]) - 1
        t = sum(layers * cal[speed][op][0] + (cal[speed][op][1] if last else 0.0) for op in ("F", "B"))
        slowest = max(slowest, t)
    return n_micro * slowest + overhead


def calibrated_errors(model, variants: list[dict], measured: dict) -> dict:
    """{label: predicted / measured - 1} of `model(v, overhead)`, its per-step overhead calibrated on the
    homogeneous windows (mean of measured - predicted there), the procedure both models share."""
    variants = model_variants(variants)
    homog = [v for v in variants if v["label"] in HOMOGENEOUS]
    overhead = statistics.mean(measured[v["label"]] - model(v, 0.0) for v in homog)
    return {v["label"]: model(v, overhead) / measured[v["label"]] - 1 for v in variants}
