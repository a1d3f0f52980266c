"""Profiles and preflight: unknown variants and missing data are one-line user errors."""
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

    assert set(devtune.TUNERS) == {"codes", "cls-fid", "synthetic", "budget", "syn-steps", "replicates"}
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
