"""The control of the ACL claims: G_c of ACL's size trained by MMD, without the adversary. The kernel
distance on hand-computable sets, the median heuristic, and the fit: same initialization as ACL's G_c,
D_c never trained, the codes' distribution learned, the global RNG left as it was."""
import math

import numpy as np
import pytest
import torch

from common.seed import Streams
from papers.acl.acl import CodeGAN
from papers.acl.mmd import BANDWIDTH_FACTORS, fit_mmd_code_generator, kernel_mean, median_distance, mmd2
from common.errors import UserError
from papers.acl.train import Hyper


def test_mmd2_of_two_points_is_the_closed_form():
    x, y = torch.tensor([[0.0]]), torch.tensor([[1.0]])
    assert float(mmd2(x, y, [1.0])) == pytest.approx(2 - 2 * math.exp(-0.5), abs=1e-7)
    # two bandwidths: k = exp(-d^2/2) + exp(-d^2/8), so k(a, a) = 2
    assert float(mmd2(x, y, [1.0, 2.0])) == pytest.approx(4 - 2 * (math.exp(-0.5) + math.exp(-0.125)), abs=1e-6)


def test_mmd2_is_zero_for_the_same_set_symmetric_and_grows_with_the_shift():
    x = torch.tensor([[0.0, 0.0], [2.0, 1.0], [-1.0, 3.0]])
    assert float(mmd2(x, x.flip(0), [0.5, 1.0])) == pytest.approx(0.0, abs=1e-6)
    y = x + torch.tensor([0.3, 0.0])
    assert float(mmd2(x, y, [1.0])) == pytest.approx(float(mmd2(y, x, [1.0])), abs=1e-7)
    shifts = [float(mmd2(x, x + s, [1.0])) for s in (0.1, 0.5, 2.0)]
    assert shifts == sorted(shifts) and shifts[0] > 0


def test_the_one_exp_kernel_equals_the_five_exps_in_value_and_gradient():
    """The bandwidths of BANDWIDTH_FACTORS at a float median take the one-exp path (`_GaussianSum`); tensor
    bandwidths the plain sum. Both give the same values and gradients up to float rounding."""
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(64, 5, generator=g), torch.randn(48, 5, generator=g) + 0.3
    bw = [median_distance(torch.cat([x, y])) * f for f in BANDWIDTH_FACTORS]
    a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
    fast = kernel_mean(a, y, bw)
    plain = kernel_mean(b, y, [torch.tensor(h) for h in bw])
    fast.backward(), plain.backward()
    assert float(fast.detach()) == pytest.approx(float(plain.detach()), rel=1e-5)
    assert torch.allclose(a.grad, b.grad, rtol=1e-4, atol=1e-7) and float(a.grad.abs().max()) > 1e-4
    assert float(mmd2(x, y, bw)) == pytest.approx(float(mmd2(x, y, [torch.tensor(h) for h in bw])), rel=1e-4)
    odd = [1.0, 3.0]   # ratios that are no powers of two: the plain sum
    assert float(kernel_mean(x, y, odd)) == pytest.approx(float(sum(torch.exp(-torch.cdist(x, y).pow(2) / (2 * h * h)) for h in odd).mean()))


def test_median_distance_of_three_points():
    assert median_distance(torch.tensor([[0.0], [1.0], [3.0]])) == pytest.approx(2.0)   # distances 1, 3, 2


def _codes(n=3000, seed=0):
    """Two well separated clusters in 2-d: a single Gaussian cannot match them."""
    rng = np.random.default_rng(seed)
    k = rng.integers(2, size=n)
    return torch.as_tensor(np.array([[-3.0, 1.0], [3.0, -1.0]])[k] + 0.3 * rng.standard_normal((n, 2)), dtype=torch.float32)


HP = dict(code_dim=2, z_dim=2, hidden=32, depth=2, code_batch=128, code_lr=1e-3, code_lr_final=0.1)


def test_no_steps_gives_acl_g_c_at_its_initialization_and_d_c_is_never_trained():
    codes = _codes(200)
    hp = Hyper(**HP, code_steps=0, whiten_codes=True, residual_gc=True)
    with Streams(11).torch_global("gc-init"):                         # how fit_code_model builds ACL's G_c
        acl = CodeGAN(2, 2, 32, 2, residual=True)
    null = fit_mmd_code_generator(codes, hp, Streams(11))
    assert all(torch.equal(a, b) for a, b in zip(acl.parameters(), null.parameters()))
    hp = Hyper(**HP, code_steps=5)
    trained = fit_mmd_code_generator(codes, hp, Streams(11))
    assert all(torch.equal(a, b) for a, b in zip(acl.D.parameters(), trained.D.parameters()))      # no adversary
    assert not all(torch.equal(a, b) for a, b in zip(acl.G.parameters(), trained.G.parameters()))
    assert len(trained.bandwidths) == len(BANDWIDTH_FACTORS) and not trained.training


def test_the_fit_learns_two_clusters_and_leaves_the_global_rng_alone():
    codes = _codes(1000)
    state = torch.get_rng_state()
    hp = Hyper(**(HP | dict(hidden=24, code_batch=64, code_lr=3e-3)), code_steps=200)
    null = fit_mmd_code_generator(codes, hp, Streams(3))
    assert torch.equal(torch.get_rng_state(), state)
    again = fit_mmd_code_generator(codes, hp, Streams(3))
    assert all(torch.equal(a, b) for a, b in zip(null.parameters(), again.parameters()))     # seeded
    centres = torch.tensor([[-3.0, 1.0], [3.0, -1.0]])

    def near(c):  # share of samples within 1.2 of a cluster centre (4 sd of a cluster)
        return float(((c[:, None, :] - centres).norm(dim=2).min(1).values < 1.2).float().mean())

    c = null.sample(1000, torch.Generator().manual_seed(0))
    assert 0.3 < float((c[:, 0] < 0).float().mean()) < 0.7           # both clusters
    gauss = torch.as_tensor(np.random.default_rng(1).multivariate_normal(
        codes.mean(0).numpy(), np.cov(codes.numpy(), rowvar=False), 1000), dtype=torch.float32)
    assert near(c) > near(gauss) + 0.2                                # not the fitted Gaussian's bridge
    untrained = fit_mmd_code_generator(codes, Hyper(**HP, code_steps=0), Streams(3))
    u = untrained.sample(1000, torch.Generator().manual_seed(0))
    assert float(mmd2(c, codes, null.bandwidths)) < 0.2 * float(mmd2(u, codes, null.bandwidths))


def test_the_null_runs_its_own_schedule_and_zero_keeps_acls():
    """null_batch / null_lr / null_steps replace ACL's code_* for the null only (0 keeps ACL's): the
    tuning budget of the two is chosen apart on the same grid (devtune budget)."""
    hp = Hyper(**HP, code_steps=7, null_steps=0, null_batch=0, null_lr=0.0)
    assert (hp.null().code_steps, hp.null().code_batch, hp.null().code_lr) == (7, hp.code_batch, hp.code_lr)
    tuned = Hyper(**HP, code_steps=7, null_steps=3, null_batch=16, null_lr=5e-3).null()
    assert (tuned.code_steps, tuned.code_batch, tuned.code_lr) == (3, 16, 5e-3) and tuned.hidden == hp.hidden
    codes = _codes(200)
    a = fit_mmd_code_generator(codes, Hyper(**HP, code_steps=0, null_steps=3), Streams(11))   # the null trains 3 steps
    b = fit_mmd_code_generator(codes, Hyper(**HP, code_steps=3), Streams(11))                 # = ACL's 3 steps
    assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters()))
    with pytest.raises(UserError):
        Hyper(**HP, null_steps=-1).check()


def test_code_gan_steps_return_device_tensors_not_host_floats():
    """No host sync per step: the D_c / G_c losses stay tensors until a log interval reads them."""
    acl = CodeGAN(2, 2, 16, 2)
    opts = acl.optimizers(1e-3, 1e-3)
    ld = acl.d_step(torch.randn(8, 2), opts["D_c"])
    lg = acl.g_step(8, opts["G_c"])
    assert torch.is_tensor(ld) and torch.is_tensor(lg) and not ld.requires_grad and not lg.requires_grad


@pytest.mark.parametrize("bandwidths", ["factors", [1.0, 2.0]])
def test_the_null_without_its_loss_value_is_the_same_model_bit_for_bit(bandwidths):
    """`fit_mmd_code_generator` never reads the loss, so its steps skip the (codes, codes) kernel block, a constant of
    G_c's weights, and form only the gradients of the other two (`value=False`, issue 43): every step and the model
    are those of the full MMD^2 loss, bit for bit, at the bandwidths the null uses (the median times
    BANDWIDTH_FACTORS) and at others of the one-exp path."""
    from papers.acl.mmd import mmd_code_step

    codes = _codes(200)
    hp = Hyper(**HP, code_steps=5).null()
    models = []
    for value in (True, False):
        with Streams(4).torch_global("gc-init"):
            acl = CodeGAN(hp.code_dim, hp.z_dim, hp.hidden, hp.depth)
        acl.set_scale(codes)
        bw = [median_distance(acl.standardize(codes)) * f for f in BANDWIDTH_FACTORS] if bandwidths == "factors" else bandwidths
        opt, gen = acl.optimizers(hp.code_lr, hp.code_lr)["G_c"], torch.Generator().manual_seed(2)
        losses = [mmd_code_step(acl, codes, opt, hp, gen, k, bw, value=value) for k in range(hp.code_steps)]
        models.append((acl, losses))
    (full, lf), (part, lp) = models
    assert all(torch.equal(x, y) for x, y in zip(full.parameters(), part.parameters()))
    assert all(torch.is_tensor(v) and torch.isfinite(v) for v in lf) and lp == [None] * hp.code_steps


def test_a_kernel_mean_without_its_value_has_the_same_gradient_bit_for_bit():
    """`kernel_mean(value=False)`: NaN for the value, and the gradient of the mean in both arguments that ask for one
    equal to the one autograd forms through the kernel sum and the mean, bit for bit."""
    g = torch.Generator().manual_seed(5)
    a, b = torch.randn(300, 8, generator=g), torch.randn(300, 8, generator=g)
    bw = [median_distance(a) * f for f in BANDWIDTH_FACTORS]
    grads = {}
    for value in (True, False):
        x, y = a.clone().requires_grad_(True), b.clone().requires_grad_(True)
        out = kernel_mean(x, x, bw, value=value) - 2 * kernel_mean(x, y, bw, value=value)
        assert bool(torch.isfinite(out)) == value
        out.backward()
        grads[value] = (x.grad, y.grad)
    assert torch.equal(grads[True][0], grads[False][0]) and torch.equal(grads[True][1], grads[False][1])
    assert float(grads[True][0].abs().sum()) > 0
