"""The code generator's parametrization (whitened codes, residual G_c), the held-out code two-sample
test, orthant regions, provenance, and the plain GAN with code_dim != z_dim (regression)."""
import numpy as np
import pytest
import torch

from common.seed import Streams
from papers.acl.acl import CodeGAN
from papers.acl.metrics import memorization_ratio
from papers.acl.regions import orthant_noise
from papers.acl.twosample import c2st_accuracy


def correlated_codes(n=4000, d=3, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((d, d))
    return torch.as_tensor(rng.standard_normal((n, d)) @ a + np.array([3.0, -5.0, 1.0][:d]), dtype=torch.float32)


def test_whitened_residual_gc_with_zero_mlp_is_the_fitted_gaussian():
    codes = correlated_codes()
    acl = CodeGAN(3, 3, hidden=8, depth=1, residual=True)
    acl.set_scale(codes, whiten=True)
    with torch.no_grad():
        acl.G[-1].weight.zero_()
        acl.G[-1].bias.zero_()
    z = torch.randn(5, 3)
    c = codes.double() - codes.double().mean(0)
    cov = c.T @ c / len(c)
    assert torch.allclose((acl.T.double() @ acl.T.double()), cov, atol=1e-4)       # T is the covariance's root
    assert torch.allclose(acl.sample(5, z=z), z @ acl.T + codes.mean(0), atol=1e-5)  # mu + z T exactly
    assert torch.allclose(acl.standardize(acl.sample(5, z=z)), z, atol=1e-4)          # standardize inverts it
    # without whitening T is diag(sd): the per-dimension standardization of before
    acl.set_scale(codes)
    assert torch.allclose(acl.T, torch.diag(codes.std(0)))


def test_residual_pads_or_cuts_the_noise_to_the_code_width():
    for z_dim, code_dim in ((2, 4), (6, 4)):
        acl = CodeGAN(code_dim, z_dim, hidden=8, depth=1, residual=True)
        with torch.no_grad():
            acl.G[-1].weight.zero_()
            acl.G[-1].bias.zero_()
        z = torch.randn(3, z_dim)
        k = min(z_dim, code_dim)
        out = acl.generate(z)
        assert torch.equal(out[:, :k], z[:, :k]) and torch.equal(out[:, k:], torch.zeros(3, code_dim - k))


def test_c2st_chance_for_one_distribution_and_one_for_separated_ones():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2000, 4)), rng.standard_normal((2000, 4))
    st = Streams(0).child("c2st")
    assert abs(c2st_accuracy(a, b, st) - 0.5) < 0.05
    assert c2st_accuracy(a, b + np.array([4.0, 0, 0, 0]), st) > 0.97
    assert c2st_accuracy(a, b, Streams(3)) == c2st_accuracy(a, b, Streams(3))       # deterministic
    with torch.no_grad():                                                           # callable under no_grad
        assert c2st_accuracy(torch.as_tensor(a), torch.as_tensor(b) * 3, st) > 0.7
    with pytest.raises(ValueError):
        c2st_accuracy(a, b[:, :3], st)


def test_orthant_noise_has_the_signs_of_its_region():
    rng = np.random.default_rng(0)
    for k in range(4):
        z = orthant_noise(2000, 5, k, 2, rng)
        assert (np.sign(z[:, 0]) == (-1 if k & 1 else 1)).all() and (np.sign(z[:, 1]) == (-1 if k & 2 else 1)).all()
        assert abs(np.median(np.abs(z[:, 0])) - 0.6745) < 0.05                    # half-normal magnitude
        assert abs(z[:, 2:].mean()) < 0.05                                         # the rest untouched
    with pytest.raises(ValueError):
        orthant_noise(3, 2, 4, 2, rng)


def test_memorization_ratio_in_any_space():
    train = np.array([[0.0, 0.0], [10.0, 0.0]])
    copies = np.array([[0.0, 0.0], [10.0, 0.0]])                 # distance 0 to train
    held = np.array([[0.0, 1.0], [10.0, 2.0]])                   # distances 1 and 2 -> median 1.5
    near = np.array([[0.0, 0.75], [10.0, 0.75]])                 # median 0.75
    assert memorization_ratio(copies, train, held) == 0.0
    assert memorization_ratio(near, train, held) == pytest.approx(0.5)
    assert memorization_ratio(torch.as_tensor(near), torch.as_tensor(train), held) == pytest.approx(0.5)


@pytest.mark.parametrize("study", ["gan", "aclgan", "aclganmmd"])
def test_gan_image_task_with_code_dim_not_z_dim(tmp_path, study):
    """Regression: with code_dim != z_dim the plain GAN's grid and regions were fed z_dim-wide noise
    ('mat1 and mat2 shapes cannot be multiplied (16x8 and 4x128)'); each result carries provenance."""
    from papers.acl import image_replicates
    from papers.acl.config import get_config

    cfg = get_config("smoke", code_dim=4, z_dim=8, gan_steps=3, code_steps=3, n_eval=120, n_region=60,
                     n_prdc=60, n_mem=60, kid_subsets=2, kid_subset_size=50, feat_epochs=1, n_regions=2)
    out = image_replicates.image_task(vars(cfg), str(tmp_path), Streams(0), 0, 0, study)
    assert out["grid"][study].shape == (cfg.n_grid, 1, 8, 8)
    if study == "aclganmmd":   # the null of gan-improves: FID and PRDC only, and no D_c ever trained
        assert "regions" not in out and np.isfinite(out["metrics"][study]["fid"])
        assert out["history"]["d_c"] and all(np.isnan(v) for v in out["history"]["d_c"])
    else:
        assert [r["region"] for r in out["regions"]] == ["shell0", "shell1", "orthant0", "orthant1"]
    prov = out["provenance"]
    assert prov["seed"] == 0 and prov["n_eval"] == 120 and len(prov["featnet_sha256"]) == 64
    assert 0 <= prov["featnet_test_acc"] <= 1 and "test split" in prov["split"]


def test_the_evaluation_network_and_its_features_do_not_depend_on_the_thread_count(tmp_path):
    """Issue 42: the evaluation network trained on every core, so its weights and features differed in the last bit
    between a 1- and a 2-core machine. It trains and featurizes on one torch thread whatever the process holds: the
    same network, features and metrics bit for bit under 2 threads as under 1, and the process's count restored."""
    from papers.acl import evaluation
    from papers.acl.config import get_config
    from papers.acl.images import Images

    cfg = get_config("smoke", feat_epochs=1, n_prdc=60, n_mem=60, kid_subsets=2, kid_subset_size=50)
    images = Images(cfg)
    fake = images.floor_x[:100].flip(-1)   # some images that are not the reference
    old, out = torch.get_num_threads(), {}
    try:
        for threads in (2, 1):
            torch.set_num_threads(threads)
            ev, info = evaluation.evaluator(cfg, images, tmp_path / f"threads-{threads}")
            assert torch.get_num_threads() == threads
            out[threads] = (info, ev.real, ev.train_features(), ev.evaluate(fake))
    finally:
        torch.set_num_threads(old)
    (info2, real2, train2, met2), (info1, real1, train1, met1) = out[2], out[1]
    assert info2 == info1 and len(info1["featnet_sha256"]) == 64 and 0 < info1["featnet_test_acc"] <= 1
    assert np.array_equal(real2, real1) and np.array_equal(train2, train1)
    assert met2 == met1


def test_the_reference_features_are_computed_once_per_run_folder(tmp_path, monkeypatch):
    """The notebook's process and the image replicates' workers read the network's info and the reference's and
    training images' features from one file of the run folder (`evaluation.reference_features`): the second
    evaluator computes no feature, and gives the first one's numbers."""
    from papers.acl import evaluation
    from papers.acl.config import get_config
    from papers.acl.images import Images
    from papers.acl.metrics import Evaluator

    cfg = get_config("smoke", feat_epochs=1, n_prdc=60, n_mem=60, kid_subsets=2, kid_subset_size=50)
    images = Images(cfg)
    first, info1 = evaluation.evaluator(cfg, images, tmp_path)     # trains the network, computes and keeps them

    def refuse(*a, **k):
        raise AssertionError("features computed again")

    monkeypatch.setattr(Evaluator, "features_of", staticmethod(refuse))
    again, info2 = evaluation.evaluator(cfg, images, tmp_path)     # reads them
    assert len(list((tmp_path / "ckpt").glob("reffeats-*.pt"))) == 1 and info1 == info2
    assert np.array_equal(again.real, first.real) and np.array_equal(again.train_features(), first.train_features())


def test_a_replicate_trains_while_the_reference_is_built_and_scores_with_it(tmp_path):
    """Notebook 02 builds the reference (evaluation network, reference features) while its workers train: a replicate
    trains with the run folder's reference lock held elsewhere, then waits for it (`runfiles.run_lock`) before it
    builds or reads the evaluation network, and scores with the run folder's one network."""
    import threading

    from papers.acl import evaluation, image_replicates
    from papers.acl.config import get_config
    from papers.acl.images import Images
    from papers.acl.runfiles import run_lock

    cfg = get_config("smoke", ae_steps=5, code_steps=5, null_steps=5, n_eval=120, n_region=60, n_prdc=60, n_mem=60,
                     kid_subsets=2, kid_subset_size=50, feat_epochs=1, n_regions=2, c2st_steps=5)
    out = {}
    task = threading.Thread(target=lambda: out.update(image_replicates.image_task(vars(cfg), str(tmp_path), Streams(0),
                                                                                   0, 0, "ae")))
    trained = tmp_path / "ckpt" / "ae-r0.pt"
    with run_lock(tmp_path, "reference"):   # the notebook's process, busy with the reference
        task.start()
        for _ in range(600):
            if trained.exists() or not task.is_alive():
                break
            task.join(0.1)
        task.join(1.0)
        assert trained.exists() and task.is_alive() and not out   # trained, now waiting for the reference
        assert not (tmp_path / "ckpt" / "featnet.pt").exists()
    ev, info = evaluation.evaluator(cfg, Images(cfg), tmp_path)   # whichever takes the lock first builds, the other reads
    task.join(120)
    assert not task.is_alive() and out["provenance"]["featnet_sha256"] == info["featnet_sha256"] == ev.hash
    assert np.isfinite(out["metrics"]["acl"]["fid"])


def test_the_reference_is_built_beside_only_when_no_replicate_trains_in_this_process(tmp_path, monkeypatch):
    """Notebook 02 builds its reference beside `image_study` unless a replicate would train in the notebook's own
    process (one missing replicate, or one worker): that replicate's one-thread limit and the reference's would
    overlap. Counted on the replicates not yet cached, as `image_study` counts them."""
    from types import SimpleNamespace

    from papers.acl import image_replicates as ir
    from papers.acl.config import get_config

    monkeypatch.setenv("REPRO_THREADS", "2")
    run = SimpleNamespace(dir=tmp_path, seed=0, streams=Streams(0))
    cfg = get_config("smoke", replicates=2, workers=0)
    assert len(ir.missing_tasks(cfg, run, ["ae"])) == 2 and not ir.trains_here(cfg, run, ["ae"])   # two workers
    assert ir.trains_here(get_config("smoke", replicates=2, workers=1), run, ["ae"])              # one worker
    cache = ir.task_cache(tmp_path, 0, "ae", 0)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(b"")                                                     # replicate 0 cached: one left
    assert [t["r"] for t in ir.missing_tasks(cfg, run, ["ae"])] == [1] and ir.trains_here(cfg, run, ["ae"])
    ir.task_cache(tmp_path, 0, "ae", 1).write_bytes(b"")                      # all cached: nothing trains
    assert ir.missing_tasks(cfg, run, ["ae"]) == [] and not ir.trains_here(cfg, run, ["ae"])


def test_without_code_two_sample_tests_a_replicate_scores_the_same_bits(tmp_path):
    """`code_c2st` off (quick, issue 43): the replicate carries no "c2st", and everything else it computes (metrics,
    regions, grids, history) is bit for bit what it is with the tests on: they draw from keyed streams of their own
    and restore torch's global generator."""
    from papers.acl import image_replicates
    from papers.acl.config import get_config

    cfg = get_config("smoke", ae_steps=5, code_steps=5, null_steps=5, n_eval=120, n_region=60, n_prdc=60, n_mem=60,
                     kid_subsets=2, kid_subset_size=50, feat_epochs=1, n_regions=2, c2st_steps=5)
    out = {}
    for on in (True, False):
        torch.manual_seed(7)   # the same global state before each: a test that moved it would show below
        out[on] = image_replicates.image_task(vars(cfg) | {"code_c2st": on}, str(tmp_path / str(on)), Streams(0), 0, 0, "ae")
        out[on]["after"] = torch.rand(3)
    assert set(out[True]["c2st"]) == {"acl", "normal", "gauss", "gmm", "mmd_gc", "train_codes"} and "c2st" not in out[False]
    assert set(out[True]) - {"c2st"} == set(out[False])
    for key in ("metrics", "regions", "regions_gauss", "history", "provenance"):   # floats' reprs: every bit
        assert repr(out[True][key]) == repr(out[False][key]), key
    assert torch.equal(out[True]["after"], out[False]["after"])
    assert all(np.array_equal(out[True]["grid"][k], out[False]["grid"][k]) for k in out[True]["grid"])


def test_a_process_reads_each_split_once_and_every_images_owns_its_arrays(monkeypatch):
    """`images.dataset` (issue 43): a worker that scores several replicates decodes the data once; each `Images` holds
    its own writable copies (nothing written through one reaches the cache or another), the same values each time."""
    from papers.acl import images as images_mod
    from papers.acl.config import get_config

    calls = []
    real = images_mod.load_dataset
    monkeypatch.setattr(images_mod, "load_dataset", lambda name, split: calls.append((name, split)) or real(name, split))
    images_mod.dataset.cache_clear()
    try:
        cfg = get_config("smoke")
        a = images_mod.Images(cfg)
        first = {k: getattr(a, k).clone() for k in ("x", "y", "floor_x", "test_x", "test_y", "all_x", "all_y")}
        for k in first:
            getattr(a, k).add_(1)   # writable, and owned by `a`
        b = images_mod.Images(cfg)
        assert calls == [("digits", "train"), ("digits", "test")]
        assert all(torch.equal(getattr(b, k), v) for k, v in first.items())
        assert b.provenance == a.provenance and len(b.provenance) == 2
    finally:
        images_mod.dataset.cache_clear()


def test_without_region_kid_a_replicate_scores_the_same_bits(tmp_path):
    """`region_kid` off (quick, issue 43): the prior regions carry no "kid" / "kid_sd", and every other number of the
    replicate (its metrics, every other key of every region, the grids, the history) is bit for bit the same. The
    run's reference file holds the memorization ratios' held-out side at n_mem samples, equal to what an evaluator
    without it computes."""
    from papers.acl import evaluation, image_replicates
    from papers.acl.config import get_config
    from papers.acl.images import Images
    from papers.acl.metrics import Evaluator

    cfg = get_config("smoke", ae_steps=5, code_steps=5, null_steps=5, n_eval=120, n_region=60, n_prdc=60, n_mem=60,
                     kid_subsets=2, kid_subset_size=50, feat_epochs=1, n_regions=2, code_c2st=False)
    out = {}
    for on in (True, False):
        torch.manual_seed(7)
        out[on] = image_replicates.image_task(vars(cfg) | {"region_kid": on}, str(tmp_path / str(on)), Streams(0), 0, 0, "ae")
        out[on]["after"] = torch.rand(3)
    assert set(out[True]) == set(out[False])
    for key in ("metrics", "history", "provenance"):
        assert repr(out[True][key]) == repr(out[False][key]), key
    assert torch.equal(out[True]["after"], out[False]["after"])
    assert all(np.array_equal(out[True]["grid"][k], out[False]["grid"][k]) for k in out[True]["grid"])
    for key in ("regions", "regions_gauss"):
        assert len(out[True][key]) == len(out[False][key]) == 2 + 2
        for a, b in zip(out[True][key], out[False][key]):
            assert "kid" in a and "kid_sd" in a and not {"kid", "kid_sd"} & set(b)
            assert repr({k: v for k, v in a.items() if k not in ("kid", "kid_sd")}) == repr(b)
    assert "memorization" in out[False]["metrics"]["acl"]
    images = Images(cfg)
    net, _, feats = evaluation.reference_features(cfg, images, tmp_path / "False")
    assert list(feats["heldout"]) == [60]
    plain = Evaluator(net, images.test_x, images.x.cpu(), images.floor_x, len(images.classes), n_mem=60,
                      real_features=feats["real"], train_features=feats["train"])
    assert plain.heldout_medians(60) == feats["heldout"][60]
