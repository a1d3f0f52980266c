"""Notebook 03: out-of-equilibrium generation, PCD-k against Rdm-k.

Paper: Yu, Huang & Huang, arXiv:2506.23546, the E_AAI vs generation time figure (PCD-10 and Rdm-500;
released scripts `3 types/PCD_10` and `3 types/Rdm_500`), after Decelle, Furtlehner & Seoane (NeurIPS
2021): a model trained on short chains from noise (Rdm-k) gives its best samples near generation time k
and degrades at long times; one trained on persistent chains (PCD-k) does not. The window statistics
are in `windows`; the curve summaries logged beside them are made here (`curve_metrics`, `reach_metrics`).
"""
from __future__ import annotations

import math

import numpy as np
import torch

from .. import encoding, metrics
from ..generation import from_noise
from ..model import init_couplings, phi
from ..train import Trainer, compute_device, train_config
from ..windows import ooe_snapshot_times, ooe_window_statistics
from ..workers import spread


def curve_metrics(times, k_rdm: int, R: int, curves: dict, u_rdm: int) -> dict:
    """The replicate-mean curves E_AAI(t), E_2(t) of both modes (`curves[mode][key]` over `times`), the PCD
    curve's end, Rdm's training length, and the old estimators kept for comparison only (no claim: a noisy
    curve's minimum is biased low): Rdm's best time, its distance from k in factors of 3, its excess at the end."""
    rd, pc = curves["rdm"]["e_aai"], curves["pcd"]["e_aai"]
    i_min = int(np.argmin(rd))
    t_min = times[i_min]
    return {"ooe_times": times, "ooe_rdm_k": k_rdm, "ooe_replicates": R, "ooe_pcd_e_aai": pc.tolist(), "ooe_rdm_e_aai": rd.tolist(),
            "ooe_pcd_e2": curves["pcd"]["e2"].tolist(), "ooe_rdm_e2": curves["rdm"]["e2"].tolist(),
            "pcd_final_e_aai": float(pc[-1]), "ooe_rdm_updates": int(u_rdm),
            "rdm_best_time": t_min, "rdm_best_log3_ratio": abs(math.log(t_min / k_rdm)) / math.log(3.0),
            "rdm_best_e_aai": float(rd[i_min]), "rdm_long_excess": float(rd[-1] - rd[i_min]),
            "pcd_long_excess": float(pc[-1] - pc.min())}


def reach_metrics(reach, curves: dict) -> dict:
    """Does generation from noise reach the PCD models' own persistent chains? `reach`: the replicate means of
    (the chains' E_AAI, their E_2 against held-out images, their E_AAI against the last generated samples);
    beside them the generated samples' E_AAI and E_2 at the end (`curves["pcd"]`)."""
    return {"ooe_pcd_chains_e_aai_test": float(reach[0]), "ooe_pcd_chains_e2_test": float(reach[1]),
            "ooe_pcd_gen_end_e_aai_test": float(curves["pcd"]["e_aai"][-1]), "ooe_pcd_gen_end_e2_test": float(curves["pcd"]["e2"][-1]),
            "ooe_pcd_chains_vs_gen_end_e_aai": float(reach[2])}


PARALLEL_MIN_STEPS = 2000   # generation at least this long: the three independent runs go to worker processes


def ooe_run(part: str, cfg, streams, x_train, R: int, init, times, device: str, updates: int, over: dict) -> dict:
    """One of `measure`'s independent runs: `pcd` or `rdm`, the R replicates trained `updates` updates from `init`
    with `train_config(cfg, **over)` ({"J", "b", "chains"}, on the CPU; the stream ("train", part) of `streams`);
    `untrained`, chains from noise of the initial networks themselves ({"snaps": {t: images}}, numpy)."""
    torch.set_num_threads(1)   # small batched GEMMs: one thread is as fast and robust to a shared machine
    if part == "untrained":
        _, snaps = from_noise(init[0].to(device), init[1].to(device), cfg.ooe_gen, cfg.ooe_gen_steps, cfg, streams, "ooe-untrained",
                              snap_at=times)
        return {"snaps": {t: v.cpu().numpy() for t, v in snaps.items()}}
    tr = Trainer(x_train, [cfg.ooe_p] * R, train_config(cfg, **over), generator=streams.torch_generator("train", part), init=init,
                 device=device)
    tr.train(updates, desc=f"train {part} x{R}")
    J, b = tr.params()
    return {"J": J.cpu(), "b": b.cpu(), "chains": tr.chains.cpu()}


def measure(cfg, run) -> dict:
    """PCD-k vs Rdm-k' (its own training length), `ooe_replicates` models of each from as many initial
    networks (replicate r of both modes starts from the same one); E_AAI, E_2 along generation time.

    Curves are replicate means; window differences as in `ooe_window_statistics`, each replicate against
    the untrained network it started from.
    """
    torch.set_num_threads(1)
    streams = run.streams
    data = encoding.load(cfg.dataset, cfg.ooe_n_test, streams.rng("training list", cfg.dataset))
    encoding.check_sizes(data, [cfg.ooe_p])
    R = int(cfg.ooe_replicates)
    init = init_couplings(data.n, cfg.gain, n_models=R, generator=streams.torch_generator("ooe initial networks"))
    k_rdm = int(cfg.ooe_rdm_k)
    u_rdm = int(cfg.ooe_rdm_updates) or max(1, cfg.ooe_updates * cfg.k // k_rdm)   # 0: the PCD run's Langevin budget
    times = ooe_snapshot_times(cfg.ooe_gen_steps, cfg.ooe_times, k_rdm, int(cfg.ooe_window_frames))
    dev = str(compute_device(run.device))
    # three runs that share nothing (each its own generator): Rdm-k's training, PCD-k's, and the null's generation
    # (the untrained networks the replicates started from, generated as the trained ones below, their own noise);
    # on the CPU, long ones spread over the cores (the same numbers in any process)
    common = dict(cfg=cfg, streams=streams, x_train=data.x_train, R=R, init=init, times=times, device=dev)
    tasks = [dict(part="rdm", updates=u_rdm, over={"mode": "rdm", "k": k_rdm}, **common),
             dict(part="pcd", updates=int(cfg.ooe_updates), over={}, **common),
             dict(part="untrained", updates=0, over={}, **common)]
    parallel = dev == "cpu" and int(cfg.ooe_gen_steps) >= PARALLEL_MIN_STEPS
    rdm, pcd, null = spread(ooe_run, tasks, desc="train, generate the null") if parallel else [ooe_run(**t) for t in tasks]
    models = {"pcd": (pcd["J"], pcd["b"]), "rdm": (rdm["J"], rdm["b"])}
    chains = {"pcd": pcd["chains"], "rdm": rdm["chains"]}
    J = torch.cat([models["pcd"][0], models["rdm"][0]]).to(dev); b = torch.cat([models["pcd"][1], models["rdm"][1]]).to(dev)
    _, snaps = from_noise(J, b, cfg.ooe_gen, cfg.ooe_gen_steps, cfg, streams, "ooe", snap_at=times)
    # the images, brought to the host once (the measurements below are numpy)
    snaps = {t: v.cpu().numpy() for t, v in snaps.items()}
    null_snaps = null["snaps"]
    pcd_chains = phi(chains["pcd"]).cpu().numpy()
    train_img, test_img = data.images("train")[: cfg.ooe_p], data.images("test")
    row = {"pcd": lambda r: r, "rdm": lambda r: R + r}           # rows of the generated stack
    curves = {}
    for name in ("pcd", "rdm"):
        q = [[metrics.quality(snaps[t][row[name](r)], train_img, test_img) for t in times] for r in range(R)]
        curves[name] = {key: np.mean([[x[f"{key}_test"] for x in qr] for qr in q], axis=0) for key in ("e_aai", "e2")}
    m = curve_metrics(times, k_rdm, R, curves, u_rdm)
    # does generation from noise reach the distribution of the PCD models' own persistent chains? (means over replicates)
    reach = []
    for r in range(R):
        pq = metrics.quality(pcd_chains[r], train_img, test_img)
        end = snaps[times[-1]][row["pcd"](r)]
        reach.append((pq["e_aai_test"], pq["e2_test"], metrics.adversarial_accuracy(pcd_chains[r], end[: len(pcd_chains[r])])["e_aai"]))
    reach = np.mean(reach, axis=0)
    m.update(reach_metrics(reach, curves))
    m.update(ooe_window_statistics(times, [{t: snaps[t][row["pcd"](r)] for t in times} for r in range(R)],
                                   [{t: snaps[t][row["rdm"](r)] for t in times} for r in range(R)], test_img, k_rdm,
                                   cfg.ooe_gen_steps, cfg.ooe_boot, streams.torch_generator("ooe bootstrap"),
                                   null_images=[{t: null_snaps[t][r] for t in times} for r in range(R)]))
    return {"times": times, "curves": curves, "images": {t: snaps[t][:, :8].copy() for t in times}, "shape": data.shape, "metrics": m}

