"""Metrics on known answers: Frechet distance, PRDC, class histogram, memorization, hashing."""
import numpy as np
import pytest
import torch

from common.seed import Streams
from papers.acl.metrics import (class_histogram, frechet_distance, kernel_distance, memorization_ratio, prdc,
                                weights_sha256)
from papers.acl.nets import Classifier


def feats(n=2000, d=16, seed=0):
    return np.random.default_rng(seed).standard_normal((n, d))


def test_fid_of_a_set_with_itself_is_zero():
    a = feats()
    assert abs(frechet_distance(a, a)) < 1e-8


def test_fid_of_shifted_features_is_squared_shift():
    a = feats()
    delta = np.linspace(-1, 1, a.shape[1])
    # identical covariances: the trace term vanishes and FID = ||delta||^2
    assert frechet_distance(a, a + delta) == pytest.approx(float(delta @ delta), rel=1e-6)


def test_fid_scaled_gaussian_matches_closed_form():
    a = feats(d=4)
    # mean 2 mu, cov(2a) = 4 S: ||mu||^2 + Tr(S + 4S - 2 * 2S) = ||mu||^2 + Tr(S)
    s, mu = np.cov(a, rowvar=False), a.mean(0)
    assert frechet_distance(a, 2 * a) == pytest.approx(np.trace(s) + mu @ mu, rel=1e-6)


def test_kid_separates_shifted_sets_and_is_near_zero_for_same_distribution():
    a, b = feats(seed=0), feats(seed=1)
    same, _ = kernel_distance(a, b, Streams(0), subsets=5, subset_size=500)
    shifted, _ = kernel_distance(a, b + 1.0, Streams(0), subsets=5, subset_size=500)
    assert abs(same) < 0.05 and shifted > 1.0


def test_prdc_identical_sets_give_full_precision_recall_coverage():
    a = feats(n=300, d=8)
    out = prdc(a, a, k=5)
    assert out["precision"] == 1.0 and out["recall"] == 1.0 and out["coverage"] == 1.0


def test_prdc_disjoint_sets_give_zero():
    a = feats(n=300, d=8)
    out = prdc(a, a + 100.0, k=5)
    assert out["precision"] == 0.0 and out["recall"] == 0.0 and out["density"] == 0.0 and out["coverage"] == 0.0


def test_prdc_equals_the_prdc_package_without_its_threads_or_warnings():
    """The in-thread distances give the package's numbers exactly (its `compute_prdc`, n_jobs=8 threads), with
    the reference radii passed in or not, and no UserWarning (sklearn's `delayed` one) is raised."""
    import contextlib
    import io
    import warnings

    from prdc import compute_prdc

    from papers.acl.metrics import knn_radii

    rng = np.random.default_rng(3)
    real = np.maximum(rng.standard_normal((400, 16)), 0).astype(np.float32)
    fake = np.maximum(rng.standard_normal((400, 16)) + 0.2, 0).astype(np.float32)
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = {k: float(v) for k, v in compute_prdc(real, fake, nearest_k=5).items()}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert prdc(real, fake, 5) == ref == prdc(real, fake, 5, knn_radii(real, 5))
    assert 0 < ref["precision"] < 1 and 0 < ref["coverage"] < 1


def test_class_histogram_exact_values():
    u = class_histogram(np.array([0, 1, 0, 1]), 2)
    assert u["class_frac"] == [0.5, 0.5] and u["class_kl"] == 0.0 and u["class_tv"] == 0.0
    c = class_histogram(np.zeros(8, dtype=int), 4)
    assert c["class_min_frac"] == 0.0 and c["class_kl"] == pytest.approx(np.log(4)) and c["class_tv"] == pytest.approx(0.75)


def test_memorization_ratio_copies_and_fresh_data():
    g = torch.Generator().manual_seed(0)
    train, held = torch.rand(200, 1, 4, 4, generator=g), torch.rand(50, 1, 4, 4, generator=g)
    assert memorization_ratio(train[:50].clone(), train, held) == 0.0          # exact copies
    assert memorization_ratio(held, train, held) == pytest.approx(1.0)         # held-out data itself


def test_weights_hash_tracks_every_weight():
    torch.manual_seed(0)
    a = Classifier(1, 8)
    torch.manual_seed(0)
    b = Classifier(1, 8)
    assert weights_sha256(a) == weights_sha256(b)
    with torch.no_grad():
        b.head.bias[0] += 1e-6
    assert weights_sha256(a) != weights_sha256(b)


def test_gaussian_code_map_reproduces_the_codes_mean_and_covariance():
    import torch
    from papers.acl.samplers import gaussian_code_map

    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 3))
    x = torch.as_tensor(rng.standard_normal((20000, 3)) @ a.T + [1.0, -2.0, 0.5], dtype=torch.float32)
    gmap = gaussian_code_map(lambda b: b, x)   # encoder = identity: the codes are x
    c = gmap(torch.randn(20000, 3, generator=torch.Generator().manual_seed(1))).numpy()
    assert c.mean(0) == pytest.approx([1.0, -2.0, 0.5], abs=0.05)
    assert np.cov(c, rowvar=False) == pytest.approx(a @ a.T, abs=0.08)


def test_gaussian_code_map_puts_the_largest_variance_direction_first():
    """The orthant regions of the control split z_1, z_2: those must be the codes' two largest-variance
    directions (eigh's ascending order would give the smallest)."""
    import torch
    from papers.acl.samplers import gaussian_code_map

    rng = np.random.default_rng(0)
    sd = np.array([0.1, 5.0, 1.0])   # variances 0.01, 25, 1: axis 1 first, then axis 2
    x = torch.as_tensor(rng.standard_normal((20000, 3)) * sd, dtype=torch.float32)
    gmap = gaussian_code_map(lambda b: b, x)
    mu = gmap(torch.zeros(1, 3))[0].numpy()
    for k, axis, scale in ((0, 1, 5.0), (1, 2, 1.0), (2, 0, 0.1)):
        e = torch.zeros(1, 3)
        e[0, k] = 1.0
        step = np.abs(gmap(e)[0].numpy() - mu)
        assert int(step.argmax()) == axis and step[axis] == pytest.approx(scale, rel=0.05)


def small_evaluator(heldout_medians=None, seed=0):
    """An Evaluator on random 8x8 images (a fresh, untrained network of fixed seed): 120 reference, 300 training,
    120 floor images; 60 samples checked for memorization."""
    from papers.acl.metrics import Evaluator

    g = torch.Generator().manual_seed(seed)
    real, train, floor = (torch.rand(n, 1, 8, 8, generator=g) for n in (120, 300, 120))
    torch.manual_seed(seed)
    net = Classifier(1, 8, 10, 4, 8)
    return Evaluator(net, real, train, floor, 10, n_prdc=60, n_mem=60, k=3, kid_subsets=2, kid_subset_size=50,
                     streams=Streams(0).child("evaluation"), heldout_medians=heldout_medians)


def test_memorization_denominators_computed_once_give_the_ratios_bit_for_bit(monkeypatch):
    """Issue 43: the held-out side of the memorization ratios (the reference images' distance to the training set)
    is the same for every sampler, so an evaluator computes it once per sample count (or takes it from the run's
    reference file, `heldout_medians`): every ratio is bit for bit the old formula's, and the reference images'
    nearest-neighbour search runs once however many samplers are scored."""
    from papers.acl import metrics

    ev = small_evaluator()
    g = torch.Generator().manual_seed(1)
    samples = [torch.rand(80, 1, 8, 8, generator=g) for _ in range(3)]
    calls = []
    real_nn = metrics.nn_distance
    monkeypatch.setattr(metrics, "nn_distance", lambda q, r, batch=500: calls.append(len(q)) or real_nn(q, r, batch))
    outs = [ev.evaluate(x) for x in samples]
    assert len(calls) == 2 * 3 + 2            # pixels and features per sampler, the held-out pair once
    feats_train = ev.train_features()
    for x, out in zip(samples, outs):          # the old formula, both sides every time, in numpy's float64
        f = ev.features(x)[:60]
        old = float(np.median(real_nn(x[:60].flatten(1).double(), ev.train_x.flatten(1).double()))
                    / np.median(real_nn(ev.real_x[:60].flatten(1).double(), ev.train_x.flatten(1).double())))
        old_feat = float(np.median(real_nn(torch.as_tensor(f), torch.as_tensor(feats_train)))
                         / np.median(real_nn(torch.as_tensor(ev.real[:60]), torch.as_tensor(feats_train))))
        assert out["memorization"] == old and out["memorization_feat"] == old_feat
        assert out["memorization"] == memorization_ratio(x[:60], ev.train_x, ev.real_x[:60])
    given = metrics.heldout_medians(ev.real_x, ev.train_x, ev.real, feats_train, 60)
    assert given == ev.heldout_medians(60)
    calls.clear()
    ev2 = small_evaluator(heldout_medians={60: given})
    assert repr(ev2.evaluate(samples[0])) == repr(outs[0]) and calls == [60, 60]   # only the sampler's own search
    assert repr(ev2.floor()) == repr(ev.floor())


def test_an_evaluation_without_kid_changes_no_other_number():
    """`kid=False` (the prior regions at quick, `region_kid`): no "kid" / "kid_sd", every other metric bit for bit
    the same, and torch's global generator as it was (KID's subsets come from a keyed stream of their own)."""
    ev = small_evaluator()
    x = torch.rand(80, 1, 8, 8, generator=torch.Generator().manual_seed(2))
    torch.manual_seed(5)
    with_kid = ev.evaluate(x, memorization=False)
    after_with = torch.rand(3)
    torch.manual_seed(5)
    without = ev.evaluate(x, memorization=False, kid=False)
    assert torch.equal(torch.rand(3), after_with)
    assert set(with_kid) - set(without) == {"kid", "kid_sd"}
    assert repr({k: v for k, v in with_kid.items() if k not in ("kid", "kid_sd")}) == repr(without)
    assert repr(ev.evaluate(x, memorization=False)) == repr(with_kid)   # and the next KID is the same
