"""Notebook 05: sample quality by region of the prior. z ~ N(0, I) is split into regions of equal prior
mass (shells of |z|, orthants of the signs of its first coordinates), each sampled exactly and scored
(`evaluation.region_metrics`); ACL-AE's regions are compared with the fitted Gaussian's on the same
decoder, ACL-GAN's with the plain GAN's.

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539 (claims `prior-*`, source "abstract": "meaningful codes and images
from any part of the prior").

Its input is the output of two other notebooks: the region metrics of every ACL-AE replicate (notebook
02, `autoencoder_generator.RESULTS` = `ae_results.json`) and of every GAN / ACL-GAN replicate (notebook
04, `gan_vs_acl_gan.RESULTS` = `gan_results.json`). `upstream` reads them from the run's folder, and
computes what is absent exactly as those notebooks do.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..analysis import region_ratio, region_worst
from ..image_replicates import image_study, without_grids
from ..images import on_device
from .autoencoder_generator import RESULTS as AE_RESULTS
from .gan_vs_acl_gan import RESULTS as GAN_RESULTS

UPSTREAM = {"ae": (AE_RESULTS, ["ae"]), "gan": (GAN_RESULTS, ["gan", "aclgan"])}  # part: (file, image studies)
SAMPLERS = (("ae", "acl_ae"), ("aclgan", "aclgan"), ("gan", "gan"))   # (image study, metric name)
SCORE_KEYS = ("density", "precision", "coverage", "fid")


def upstream(cfg, run) -> dict:
    """The replicates notebook 05 scores, {"ae": [...], "gan": [...]} (without sample grids): read from
    `ae_results.json` (written by notebook 02) and `gan_results.json` (notebook 04) in `run.dir`; where a
    file is absent (this notebook run alone), its replicates are trained here, or loaded from the run's
    checkpoint cache, through the same `image_replicates.image_study` calls as those notebooks."""
    parts = {}
    for part, (fname, studies) in UPSTREAM.items():
        if part == "gan" and not getattr(cfg, "gan_study", True):   # quick: notebook 04 trains no GAN
            continue
        path = Path(run.dir) / fname
        if path.exists():
            parts[part] = json.loads(path.read_text())["replicates"]
        else:
            parts[part] = without_grids(image_study(on_device(cfg, run), run, studies))
    return parts


def region_table(parts: dict) -> pd.DataFrame:
    """One row per (study, replicate, region) with its density, precision, coverage and FID."""
    return pd.DataFrame([{"study": r["study"], "replicate": r["replicate"], "region": reg["region"],
                          **{m: reg[m] for m in SCORE_KEYS}}
                         for res in parts.values() for r in res for reg in r.get("regions", ())])  # aclganmmd: none


def regions_per_sampler(parts: dict) -> dict:
    """{sampler: [the regions of each replicate, by replicate]}: ACL-AE (`acl_ae`), ACL-GAN and the GAN (where
    notebook 04 trained them), and the fitted Gaussian's regions on ACL-AE's decoder (`ae_gauss`, the control of
    the ACL-AE claims)."""
    per = {name: sorted((r for p in parts.values() for r in p if r["study"] == study), key=lambda r: r["replicate"])
           for study, name in SAMPLERS}
    per = {name: res for name, res in per.items() if res}   # the GANs only where notebook 04 trained them
    out = {name: [r["regions"] for r in res] for name, res in per.items()}
    ae = sorted((r for r in parts["ae"] if r["study"] == "ae"), key=lambda r: r["replicate"])
    out["ae_gauss"] = [r["regions_gauss"] for r in ae]
    return out


def claim_metrics(per_sampler: dict) -> dict:
    """Per sampler and replicate: the worst / best region ratio of density and precision over every region
    (`region_<key>_ratio_<sampler>`) and over shells or orthants alone (`region_<key>_ratio_<kind>_<sampler>`),
    the worst region's value (`region_<key>_worst_<sampler>`) and the worst region's FID (`region_fid_worst_<sampler>`)."""
    m = {}
    for name, regs in per_sampler.items():
        for key in ("density", "precision"):  # worst / best over shells and orthants, and each kind alone
            m[f"region_{key}_ratio_{name}"] = [region_ratio(r, key) for r in regs]
            m[f"region_{key}_worst_{name}"] = [region_worst(r, key) for r in regs]
            for kind in ("shell", "orthant"):
                m[f"region_{key}_ratio_{kind}_{name}"] = [region_ratio(r, key, kind) for r in regs]
        m[f"region_fid_worst_{name}"] = [max(x["fid"] for x in r) for r in regs]
    return m


def scores(parts: dict) -> dict:
    """The region claims' metrics from the replicates of notebooks 02 and 04 (`upstream`'s output):
    {"metrics", "regions" (`region_table`)}."""
    return {"metrics": claim_metrics(regions_per_sampler(parts)), "regions": region_table(parts)}


def measure(cfg, run) -> dict:
    """The region claims' metrics of the run (`upstream`, then `scores`). Returns {"metrics", "regions"}."""
    return scores(upstream(cfg, run))
