"""Notebook 01: every link trains the same model bitwise alike and equal to one process; the long run is stable.

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007
(abstract: "training correctness preserved", loss curves matching the homogeneous baselines, training
stability; the claims `links-*`, `pipeline-equals-single-process-*`, `clipping-every-step`,
`dp-replicas-identical`, `*-staging`, `audit-live-no-mixed-nccl`, `stability-*` of claims.yaml).

`correctness` launches one multi-process run in which every link (and every deliberately broken control
link) trains a fresh model on the same micro-batches, and runs the single-process reference over the same
micro-batch order (`reference`); `correctness_metrics` maps what they measured to the claims' metrics.
`stability` launches the long run on the Markov corpus beside its two nulls (the untrained model on the
same batches; one process at 100x the learning rate without clipping); `stability_metrics` maps them.
"""
from __future__ import annotations

import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from ..config import job_for, variant_steps
from ..groups import live_audit
from ..launch import launch, run_deadline
from ..links import parse_link, parse_variant
from ..model import CONFIGS
from ..reference import reference_run, stage_state, untrained_losses
from ..rank import file_label
from ..topology import build_topology, parse_vendors

NORM_RTOL = 1e-6  # the pipeline's clipping norm against the single-process norm
CONTROL_KINDS = ("cpu_forward_bf16", "device_direct_staged", "cpu_forward_reassemble", "direct/nodp")
STABILITY_HEAD, STABILITY_TAIL = 5, 20  # steps averaged at the start and at the end


def measure(cfg, run) -> dict:
    """Notebook 01: the link comparison and the stability run, their ranks (and the single-process runs beside them)
    seeded from the run's streams "correctness" and "stability", their files under run.dir.
    {"metrics", "correctness", "stability"}.

    Both launches run at once, in background threads (8 one-thread ranks at quick: one launch alone left ~0.2 of the
    2 cores idle in its pipeline's bubbles), while this thread computes their single-process runs (one thread, the
    same code and inputs as after the launches: the same bits). None of this notebook's claims is a timing."""
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="hetero-launch") as bg:
        corr = correctness_start(cfg, run.streams.seed_for("correctness"), run.dir / "work" / "correctness", bg)
        stab = stability_start(cfg, run.streams.seed_for("stability"), run.dir / "work" / "stability", bg)
        corr_ref, stab_ref = corr["kernel"](), stab["kernel"]()   # in this thread, while the ranks run
        corr, stab = correctness_finish(cfg, corr, corr_ref), stability_finish(cfg, stab, stab_ref)
    # the rank zygote stays for notebook 02's launch (the same ranks' environment); whoever holds it last ends it, at
    # the latest the runner's last cell (`common.lifetime.end`), so this kernel reaps it and its ranks' CPU time counts
    return {"metrics": {**corr["metrics"], **stab["metrics"]}, "correctness": corr, "stability": stab}


def timed_launch(job, world: int, workdir, deadline_s: float, bg=None) -> Future:
    """`launch(...)` as a future (in `bg`, a thread pool, else here and now) of (rank results, wall seconds)."""
    def go():
        t0 = time.perf_counter()
        ranks = launch(job, world, workdir=workdir, deadline_s=deadline_s)
        return ranks, time.perf_counter() - t0

    if bg is not None:
        return bg.submit(go)
    done = Future()
    done.set_result(go())
    return done


# ---- the link comparison (claims 1, 4a, 6) ---------------------------------------------------------------

def variant_label(spec: str) -> str:
    """The label a rank reports a link variant under: 'cpu_forward' -> 'cpu_forward:1', 'direct/nodp' kept."""
    link, nodp = parse_variant(spec)
    name, k = parse_link(link)
    return (f"{name}:{k}" if name.startswith("cpu_forward") else name) + ("/nodp" if nodp else "")


def control_labels(controls: list) -> dict:
    """{kind: label of the first control link of that kind, or None} for the kinds in `CONTROL_KINDS`."""
    return {kind: next((variant_label(s) for s in controls if variant_label(s).startswith(kind)), None)
            for kind in CONTROL_KINDS}


def staging(counters: list[dict]) -> dict:
    """Measured bytes of one link over both ends of every boundary, per payload byte sent."""
    payload = max(1, sum(c["payload_sent"] for c in counters))
    staged, copied = sum(c["staged_bytes"] for c in counters), sum(c["copied_bytes"] for c in counters)
    return {"staged_per_payload": staged / payload, "copied_per_payload": copied / payload,
            "staged_bytes": staged, "copied_bytes": copied}


def twice_deviation(st: dict) -> float:
    """|posted-from-host / payload - 2| and |copied / payload - 2|, the larger (CPU-forwarding: one D2H + one
    H2D copy per transfer, README "What is reconstructed", Links)."""
    return max(abs(st["staged_per_payload"] - 2.0), abs(st["copied_per_payload"] - 2.0))


def clip_fraction(norms, ref_norms, clip: float) -> float:
    """Fraction of steps whose clipping norm equals the single-process whole-model norm and exceeds `clip`."""
    ok = [n > clip and abs(n - r) <= NORM_RTOL * r for n, r in zip(norms, ref_norms)]
    return sum(ok) / max(1, len(ref_norms))


def max_loss_diff(losses, other) -> float:
    """max over steps of |losses - other|."""
    return max(abs(x - y) for x, y in zip(losses, other))


def correctness_metrics(x: dict) -> dict:
    """The claims' metrics of the link comparison from its measurements `x`:

    genuine (labels of the links compared; the first is the baseline), controls (`control_labels`),
    losses {label: per-step losses}, grad_norms {label: per-step global norms}, local_norms (the last
    stage's own norms on the baseline link), reference {"losses", "grad_norms"} (one process), clip,
    digests {(stage, replica): {label: sha256}}, n_stages, dp, param_diffs {label: max |param - reference|}
    (the genuine links and the lossy control), staging {label: `staging(...)`}, audit and audit_control
    (`groups.live_audit`), plan_violations, steps, wall_s, partition. A control not run maps to None."""
    genuine, ctl, losses, digests, stg = x["genuine"], x["controls"], x["losses"], x["digests"], x["staging"]
    base, lossy = genuine[0], ctl["cpu_forward_bf16"]
    ref = x["reference"]

    def opt(fn, label):
        return fn(label) if label in losses else None

    def replicas_differ(labels):
        return sum(len({digests[s, r][k] for r in range(x["dp"])}) > 1 for s in range(x["n_stages"]) for k in labels)

    def moved(k):
        return stg[k]["staged_bytes"] + stg[k]["copied_bytes"]

    audit, audit_ctl = x["audit"], x["audit_control"]
    return {
        "links_max_loss_diff": max(max_loss_diff(losses[k], losses[base]) for k in genuine),
        "links_max_loss_diff_control": opt(lambda k: max_loss_diff(losses[k], losses[base]), lossy),
        "links_param_mismatches": sum(len({d[k] for k in genuine}) > 1 for d in digests.values()),
        "links_param_mismatches_control": opt(lambda k: sum(d[k] != d[base] for d in digests.values()), lossy),
        "dp_replica_mismatches": replicas_differ(genuine),
        "dp_replica_mismatches_control": opt(lambda k: replicas_differ([k]), ctl["direct/nodp"]),
        "ref_max_loss_diff": max(max_loss_diff(losses[k], ref["losses"]) for k in genuine),
        "ref_max_loss_diff_control": opt(lambda k: max_loss_diff(losses[k], ref["losses"]), lossy),
        "ref_max_param_diff": max(x["param_diffs"][k] for k in genuine),
        "ref_max_param_diff_control": opt(lambda k: x["param_diffs"][k], lossy),
        "clip_fraction": min(clip_fraction(x["grad_norms"][k], ref["grad_norms"], x["clip"]) for k in genuine),
        "clip_fraction_control": clip_fraction(x["local_norms"], ref["grad_norms"], x["clip"]),
        "correctness_steps": x["steps"], "correctness_wall_s": x["wall_s"], "partition": list(x["partition"]),
        "staged_per_payload": {k: v["staged_per_payload"] for k, v in stg.items()},
        "copied_per_payload": {k: v["copied_per_payload"] for k, v in stg.items()},
        "cf_staged_deviation": max((twice_deviation(stg[k]) for k in genuine if k.startswith("cpu_forward")), default=None),
        "cf_staged_deviation_control": opt(lambda k: twice_deviation(stg[k]), ctl["cpu_forward_reassemble"]),
        "dd_staged_bytes": opt(moved, "device_direct"),
        "dd_staged_bytes_control": opt(moved, ctl["device_direct_staged"]),
        "audit_live_violations": len(audit["violations"]) + len(audit["unasked"]),
        "audit_live_violations_control": len(audit_ctl["violations"]) + len(audit_ctl["unasked"]),
        "audit_live_groups": audit["groups"], "audit_live_backends": ",".join(audit["backends"]),
        "audit_violations": x["plan_violations"],
    }


def correctness(cfg, seed: int, workdir=None) -> dict:
    """Claim 1: every link gives bitwise-equal losses and parameters; all equal the single-process run.
    The control variants (`cfg.control_links`, deliberately broken) run in the same launch."""
    started = correctness_start(cfg, seed, workdir)
    return correctness_finish(cfg, started, started["kernel"]())


def correctness_start(cfg, seed: int, workdir=None, bg=None) -> dict:
    """The link comparison's launch started (in `bg`, else run to its end here); "kernel": its single-process run."""
    work = Path(workdir or tempfile.mkdtemp(prefix="hetero-correct-"))
    controls = list(getattr(cfg, "control_links", []) or [])
    job = job_for(cfg, links=list(cfg.correctness_links) + controls, steps=cfg.correctness_steps, seed=seed,
                  save_params=True, corpus=cfg.correctness_corpus, audit_control=True, variant_steps=variant_steps(cfg))  # counting controls: fewer steps
    ranks = timed_launch(job, cfg.processes, work, run_deadline(job.steps, len(job.links)), bg)
    topo = build_topology(parse_vendors(cfg.vendors, cfg.processes), cfg.stages, cfg.partition, CONFIGS[cfg.model].n_layers)
    return {"job": job, "work": work, "controls": controls, "ranks": ranks, "topo": topo,
            "kernel": lambda: reference_run(job, dp=topo.dp)}


def correctness_finish(cfg, started: dict, ref: dict) -> dict:
    """`correctness`'s result from its started launch and its single-process run `ref`."""
    job, work, controls, topo = started["job"], started["work"], started["controls"], started["topo"]
    ranks, wall = started["ranks"].result()
    variants = ranks[-1]["variants"]
    genuine = [variant_label(s) for s in cfg.correctness_links]
    ctl = control_labels(controls)
    base, lossy = genuine[0], ctl["cpu_forward_bf16"]
    losses = {k: v["losses"] for k, v in variants.items()}

    def param_diff(label):
        worst = 0.0
        for s in range(topo.n_stages):
            got = torch.load(work / f"params-{file_label(label)}-stage{s}.pt")
            want = stage_state(ref["model"], topo.layers(s), s == 0, s == topo.n_stages - 1)
            worst = max(worst, max(float((got[n] - want[n]).abs().max()) for n in want))
        return worst

    last = [r for r in ranks if r["stage"] == topo.n_stages - 1 and r["replica"] == 0][0]
    audit, audit_ctl = live_audit(ranks), live_audit(ranks, "audit_control", "audit_control_violations")
    measured = {
        "genuine": genuine, "controls": ctl, "losses": losses, "reference": ref, "clip": job.clip,
        "grad_norms": {k: v["grad_norms"] for k, v in variants.items()},
        "local_norms": last["variants"][base]["local_norms"],
        "digests": {(r["stage"], r["replica"]): {k: v["digest"] for k, v in r["variants"].items()} for r in ranks},
        "n_stages": topo.n_stages, "dp": topo.dp,
        "param_diffs": {k: param_diff(k) for k in genuine + ([lossy] if lossy in variants else [])},
        "staging": {k: staging([c for r in ranks for c in r["variants"][k]["counters"]]) for k in variants},
        "audit": audit, "audit_control": audit_ctl, "plan_violations": len(ranks[0]["audit_violations"]),
        "steps": job.steps, "wall_s": wall, "partition": topo.partition,
    }
    return {"metrics": correctness_metrics(measured),
            "losses": {k: losses[k] for k in genuine + ([lossy] if lossy else [])},
            "reference": ref["losses"], "audit": ranks[0]["audit"], "grad_norms": variants[base]["grad_norms"],
            "clip": job.clip, "topology": ranks[0]["topology"], "live_audit": audit, "live_audit_control": audit_ctl}


# ---- the stability run (claim 2) --------------------------------------------------------------------------

def unstable_steps(losses) -> int:
    """Steps whose loss is not finite or lies above the first step's loss (divergence)."""
    x = np.asarray(losses, dtype=float)
    return int((~np.isfinite(x)).sum() + (x[np.isfinite(x)] > x[0]).sum()) if len(x) else 0


def loss_fall(head: float, tail: float, floor) -> dict:
    """How far the loss fell: tail / head, and the fraction of the gap to the entropy-rate floor left."""
    return {"ratio": tail / head, "excess": (tail - floor) / (head - floor) if floor is not None else None}


def stability_metrics(losses, frozen: dict, wild, floor, tokens_per_step: int, wall_s: float) -> dict:
    """The stability claims' metrics: `losses` of the long run, `frozen` {step: loss of the initial model never
    updated} at its first `STABILITY_HEAD` and last `STABILITY_TAIL` steps, `wild` the diverging control's
    losses, `floor` the corpus's entropy rate, the run's tokens per step and wall seconds."""
    losses = np.asarray(losses)
    n = len(losses)
    head, tail = losses[:STABILITY_HEAD].mean(), losses[-STABILITY_TAIL:].mean()
    f_head = float(np.mean([frozen[s] for s in range(STABILITY_HEAD)]))
    f_tail = float(np.mean([frozen[s] for s in range(n - STABILITY_TAIL, n)]))
    real, null = loss_fall(head, tail, floor), loss_fall(f_head, f_tail, floor)
    return {
        "stability_steps": n, "stability_nonfinite": int((~np.isfinite(losses)).sum()),
        "stability_unstable_steps": unstable_steps(losses),
        "stability_unstable_steps_control": unstable_steps(wild), "stability_control_steps": len(wild),
        "stability_initial_loss": float(head), "stability_final_loss": float(tail),
        "stability_loss_ratio": float(real["ratio"]), "stability_loss_ratio_control": float(null["ratio"]),
        "corpus_entropy_rate": floor,
        "stability_excess_fraction": real["excess"], "stability_excess_fraction_control": null["excess"],
        "stability_tokens_per_s": n * tokens_per_step / wall_s,
    }


def stability(cfg, seed: int, workdir=None) -> dict:
    """Claim 2: a long run stays finite and its loss falls toward the corpus's entropy rate.
    Controls: the same measurements on the initial model never updated (on the same batches), and,
    for divergence, the single-process run without clipping at 100x the learning rate (its first
    `stability_control_steps` steps)."""
    started = stability_start(cfg, seed, workdir)
    return stability_finish(cfg, started, started["kernel"]())


def stability_start(cfg, seed: int, workdir=None, bg=None) -> dict:
    """The long run's launch started (in `bg`, else run to its end here); "kernel": its two nulls in one process."""
    if not cfg.stability_steps:  # not run at this profile
        return {"job": None, "kernel": lambda: None}
    job = job_for(cfg, links=[cfg.stability_link], steps=cfg.stability_steps, seed=seed)
    dp = cfg.processes // cfg.stages
    n = job.steps   # the run logs one loss per step

    def nulls():
        frozen = untrained_losses(job, dp, list(range(STABILITY_HEAD)) + list(range(n - STABILITY_TAIL, n)))
        wild = reference_run(replace(job, lr=job.lr * 100, clip=0.0), dp=dp, steps=cfg.stability_control_steps)["losses"]
        return frozen, wild

    return {"job": job, "dp": dp, "ranks": timed_launch(job, cfg.processes, workdir, run_deadline(job.steps), bg),
            "kernel": nulls}


def stability_finish(cfg, started: dict, nulls) -> dict:
    """`stability`'s result from its started launch and its nulls (`stability_start`'s "kernel")."""
    job = started["job"]
    if job is None:
        return {"metrics": {}, "losses": [], "floor": None}
    ranks, _ = started["ranks"].result()
    v = next(iter(ranks[-1]["variants"].values()))
    losses = np.array(v["losses"])
    if len(losses) != job.steps:
        raise RuntimeError(f"the stability run logged {len(losses)} losses for {job.steps} steps")
    frozen, wild = nulls
    floor = ranks[-1]["corpus"]["entropy_rate"]
    tokens = job.n_micro * job.micro_size * CONFIGS[cfg.model].seq_len * started["dp"]
    metrics = stability_metrics(losses, frozen, wild, floor, tokens, v["wall_s"])
    return {"metrics": metrics, "losses": losses.tolist(), "floor": floor, "diverging": wild}
