"""Notebook 04: the plain GAN against ACL-GAN on the same generator and discriminator (ACL-GAN feeds
G_c(z) to the generator, with an encoder, a code discriminator and a reconstruction term); the control
is the trained ACL-GAN generator fed a G_c refit by MMD instead of the adversary.

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539 (claims `gan-*`, source "abstract": ACL improves existing GANs).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..analysis import floor_metrics, image_table, per_rep, pooled_sd, summary_table
from ..evaluation import reference
from ..image_replicates import image_study, results_record
from ..images import on_device

RESULTS = "gan_results.json"   # the replicates without their grids; notebook 05 reads it (prior_regions.upstream)


def paired_metrics(table: pd.DataFrame) -> dict:
    """FID, coverage, recall and density of the GAN (`<metric>_gan`) and ACL-GAN (`<metric>_aclgan`) per
    replicate, and the control's FID, coverage and density (`<metric>_aclganmmd`: ACL-GAN trained without the
    adversary, where it ran, `gan_null`). The earlier control, the trained ACL-GAN generator fed a G_c refit by
    MMD, shared G, E and the joint phase with the metric: it is gone."""
    m = {"fid_gan": per_rep(table, "gan", "gan", "fid"), "fid_aclgan": per_rep(table, "aclgan", "aclgan", "fid")}
    for k in ("coverage", "recall", "density"):
        m[f"{k}_gan"], m[f"{k}_aclgan"] = per_rep(table, "gan", "gan", k), per_rep(table, "aclgan", "aclgan", k)
    if (table.study == "aclganmmd").any():
        for k in ("fid", "coverage", "density"):
            m[f"{k}_aclganmmd"] = per_rep(table, "aclganmmd", "aclganmmd", k)
    return m


def spread(fid_gan: list[float], fid_aclgan: list[float]) -> dict:
    """Logged, judged by no claim (a criterion is fixed before the run, never read from it): the sd of the
    GAN's FID and the pooled sd of the two."""
    return {"fid_gan_sd": float(np.std(fid_gan, ddof=1)), "fid_gan_pooled_sd": pooled_sd(fid_gan, fid_aclgan)}


def claim_metrics(table: pd.DataFrame) -> dict:
    """The claim metrics of notebook 04 (`gan-*`)."""
    m = paired_metrics(table)
    return m | spread(m["fid_gan"], m["fid_aclgan"])


NOT_RUN = ("the image GAN study runs at smoke and full only (`gan_study`): at quick's 400 steps no GAN trains "
           "(plain-GAN FIDs 154-351 at seeds 0-2 before it was dropped), and its claims (gan-improves, "
           "prior-regions-acl-gan) are judged at full")


def studies(cfg) -> list[str]:
    """The image studies of notebook 04: the GAN, ACL-GAN and, with `gan_null` (full), ACL-GAN without the
    adversary; none without `gan_study` (quick)."""
    if not getattr(cfg, "gan_study", True):
        return []
    return ["gan", "aclgan"] + (["aclganmmd"] if getattr(cfg, "gan_null", False) else [])


def measure(cfg, run) -> dict:
    """Score every GAN and ACL-GAN replicate (trained, or loaded from the run's cache).

    Returns {"metrics", "inputs", "results", "table", "summary", "floor", "record" (what notebook 04 saves
    as `RESULTS`)}; without `gan_study` {"metrics": {"gan_study": False}, "results": [], "why": `NOT_RUN`}."""
    if not studies(cfg):
        return {"metrics": {"gan_study": False}, "results": [], "why": NOT_RUN}
    cfg = on_device(cfg, run)
    images, ev, featinfo, prov, floor = reference(cfg, run.dir, run.seed)
    results = image_study(cfg, run, studies(cfg))
    table = image_table(results)
    metrics = floor_metrics(prov, featinfo, floor) | claim_metrics(table)
    record = results_record(prov, results)
    run.log_inputs(images.provenance)
    run.save_json(RESULTS, record)   # read by notebook 05
    return {"metrics": metrics, "inputs": images.provenance, "results": results, "table": table,
            "summary": summary_table(table, floor), "floor": floor, "record": record}
