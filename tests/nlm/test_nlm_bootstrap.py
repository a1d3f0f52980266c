"""Window differences of E_AAI with a bootstrap SE: exact point estimate, unbiased on a null, detects a planted rise."""
import math

import numpy as np
import pytest
import torch

from common.seed import Streams
from papers.nlm import bootstrap as bs, metrics
from papers.nlm.windows import ooe_window_statistics, ooe_windows
from papers.nlm.sampler import log_times


def _chains(rng, n, d, n_times, rho=0.5, scale=None):
    """Stationary AR(1) 'chains' in d dims: every time point has the same N(0, 1) marginal."""
    x = rng.standard_normal((n, d))
    out = [x]
    for _ in range(n_times - 1):
        x = rho * x + np.sqrt(1 - rho**2) * rng.standard_normal((n, d))
        out.append(x)
    out = np.stack(out)
    if scale is not None:
        out = out * np.asarray(scale, float)[:, None, None]
    return out


def test_point_estimate_is_the_metric_exactly():
    rng = np.random.default_rng(3)
    test = rng.standard_normal((50, 3))
    samples = np.stack([rng.standard_normal((70, 3)) * s for s in (1.0, 1.5, 3.0)])
    est, boot = bs.e_aai_curve(samples, test, n_boot=0)
    assert boot.shape == (0, 3)
    for t in range(3):   # first min(n, m) = 50 samples, as metrics.quality
        assert est[t] == metrics.adversarial_accuracy(test, samples[t, :50])["e_aai"]
        assert est[t] == metrics.quality(samples[t], test[:5], test)["e_aai_test"]
    copies = bs.e_aai_curve(test[None], test)[0][0]
    assert copies == 0.25    # exact copies: Acc_S = Acc_T = 0 (ties count as the other kind)


def test_bootstrap_replicates_hand_case():
    # two far-apart clusters per kind: true at 0, synthetic at 100; any resample keeps Acc = 1
    test = np.array([[0.0], [0.1], [0.2]])
    samples = np.array([[[100.0], [100.1], [100.2]]])
    est, boot = bs.e_aai_curve(samples, test, n_boot=30, generator=torch.Generator().manual_seed(1))
    assert est[0] == 0.25
    # a replicate that draws a single distinct point of one kind has no same-kind neighbour: Acc = 0
    assert set(np.round(boot[:, 0], 12)) <= {0.25, 0.125, 0.0}
    assert np.mean(boot[:, 0] == 0.25) > 0.5
    same = bs.e_aai_curve(samples, test, n_boot=30, generator=torch.Generator().manual_seed(1))[1]
    np.testing.assert_array_equal(boot, same)                 # seeded


def test_window_difference_and_masks():
    est = np.array([0.1, 0.2, 0.3, 0.4])
    boot = np.array([[0.1, 0.2, 0.3, 0.4], [0.1, 0.2, 0.5, 0.6]])
    d, se = bs.window_difference(est, boot, np.array([0, 0, 1, 1], bool), np.array([1, 1, 0, 0], bool))
    assert d == pytest.approx(0.2) and se == pytest.approx(np.std([0.2, 0.4], ddof=1))
    times = log_times(10_000, 14, t_min=5)
    w = ooe_windows(times, 100, 10_000)
    pick = lambda m: [t for t, x in zip(times, m) if x]  # noqa: E731
    assert pick(w["near_k"]) == [52, 93, 167]
    assert pick(w["mid"]) == [537, 964, 1731, 3106]
    assert pick(w["late"]) == [5573, 10_000]
    with pytest.raises(ValueError, match="no time point"):
        bs.window_mask(times, 11_000, 20_000)


def test_null_is_unbiased_and_covered_where_the_minimum_is_not():
    """Same distribution at every time (broader than the data, E_AAI ≈ 0.04 as a stationary but imperfect
    generator): the window difference averages 0 and its SE matches its spread; the old estimator
    (last − min) is positive on the same data."""
    rng = np.random.default_rng(0)
    reps, diffs, ses, old = 30, [], [], []
    late, early = np.array([0, 0, 0, 1, 1], bool), np.array([1, 1, 0, 0, 0], bool)
    for r in range(reps):
        test = rng.standard_normal((60, 4))
        samples = 2.0 * _chains(rng, 60, 4, 5)
        est, boot = bs.e_aai_curve(samples, test, n_boot=60, generator=torch.Generator().manual_seed(r))
        d, se = bs.window_difference(est, boot, late, early)
        diffs.append(d); ses.append(se); old.append(est[-1] - est.min())
    diffs, ses, old = map(np.asarray, (diffs, ses, old))
    spread = diffs.std(ddof=1)
    assert abs(diffs.mean()) < 3 * spread / np.sqrt(reps)               # unbiased
    assert 0.7 < ses.mean() / spread < 1.4                               # SE calibrated
    assert np.mean(np.abs(diffs) <= 1.645 * ses) >= 0.7                  # 90 % intervals cover 0
    assert old.mean() > 3 * old.std(ddof=1) / np.sqrt(reps)              # last − min: biased upward


def test_planted_degradation_is_detected():
    rng = np.random.default_rng(1)
    test = rng.standard_normal((80, 4))
    samples = _chains(rng, 80, 4, 5, scale=[1, 1, 1, 2.5, 2.5])        # the last two times are broadened
    est, boot = bs.e_aai_curve(samples, test, n_boot=100, generator=torch.Generator().manual_seed(0))
    d, se = bs.window_difference(est, boot, np.array([0, 0, 0, 1, 1], bool), np.array([1, 1, 0, 0, 0], bool))
    assert d - 1.645 * se > 0.02                                         # one-sided 95 % bound above a 0.02 rise


def test_ooe_window_statistics_paired():
    rng = np.random.default_rng(2)
    times = [5, 10, 50, 100, 200, 600, 1000, 2000, 3000, 6000, 10_000]
    test = rng.standard_normal((60, 4))
    pcd = dict(zip(times, _chains(rng, 60, 4, len(times))))              # stationary
    scale = [1.0] * (len(times) - 2) + [2.5, 2.5]
    rdm = dict(zip(times, _chains(rng, 60, 4, len(times), scale=scale)))  # degrades at the end
    m = ooe_window_statistics(times, pcd, rdm, test, k=100, t_end=10_000, n_boot=80, generator=torch.Generator().manual_seed(0))
    assert m["ooe_window_near_k"] == [50, 100, 200] and m["ooe_window_mid"] == [600, 1000, 2000, 3000]
    assert m["ooe_window_late"] == [6000, 10_000]
    assert m["rdm_late_minus_mid"] - 1.645 * m["rdm_late_minus_mid_se"] > 0
    assert abs(m["pcd_late_minus_mid"]) < 3 * m["pcd_late_minus_mid_se"]
    assert m["rdm_minus_pcd_late_rise"] == pytest.approx(m["rdm_late_minus_mid"] - m["pcd_late_minus_mid"])
    assert m["rdm_minus_pcd_late_rise"] - 1.645 * m["rdm_minus_pcd_late_rise_se"] > 0


def test_adversarial_groups_separate_copies_new_data_and_noise():
    """Copies of the reference: Acc_S, Acc_T < 1/2; fresh draws of the same law: about 1/2; far off: 1.
    Every sample enters (disjoint groups of min(n) points) and the bootstrap SE covers the spread."""
    rng = np.random.default_rng(0)
    ref = rng.normal(size=(5, 30))
    copies = np.repeat(ref, 30, 0) + 0.05 * rng.normal(size=(150, 30))
    rng.shuffle(copies)
    r = bs.adversarial_groups(copies, ref, n_boot=50, streams=Streams(0))
    assert max(r["acc_s"][0], r["acc_t"][0]) < 0.5 and r["acc_s"][1].shape == (50,)
    far = bs.adversarial_groups(ref[:1] + 10 + rng.normal(size=(150, 30)), ref, n_boot=20, streams=Streams(0))
    assert far["acc_s"][0] == 1.0 and far["acc_t"][0] == 1.0 and abs(far["e_aai"][0] - 0.25) < 1e-12
    big = rng.normal(size=(600, 30))
    new = bs.adversarial_groups(rng.normal(size=(600, 30)), big[:150], n_boot=100, streams=Streams(1))
    se = float(np.std(new["acc_t"][1], ddof=1))
    assert abs(new["acc_s"][0] - 0.5) < 0.1 and abs(new["acc_t"][0] - 0.5) < 0.1 and 0 < se < 0.1


def test_rise_through_locates_the_crossing():
    from papers.nlm.sweep import rise_through
    assert np.isnan(rise_through([5, 10, 20], [0.9, 0.95, 1.0]))
    p = rise_through([10, 100], [0.3, 0.7])
    assert abs(p - math.sqrt(1000)) < 1e-9


def test_window_frames_add_times_inside_the_windows_only():
    from papers.nlm.windows import ooe_snapshot_times

    assert ooe_snapshot_times(10_000, 14, 100, 0) == log_times(10_000, 14, t_min=5)
    t8 = ooe_snapshot_times(10_000, 14, 100, 8)
    extra = sorted(set(t8) - set(log_times(10_000, 14, t_min=5)))
    win = ooe_windows(extra, 100, 10_000)
    assert all(any(w[i] for w in win.values()) for i in range(len(extra)))      # every added time is in a window
    for name, lo, hi in (("near_k", 50, 200), ("mid", 500, 3333), ("late", 5000, 10_000)):
        inside = [t for t in t8 if lo <= t <= hi]
        assert len(inside) >= 8 and min(inside) == lo and max(inside) == hi
    assert t8 == sorted(set(t8)) and t8[-1] == 10_000


def _ooe_case(rng, scales):
    times = [5, 10, 50, 100, 200, 600, 1000, 2000, 3000, 6000, 10_000]
    pcd = dict(zip(times, _chains(rng, 60, 4, len(times))))
    rdm = [dict(zip(times, _chains(rng, 60, 4, len(times), scale=[1.0] * (len(times) - 2) + [s, s]))) for s in scales]
    return times, pcd, rdm


def test_ooe_window_statistics_over_replicates_is_the_mean_with_both_errors():
    """R replicates: each replicate's value and bootstrap SE are exactly those of a run on it alone (the same
    resamples); the metric is their mean; the SE adds the spread between replicates (sd/√R) in quadrature
    to the bootstrap SE of the mean. R copies of one model: the one-model numbers, no spread."""
    rng = np.random.default_rng(5)
    times, pcd, rdm = _ooe_case(rng, [1.5, 2.5, 4.0])
    test = rng.standard_normal((60, 4))
    kw = dict(k=100, t_end=10_000, n_boot=60)
    gen = lambda: torch.Generator().manual_seed(3)   # noqa: E731 (the same resamples for every call)
    many = ooe_window_statistics(times, [pcd] * 3, rdm, test, null_images=[pcd] * 3, generator=gen(), **kw)
    one = [ooe_window_statistics(times, pcd, r, test, null_images=pcd, generator=gen(), **kw) for r in rdm]
    key = "rdm_late_minus_mid"
    assert many[key + "_reps"] == pytest.approx([o[key] for o in one], abs=1e-12)
    assert many[key + "_reps_se"] == pytest.approx([o[key + "_se"] for o in one], abs=1e-12)
    assert many[key] == pytest.approx(np.mean(many[key + "_reps"]), abs=1e-12)
    assert many[key + "_between_se"] == pytest.approx(np.std(many[key + "_reps"], ddof=1) / np.sqrt(3), abs=1e-12)
    assert many[key + "_se"] == pytest.approx(np.hypot(many[key + "_boot_se"], many[key + "_between_se"]), abs=1e-12)
    assert many[key + "_between_se"] > 0.01                                 # the broadening differs between replicates
    rise = "rdm_minus_pcd_late_rise"
    assert many[rise + "_reps"] == pytest.approx([o[rise] for o in one], abs=1e-12)
    same = ooe_window_statistics(times, [pcd] * 2, [rdm[0]] * 2, test, null_images=[pcd] * 2, generator=gen(), **kw)
    for k in ("rdm_late_minus_mid", "pcd_late_minus_mid", rise, "untrained_minus_pcd_late_rise"):
        assert same[k] == pytest.approx(one[0][k], abs=1e-12) and same[k + "_between_se"] == 0.0
        assert same[k + "_se"] == pytest.approx(one[0][k + "_se"], abs=1e-12)
    assert one[0][key + "_between_se"] is None and one[0][key + "_se"] == one[0][key + "_boot_se"]
    with pytest.raises(ValueError, match="same number of replicates"):
        ooe_window_statistics(times, [pcd] * 2, rdm, test, generator=gen(), **kw)


@pytest.mark.parametrize("k", [32, 2])
def test_nearest_present_is_the_masked_minimum(monkeypatch, k):
    """`bootstrap.Nearest` (each row's smallest candidates, the first one present) gives the masked minimum
    exactly, with rows whose every candidate is absent (k = 2: the whole-row scan) and a replicate with no
    column present (inf); a hand case: row [3, 1, 2] with column 1 absent -> 2."""
    monkeypatch.setattr(bs, "NEAREST_K", k)
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(0)
    d = torch.rand(40, 50, generator=g, dtype=torch.float64)
    d[:, 7] = d[:, 3]                                                 # ties
    present = torch.rand(30, 50, generator=g) > 0.6
    present[0] = False
    got, want = bs.Nearest(d)(present), bs.masked_nn(d, present)
    assert torch.equal(got, want) and torch.isinf(got[0]).all()
    hand = torch.tensor([[3.0, 1.0, 2.0]], dtype=torch.float64)
    assert bs.Nearest(hand)(torch.tensor([[True, False, True]])).item() == 2.0
