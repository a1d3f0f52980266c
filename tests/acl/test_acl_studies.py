"""The mapping from measurements to claim metrics, one study module per notebook (papers/acl/studies/),
on hand-made tables: exact metric names and values, no training and no notebook run."""
import json
import math

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from papers.acl import analysis
from papers.acl.studies import (autoencoder_generator, classifier_generator, gan_vs_acl_gan, prior_regions,
                                synthetic_modes)

COLS = ("fid", "kid", "precision", "recall", "density", "coverage", "class_min_frac", "class_tv", "memorization",
        "memorization_feat")


def table(study: str, methods, reps: int = 2) -> pd.DataFrame:
    """Value of column number c for method number j at replicate r: 100 j + 10 c + r (every cell distinct)."""
    return pd.DataFrame([{"study": study, "replicate": r, "method": m, **{col: 100.0 * j + 10 * c + r for c, col in enumerate(COLS)}}
                         for r in range(reps) for j, m in enumerate(methods)])


def cell(methods, method, col, r):
    return 100.0 * list(methods).index(method) + 10 * COLS.index(col) + r


C2ST = ("acl", "normal", "gauss", "gmm", "mmd_gc", "train_codes")
RESULTS = [{"c2st": {k: 0.5 + 0.01 * i + 0.1 * r for i, k in enumerate(C2ST)}, "cls_acc": 0.8 + r} for r in range(2)]


def test_autoencoder_claim_metrics():
    methods = ("acl", "normal", "gauss", "gmm", "mmd_gc")
    m = autoencoder_generator.claim_metrics(table("ae", methods), RESULTS)
    per = [f"{col}_ae_{k}" for k in ("acl", "gauss", "gmm", "mmd_gc") for col in ("kid", "precision", "recall", "density", "coverage")]
    assert set(m) == {*(f"fid_ae_{k}" for k in methods), "fid_ae_normal_half", *per, *(f"c2st_ae_{k}" for k in C2ST),
                      "ae_acl_class_min_fracs", "ae_acl_class_min_frac", "ae_mmd_gc_class_min_fracs", "ae_gauss_class_min_fracs",
                      "ae_gmm_class_min_fracs", "ae_acl_memorization",
                      "ae_acl_memorization_feat", "ae_acl_wins_half_normal", "ae_acl_wins_gauss"}
    assert m["fid_ae_acl"] == [0.0, 1.0] and m["fid_ae_normal"] == [100.0, 101.0] and m["fid_ae_mmd_gc"] == [400.0, 401.0]
    assert m["fid_ae_normal_half"] == [50.0, 50.5]
    assert m["kid_ae_gmm"] == [cell(methods, "gmm", "kid", r) for r in range(2)]
    assert m["ae_acl_class_min_fracs"] == [60.0, 61.0] and m["ae_acl_class_min_frac"] == 60.0
    assert m["ae_mmd_gc_class_min_fracs"] == [460.0, 461.0] and m["ae_gauss_class_min_fracs"] == [260.0, 261.0]
    assert m["ae_acl_memorization_feat"] == [90.0, 91.0]
    assert m["c2st_ae_gmm"] == [0.53, pytest.approx(0.63)] and m["c2st_ae_train_codes"][0] == 0.55
    assert m["ae_acl_wins_half_normal"] == 2 and m["ae_acl_wins_gauss"] == 2
    worse = table("ae", methods)
    worse.loc[(worse.method == "acl") & (worse.replicate == 1), "fid"] = 250.0   # above gauss (201) and half normal (50.5)
    w = autoencoder_generator.claim_metrics(worse, RESULTS)
    assert (w["ae_acl_wins_half_normal"], w["ae_acl_wins_gauss"]) == (1, 1)


def test_no_code_two_sample_metric_where_the_replicates_ran_no_test():
    """`code_c2st` off (quick): the replicates carry no "c2st" and the study logs no `c2st_*`, the rest unchanged."""
    methods = ("acl", "normal", "gauss", "gmm", "mmd_gc")
    untested = [{k: v for k, v in r.items() if k != "c2st"} for r in RESULTS]
    full = autoencoder_generator.claim_metrics(table("ae", methods), RESULTS)
    m = autoencoder_generator.claim_metrics(table("ae", methods), untested)
    assert m == {k: v for k, v in full.items() if not k.startswith("c2st_")} and len(m) == len(full) - len(C2ST)
    assert analysis.c2st_metrics(untested, "cls") == {}
    with pytest.raises(ValueError, match="1 of 2 ae replicates"):
        analysis.c2st_metrics(RESULTS[:1] + untested[1:], "ae")


def test_classifier_claim_metrics():
    methods = ("acl", "normal", "gauss", "gmm", "mmd_gc")
    m = classifier_generator.claim_metrics(table("cls", methods), RESULTS)
    samplers = ("acl", "gmm", "gauss", "mmd_gc")
    assert set(m) == {*(f"fid_cls_{k}" for k in methods), "fid_cls_normal_half", *(f"cls_{k}_class_tv" for k in samplers),
                      "cls_acl_class_min_frac", "cls_test_acc", *(f"{c}_cls_{k}" for c in ("kid", "density", "coverage") for k in samplers),
                      *(f"c2st_cls_{k}" for k in C2ST), "cls_acl_memorization_feat"}
    assert m["fid_cls_normal_half"] == [50.0, 50.5] and m["cls_test_acc"] == [0.8, 1.8]
    assert m["cls_mmd_gc_class_tv"] == [470.0, 471.0] and m["coverage_cls_gmm"] == [350.0, 351.0]
    assert m["cls_gauss_class_tv"] == [270.0, 271.0] and m["density_cls_mmd_gc"] == [440.0, 441.0]


def test_gan_claim_metrics_and_the_null_trained_without_the_adversary():
    t = pd.concat([table("gan", ("gan",)), table("aclgan", ("aclgan",))])
    t.loc[t.method == "gan", "fid"] = [10.0, 14.0]
    t.loc[t.method == "aclgan", "fid"] = [8.0, 10.0]
    m = gan_vs_acl_gan.claim_metrics(t)
    assert set(m) == {"fid_gan", "fid_aclgan", "coverage_gan", "coverage_aclgan", "recall_gan", "recall_aclgan", "density_gan",
                      "density_aclgan", "fid_gan_sd", "fid_gan_pooled_sd"}
    assert m["fid_aclgan"] == [8.0, 10.0] and m["recall_aclgan"] == [30.0, 31.0]
    assert m["fid_gan_sd"] == pytest.approx(math.sqrt(8))
    assert m["fid_gan_pooled_sd"] == pytest.approx(math.sqrt(5))
    t2 = pd.concat([t, table("aclganmmd", ("aclganmmd",))])
    t2.loc[t2.method == "aclganmmd", "fid"] = [9.0, 13.0]   # its own table: method index 0
    m2 = gan_vs_acl_gan.claim_metrics(t2)
    assert m2["fid_aclganmmd"] == [9.0, 13.0] and set(m2) - set(m) == {"fid_aclganmmd", "coverage_aclganmmd", "density_aclganmmd"}
    assert gan_vs_acl_gan.studies(SimpleNamespace(gan_null=True)) == ["gan", "aclgan", "aclganmmd"]
    assert gan_vs_acl_gan.studies(SimpleNamespace(gan_null=False)) == ["gan", "aclgan"]


def test_floor_metrics():
    floor = {"fid": 1.0, "kid": 2.0, "density": 0.8, "coverage": 0.9, "memorization": 1.1, "memorization_feat": 1.2,
             "class_min_frac": 0.09, "class_tv": 0.02}
    m = analysis.floor_metrics({"seed": 3}, {"featnet_dim": 64}, floor)
    assert m == {"seed": 3, "featnet_dim": 64, "floor_fid": 1.0, "floor_kid": 2.0, "floor_density": 0.8,
                 "floor_coverage": 0.9, "floor_memorization": 1.1}
    m = analysis.floor_metrics({}, {}, floor, autoencoder_generator.FLOOR_KEYS, half_density=True)
    assert m["floor_density_half"] == 0.4 and m["floor_class_tv"] == 0.02 and len(m) == 9


def test_synthetic_claim_metrics():
    rows = [{"mixture": "ring", "replicate": r, "method": k, "hq_frac": 0.1 * r, "modes": modes[r], "modes_any": 8,
             "n_modes": 8, "kl": 0.5} for k, modes in (("acl_ae", (8, 2, 6)), ("ae_mmd_gc", (1, 0, 3)), ("gan", (4, 4, 4)))
            for r in range(3)]
    prov = {"n_train": 1000, "n_eval": 500, "split": "fresh"}
    m = synthetic_modes.claim_metrics(rows, ["ring"], 7, prov)
    assert m["syn_ring_acl_ae_modes"] == [8, 2, 6] and m["syn_ring_acl_ae_modes_min"] == 2
    assert m["syn_ring_acl_ae_modes_median"] == 6.0 and m["syn_ring_ae_mmd_gc_modes_median"] == 1.0
    assert "syn_ring_gan_modes_min" not in m and m["syn_ring_gan_modes_any"] == [8, 8, 8]
    assert m["syn_ring_acl_ae_hq"] == [0.0, 0.1, 0.2]
    assert (m["seed"], m["syn_n"], m["syn_eval"], m["syn_split"]) == (7, 1000, 500, "fresh")
    assert 0.98 < m["syn_hq_true_mixture"] < 1.0


def regions(values, fids):
    names = ["shell0", "shell1", "orthant0", "orthant1"]
    return [{"region": n, "density": v, "precision": v / 2, "coverage": 0.5, "fid": f} for n, v, f in zip(names, values, fids)]


def upstream_parts():
    ae = [{"study": "ae", "replicate": r, "regions": regions([1.0, 0.5, 2.0, 2.0], [10, 20, 30, 40 + r]),
           "regions_gauss": regions([1.0, 1.0, 1.0, 0.5], [5, 5, 5, 5])} for r in (1, 0)]   # out of order on purpose
    gan = [{"study": s, "replicate": 0, "regions": regions([1.0, 1.0, 1.0, 1.0], [1, 2, 3, 4])} for s in ("gan", "aclgan")]
    return {"ae": ae, "gan": gan}


def test_prior_region_claim_metrics():
    out = prior_regions.scores(upstream_parts())
    m = out["metrics"]
    names = ("acl_ae", "aclgan", "gan", "ae_gauss")
    keys = {f"region_{k}_{w}_{n}" for k in ("density", "precision") for w in ("ratio", "worst", "ratio_shell", "ratio_orthant")
            for n in names} | {f"region_fid_worst_{n}" for n in names}
    assert set(m) == keys
    assert m["region_density_ratio_acl_ae"] == [0.25, 0.25] and m["region_density_ratio_shell_acl_ae"] == [0.5, 0.5]
    assert m["region_density_ratio_orthant_acl_ae"] == [1.0, 1.0] and m["region_precision_worst_acl_ae"] == [0.25, 0.25]
    assert m["region_fid_worst_acl_ae"] == [40, 41]          # sorted by replicate
    assert m["region_density_ratio_ae_gauss"] == [0.5, 0.5] and m["region_density_ratio_gan"] == [1.0]
    assert len(out["regions"]) == 4 * 4 and set(out["regions"].study) == {"ae", "gan", "aclgan"}


def test_prior_regions_upstream_reads_notebooks_02_and_04_else_computes(tmp_path, monkeypatch):
    parts = upstream_parts()
    (tmp_path / "ae_results.json").write_text(json.dumps({"provenance": {}, "replicates": parts["ae"]}))
    calls = []

    def fake_study(cfg, run, studies):
        calls.append((run.dir, run.seed, studies, cfg.device))
        return [dict(r, grid={"x": np.zeros(1)}) for r in parts["gan"]]

    monkeypatch.setattr(prior_regions, "image_study", fake_study)
    run = SimpleNamespace(dir=tmp_path, seed=5, device="cpu")
    got = prior_regions.upstream(SimpleNamespace(gan_study=True), run)
    assert got["ae"] == parts["ae"] and got["gan"] == parts["gan"]          # grids dropped, as notebook 04 saves them
    assert calls == [(tmp_path, 5, ["gan", "aclgan"], "cpu")]
    (tmp_path / "gan_results.json").write_text(json.dumps({"provenance": {}, "replicates": parts["gan"]}))
    assert prior_regions.upstream(SimpleNamespace(gan_study=True), run) == parts and len(calls) == 1


def test_region_table_skips_replicates_scored_without_regions():
    """ACL-GAN without the adversary (full's control of gan-improves) is scored on FID and PRDC only."""
    reg = [{"region": "shell0", "density": 1.0, "precision": 0.9, "coverage": 0.5, "fid": 10.0}]
    parts = {"ae": [{"study": "ae", "replicate": 0, "regions": reg}],
             "gan": [{"study": "gan", "replicate": 0, "regions": reg}, {"study": "aclganmmd", "replicate": 0}]}
    t = prior_regions.region_table(parts)
    assert list(t.study) == ["ae", "gan"] and list(t.fid) == [10.0, 10.0]


def test_without_the_gan_study_notebook_04_trains_nothing_and_05_scores_the_autoencoder_alone(tmp_path, monkeypatch):
    """quick (`gan_study=False`): notebook 04 returns its reason without training or scoring, notebook 05 reads
    only notebook 02's replicates and logs no GAN region metric; smoke and full keep the GAN study."""
    from papers.acl import config

    assert config.get_config("quick").gan_study is False
    assert config.get_config("smoke").gan_study is True and config.get_config("full").gan_study is True
    cfg = SimpleNamespace(gan_study=False, gan_null=True)
    assert gan_vs_acl_gan.studies(cfg) == []
    assert gan_vs_acl_gan.studies(SimpleNamespace(gan_study=True, gan_null=False)) == ["gan", "aclgan"]
    monkeypatch.setattr(gan_vs_acl_gan, "reference", lambda *a: pytest.fail("scored without a GAN study"))
    run = SimpleNamespace(dir=tmp_path, seed=5, device="cpu")
    out = gan_vs_acl_gan.measure(cfg, run)
    assert out["metrics"] == {"gan_study": False} and out["results"] == [] and "full" in out["why"]
    parts = upstream_parts()
    (tmp_path / "ae_results.json").write_text(json.dumps({"provenance": {}, "replicates": parts["ae"]}))
    monkeypatch.setattr(prior_regions, "image_study", lambda *a: pytest.fail("trained a GAN for notebook 05"))
    got = prior_regions.upstream(cfg, run)
    assert set(got) == {"ae"}
    m = prior_regions.measure(cfg, run)["metrics"]
    assert not [k for k in m if k.endswith("_gan") or k.endswith("_aclgan")]
    assert m["region_density_ratio_acl_ae"] == [0.25, 0.25] and m["region_density_ratio_ae_gauss"] == [0.5, 0.5]
