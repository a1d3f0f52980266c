"""Encoding round trip and metrics on known answers."""
import numpy as np
import pytest
import torch

from papers.nlm import encoding, metrics
from papers.nlm.sweep import basin_diagnostics, crossing
from papers.nlm.visits import count_transitions


def test_encoding_round_trip():
    p = np.linspace(0, 1, 11)
    x = encoding.encode(p)
    np.testing.assert_allclose(encoding.decode(x), np.clip(2 * p - 1, -0.97, 0.97), atol=1e-12)
    assert encoding.decode(encoding.encode(0.5)) == pytest.approx(0.0)
    assert np.abs(x).max() == pytest.approx(np.arctanh(0.97))


def test_binary_datasets_threshold_the_same_images_at_one_half():
    from common.data import load_dataset
    from common.errors import UserError

    grey, binary = encoding.load("digits", rng=np.random.default_rng(3)), encoding.load("digits_binary", rng=np.random.default_rng(3))
    assert (binary.y_train == grey.y_train).all() and (binary.y_test == grey.y_test).all()   # same split, same order
    clip = np.arctanh(0.97)
    for a, b in ((grey.x_train, binary.x_train), (grey.x_test, binary.x_test)):
        np.testing.assert_allclose(np.abs(b), clip, rtol=1e-6)      # every pixel saturated
        assert ((b > 0) == (np.tanh(a) >= 0)).all()                   # p >= 1/2 is 2p - 1 >= 0: the grey image's sign
    d = load_dataset("digits", "train")
    raw = np.asarray(d.x)[np.isin(d.y, (1, 3, 6))]
    assert 0.25 < ((raw > 0.1) & (raw < 0.9)).mean() < 0.4          # the 8x8 digits are graded: about a third of pixels
    assert encoding.base_name("mnist_binary") == "mnist" and encoding.spec("fashion14_binary")[3] is True
    for bad in ("digits_bin", "binary", "mnist_binary_binary"):
        with pytest.raises(UserError, match="unknown dataset"):
            encoding.spec(bad)


def test_preflight_takes_a_binary_dataset_and_its_size_limit():
    from common.errors import UserError
    from papers.nlm.config import get_config, preflight

    # quick's second model trains on Fashion-MNIST, whose files preflight checks: off here, so that the test needs
    # no dataset beyond scikit-learn's digits (a fresh machine has no Fashion-MNIST before `make data`)
    preflight(get_config("quick", dataset="digits_binary", second_updates=0))
    with pytest.raises(UserError, match="exceeds the 396 digits_binary images"):
        preflight(get_config("quick", dataset="digits_binary", second_updates=0, sweep_sizes=[5, 397]))
    with pytest.raises(UserError, match="'dataset' must be one of 'digits', 'digits_binary'.*got 'digit'"):
        get_config("quick", dataset="digit")                        # config.BOUNDS, before any preflight
    with pytest.raises(UserError, match="'ooe_boot' must be >= 2, got 1"):
        get_config("quick", ooe_boot=1)


def test_adversarial_accuracy_known_answers():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((200, 5))
    copy = metrics.adversarial_accuracy(a, a.copy())
    assert copy["acc_t"] == 0.0 and copy["acc_s"] == 0.0 and copy["e_aai"] == pytest.approx(0.25)
    fresh = metrics.adversarial_accuracy(a, rng.standard_normal((200, 5)))
    assert abs(fresh["acc_t"] - 0.5) < 0.1 and abs(fresh["acc_s"] - 0.5) < 0.1 and fresh["e_aai"] < 0.01
    far = metrics.adversarial_accuracy(a, rng.standard_normal((200, 5)) + 100)
    assert far["acc_t"] == 1.0 and far["acc_s"] == 1.0


def test_memorization_covariance_distances():
    train = np.eye(4) * 3
    samples = train + 0.01
    assert metrics.memorized_fraction(samples, train) == 1.0
    mid = np.array([[1.5, 1.5, 0, 0]])                       # equidistant from two images
    assert metrics.memorized_fraction(mid, train) == 0.0
    d1, d2, i = metrics.nearest_two(np.array([[3.0, 0, 0, 0]]), train)
    assert d1[0] == pytest.approx(0.0, abs=1e-6) and d2[0] == pytest.approx(np.sqrt(18)) and i[0] == 0
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5000, 3))
    assert metrics.covariance_error(x, x) == 0.0
    assert metrics.covariance_error(x, 2 * x) == pytest.approx(np.mean((3 * np.cov(x.T)) ** 2))
    labels = metrics.nearest_centroid_labels(np.array([[2.9, 0, 0, 0], [0, 0, 0, 2.5]]), train, np.array([7, 8, 9, 9]))
    assert labels.tolist() == [7, 9]


def test_distance_ratio_is_not_measured_when_test_images_sit_on_training_images():
    """d_gen / d_test by hand; a held-out set equal to the training set (median 0) gives NaN, not a division error."""
    train = np.eye(4) * 3
    q = metrics.quality(train + np.array([0.0, 0.0, 0.0, 0.5]), train, train)
    assert q["d_test_median"] == 0.0 and q["d_gen_median"] == pytest.approx(0.5)
    assert np.isnan(metrics.distance_ratio(q["d_gen_median"], q["d_test_median"]))
    assert metrics.distance_ratio(0.5, 2.0) == 0.25


def test_digits_split_and_heldout_accuracy():
    d = encoding.load("digits")
    assert d.x_train.shape == (396, 64) and d.x_test.shape == (150, 64)
    assert set(np.unique(d.y_train)) == {1, 3, 6}
    tr, te = d.images("train"), d.images("test")
    assert not (metrics.pairwise(te, tr).min() < 1e-9)       # held-out images are not in the training list
    same = metrics.quality(tr[:150], tr[:150], te)
    assert same["acc_t_train"] == 0.0 and same["acc_s_train"] == 0.0 and same["memorized"] == 1.0
    held = metrics.adversarial_accuracy(tr[:150], te)
    assert abs(held["acc_t"] - 0.5) < 0.15 and abs(held["acc_s"] - 0.5) < 0.15


def test_helpers():
    assert crossing([10, 100], [1.0, 0.0]) == pytest.approx(np.sqrt(1000))
    assert np.isnan(crossing([10, 100], [0.2, 0.1]))
    n, runs = count_transitions([1, 1, 1, 3, 1, 1, 1, 6, 6, 6])
    assert n == 1 and runs == [[1, 6], [6, 3]]


def test_basin_diagnostics_on_a_hand_computed_case():
    """J = 0, b = 0: E(x) = ½‖x‖², so every energy is a sum of squares; distances are between tanh images
    whose nearest neighbour is evident. Two models of one replicate, P = 2 (smallest) and P = 3 (largest)."""
    train = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]], dtype=np.float32)       # x-space training list
    test_x = np.array([[0.0, 1.0]], dtype=np.float32)
    per_model = [(2, 0), (3, 0)]
    t = lambda row: torch.tensor([row])  # noqa: E731  (one chain: shape (1, N))
    x = torch.stack([t([3.0, 0.0]), t([0.0, 0.0])])          # chains from noise, one per model
    xq = torch.stack([t([5.0, 0.0]), t([0.0, 3.0])])         # the same after the quench
    xp = torch.stack([t([1.0, 0.0]), t([0.0, 2.0])])         # persistent chains: on a training image
    xpq = torch.stack([t([0.0, 0.5]), t([2.0, 2.0])])       # the persistent chains quenched
    J, b = torch.zeros(2, 2, 2), torch.zeros(2, 2)
    m = basin_diagnostics(per_model, [train], test_x, x, xp, xq, xpq, J, b, T=1.0)
    th = np.tanh
    assert m["energy_equipartition"] == 1.0                              # N T / 2 with N = 2
    # P = 2: training images (0, 0) and (tanh 1, 0)
    assert m["small_p_noise_d_train_median"] == pytest.approx(th(3.0) - th(1.0), rel=1e-6)
    assert m["small_p_noise_quench_d_train_median"] == pytest.approx(th(5.0) - th(1.0), rel=1e-6)
    assert m["small_p_pcd_d_train_median"] == pytest.approx(0.0, abs=1e-7)
    assert m["small_p_test_d_train_median"] == pytest.approx(th(1.0), rel=1e-6)        # (0, tanh 1) to (0, 0)
    assert m["small_p_noise_quench_frac_saturated"] == pytest.approx(0.5)              # |5| > 4, |0| is not
    assert m["small_p_energy_noise"] == pytest.approx(4.5) and m["small_p_energy_noise_quench"] == pytest.approx(12.5)
    assert m["small_p_energy_pcd"] == pytest.approx(0.5) and m["small_p_energy_pcd_quench"] == pytest.approx(0.125)
    assert m["small_p_energy_train"] == pytest.approx(0.25)                            # median of 0 and 0.5
    assert m["small_p_energy_test"] == pytest.approx(0.5)
    # P = 3: the image (0, tanh 2) joins; the quenched chain (0, 3) is nearest to it
    assert m["large_p_noise_d_train_median"] == pytest.approx(0.0, abs=1e-7)
    assert m["large_p_noise_quench_d_train_median"] == pytest.approx(th(3.0) - th(2.0), rel=1e-6)
    assert m["large_p_test_d_train_median"] == pytest.approx(th(2.0) - th(1.0), rel=1e-6)        # now nearest to (0, tanh 2)
    assert m["large_p_noise_quench_frac_saturated"] == 0.0
    assert m["large_p_energy_train"] == pytest.approx(0.5)                             # median of 0, 0.5, 2
    assert m["large_p_energy_noise_quench"] == pytest.approx(4.5)
    assert m["large_p_energy_pcd"] == pytest.approx(2.0) and m["large_p_energy_pcd_quench"] == pytest.approx(4.0)


def test_basin_diagnostics_accuracies_of_the_persistent_chains_hot_and_quenched():
    """Two held-out images (0, ±tanh 1); two persistent chains per model. Hot: both chains on the first
    held-out image (ties count as the other kind, so both accuracies are 0). Quenched: both chains at
    nearly the same point (tanh 3, 0) / (tanh 3.5, 0), far from both held-out images: each sample's
    nearest neighbour is the other sample (acc_s = 1), each held-out image's is a sample (acc_t = 0)."""
    th = np.tanh
    train = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]], dtype=np.float32)
    test_x = np.array([[0.0, 1.0], [0.0, -1.0]], dtype=np.float32)
    per_model = [(2, 0), (3, 0)]
    xp = torch.tensor([[[0.0, 1.0], [0.0, 1.0]]] * 2)
    xpq = torch.tensor([[[3.0, 0.0], [3.5, 0.0]]] * 2)
    x, xq = xpq.clone(), torch.zeros(2, 2, 2)               # chains from noise: as close together as the quenched
    m = basin_diagnostics(per_model, [train], test_x, x, xp, xq, xpq, torch.zeros(2, 2, 2), torch.zeros(2, 2), T=1.0)
    for tag in ("small_p", "large_p"):
        assert m[f"{tag}_pcd_acc_t_test"] == 0.0 and m[f"{tag}_pcd_acc_s_test"] == 0.0
        assert m[f"{tag}_pcd_quench_acc_t_test"] == 0.0 and m[f"{tag}_pcd_quench_acc_s_test"] == 1.0
        assert m[f"{tag}_pcd_d_other_sample_median"] == 0.0
        assert m[f"{tag}_pcd_quench_d_other_sample_median"] == pytest.approx(th(3.5) - th(3.0), rel=1e-4)
        assert m[f"{tag}_noise_d_other_sample_median"] == pytest.approx(th(3.5) - th(3.0), rel=1e-4)
        assert m[f"{tag}_test_d_other_test_median"] == pytest.approx(2 * th(1.0), rel=1e-6)


def test_basin_diagnostics_pool_replicates_by_median_and_average_accuracies():
    """Two replicates of each P, three persistent chains per model and two held-out images: distances are
    pooled over both replicates before the median (not the first replicate, not a mean), accuracies are
    the mean over replicates of the first n = 2 chains against the held-out images, the hot energy is
    the persistent chains' and not the quenched ones'; and the sweep's guard refuses a colliding name."""
    th = np.tanh
    train = np.array([[0.0, 0.0], [0.0, 2.0]], dtype=np.float32)
    test_x = np.array([[0.0, 1.0], [0.0, -1.0]], dtype=np.float32)
    per_model = [(1, 0), (2, 0), (1, 1), (2, 1)]           # P = 1 and 2, replicates 0 and 1 (one list each)
    lists = [train, train]
    z = torch.zeros(3, 2)
    # persistent chains of the P = 1 models: distances to (0, 0) are tanh of the first coordinate
    rep0 = torch.tensor([[1.0, 0.0], [2.0, 0.0], [3.0, 0.0]])
    rep1 = torch.tensor([[4.0, 0.0], [5.0, 0.0], [0.5, 0.0]])
    xp = torch.stack([rep0, z, rep1, z])
    xpq = torch.stack([z, z, z, z])
    x = xq = torch.stack([z, z, z, z])
    J, b = torch.zeros(4, 2, 2), torch.zeros(4, 2)
    m = basin_diagnostics(per_model, lists, test_x, x, xp, xq, xpq, J, b, T=1.0)
    pooled = th(np.array([1.0, 2.0, 3.0, 4.0, 5.0, 0.5]))
    assert m["small_p_pcd_d_train_median"] == pytest.approx(float(np.median(pooled)), rel=1e-6)
    assert m["small_p_pcd_quench_d_train_median"] == 0.0                          # every quenched chain on (0, 0)
    # energies ½‖x‖² of the hot chains (not the quenched ones, all 0): median of 0.5, 2, 4.5, 8, 12.5, 0.125
    assert m["small_p_energy_pcd"] == pytest.approx(float(np.median([0.5, 2.0, 4.5, 8.0, 12.5, 0.125])))
    # first n = 2 chains of each replicate against (0, ±tanh 1): replicate 0's samples (tanh 1, 0),
    # (tanh 2, 0) are each other's nearest (acc_s 1); replicate 1's (tanh 4, 0), (tanh 5, 0) too
    assert m["small_p_pcd_acc_s_test"] == 1.0
    assert m["small_p_pcd_d_other_sample_median"] == pytest.approx(float(np.median([th(2) - th(1)] * 2 + [th(5) - th(4)] * 2)), rel=1e-5)
    # acc_t: a held-out image's nearest held-out image is 2 tanh 1 away; replicate 0's nearest sample is
    # sqrt(tanh²1 + tanh²1) < 2 tanh 1 (acc_t 0), replicate 1's sqrt(tanh²4 + tanh²1) < 2 tanh 1 too
    assert m["small_p_pcd_acc_t_test"] == 0.0


def test_the_sweep_refuses_a_diagnostic_that_would_overwrite_a_metric(monkeypatch, tmp_path):
    from common.study import measure, open_run
    from papers.nlm.studies import memorization_sweep

    monkeypatch.setattr(memorization_sweep, "basin_diagnostics", lambda *a, **k: {"mem_small_p": 0.0})
    over = dict(sweep_sizes=[5, 20], sweep_updates=2, sweep_gen_steps=4, avg_steps=2, quench_steps=2, sweep_boot=2)
    cfg, run = open_run("nlm", "smoke", seed=0, device="cpu", run_dir=tmp_path, overrides=over)
    with pytest.raises(RuntimeError, match="overwrite"):
        measure("nlm", "memorization_sweep", cfg, run)
