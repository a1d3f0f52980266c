"""The development-seed tuner refuses the reported seeds and writes nothing then."""
import pytest

from papers.nlm import devtune


@pytest.mark.parametrize("what", ["explore", "ooe"])
def test_reported_seeds_are_refused_with_exit_2(what, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("REPRO_RESULTS", str(tmp_path))
    with pytest.raises(SystemExit) as err:
        devtune.main([what, "--seeds", "100", "2"])
    assert err.value.code == 2
    assert "development seeds are 100 and up" in capsys.readouterr().err
    assert not any(tmp_path.rglob("*.json"))


def test_variants_are_the_documented_ones():
    # the README and config cite these variants; the chosen ones must be among them
    from papers.nlm.config import PROFILES

    q = PROFILES["quick"]
    assert (q["explore_chains"], q["explore_steps"]) in {(v["explore_chains"], v["explore_steps"]) for v in devtune.EXPLORE_VARIANTS.values()}
    assert q["ooe_rdm_updates"] in {v["ooe_rdm_updates"] for v in devtune.OOE_VARIANTS.values()}
