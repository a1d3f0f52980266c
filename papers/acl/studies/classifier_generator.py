"""Notebook 03: a standard classifier turned into a generator by ACL on its penultimate features
(ACL-classifier: the classifier frozen, a decoder inverting its features, G_c / D_c on the features),
against the inversion decoder fed N(0, I), a fitted Gaussian, a GMM and the MMD-trained G_c.

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539 (claims `cls-*`, source "abstract": ACL turns standard classifiers into
generators).
"""
from __future__ import annotations

import pandas as pd

from ..analysis import c2st_metrics, floor_metrics, image_table, per_rep, summary_table
from ..evaluation import reference
from ..image_replicates import image_study, results_record
from ..images import on_device

RESULTS = "cls_results.json"


def fid_metrics(table: pd.DataFrame) -> dict:
    """`fid_cls_<sampler>` per replicate (ACL, N(0, I), fitted Gaussian, GMM, the control `mmd_gc`) and
    `fid_cls_normal_half` (the bound of claim `cls-fid-half-normal`)."""
    m = {f"fid_cls_{k}": per_rep(table, "cls", k, "fid") for k in ("acl", "normal", "gauss", "gmm")}
    m["fid_cls_normal_half"] = [0.5 * v for v in m["fid_cls_normal"]]
    m["fid_cls_mmd_gc"] = per_rep(table, "cls", "mmd_gc", "fid")  # control: G_c trained without the adversary
    return m


def class_metrics(table: pd.DataFrame, results: list[dict]) -> dict:
    """The class histogram read by the evaluation network (`cls_<sampler>_class_tv` of ACL, the null, the fitted
    Gaussian and the GMM; ACL's smallest class share), the classifier's own test accuracy per replicate (`cls_test_acc`)."""
    return {**{f"cls_{k}_class_tv": per_rep(table, "cls", k, "class_tv") for k in ("acl", "mmd_gc", "gauss", "gmm")},
            "cls_acl_class_min_frac": per_rep(table, "cls", "acl", "class_min_frac"),
            "cls_test_acc": [r["cls_acc"] for r in results]}


def sample_metrics(table: pd.DataFrame) -> dict:
    """KID, density and coverage of ACL, the GMM, the fitted Gaussian and the null (`<kid|density|coverage>_cls_<sampler>`),
    ACL's memorization in features."""
    m = {f"{k}_cls_{s}": per_rep(table, "cls", s, k) for k in ("kid", "density", "coverage") for s in ("acl", "gmm", "gauss", "mmd_gc")}
    m["cls_acl_memorization_feat"] = per_rep(table, "cls", "acl", "memorization_feat")
    return m


def claim_metrics(table: pd.DataFrame, results: list[dict]) -> dict:
    """The claim metrics of notebook 03 (`cls-*`)."""
    return fid_metrics(table) | class_metrics(table, results) | sample_metrics(table) | c2st_metrics(results, "cls")


NOT_RUN = ("the ACL-classifier runs at smoke and full only (`cls_study`): quick judges none of its claims "
           "(cls-adv-fid, cls-fid-below-gmm are full's: ACL and its null or the GMM are level at quick's size), so its "
           "two tasks went to two more autoencoder replicates")


def measure(cfg, run) -> dict:
    """Score every ACL-classifier replicate (trained, or loaded from the cache notebook 02 filled).

    Returns {"metrics", "inputs", "results", "table", "summary", "floor", "classes" (the class names),
    "record" (what notebook 03 saves as `RESULTS`)}."""
    if not getattr(cfg, "cls_study", True):
        return {"metrics": {"cls_study": False}, "results": [], "why": NOT_RUN}
    cfg = on_device(cfg, run)
    images, ev, featinfo, prov, floor = reference(cfg, run.dir, run.seed)
    results = image_study(cfg, run, ["cls"])
    table = image_table(results)
    metrics = floor_metrics(prov, featinfo, floor) | claim_metrics(table, results)
    record = results_record(prov, results)
    run.log_inputs(images.provenance)
    run.save_json(RESULTS, record)
    return {"metrics": metrics, "inputs": images.provenance, "results": results, "table": table,
            "summary": summary_table(table, floor), "floor": floor, "classes": images.classes, "record": record}
