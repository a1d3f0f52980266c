"""Notebook 04: continuous exploration of phase space by long chains of the main model, against three nulls.

Paper: Yu, Huang & Huang, arXiv:2506.23546, the phase-space exploration figure (one chain of the P = 288
model, Langevin steps 120k-150k, on the top three principal components of the training images; the
chain hops between digit classes). Windows, the data-like gate and visits are in `visits`; the names the
claims judge are made here (`chain_metrics`, `ungated_metrics`).
"""
from __future__ import annotations

import math

import numpy as np
import torch

from common.runner.kernel import runs_later

from .. import encoding, metrics
from ..mainmodel import main_model
from ..model import phi
from ..sampler import flow, langevin
from ..train import compute_device
from ..visits import EXPLORE_MODELS, count_transitions, visits, window_classes, window_images
from .. import ahead
from ..workers import spread


def chain_metrics(name: str, classes, dwell: int) -> dict:
    """One model's gated counts over its chains (`classes`: each chain's window classes, −1 off the data):
    classes visited per chain and their median (exploration-classes), transitions per chain, their mean
    and SE over chains (exploration-transitions), the mean data-like fraction, and the mean transitions
    when every data-like window counts (dwell 1)."""
    n_chains = len(classes)
    per = [visits(c, dwell) for c in classes]
    cl, tr = [v["classes"] for v in per], [v["transitions"] for v in per]
    return {f"explore_{name}_classes": cl, f"explore_{name}_classes_median": float(np.median(cl)),
            f"explore_{name}_transitions": tr, f"explore_{name}_transitions_mean": float(np.mean(tr)),
            f"explore_{name}_transitions_se": float(np.std(tr, ddof=1) / math.sqrt(n_chains)) if n_chains > 1 else float("nan"),
            f"explore_{name}_data_like": float(np.nanmean([v["data_like"] for v in per])),
            f"explore_{name}_transitions_dwell1_mean": float(np.mean([visits(c, 1)["transitions"] for c in classes]))}


def ungated_metrics(name: str, labels) -> dict:
    """The old measure, for comparison: classes and transitions of chain 0's nearest-centroid label of every
    single frame from step 0 (visits >= 3 frames, no data-like gate: it counts noise as class changes)."""
    n0, runs0 = count_transitions(list(labels))
    return {f"explore_{name}_classes_ungated": int(len({r[0] for r in runs0})), f"explore_{name}_transitions_ungated": int(n0)}


def explore(cfg, streams, model: dict, device=None) -> dict:
    """Long chains of the main model (from its persistent chains) and of four nulls.

    The claims' null: `restart`, the trained J, b at T = 1 from the SAME persistent states, put back to those
    states at the start of every window: the same couplings, temperature, starting states, windows, gate and
    dwell, without the long-time wandering the paper credits (each window is a fresh 500-step excursion from
    the start); what it counts is a label flickering at a class boundary, the simplest other source of
    transitions. Logged: `quench`, the same J, b at T = 0 (the noiseless flow) from the same states (the null
    before: its chains mostly settle on fixed points off the data, so it failed at the data-like gate);
    `untrained` (its J, b at update 0) and `j0` (J = 0, b = 0), from N(0, I).
    After a burn-in of `explore_burn` steps, each chain's images are averaged over windows of
    `avg_steps` Langevin steps (as the memorization measure does); `class_visits` counts the digit
    classes visited (a visit lasts at least `explore_dwell` data-like windows) and the transitions
    between them per chain. The old measure (nearest-centroid label of every single frame, from step 0,
    visits >= 3 frames) is logged as `explore_*_ungated` for comparison: it counts noise as class changes.
    """
    tasks = explore_tasks(cfg, streams, model, device)
    return explore_result(cfg, model, tasks, [chain_states(**t) for t in tasks])


PARTS = ("hot", "quench", "restart")   # the runs of one explored model that share nothing: each its own task
PARALLEL_MIN_STEPS = 20_000            # chains at least this long run in worker processes (`measure`)


def explore_tasks(cfg, streams, model: dict, device=None) -> list[dict]:
    """The three independent runs of `explore` for one model, as `chain_states` arguments: `hot`, the trained model,
    the untrained network and J = 0 stacked (the stream "explore chains" of `streams`, the model's, after the draws
    of the starting states); `quench`, the trained J, b at T = 0 from the trained chains' starting states; `restart`,
    the same J, b at T = 1 put back to them at every window (its own stream, "explore restart")."""
    data, st, snaps = model["data"], model["state"], model["snaps"]
    J1, b1 = st["J"][0], st["b"][0]
    J0, b0 = snaps[0][0][0], snaps[0][1][0]
    J = torch.stack([J1, J0, torch.zeros_like(J0)]); b = torch.stack([b1, b0, torch.zeros_like(b0)])
    n_chains = int(cfg.explore_chains)
    g = streams.torch_generator("explore chains")
    x = torch.randn((3, n_chains, data.n), generator=g, dtype=J.dtype)
    # the trained model's chains start from its persistent training chains (its own long-run samples;
    # chains from noise need far longer than the run to reach them, see notebook 03); so do the quench
    # and restart nulls (the same states); the other nulls from noise
    pcd = st["chains"][0]
    x[0] = pcd[torch.randperm(len(pcd), generator=g)[:n_chains]].to(J.dtype) if len(pcd) >= n_chains else x[0]
    gr = streams.torch_generator("explore restart")                  # the restart null's own noise
    every = int(cfg.explore_every)
    common = dict(n=int(cfg.explore_steps) // every, every=every, dt=float(cfg.dt), T=float(cfg.T),
                  burn=int(cfg.explore_burn) // every, per_window=max(1, int(cfg.avg_steps) // every),
                  device=str(compute_device(device)))
    return [dict(part="hot", J=J, b=b, x0=x, generator_state=g.get_state(), **common),
            dict(part="quench", J=J1, b=b1, x0=x[0].clone(), generator_state=None, **common),
            dict(part="restart", J=J1, b=b1, x0=x[0].clone(), generator_state=gr.get_state(), **common)]


def chain_states(part: str, J, b, x0, n: int, every: int, dt: float, T: float, burn: int, per_window: int, device: str,
                 generator_state=None) -> torch.Tensor:
    """One run of `explore_tasks` (`part`): the states after each of `n` stretches of `every` steps, (n, ..., N) on
    the CPU. `hot`: Langevin at T; `quench`: the noiseless flow; `restart`: Langevin at T, put back to x0 at the
    start of every window (`per_window` stretches) after the first `burn` stretches."""
    g = None
    if generator_state is not None:
        g = torch.Generator(); g.set_state(generator_state)
    x, J, b = x0.to(device), J.to(device), b.to(device)
    x_start = x.clone()
    out = torch.empty((n, *x.shape), dtype=x.dtype)
    for i in range(n):
        if part == "restart" and i >= burn and (i - burn) % per_window == 0:
            x = x_start.clone()                                       # every window starts afresh from the same states
        if part == "quench":
            x, _ = flow(x, J, b, every, dt)
        else:
            x, _ = langevin(x, J, b, every, dt, T, g, check_every=0,
                            where="exploration" if part == "hot" else "exploration restart null")
        out[i] = x.cpu()
    return out


def explore_result(cfg, model: dict, tasks: list[dict], states: list) -> dict:
    """`explore`'s measurements from the states of its three runs (`chain_states` of `tasks`, in order)."""
    data = model["data"]
    n_chains = int(cfg.explore_chains)
    burn, per_window, every = tasks[0]["burn"], tasks[0]["per_window"], tasks[0]["every"]
    hot, xq, xr = states
    frames = [phi(torch.stack([hot[i, 0], xq[i], hot[i, 1], hot[i, 2], xr[i]])).numpy().copy() for i in range(len(hot))]
    frames = np.asarray(frames)                                       # (frames, model, chain, N)
    train_img, labels = data.images("train")[: model["p"]], data.y_train[: model["p"]]
    radius = float(np.quantile(metrics.nearest_distance(data.images("test"), train_img), 0.95))
    win = window_images(frames[burn:], per_window)                    # (windows, model, chain, N)
    dwell = int(cfg.explore_dwell)
    m = {"explore_radius": radius, "explore_frames": int(len(frames)), "explore_windows": int(len(win)),
         "explore_chains": n_chains, "explore_dwell": dwell, "explore_p": int(model["p"])}
    classes = {}
    for k, name in enumerate(EXPLORE_MODELS):
        cls = classes[name] = [window_classes(win[:, k, c], train_img, labels, radius) for c in range(n_chains)]
        m.update(chain_metrics(name, cls, dwell))
        lab0 = metrics.nearest_centroid_labels(frames[:, k, 0], train_img, labels)
        m.update(ungated_metrics(name, lab0.tolist()))
    chain = frames[:, 0, 0]
    mu = train_img.mean(0)
    _, _, vt = np.linalg.svd(train_img - mu, full_matrices=False)
    return {"frames": chain, "labels": metrics.nearest_centroid_labels(chain, train_img, labels),
            "pc_frames": (chain - mu) @ vt[:3].T, "pc_train": (train_img - mu) @ vt[:3].T,
            "train_labels": labels, "shape": data.shape, "every": every, "burn_steps": int(cfg.explore_burn),
            "window_steps": per_window * every, "window_classes": {name: c[0] for name, c in classes.items()},   # chain 0 (the figure)
            "window_classes_all": classes, "metrics": m}


NOTEBOOK = "04-exploration"   # the notebook whose `measure` this module's work feeds (`train_ahead`)


def ahead_key(cfg, run) -> str:
    """The key of `train_ahead`'s work in `ahead`: the run folder, seed and configuration, so that a notebook 04 of
    another run or configuration in the same kernel takes none of it."""
    return f"explored models|{run.dir}|{run.streams.seed}|{sorted(vars(cfg).items())!r}"


def notebook01_models(cfg) -> int:
    """How many explored models notebook 01 trains itself: model 0 is its main model where `explore_p` and
    `explore_updates` are 0 (1), else none (0)."""
    return 1 if not int(cfg.explore_p) and not int(cfg.explore_updates) else 0


def chain_parts(cfg, run, device: str, first: int = 0) -> list[dict]:
    """`chain_part`'s tasks: every run (`PARTS`) of every explored model from `first` on, model by model."""
    return [dict(cfg=cfg, streams=run.streams, r=r, part=k, run_dir=run.dir, device=device)
            for r in range(first, int(cfg.explore_models)) for k in range(len(PARTS))]


def chain_part(cfg, streams, r: int, part: int, run_dir, device) -> torch.Tensor:
    """One run of explored model r (`PARTS[part]`): `chain_states` of its `explore_tasks` entry, the model trained
    (`trained_model`: its checkpoint written to `run_dir`) or read from there."""
    model = trained_model(cfg, streams, r, run_dir, device)
    return chain_states(**explore_tasks(cfg, model_streams(streams, r), model, device)[part])


def train_ahead(cfg, run) -> bool:
    """Start `measure`'s runs of the explored models (`chain_parts`, model 0 left to notebook 01 where it is its
    main model) in a low-priority worker (`ahead.start`) beside the notebook that calls it, where `measure` runs
    them in workers (on the CPU, long chains): the worker takes what the notebooks before 04 leave of a core, and
    `measure` the results (`explored_in_workers`), the same numbers as run there. Only where the runner runs
    notebook 04 later in this kernel (`runs_later`): a notebook run on its own (JupyterLab, or the runner given
    other notebooks) starts nothing for 04. Whether anything was started."""
    device = str(compute_device(run.device))
    if device != "cpu" or int(cfg.explore_steps) < PARALLEL_MIN_STEPS or not runs_later(NOTEBOOK):
        return False
    return ahead.start(ahead_key(cfg, run), chain_part, chain_parts(cfg, run, device, notebook01_models(cfg)))


PART_ORDER = {"hot": 0, "restart": 1, "quench": 2}   # the runs in the workers, the longest first: three chains
# stacked, then one with noise, then the noiseless flow


def explored_in_workers(cfg, run, device: str) -> list[dict]:
    """`explored_model` of every explored model, its runs (`chain_part`) in worker processes: those an earlier
    notebook started ahead (`train_ahead`) taken from there, the rest spread over the cores (the longest first);
    the models read from their checkpoints here."""
    early = chain_parts(cfg, run, device, notebook01_models(cfg))
    taken = {(early[i]["r"], early[i]["part"]) for i in ahead.stop(ahead_key(cfg, run))}
    rest = sorted([t for t in chain_parts(cfg, run, device) if (t["r"], t["part"]) not in taken],
                  key=lambda t: PART_ORDER[PARTS[t["part"]]])
    states = dict(zip([(t["r"], t["part"]) for t in rest], spread(chain_part, rest, desc="explored models")))
    states.update({(early[i]["r"], early[i]["part"]): st for i, st in ahead.collect(ahead_key(cfg, run)).items()})
    out = []
    for r in range(int(cfg.explore_models)):
        model = trained_model(cfg, run.streams, r, run.dir, device)
        out.append({"model": {k: v for k, v in model.items() if k != "data"},
                    "tasks": explore_tasks(cfg, model_streams(run.streams, r), model, device),
                    "states": [states[(r, k)] for k in range(len(PARTS))]})
    return out


def model_streams(streams, r: int):
    """The streams of the explored model r (0: the run's own, the main model of notebook 01; else the child
    ("explore model", r): its own training list, initial network, training and chains)."""
    return streams if r == 0 else streams.child("explore model", r)


def pooled_metrics(per_model: list[dict]) -> dict:
    """The claims' numbers over `explore_models` trained models (issue #41: one model's chains gave an SE that the
    spread between trained models exceeded): per chain lists and the classes' median over every chain of every
    model; the transitions' mean over models with the SE between the models' means (sd / sqrt(K)); each model's
    mean and SE over its own chains (`_models`, `_chain_se_models`); the data-like fractions' mean. Model 0's own
    numbers stay under `explore_model0_*`."""
    out = dict(per_model[0])
    for key in [k for k in per_model[0] if k.startswith("explore_")]:
        out[key.replace("explore_", "explore_model0_", 1)] = per_model[0][key]
    K = len(per_model)
    for name in EXPLORE_MODELS:
        cl = [c for m in per_model for c in m[f"explore_{name}_classes"]]
        tr = [t for m in per_model for t in m[f"explore_{name}_transitions"]]
        means = [m[f"explore_{name}_transitions_mean"] for m in per_model]
        out.update({f"explore_{name}_classes": cl, f"explore_{name}_classes_median": float(np.median(cl)),
                    f"explore_{name}_transitions": tr, f"explore_{name}_transitions_mean": float(np.mean(means)),
                    f"explore_{name}_transitions_se": float(np.std(means, ddof=1) / math.sqrt(K)) if K > 1 else float("nan"),
                    f"explore_{name}_transitions_models": means,
                    f"explore_{name}_transitions_chain_se_models": [m[f"explore_{name}_transitions_se"] for m in per_model],
                    f"explore_{name}_data_like": float(np.mean([m[f"explore_{name}_data_like"] for m in per_model])),
                    f"explore_{name}_transitions_dwell1_mean": float(np.mean([m[f"explore_{name}_transitions_dwell1_mean"] for m in per_model]))})
    out["explore_models"] = K
    return out


def trained_model(cfg, streams, r: int, run_dir, device) -> dict:
    """Replicate r of `measure`'s explored models (`main_model` from `model_streams(streams, r)`), trained on one
    torch thread or read from `run_dir`'s checkpoints, where a training writes it."""
    p, updates = int(cfg.explore_p) or None, int(cfg.explore_updates) or None
    torch.set_num_threads(1)   # small batched GEMMs: one thread is as fast and robust to a shared machine
    return main_model(cfg, model_streams(streams, r), run_dir, p=p, updates=updates, device=device)


def explored_model(cfg, streams, r: int, run_dir, device) -> dict:
    """Replicate r of `measure`'s explored models, trained (or read from `run_dir`'s checkpoints) and run:
    {"model" (without its data), "tasks", "states"} of `explore_tasks` and `chain_states`."""
    model = trained_model(cfg, streams, r, run_dir, device)
    streams = model_streams(streams, r)
    tasks = explore_tasks(cfg, streams, model, device)
    return {"model": {k: v for k, v in model.items() if k != "data"}, "tasks": tasks, "states": [chain_states(**t) for t in tasks]}


def measure(cfg, run) -> dict:
    """The explored models and their long chains against the nulls (`explore`, once per model): `explore_models`
    trained models, the first the main model of notebook 01 (its checkpoint in `run.dir` reused when present)
    unless `explore_p` > 0 names another training-set size, trained `explore_updates` updates (full: the P = 288
    model of the sweep's length, as the paper's figure); the others the same training from their own streams
    (`model_streams`: their own initial network and shuffle of the training list). The figure shows model 0.
    The models share nothing (each its own training and generators): on the CPU, long chains (>=
    PARALLEL_MIN_STEPS) run in worker processes, each run of each model a task (`explored_in_workers`, some of them
    started ahead by notebook 01: `train_ahead`), with the same numbers as here."""
    torch.set_num_threads(1)
    device = str(compute_device(run.device))
    tasks = [dict(cfg=cfg, streams=run.streams, r=r, run_dir=run.dir, device=device) for r in range(int(cfg.explore_models))]
    parallel = device == "cpu" and int(cfg.explore_steps) >= PARALLEL_MIN_STEPS
    out = explored_in_workers(cfg, run, device) if parallel else [explored_model(**t) for t in tasks]
    runs = [explore_result(cfg, {**o["model"], "data": encoding.load(cfg.dataset, cfg.n_test,
                                                                     model_streams(run.streams, r).rng("training list", cfg.dataset))},
                           o["tasks"], o["states"]) for r, o in enumerate(out)]   # main_model's data, loaded here
    res = runs[0]
    res["metrics"] = pooled_metrics([r["metrics"] for r in runs])
    return res
