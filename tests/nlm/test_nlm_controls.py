"""The nulls behind every nlm verdict: each control really lacks the structure its claim measures."""
import math

import numpy as np
import pytest
import torch

from common.seed import Streams

from papers.nlm import denoise as dn, exact, metrics, thermo
from papers.nlm.sweep import binomial_se, trend
from papers.nlm.visits import class_visits, window_images
from papers.nlm.windows import ooe_window_statistics
from papers.nlm.model import force, init_couplings, velocity


def _two_class_data(rng, n=40, d=16):
    """Two well-separated classes of images in [-1, 1]^d, with labels."""
    centres = np.stack([np.where(np.arange(d) < d // 2, 0.9, -0.9), np.where(np.arange(d) < d // 2, -0.9, 0.9)])
    y = np.repeat([1, 3], n // 2)
    x = np.clip(centres[(y == 3).astype(int)] + 0.1 * rng.standard_normal((n, d)), -0.97, 0.97)
    return x, y


def test_hebbian_rule_is_symmetric_while_the_local_rule_is_not():
    pts, _ = exact.grid(61, 8.0)
    g = torch.Generator().manual_seed(3)
    J = torch.randn(2, 2, generator=g, dtype=torch.float64) * 1.4; J.fill_diagonal_(0.0)
    b = 0.3 * torch.randn(2, generator=g, dtype=torch.float64)
    data = 1.5 * torch.randn(5, 2, generator=g, dtype=torch.float64)
    h = exact.hebbian_on_grid(J, b, data, 1.0, pts)
    rJ, _ = exact.rule_on_grid(J, b, data, 1.0, pts)
    assert h.abs().max() > 1e-3                                     # a real update, not zero
    assert (h - h.T).norm() / h.norm() < 1e-12                       # the asymmetry measure gives 0 on it
    assert (rJ - rJ.T).norm() / rJ.norm() > 0.05


def test_class_visits_ignore_noise_and_count_real_hops():
    rng = np.random.default_rng(0)
    train, y = _two_class_data(rng)
    test, _ = _two_class_data(rng)
    radius = metrics.data_radius(train, test)
    noise = np.tanh(rng.standard_normal((60, train.shape[1])))       # J = 0 frames: never data-like
    v = class_visits(noise, train, y, radius)
    assert v == {"classes": 0, "transitions": 0, "data_like": 0.0}
    a, c = train[y == 1][:3], train[y == 3][:3]
    off = np.zeros_like(a)                                            # a blend between basins: off the data
    seq = np.concatenate([a, off, c, c, off, a, c])                   # 111 ... 333 333 ... 111 333
    v = class_visits(seq, train, y, radius)
    assert v["classes"] == 2 and v["transitions"] == 3
    assert math.isclose(v["data_like"], 15 / 21)


def test_window_images_average_blocks():
    f = np.arange(10, dtype=float)[:, None, None] * np.ones((1, 2, 3))
    w = window_images(f, 4)
    assert w.shape == (2, 2, 3) and w[0, 0, 0] == 1.5 and w[1, 1, 2] == 5.5


def test_generalized_fraction_of_held_out_copies_and_noise():
    rng = np.random.default_rng(1)
    train, _ = _two_class_data(rng, n=60)
    test, _ = _two_class_data(rng, n=60)
    assert metrics.generalized_fraction(test, train, test) >= 0.95            # held-out images are new data
    assert metrics.generalized_fraction(train[:20] + 1e-4, train, test) == 0.0  # copies are not
    assert metrics.generalized_fraction(np.tanh(rng.standard_normal((50, 16))), train, test) == 0.0
    assert binomial_se(0.0, 300) == 0.0 and math.isclose(binomial_se(0.5, 100), 0.05)


def test_trend_of_a_constant_curve_is_zero():
    assert trend([5, 10, 20], [0.0, 0.0, 0.0]) == 0.0
    assert trend([5, 10, 20, 40], [0.6, 0.3, 0.1, 0.0]) == -1.0


def test_entropy_production_on_the_sampler_is_zero_and_the_same_estimator_sees_the_rate_network():
    g = torch.Generator().manual_seed(5)
    n = 5
    J = torch.randn(n, n, generator=g, dtype=torch.float64) * 2 / math.sqrt(n); J.fill_diagonal_(0.0)
    b = torch.zeros(n, dtype=torch.float64)
    x0 = torch.randn(400, n, generator=g, dtype=torch.float64)
    s, se = thermo.entropy_production_langevin(J, b, x0, 1.0, 0.01, 300, 300, g)
    assert abs(s) < max(4 * se, 0.05)
    s_loop, se_loop = thermo.entropy_production(lambda x: force(x, J, b), x0, 1.0, 0.01, 300, 300, g)
    assert abs(s - s_loop) < 5 * math.hypot(se, se_loop) + 0.02      # same quantity, two integrators
    s_r, se_r = thermo.entropy_production(lambda x: velocity(x, J, b), x0, 1.0, 0.01, 300, 300, g)
    assert s_r > 0.5 and s_r > 10 * se_r


def test_denoising_nulls_repair_nothing_and_the_rate_flow_raises_the_energy(tmp_path):
    from common.study import measure, open_run

    cfg, run = open_run("nlm", "smoke", seed=0, device="cpu", run_dir=tmp_path)
    out = measure("nlm", "denoising", cfg, run)                     # ten digit patterns, as in notebook 05
    m = out["metrics"]
    # the images notebook 05 draws: the patterns, their corrupted copies (16 of 64 pixels), each network's restoration
    im = out["nlm_images"]
    assert sorted(im) == ["clean", "corrupted", "nlm", "nlm_j0", "nlm_untrained"]
    assert all(np.shape(v) == (10, 64) for v in im.values())
    assert (np.sum(np.abs(im["corrupted"] - im["clean"]) > 1e-5, axis=1) == round(cfg.denoise_fraction * 64)).all()
    assert np.allclose(out["clean"], im["clean"], atol=1e-6)          # the baseline figure's clean row: the same patterns
    assert m["denoise_n_good_untrained"] == 0 and m["denoise_ratio_median_untrained"] > 1.0
    assert m["denoise_n_good_input"] == 0
    # the nulls of the NLM-trained denoising (untrained network, J = 0) restore nothing by their dynamics
    assert m["denoise_nlm_untrained_n_good"] == 0 and m["denoise_nlm_j0_n_good"] == 0
    assert m["denoise_nlm_j0_ratio_median"] > 1.0
    assert m["denoise_energy_max_rise"] <= 1e-12 < 1e-6 < m["denoise_energy_max_rise_rate_flow"]
    # the null's flow is a real -grad E flow of another network: its energy falls too
    x = np.arctanh(np.where(np.random.default_rng(2).random((4, 16)) < 0.5, 0.97, -0.97))
    J, b = init_couplings(16, 2.0, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    _, e = dn.flow(torch.as_tensor(x), J, b, 100, 0.05, record_energy=True)
    assert (e.diff(dim=0) <= 1e-12).all()


def test_untrained_is_init_couplings():
    g1, g2 = torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)
    J, b = init_couplings(8, 2.0, generator=g1, dtype=torch.float64)
    assert torch.equal(J, init_couplings(8, 2.0, generator=g2, dtype=torch.float64)[0]) and b.abs().max() == 0


def test_untrained_null_of_the_ooe_windows_is_flat():
    rng = np.random.default_rng(4)
    times = [5, 10, 50, 100, 200, 600, 1000, 2000, 3000, 6000, 10_000]
    test = rng.standard_normal((40, 4))
    pcd = {t: rng.standard_normal((40, 4)) * (1.0 + 0.5 * (t >= 6000)) for t in times}
    rdm = {t: rng.standard_normal((40, 4)) for t in times}
    far = {t: 50.0 + rng.standard_normal((40, 4)) for t in times}    # learned nothing: always told apart
    m = ooe_window_statistics(times, pcd, rdm, test, k=100, t_end=10_000, n_boot=40, generator=torch.Generator().manual_seed(0), null_images=far)
    assert m["untrained_late_minus_mid"] == 0.0 and m["untrained_late_minus_mid_se"] == 0.0
    assert math.isclose(m["untrained_minus_pcd_late_rise"], -m["pcd_late_minus_mid"], abs_tol=1e-12)
    m0 = ooe_window_statistics(times, pcd, rdm, test, k=100, t_end=10_000, n_boot=40, generator=torch.Generator().manual_seed(0))
    assert math.isclose(m0["rdm_minus_pcd_late_rise"], m["rdm_minus_pcd_late_rise"])
    assert "pcd_late_minus_near_k" in m0


def test_time_reversal_asymmetry_passes_the_sampler_and_fails_both_broken_steppers():
    """Measured on sampler.langevin trajectories: ~0 for the sampler's own step (within 4 SEs), far above
    that for a stepper without the Onsager term and for one with a neuron-dependent noise scale."""
    g = torch.Generator().manual_seed(3)
    n = 6
    J = torch.randn(n, n, generator=g, dtype=torch.float64) * 2 / math.sqrt(n); J.fill_diagonal_(0.0)
    b = torch.zeros(n, dtype=torch.float64)
    x0 = torch.randn(600, n, generator=g, dtype=torch.float64)
    a, se = thermo.time_reversal_asymmetry(J, b, x0, 1.0, 0.01, 300, 400, 50, generator=g)
    assert abs(a) < 4 * se and se > 0
    for name in ("no_onsager", "anisotropic_noise"):                 # the near miss (spread 1/5) is the claim's control
        stepper = thermo.BROKEN_STEPPERS[name]
        ab, se_b = thermo.time_reversal_asymmetry(J, b, x0, 1.0, 0.01, 300, 400, 50, generator=g, stepper=stepper)
        assert ab > 4 * se + 4 * se_b, name


def test_broken_steppers_do_what_their_names_say():
    from papers.nlm.sampler import Stepper
    g = torch.Generator().manual_seed(4)
    J = torch.randn(4, 4, generator=g, dtype=torch.float64); J.fill_diagonal_(0.0)
    b = torch.randn(4, generator=g, dtype=torch.float64)
    x = torch.randn(3, 4, generator=g, dtype=torch.float64)
    y = x.clone(); thermo.NoOnsagerStepper(J, b, x).euler(y, 0.1)
    assert torch.allclose(y, x + 0.1 * velocity(x, J, b))
    y = x.clone(); Stepper(J, b, x).euler(y, 0.1)
    assert torch.allclose(y, x + 0.1 * force(x, J, b))
    xi = torch.ones(3, 4, dtype=torch.float64)
    y = x.clone(); thermo.AnisotropicNoiseStepper(J, b, x).euler(y, 0.1, xi.clone(), 1.0)
    assert torch.allclose(y - (x + 0.1 * force(x, J, b)), torch.tensor([0.5, 1.5, 0.5, 1.5], dtype=torch.float64).expand(3, 4))
    y = x.clone(); thermo.BROKEN_STEPPERS["anisotropic_noise_20"](J, b, x).euler(y, 0.1, xi.clone(), 1.0)
    assert torch.allclose(y - (x + 0.1 * force(x, J, b)), torch.tensor([0.8, 1.2, 0.8, 1.2], dtype=torch.float64).expand(3, 4))


def test_langevin_restore_images_are_the_first_replica_its_ratio_measures():
    """The images notebook 05 draws are replica 0's time averages: their pixel error against the
    target, over the corrupted input's, is exactly replica 0's ratio (and a J = 0 network, which
    knows no pattern, restores nothing)."""
    g = torch.Generator().manual_seed(3)
    target_x = torch.where(torch.rand(4, 16, generator=g, dtype=torch.float64) < 0.5, 2.0, -2.0)
    x0 = dn.corrupt(target_x, 0.25, torch.Generator().manual_seed(1))
    J, b = torch.zeros(16, 16, dtype=torch.float64), torch.zeros(16, dtype=torch.float64)
    target = torch.tanh(target_x)
    res = dn.langevin_restore(x0, J, b, target, steps=100, dt=0.01, T=1.0, reps=3, generator=torch.Generator().manual_seed(0))
    assert res["ratio"].shape == (3, 4) and res["images"].shape == (4, 16)
    err = ((res["images"] - target.numpy()) ** 2).mean(-1) / ((torch.tanh(x0) - target) ** 2).mean(-1).numpy()
    np.testing.assert_allclose(err, res["ratio"][0], rtol=1e-12)
    assert (res["ratio"] > 0.3).all()


def test_a_visit_must_last_the_dwell_and_off_data_windows_are_skipped():
    from papers.nlm.visits import visits

    cls = [1, -1, 1, 3, -1, 3, 3, 1, 6, 6]                 # data-like sequence 1 1 3 3 3 1 6 6
    assert visits(cls, 1) == {"classes": 3, "transitions": 3, "data_like": 0.8}
    assert visits(cls, 2) == {"classes": 3, "transitions": 2, "data_like": 0.8}    # the lone 1 no longer counts
    assert visits(cls, 3) == {"classes": 1, "transitions": 0, "data_like": 0.8}    # only the three 3s last
    assert visits([-1, -1], 2)["classes"] == 0


def test_generalization_on_both_references_takes_the_worst_term_and_its_se():
    from papers.nlm.sweep import generalization_both

    v = {"acc_s_train": 0.45, "acc_t_train": 0.9, "acc_s_test": 0.55, "acc_t_test": 0.6, "e_aai_train": 0.08, "e_aai_test": 0.01}
    v.update({f"{k}_se": 0.01 * (i + 1) for i, k in enumerate(list(v))})
    out = generalization_both(v.get, "_x")
    assert out["gen_acc_dev_both_large_p_x"] == pytest.approx(0.4) and out["gen_acc_dev_both_large_p_x_se"] == 0.02
    assert out["e_aai_both_large_p_x"] == 0.08 and out["e_aai_both_large_p_x_se"] == 0.05


def test_the_data_nulls_copies_fail_on_the_training_set_and_new_data_sits_at_the_small_n_level():
    """The training set returned as samples gives Acc_S = Acc_T = 0 against it (all copies); held-out images
    against a training set of n give Acc about (n - 1)/(2n - 1), the level new data has in an n-vs-n test."""
    from papers.nlm.bootstrap import adversarial_groups

    rng = np.random.default_rng(5)
    train = np.tanh(rng.standard_normal((40, 12)))
    c = adversarial_groups(train, train, n_boot=4, streams=Streams(0))
    assert c["acc_s"][0] == 0.0 and c["acc_t"][0] == 0.0 and c["e_aai"][0] == 0.25
    acc = [metrics.adversarial_accuracy(np.tanh(rng.standard_normal((5, 12))), np.tanh(rng.standard_normal((5, 12))))["acc_t"]
           for _ in range(4000)]
    assert abs(np.mean(acc) - 4 / 9) < 0.01                 # 4 other true points against 5 new ones
