"""Notebook 01: the main model's training, and samples generated from noise over its training age.

Paper: Yu, Huang & Huang, arXiv:2506.23546, the samples-over-training-age figure and the E_AAI / E_2
against t_age curves (released script `3 types/PCD_10`: checkpoints at log-spaced t_age, chains from
𝒩(0, 1)); a second run on Fashion-MNIST pooled to 14x14 (the authors used Fashion-MNIST in AE-PCD).
"""
from __future__ import annotations

import torch

from .. import metrics
from ..generation import from_noise
from ..mainmodel import main_model
from ..model import phi
from ..train import compute_device
from ..workers import spread
from . import exploration


def age_metrics(prefix: str, steps, rows, pcd: dict, chain_abs_x: float) -> dict:
    """The logged metrics of samples over age: per age (`rows`, `metrics.quality` of each training age's samples,
    in the order of `steps`) its E_AAI and E_2 against held-out images; the last age's E_AAI, memorized
    fraction and median distance ratio d_gen / d_test; the persistent chains' E_AAI (`pcd`, their quality)
    and their mean |x|."""
    last = rows[-1]
    return {f"{prefix}_updates": steps, f"{prefix}_e_aai_test": [r["e_aai_test"] for r in rows],
            f"{prefix}_e2_test": [r["e2_test"] for r in rows],
            f"{prefix}_final_e_aai_test": last["e_aai_test"], f"{prefix}_final_memorized": last["memorized"],
            f"{prefix}_final_dgen_over_dtest": metrics.distance_ratio(last["d_gen_median"], last["d_test_median"]),
            f"{prefix}_pcd_e_aai_test": pcd["e_aai_test"], f"{prefix}_chain_abs_x": chain_abs_x}


def samples_over_age(cfg, streams, model: dict, prefix: str = "age", device=None) -> dict:
    """Generate from each age's (J, b) (stacked; the stream ("generate", prefix) of `streams`) and measure sample
    quality against train/test."""
    data, snaps, p = model["data"], model["snaps"], model["p"]
    steps = sorted(snaps)
    J = torch.stack([snaps[s][0][0] for s in steps]).to(compute_device(device))
    b = torch.stack([snaps[s][1][0] for s in steps]).to(compute_device(device))
    x, _ = from_noise(J, b, cfg.n_gen, cfg.gen_steps, cfg, streams, prefix)
    train_img, test_img = data.images("train")[:p], data.images("test")
    rows = [metrics.quality(phi(x[i]).cpu().numpy(), train_img, test_img) for i in range(len(steps))]
    pcd = metrics.quality(phi(model["state"]["chains"][0]).cpu().numpy(), train_img, test_img)
    m = age_metrics(prefix, steps, rows, pcd, float(model["state"]["chains"].abs().mean()))
    return {"steps": steps, "images": phi(x).cpu().numpy(), "rows": rows, "shape": data.shape, "train": train_img, "metrics": m}


PARALLEL_MIN_STEPS = 1000   # generation at least this long: the two datasets' runs go to worker processes


def age_run(cfg, streams, run_dir, device, second: bool) -> dict:
    """One dataset's run of `measure`: its main model (cached in `run_dir`) and samples over age; `second`: the
    second dataset's ({"age", "inputs": its data files})."""
    torch.set_num_threads(1)   # small batched GEMMs: one thread is as fast and robust to a shared machine
    if not second:
        return {"age": samples_over_age(cfg, streams, main_model(cfg, streams, run_dir, device=device), device=device), "inputs": []}
    fm = main_model(cfg, streams, run_dir, dataset=cfg.second_dataset, p=cfg.second_p, updates=cfg.second_updates, device=device)
    return {"age": samples_over_age(cfg, streams, fm, prefix="fashion", device=device), "inputs": fm["data"].provenance}


def measure(cfg, run) -> dict:
    """The main model (cached in `run.dir`'s checkpoints for notebooks 04 and 06) and its samples over age
    (`"age"`); with `cfg.second_updates`, the same on `cfg.second_dataset` (`"fashion"`, its data files in
    `"inputs"`). `"metrics"`: both runs' metrics. The two runs share nothing (each its own generators): on the CPU,
    long ones run in two worker processes (the same numbers). First it starts the trainings of notebook 04's
    explored models in a third worker (`exploration.train_ahead`: their checkpoints in `run.dir`), which runs on
    through notebooks 02 and 03 on the core they leave idle (02 trains its stack on one thread)."""
    exploration.train_ahead(cfg, run)
    device = str(compute_device(run.device))
    tasks = [dict(cfg=cfg, streams=run.streams, run_dir=run.dir, device=device, second=s)
             for s in ([False, True] if cfg.second_updates else [False])]
    parallel = len(tasks) > 1 and device == "cpu" and int(cfg.gen_steps) >= PARALLEL_MIN_STEPS
    runs = spread(age_run, tasks, desc="main models, samples over age") if parallel else [age_run(**t) for t in tasks]
    age = runs[0]["age"]
    out = {"age": age, "fashion": None, "inputs": [], "metrics": dict(age["metrics"])}
    if len(runs) > 1:
        out["inputs"] = runs[1]["inputs"]
        out["fashion"] = runs[1]["age"]
        out["metrics"].update(out["fashion"]["metrics"])
    return out
