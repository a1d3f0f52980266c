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
        assert entry["result"] in ("codes", "cls-fid", "synthetic") and entry["why"]
        assert entry["show"] and all(s.startswith("results.1") for s in entry["show"])


def test_devtune_refuses_reported_seeds_and_investigations_are_apart(capsys):
    from papers.acl import devtune, investigations

    assert set(devtune.TUNERS) == {"codes", "cls-fid", "synthetic"}
    assert set(investigations.INVESTIGATIONS) == {"cls-codes", "controls"}
    for main in (devtune.main, investigations.main):
        with pytest.raises(SystemExit) as err:
            main(["controls" if main is investigations.main else "codes", "--seeds", "0"])
        assert err.value.code == 2 and "reported seed" in capsys.readouterr().err


def test_replicates_per_study():
    from papers.acl.image_replicates import n_replicates

    cfg = config.get_config("quick", replicates=5, cls_replicates=4, gan_replicates=3)
    assert [n_replicates(cfg, s) for s in ("ae", "cls", "gan", "aclgan")] == [5, 4, 3, 3]
