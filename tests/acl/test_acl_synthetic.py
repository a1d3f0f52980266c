"""Mode-coverage metrics on known answers, mixtures, prior shells, code baselines, losses."""
import numpy as np
import pytest
import torch
from scipy import stats

from common.errors import UserError
from papers.acl.baselines import BASELINES, code_samplers, fit_gaussian
from papers.acl.losses import d_loss, g_loss, gradient_penalty, check_loss
from papers.acl.regions import shell_noise
from papers.acl.synthetic import MIN_COUNT_SHARE, hq_fraction_exact, mixture, mode_stats, sample_mixture, uniform_like


@pytest.mark.parametrize("name,k", [("ring", 8), ("grid", 25)])
def test_true_mixture_samples_cover_all_modes_with_989_percent_hq(name, k):
    means, sigma = mixture(name)
    x = sample_mixture(name, 20000, np.random.default_rng(0))
    st = mode_stats(x, means, sigma)
    assert st["modes"] == k and st["n_modes"] == k
    p = hq_fraction_exact(3.0)
    assert p == pytest.approx(0.98889, abs=1e-5)
    assert abs(st["hq_frac"] - p) < 4 * np.sqrt(p * (1 - p) / len(x))  # binomial 4-sigma band
    assert st["kl"] < 0.01


def test_collapsed_generator_gives_one_mode():
    means, sigma = mixture("ring")
    x = np.repeat(means[3:4], 500, axis=0)
    st = mode_stats(x, means, sigma)
    assert st["modes"] == 1 and st["hq_frac"] == 1.0 and st["counts"][3] == 500
    assert st["kl"] == pytest.approx(np.log(8))


def test_far_samples_are_not_high_quality():
    means, sigma = mixture("grid")
    st = mode_stats(np.full((100, 2), 50.0), means, sigma)
    assert st["hq_frac"] == 0.0 and st["modes"] == 0


def test_strict_mode_count_needs_a_share():
    means, sigma = mixture("ring")
    x = np.concatenate([np.repeat(means[:1], 990, 0), means[1:2].repeat(10, 0)])
    st = mode_stats(x, means, sigma)
    assert st["modes"] == 1 and st["modes_any"] == 2   # 10 << 0.2 * 1000 / 8 = 25; VEEGAN's count takes it
    assert mode_stats(x, means, sigma, min_count_share=0.0)["modes"] == 2


def test_pacgan_threshold_is_one_fifth_of_the_uniform_share_of_all_samples():
    means, sigma = mixture("grid")   # 2500 samples, 25 modes: a mode needs 20 HQ samples (PacGAN)
    far = np.full((2500 - 20 - 19, 2), 50.0)
    x = np.concatenate([np.repeat(means[:1], 20, 0), np.repeat(means[1:2], 19, 0), far])
    st = mode_stats(x, means, sigma)
    assert MIN_COUNT_SHARE == 0.2 and st["modes"] == 1 and st["modes_any"] == 2 and st["counts"][:2] == [20, 19]


@pytest.mark.parametrize("name", ["ring", "grid"])
def test_uniform_control_passes_the_one_sample_count_and_captures_no_mode(name):
    """The structureless null: uniform noise on the data's box / annulus reaches every mode with some
    HQ sample (why VEEGAN's count is too lenient) but far fewer than 1/5 of a mode's share."""
    means, sigma = mixture(name)
    data = sample_mixture(name, 10000, np.random.default_rng(0))
    u = uniform_like(name, data, 2500, np.random.default_rng(1))
    st = mode_stats(u, means, sigma)
    assert st["modes_any"] >= 0.8 * len(means) and st["modes"] == 0
    # its HQ fraction is about the area of the 3-sigma discs over the area of the support (less the
    # parts of the border discs that stick out of the box / annulus)
    disc = len(means) * np.pi * (3 * sigma) ** 2
    if name == "grid":
        lo, hi = data.min(0), data.max(0)
        area = np.prod(hi - lo)
        assert (u.min(0) >= lo - 1e-6).all() and (u.max(0) <= hi + 1e-6).all()
    else:
        r = np.linalg.norm(data, axis=1)
        area = np.pi * (r.max() ** 2 - r.min() ** 2)
        ru = np.linalg.norm(u, axis=1)
        assert ru.min() >= r.min() - 1e-5 and ru.max() <= r.max() + 1e-5
    assert 0.6 * disc / area < st["hq_frac"] < 1.1 * disc / area


def test_unknown_mixture_is_a_user_error():
    with pytest.raises(UserError):
        mixture("spiral")


def test_shell_noise_radii_are_in_their_quantile_band():
    rng = np.random.default_rng(0)
    d = 16
    z = shell_noise(2000, d, 0.8, 1.0, rng)
    q = stats.chi.cdf(np.linalg.norm(z, axis=1), d)
    assert q.min() >= 0.8 - 1e-9 and q.max() <= 1.0
    # the union of equal-mass shells is N(0, I): E|z|^2 = d
    allz = np.concatenate([shell_noise(4000, d, k / 5, (k + 1) / 5, rng) for k in range(5)])
    assert (allz ** 2).sum(1).mean() == pytest.approx(d, rel=0.03)


def test_code_baselines_fit_and_sample():
    rng = np.random.default_rng(0)
    codes = rng.standard_normal((3000, 3)) @ np.diag([1.0, 2.0, 0.5]) + np.array([1.0, -1.0, 0.0])
    mu, cov = fit_gaussian(codes)
    assert np.allclose(mu, codes.mean(0)) and np.allclose(cov, np.cov(codes, rowvar=False, bias=True))
    s = code_samplers(codes, gmm_components=3, seed=0)
    assert tuple(s) == BASELINES == ("normal", "gauss", "gmm")  # the names evaluate_samples keeps apart
    for name in ("normal", "gauss", "gmm"):
        x = s[name](5000, np.random.default_rng(1))
        assert x.shape == (5000, 3)
    g = s["gauss"](20000, np.random.default_rng(2))
    assert np.allclose(g.mean(0), mu, atol=0.05) and np.allclose(g.std(0), [1.0, 2.0, 0.5], rtol=0.05)


def test_losses_known_values():
    zero = torch.zeros(4)
    assert float(d_loss("ns", zero, zero)) == pytest.approx(2 * np.log(2))
    assert float(g_loss("ns", zero)) == pytest.approx(np.log(2))
    assert float(d_loss("wgan-gp", torch.ones(4), -torch.ones(4))) == -2.0
    with pytest.raises(UserError):
        check_loss("hinge")


@pytest.mark.parametrize("scale,expected", [(1.0, 0.0), (2.0, 1.0), (3.0, 4.0)])
def test_gradient_penalty_of_linear_critic(scale, expected):
    w = torch.tensor([0.6, 0.8]) * scale  # |grad| = scale everywhere
    critic = lambda x: x @ w  # noqa: E731
    gp = gradient_penalty(critic, torch.randn(16, 2), torch.randn(16, 2), torch.Generator().manual_seed(0))
    assert float(gp) == pytest.approx(expected, abs=1e-6)


def test_synthetic_metrics_pair_by_replicate_with_median_and_minimum_modes():
    from papers.acl.analysis import synthetic_metrics

    modes = [8, 2, 8, 7, 8]  # replicate 1 collapsed: the median ignores it, the minimum reports it
    rows = [{"mixture": "ring", "replicate": r, "method": m, "hq_frac": 0.1 * r, "modes": k if m == "acl_ae" else 3, "kl": 0.0}
            for r, k in reversed(list(enumerate(modes))) for m in ("acl_ae", "ae_normal")]
    out = synthetic_metrics(rows, ["ring"])
    assert out["syn_ring_acl_ae_modes"] == modes and out["syn_ring_ae_normal_modes"] == [3] * 5
    assert out["syn_ring_acl_ae_hq"] == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4])   # ordered by replicate
    assert out["syn_ring_acl_ae_modes_median"] == 8.0 and out["syn_ring_acl_ae_modes_min"] == 2
    rows += [{"mixture": "ring", "replicate": r, "method": "uniform", "hq_frac": 0.05, "modes": 0, "modes_any": 8, "kl": 0.1}
             for r in range(5)]
    out = synthetic_metrics(rows, ["ring"])   # the control's median is there for the mode claims
    assert out["syn_ring_uniform_modes_median"] == 0.0 and out["syn_ring_uniform_modes_any"] == [8] * 5
