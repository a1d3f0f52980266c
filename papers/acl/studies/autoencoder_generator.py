"""Notebook 02: an autoencoder turned into a generator by ACL (ACL-AE), against the same decoder fed
N(0, I), a Gaussian fitted to the codes, RAE's 10-component GMM, and the control: a G_c of ACL's size
trained by MMD instead of the adversary (`mmd_gc`).

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539 (claims `ae-*`, source "abstract": ACL turns autoencoders into
generators).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pandas as pd

from ..analysis import c2st_metrics, floor_metrics, image_table, per_rep, summary_table
from ..evaluation import reference
from ..image_replicates import image_study, results_record, trains_here
from ..images import on_device

RESULTS = "ae_results.json"   # the replicates without their grids; notebook 05 reads it (prior_regions.upstream)
FLOOR_KEYS = ("fid", "kid", "density", "coverage", "memorization", "memorization_feat", "class_min_frac", "class_tv")


def fid_metrics(table: pd.DataFrame) -> dict:
    """`fid_ae_<sampler>` per replicate for ACL, N(0, I), the fitted Gaussian, the GMM and the control, and
    `fid_ae_normal_half` (half of N(0, I)'s, the bound of claim `ae-fid-half-normal`)."""
    m = {f"fid_ae_{k}": per_rep(table, "ae", k, "fid") for k in ("acl", "normal", "gauss", "gmm")}
    m["fid_ae_normal_half"] = [0.5 * v for v in m["fid_ae_normal"]]
    m["fid_ae_mmd_gc"] = per_rep(table, "ae", "mmd_gc", "fid")  # control: G_c trained without the adversary
    return m


def sample_metrics(table: pd.DataFrame) -> dict:
    """`<kid|precision|recall|density|coverage>_ae_<sampler>` for ACL, the fair baselines and the control
    (paired by replicate), the smallest class share per replicate of ACL, the null, the Gaussian and the GMM
    (`ae_*_class_min_fracs`) and ACL's
    worst (`ae_acl_class_min_frac`), and ACL's memorization ratios (pixels, features)."""
    m = {f"{col}_ae_{k}": per_rep(table, "ae", k, col) for k in ("acl", "gauss", "gmm", "mmd_gc")
         for col in ("kid", "precision", "recall", "density", "coverage")}
    m["ae_acl_class_min_fracs"] = per_rep(table, "ae", "acl", "class_min_frac")
    m["ae_acl_class_min_frac"] = min(m["ae_acl_class_min_fracs"])
    for k in ("mmd_gc", "gauss", "gmm"):   # the null without the adversary, the fitted Gaussian, the GMM
        m[f"ae_{k}_class_min_fracs"] = per_rep(table, "ae", k, "class_min_frac")
    m["ae_acl_memorization"] = per_rep(table, "ae", "acl", "memorization")
    m["ae_acl_memorization_feat"] = per_rep(table, "ae", "acl", "memorization_feat")  # in feature space
    return m


def wins(fids: dict) -> dict:
    """Replicates where ACL's FID is at most half N(0, I)'s (`ae_acl_wins_half_normal`) and below the fitted
    Gaussian's (`ae_acl_wins_gauss`), from `fid_metrics`."""
    return {"ae_acl_wins_half_normal": sum(a <= b for a, b in zip(fids["fid_ae_acl"], fids["fid_ae_normal_half"])),
            "ae_acl_wins_gauss": sum(a < b for a, b in zip(fids["fid_ae_acl"], fids["fid_ae_gauss"]))}


def claim_metrics(table: pd.DataFrame, results: list[dict]) -> dict:
    """The claim metrics of notebook 02 (`ae-*`): FIDs, KID / PRDC, the held-out code two-sample test
    (`c2st_ae_*`), class coverage, memorization and the win counts."""
    fids = fid_metrics(table)
    return fids | sample_metrics(table) | c2st_metrics(results, "ae") | wins(fids)


def measure(cfg, run) -> dict:
    """Score every ACL-AE replicate (trained, or loaded from the run folder's checkpoints; the classifier
    replicates of notebook 03 are trained in the same worker pool and cached there); the data files read go to
    the manifest, the replicates (without grids) to `RESULTS` in the run's folder (notebook 05 reads it). The
    reference (`evaluation.reference`: the evaluation network, one thread) is built while the workers train.

    Returns {"metrics" (the floor, the provenance and the claim metrics), "inputs" (the data files read),
    "results" (per replicate, with sample grids), "table" (one row per replicate x sampler), "summary",
    "floor", "record" (what is saved as `RESULTS`)}."""
    cfg = on_device(cfg, run)
    also = ("cls",) if getattr(cfg, "cls_study", True) else ()   # cls replicates: notebook 03 (not at quick)
    if not trains_here(cfg, run, ["ae"], also):   # the workers train (or nothing does) while this process builds
        with ThreadPoolExecutor(1) as beside:       # the reference on its one thread (they wait for it to score)
            study = beside.submit(image_study, cfg, run, ["ae"], also=also)
            images, ev, featinfo, prov, floor = reference(cfg, run.dir, run.seed)
            results = study.result()
    else:   # a replicate trains here: one after the other (the reference's one-thread section would end in its midst)
        images, ev, featinfo, prov, floor = reference(cfg, run.dir, run.seed)
        results = image_study(cfg, run, ["ae"], also=also)
    table = image_table(results)
    metrics = floor_metrics(prov, featinfo, floor, FLOOR_KEYS, half_density=True) | claim_metrics(table, results)
    record = results_record(prov, results)
    run.log_inputs(images.provenance)
    run.save_json(RESULTS, record)
    return {"metrics": metrics, "inputs": images.provenance, "results": results, "table": table,
            "summary": summary_table(table, floor), "floor": floor, "record": record}
