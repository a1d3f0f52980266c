"""Notebook 05: denoising, by the NLM trained with its own rule (the claim) and by the released
positive-phase fit (the baseline).

Paper: Yu, Huang & Huang, arXiv:2506.23546, the denoising figure (released demo `10 types/hopfield`: J, b
fitted by minimising E at 10 patterns, one per digit; 25 % of the pixels replaced by 𝒰[−1, 1] in state
space; the noiseless flow −∇E, 450 steps, frames at 0/150/300/450, the energy falling). The fit, the
corruption, the flows and the nulls are in `denoise`; the names the claim judges are made here
(`restoration_metrics`, `nlm_flow_metrics`).
"""
from __future__ import annotations

import numpy as np
import torch

from .. import denoise as dn
from .. import encoding
from ..model import phi
from ..train import Trainer, train_config

GOOD = 0.3   # a pattern counts as restored when its pixel-error ratio to the corrupted input is <= this


def patterns(rng) -> np.ndarray:
    """One pattern per digit class 0-9 of sklearn's digits (drawn with `rng`, a numpy Generator), encoded as model
    states."""
    from common.data import load_dataset

    d = load_dataset("digits", "train")
    x = np.asarray(d.x).reshape(len(d.y), -1)
    pats = np.stack([x[rng.choice(np.where(d.y == c)[0])] for c in range(10)])
    return encoding.encode(pats)


def restoration_metrics(name: str, ratio) -> dict:
    """A network's Langevin restoration: `ratio` (replicas, patterns) pixel-error ratios to the corrupted
    input; their median, and the patterns restored (ratio <= 0.3) of 10, mean over the replicas."""
    return {f"denoise_{name}_ratio_median": float(np.median(ratio)),
            f"denoise_{name}_n_good": float((ratio <= GOOD).sum(1).mean())}


def nlm_flow_metrics(ratio, euler_stability: float) -> dict:
    """The trained model's noiseless flow (`ratio`, per pattern): its median ratio and the patterns it
    restores; beside them the trained J's dt(1 + ‖J‖₂)²."""
    return {"denoise_nlm_flow_ratio_median": float(np.median(ratio)), "denoise_nlm_flow_n_good": int((ratio <= GOOD).sum()),
            "denoise_nlm_euler_stability": euler_stability}


def by_nlm(cfg, streams, x) -> dict:
    """The same 10 patterns learned by the NLM rule itself (PCD-k, the profile's optimizer), then the
    same corrupted inputs restored by the model's own T = 1 Langevin dynamics (images averaged over
    `denoise_nlm_steps` steps, `denoise_reps` noise replicas each). Nulls: the untrained network the
    training started from, and J = 0, b = 0, run the same way. The trained model's noiseless flow is
    logged too (it lands on fixed points E = 0 off the data). Returns {"metrics", "images"}: images of the
    clean and corrupted patterns and of each network's restoration (its first noise replica, averaged). Streams
    (of `streams`, the run's): "nlm training", "corrupt" (the corruption `denoise.denoise` draws too), "restore", name."""
    X = torch.as_tensor(x, dtype=torch.float32)
    tcfg = train_config(cfg, freeze_at=cfg.sweep_freeze_at)
    tr = Trainer(X, [len(X)], tcfg, generator=streams.torch_generator("nlm training"))
    J0, b0 = tr.params()
    tr.train(int(cfg.denoise_nlm_updates), desc="train NLM on the 10 patterns")
    J, b = tr.params()
    x0 = dn.corrupt(x, cfg.denoise_fraction, streams.torch_generator("corrupt"))
    target = phi(X)
    steps, reps = int(cfg.denoise_nlm_steps), int(cfg.denoise_reps)
    m, images = {}, {"clean": target.numpy(), "corrupted": phi(x0).numpy()}
    for name, (Jm, bm) in (("nlm", (J[0], b[0])), ("nlm_untrained", (J0[0], b0[0])),
                           ("nlm_j0", (torch.zeros_like(J0[0]), torch.zeros_like(b0[0])))):
        res = dn.langevin_restore(x0, Jm, bm, target, steps, cfg.dt, cfg.T, reps, streams.torch_generator("restore", name))
        r, images[name] = res["ratio"], res["images"]
        m.update(restoration_metrics(name, r))
    rf = dn.flow_ratio(x0, J[0], b[0], target, int(round(cfg.denoise_steps * cfg.denoise_dt / cfg.dt)), cfg.dt)
    m.update(nlm_flow_metrics(rf, float(cfg.dt * (1.0 + torch.linalg.matrix_norm(J[0].double(), ord=2)) ** 2)))
    return {"metrics": m, "images": images}


def measure(cfg, run) -> dict:
    """One pattern per digit class 0-9 (sklearn digits), 25% corrupted: the least-squares memory's noiseless
    flow and its controls (`denoise.denoise`, `denoise.controls`), then the NLM trained on them (`by_nlm`). The
    patterns and every draw come from the run's streams (the runs on the CPU on any machine)."""
    torch.set_num_threads(1)
    x = patterns(run.rng("patterns"))
    out = dn.denoise(x, cfg.denoise_fraction, cfg.denoise_steps, cfg.denoise_dt, streams=run.streams)
    out["metrics"].update(dn.controls(x, cfg.denoise_fraction, cfg.denoise_steps, cfg.denoise_dt, streams=run.streams, gain=cfg.gain,
                                      fitted=(out["J"], out["b"])))
    nlm = by_nlm(cfg, run.streams, x)
    out["metrics"].update(nlm["metrics"])
    out["nlm_images"] = nlm["images"]
    out["shape"] = (8, 8)
    return out
