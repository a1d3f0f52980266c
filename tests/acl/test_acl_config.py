"""Profiles and preflight: unknown variants and missing data are one-line user errors."""
from pathlib import Path

import numpy as np
import pytest

from common.errors import UserError
from papers.acl import config


def test_profiles_resolve_and_share_keys():
    keys = {p: set(v) for p, v in config.PROFILES.items()}
    assert keys["smoke"] == keys["quick"] == keys["full"]
    cfg = config.get_config("quick")
    assert cfg.dataset == "fashion_mnist" and cfg.replicates >= 2


@pytest.mark.parametrize("over", [{"loss": "hinge"}, {"mode": "alt"}, {"dataset": "celeba"}, {"dataset": "svhn"},
                                  {"code_dim": 0}, {"replicates": 1}, {"cls_replicates": 1}, {"gan_replicates": 1}, {"syn_replicates": 1},
                                  {"code_lr_final": 0.0}, {"syn_code_lr_final": 1.5}, {"nonsense": 1}])
def test_bad_parameters(over):
    with pytest.raises(UserError):
        config.get_config("quick", **over)


def test_preflight_missing_dataset(monkeypatch):
    monkeypatch.setattr(config.data, "available", lambda name: False)
    with pytest.raises(UserError, match="not found"):
        config.preflight(config.get_config("quick"))


def test_preflight_accepts_digits_at_smoke():
    config.preflight(config.get_config("smoke", loss="wgan-gp"))


def test_tuned_names_profile_keys_and_dev_results():
    keys = set(config.PROFILES["quick"])
    assert config.TUNED and set(config.TUNED) <= keys
    for key, entry in config.TUNED.items():
        assert entry["result"] in ("codes", "cls-fid", "synthetic", "budget", "syn-steps", "replicates") and entry["why"]
        assert entry["show"] and all(s.startswith(("results.1", "results.chosen.", "results.rule.")) for s in entry["show"])


def test_devtune_refuses_reported_seeds_and_investigations_are_apart(capsys):
    from papers.acl import devtune, investigations

    assert set(devtune.TUNERS) == {"codes", "cls-fid", "synthetic", "budget", "syn-steps", "replicates", "image-pairs"}
    assert set(investigations.INVESTIGATIONS) == {"cls-codes", "controls"}
    for main in (devtune.main, investigations.main):
        with pytest.raises(SystemExit) as err:
            main(["controls" if main is investigations.main else "codes", "--seeds", "0"])
        assert err.value.code == 2 and "reported seed" in capsys.readouterr().err
    with pytest.raises(SystemExit) as err:   # the seeds-in-parallel path refuses a reported seed before any work
        devtune.main(["budget", "--seeds", "100", "1"])
    assert err.value.code == 2 and "reported seed" in capsys.readouterr().err


def test_budget_grid_is_one_grid_for_both_and_the_choice_is_the_lowest_mean_fid():
    from papers.acl import devtune

    grid = devtune.BUDGET_GRID
    assert len(grid) == 6 and all("." not in g for g in grid)
    assert {g["batch"] * g["steps"] for g in grid.values()} == {512000}   # equal codes seen per fit
    fid = {"b128-s4000-lr1e-3": (90.0, 100.0), "b512-s1000-lr3e-3": (80.0, 120.0)}   # means 95 and 100
    res = {s: {"ae": {m: {g: {"fid": (fid.get(g, (200.0, 200.0))[i] + (10 if m == "mmd" and g == "b128-s4000-lr1e-3" else 0))}
                          for g in grid} for m in ("acl", "mmd")}} for i, s in enumerate(("100", "101"))}
    chosen = devtune.summarise_budget(res)["chosen"]["ae"]
    assert chosen["acl"]["grid"] == "b128-s4000-lr1e-3" and chosen["acl"]["mean_fid"] == 95.0
    assert chosen["mmd"]["grid"] == "b512-s1000-lr3e-3" and (chosen["mmd"]["batch"], chosen["mmd"]["lr"]) == (512, 3e-3)
    old = {"results": {s: {"ae": {f"{m}.{g}".replace("lr1e-3", "lr0.001").replace("lr3e-3", "lr0.003").replace("lr3e-4", "lr0.0003"): v
                                  for m, gs in r["ae"].items() for g, v in gs.items()}} for s, r in res.items()}}
    renamed = devtune.rename_budget_grid(old)
    assert renamed["results"]["100"] == res["100"] and renamed["results"]["chosen"]["ae"] == devtune.summarise_budget(res)["chosen"]["ae"]


def test_replicates_per_study():
    from papers.acl.image_replicates import n_replicates

    cfg = config.get_config("quick", replicates=5, cls_replicates=4, gan_replicates=3)
    assert [n_replicates(cfg, s) for s in ("ae", "cls", "gan", "aclgan")] == [5, 4, 3, 3]


def test_full_runs_at_least_quicks_replicates_and_the_rules_n():
    """Issue 42: full ran 4 image / 5 2-D replicates, fewer than quick's 6. Every study runs at least quick's count at
    full, and at least the n of each claim the replicate rule listed at full only (`config.FULL_ONLY_N`)."""
    from common.claims import load_claims

    quick, full = config.get_config("quick"), config.get_config("full")
    for key in ("replicates", "cls_replicates", "gan_replicates", "syn_replicates"):
        assert getattr(full, key) >= getattr(quick, key)
    claims = {c.id: c for c in load_claims(Path(config.__file__).with_name("claims.yaml"))}
    for cid, (key, n) in config.FULL_ONLY_N.items():
        assert getattr(full, key) >= n and "full" in claims[cid].profiles and "quick" not in claims[cid].profiles


def test_the_replicate_rule_on_one_study():
    """`summarise_replicates` on the image study alone (`devtune image-pairs`): a claim decided at every resample is
    kept and sets the study's n to the smallest candidate; a claim whose pairs are +1 / -1 in turn is never decided at
    all three seeds and goes to full; the spread is the SD of the pooled pairs."""
    from papers.acl import devtune

    decided = {"study": "image", "edge": 0.0, "at_least": True, "claim": [1.0] * 4, "control": [-1.0] * 4}
    tossup = dict(decided, claim=[1.0, -1.0] * 2, control=[-1.0] * 4)
    res = {s: {"ae-fid-below-gmm": decided, "ae-coverage-above-gmm": tossup} for s in ("100", "101")}
    rule = devtune.summarise_replicates(res)
    image = rule["rule"]["image"]
    assert rule["chosen"] == {"image": devtune.REPLICATE_CANDIDATES[0]} and "2-D" not in rule["rule"]
    assert image["kept"] == ["ae-fid-below-gmm"] and image["full_only"] == ["ae-coverage-above-gmm"]
    assert image["per_claim"]["ae-fid-below-gmm"]["4"] == 1.0 and image["pairs_pooled"] == 8
    assert image["spread"]["ae-coverage-above-gmm"]["claim_sd"] == pytest.approx((8 / 7) ** 0.5)
    assert image["spread"]["ae-fid-below-gmm"] == {"claim_mean": 1.0, "claim_sd": 0.0, "control_mean": -1.0, "control_sd": 0.0}


def test_each_code_phase_and_null_takes_its_own_tuned_schedule():
    """The autoencoder's null (batch 512 x 1000 at quick) must not leak into the classifier's (its own lr, ACL's
    batch and steps), nor the autoencoder's code lr into the classifier's ACL."""
    from papers.acl.image_replicates import cls_hyper
    from papers.acl.train import Hyper

    cfg = config.get_config("quick")
    ae, cls = Hyper.from_cfg(cfg).null(), cls_hyper(cfg)
    assert (ae.code_batch, ae.code_steps, ae.code_lr) == (512, 1000, 3e-3)
    assert (cls.code_batch, cls.code_steps, cls.code_lr) == (128, 4000, 1e-3)
    assert (cls.null().code_batch, cls.null().code_steps, cls.null().code_lr) == (128, 4000, 3e-3)
    assert (Hyper.from_cfg(cfg).code_batch, Hyper.from_cfg(cfg).code_lr) == (128, 3e-3)


def test_the_replicate_rule_takes_the_smallest_n_at_which_every_seed_decides_alike():
    """`devtune replicates`: a claim (with its control) is decided at the smallest candidate n at which both give one
    decided verdict at all three seeds with probability >= 0.95 (whole replicates resampled); a claim no affordable n
    decides is quick's to drop (`full_only`); a study takes the smallest n deciding its remaining claims jointly."""
    from papers.acl.devtune import REPLICATE_CANDIDATES, summarise_replicates

    def claim(study, claim_d, control_d):
        return {"study": study, "edge": 0.0, "at_least": True, "claim": claim_d, "control": control_d}

    clear, against = [5.0, 6.0, 5.5, 6.5], [-5.0, -6.0, -5.5, -6.5]
    results = {str(s): {"clear": claim("image", clear, against), "clear-2d": claim("2-D", clear, against),
                        "coin": claim("2-D", [-1.0, 1.0, -1.0, 1.0], against)} for s in (100, 101, 102)}
    rule = summarise_replicates(results)["rule"]
    first = REPLICATE_CANDIDATES[0]
    assert rule["image"]["chosen"] == rule["2-D"]["chosen"] == first and rule["image"]["n_needed"] == {"clear": first}
    assert rule["2-D"]["n_needed"]["coin"] is None and rule["2-D"]["full_only"] == ["coin"] and rule["2-D"]["kept"] == ["clear-2d"]
    assert rule["2-D"]["pairs_pooled"] == 12 and max(rule["2-D"]["per_claim"]["coin"].values()) < 0.95
    assert rule["2-D"]["p_all_kept_agree"][str(first)] == 1.0


def test_a_profile_judges_a_code_two_sample_claim_only_where_it_runs_the_tests():
    """`code_c2st` (issue 43): quick runs no code two-sample test, and no claim it judges reads one; smoke and full
    run them for the claims that read them (ae-adv-c2st, ae-code-c2st-vs-gmm)."""
    from common.claims import load_claims

    claims = load_claims(Path(config.__file__).with_name("claims.yaml"))
    reads = {c.id: [k for k in (c.metric, c.baseline, c.control) if isinstance(k, str) and k.startswith("c2st_")] for c in claims}
    assert {cid for cid, keys in reads.items() if keys} >= {"ae-adv-c2st", "ae-code-c2st-vs-gmm"}
    for c in claims:
        for profile in c.profiles:
            if reads[c.id]:
                assert config.get_config(profile).code_c2st, (c.id, profile)
    assert not config.get_config("quick").code_c2st
    assert config.get_config("smoke").code_c2st and config.get_config("full").code_c2st
    assert config.get_config("quick", code_c2st=True).code_c2st   # what devtune image-pairs asks for


def test_no_claim_reads_a_prior_regions_kid_and_quick_computes_none():
    """`region_kid` (issue 43): the region claims' metrics (notebook 05, `prior_regions.claim_metrics`) are the same
    whether the regions carry KID or not, every region metric a claim reads is among them, and quick computes no
    region KID (smoke and full keep it in their results files)."""
    from common.claims import load_claims
    from papers.acl.studies import prior_regions

    rng = np.random.default_rng(0)
    names = ["shell0", "shell1", "orthant0", "orthant1"]
    regs = [[{"region": n, "density": rng.random(), "precision": rng.random(), "coverage": rng.random(),
              "fid": rng.random(), "kid": rng.random(), "kid_sd": rng.random()} for n in names] for _ in range(3)]
    bare = [[{k: v for k, v in r.items() if k not in ("kid", "kid_sd")} for r in rep] for rep in regs]
    with_kid = prior_regions.claim_metrics({"acl_ae": regs, "ae_gauss": regs})
    assert repr(prior_regions.claim_metrics({"acl_ae": bare, "ae_gauss": bare})) == repr(with_kid)
    claims = load_claims(Path(config.__file__).with_name("claims.yaml"))
    region_keys = {k for c in claims for k in (c.metric, c.baseline, c.control) if isinstance(k, str) and k.startswith("region_")}
    assert region_keys and all("kid" not in k for k in region_keys)
    assert {k for k in region_keys if k.endswith(("_acl_ae", "_ae_gauss"))} <= set(with_kid)
    assert not config.get_config("quick").region_kid
    assert config.get_config("smoke").region_kid and config.get_config("full").region_kid
