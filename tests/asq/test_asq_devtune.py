"""The development run that bounds the QAT length at which LSQ's step converges (`papers.asq.devtune`)."""
import pytest

from papers.asq import devtune


def record(change_from_init, change_to_next):
    return {"change_from_init": {str(k): v for k, v in change_from_init.items()},
            "change_to_next": {str(k): v for k, v in change_to_next.items()}}


def test_a_stalled_step_meets_the_absolute_criterion_but_not_the_scale_free_one():
    # the step moves 0.5 % by 2 epochs and keeps crawling: each longer run adds 0.4-0.5 %
    stalled = {"100": record({2: 0.005, 5: 0.009, 10: 0.013, 20: 0.017}, {2: 0.0045, 5: 0.0045, 10: 0.004})}
    assert devtune.converged_length(stalled, rel=None) == 2          # within 1 % of the next length at once
    assert devtune.converged_length(stalled) is None                 # 0.0045 / 0.005 = 0.9 of its movement so far
    # a step that moved 20 % and then settles: converged at 5 (0.01 < 0.1 x 0.2)
    settling = {"100": record({2: 0.15, 5: 0.2, 10: 0.2, 20: 0.2}, {2: 0.05, 5: 0.01, 10: 0.001})}
    assert devtune.converged_length(settling) == 5
    # every seed must agree
    assert devtune.converged_length(settling | stalled) is None


def test_max_rel_change_is_the_largest_layer():
    assert devtune.max_rel_change([1.0, 2.0, 4.0], [1.0, 2.2, 4.0]) == pytest.approx(1 / 11)


def test_summary_bounds_the_length_when_none_converges():
    r = record({2: 0.005, 5: 0.009, 10: 0.013, 20: 0.017}, {2: 0.0045, 5: 0.0045, 10: 0.004})
    r["acc"] = {f"lsq_e{L}": 80.0 + L / 10 for L in devtune.LADDER}
    for name in ("gain_asq_lsq", "gain_sbeta_lsq", "gain_asq_sbeta"):
        r[name] = {"2": 0.5, "10": 0.1}
    out = devtune.summarise_qat_length({"100": r, "101": r})
    assert out["converged_epochs"] is None and out["converged_after_steps"] == 20 * 78
    assert out["converged_epochs_abs"] == 2 and out["min_change_ratio_e2"] == pytest.approx(0.9)
    assert out["mean_acc_lsq_e20"] == pytest.approx(82.0) and out["mean_gain_asq_lsq_e10"] == pytest.approx(0.1)


def test_reported_seeds_are_refused_before_anything_runs(capsys):
    with pytest.raises(SystemExit) as err:
        devtune.main(["qat_length", "--seeds", "1"])
    assert err.value.code == 2 and "development runs use seeds" in capsys.readouterr().err


def test_w4_vs_fp_power_and_training_seeds_needed():
    # a one-sided 95 % paired t bound: at mean = -sd the power grows with n; all three runs must decide
    p = [devtune.paired_power(-0.16, 0.16, n) for n in (3, 5, 10, 20)]
    assert p == sorted(p) and 0.0 < p[0] < 0.5 < p[-1] < 1.0
    # large effect: t_(0.95, 1) = 6.31 against a noncentral t of 1 * sqrt(2) / 0.01 = 141 -> decided at n = 2
    assert devtune.n_for_all_runs(-1.0, 0.01) == 2
    # n is the smallest with power ** 3 >= 0.9, and no n decides a zero mean
    n = devtune.n_for_all_runs(-0.1544, 0.1611)
    assert devtune.paired_power(-0.1544, 0.1611, n) ** 3 >= 0.9 > devtune.paired_power(-0.1544, 0.1611, n - 1) ** 3
    assert devtune.n_for_all_runs(0.0, 0.2) is None


def test_w4_vs_fp_summary_is_mean_and_sd_of_the_paired_differences():
    res = {str(100 + i): {"delta_asq_fp": d, "delta_lsq_fp": -d} for i, d in enumerate((-0.1, -0.2, -0.3))}
    out = devtune.summarise_w4_vs_fp(res)
    assert out["n_seeds"] == 3 and out["delta_asq_fp_mean"] == pytest.approx(-0.2)
    assert out["delta_asq_fp_sd"] == pytest.approx(0.1) and out["delta_lsq_fp_mean"] == pytest.approx(0.2)
    assert out["delta_asq_fp_all_runs_n3"] == pytest.approx(out["delta_asq_fp_power_n3"] ** 3)


def test_w2_finding_pools_the_paired_differences_of_every_replicate():
    def run(asq, lsq, fp):
        return {"acc_fp_per_seed": fp, "acc_lsq_w2_per_seed": lsq, "acc_asq_w2_per_seed": asq,
                "acc_sbeta_w2_per_seed": lsq, "acc_asq_frozen_w2_per_seed": asq, "acc_lsq_w4_per_seed": fp,
                "acc_asq_w4_per_seed": asq, "beta_mean_w2": 1.0}
    res = {"100": run([86.0, 86.0, 86.0], [85.0, 85.5, 85.0], [88.0, 88.0, 88.0]),
           "101": run([86.0, 86.0, 86.0], [85.0, 84.5, 85.0], [88.0, 88.0, 88.0])}
    out = devtune.summarise_w2_finding(res)
    # ASQ - LSQ at W2 over the six replicates: 1, 0.5, 1, 1, 1.5, 1 -> mean 1, n 6
    assert out["delta_asq_lsq_w2_n"] == 6 and out["delta_asq_lsq_w2_mean"] == pytest.approx(1.0)
    assert out["delta_asq_lsq_w2_sd"] == pytest.approx(0.31623, rel=1e-4)
    assert out["delta_asq_lsq_w2_ci95"] == pytest.approx(2.5706 * 0.31623 / 6 ** 0.5, rel=1e-3)
    assert out["delta_asq_fp_w4_mean"] == pytest.approx(-2.0) and out["delta_frozen_asq_w2_sd"] == 0.0
    assert out["acc_lsq_w2_mean"] == pytest.approx(85.0) and out["mean_beta_mean_w2"] == 1.0
    assert out["n_dev_seeds"] == 2


def test_w2_finding_trains_quick_with_its_comparison_set():
    cfg = devtune.finding_config("somewhere")
    assert cfg.qat_grid and cfg.ckpt_dir == "somewhere" and cfg.profile == "quick"
    assert (cfg.bits, cfg.sbeta_bits, cfg.frozen_bits) == ([2, 4], [2], [2])
    assert set(devtune.FIGURES) >= {a for a, _ in devtune.PAIRS.values()} | {b for _, b in devtune.PAIRS.values()}
