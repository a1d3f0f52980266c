"""Notebook 01: mode coverage on the 2-D mixtures (ring of 8, grid of 25 Gaussians): ACL-AE against the
same decoder fed N(0, I), a fitted Gaussian, a GMM and the MMD-trained G_c; the plain GAN against ACL-GAN.

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539 (claims `syn-*`, source "abstract (synthetic data)"; the protocol is
VEEGAN's, with PacGAN's 1/5-share mode rule).
"""
from __future__ import annotations

import pandas as pd

from ..analysis import synthetic_metrics
from ..images import provenance
from ..synthetic import hq_fraction_exact
from ..synthetic_replicates import synthetic_study, synthetic_table

RESULTS = "synthetic_results.json"   # {"provenance", "rows"}: one row per (mixture, replicate, method)


def claim_metrics(rows: list[dict], mixtures, seed: int, prov: dict) -> dict:
    """The metrics notebook 01 logs: `analysis.synthetic_metrics` of the rows, the true mixture's HQ fraction
    within 3 sigma (`syn_hq_true_mixture`), the seed and the 2-D provenance (`syn_n`, `syn_eval`, `syn_split`)."""
    metrics = synthetic_metrics(rows, mixtures)
    metrics["syn_hq_true_mixture"] = hq_fraction_exact(3.0)
    return metrics | {"seed": seed, "syn_n": prov["n_train"], "syn_eval": prov["n_eval"], "syn_split": prov["split"]}


def measure(cfg, run) -> dict:
    """Every mixture x replicate x model (`synthetic_replicates.synthetic_study`, from `run.streams`), scored;
    the rows saved in the run's folder as `RESULTS`.

    Returns {"metrics", "results" (per task, with 500 points per sampler for the scatter plots), "table"
    (the long table), "record" (what is saved as `RESULTS`)}."""
    results = synthetic_study(cfg, run.streams)
    table = pd.DataFrame(synthetic_table(results))
    rows = table.to_dict(orient="records")
    prov = provenance(cfg, run.seed)
    record = {"provenance": prov, "rows": rows}
    run.save_json(RESULTS, record)
    return {"metrics": claim_metrics(rows, cfg.syn_mixtures, run.seed, prov), "results": results, "table": table,
            "record": record}
