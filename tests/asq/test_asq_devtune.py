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
