"""The development-seed tuner refuses the reported seeds and writes nothing then."""
import pytest

from papers.nlm import devtune


@pytest.mark.parametrize("what", ["explore", "ooe", "frames", "precision"])
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


def test_precision_compares_the_sweep_in_both_dtypes_on_the_same_seed(monkeypatch):
    """tune_precision runs the sweep once per dtype with only gemm_dtype changed, and reports z = (bf16 -
    fp32) / sqrt(se1^2 + se2^2) per claim metric (checked on stand-in metrics)."""
    from papers.nlm import experiments as ex

    seen = []

    def fake_sweep(cfg, seed):
        seen.append((cfg.gemm_dtype, seed, cfg.sweep_sizes))
        shift = 0.03 if cfg.gemm_dtype == "bfloat16" else 0.0
        m = {k: 0.4 + shift for k in devtune.SWEEP_KEYS} | {k + "_se": 0.03 for k in devtune.SWEEP_KEYS}
        return {"metrics": m | {"p_star_pcd_inside": 1.0, "mem_spearman": -0.9}}

    monkeypatch.setattr(ex, "memorization_sweep", fake_sweep)
    out = devtune.tune_precision(101)
    assert [s[:2] for s in seen] == [("float32", 101), ("bfloat16", 101)] and seen[0][2] == seen[1][2]
    assert set(out["z"]) == set(devtune.SWEEP_KEYS)
    assert out["z"]["mem_acc_small_p_pcd"] == pytest.approx(0.03 / (2 * 0.03 ** 2) ** 0.5)
    assert out["max_abs_z"] == pytest.approx(0.03 / (2 * 0.03 ** 2) ** 0.5)
