"""Model, force, local rule and exact gradient (arXiv:2506.23546)."""
import math

import numpy as np
import pytest
import torch

from common.errors import UserError
from papers.nlm import exact
from papers.nlm.model import asymmetry, energy, force, init_couplings, likelihood_gradient, rule_terms, velocity
from papers.nlm.sampler import Stepper


def _net(n=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    J = torch.randn(n, n, generator=g, dtype=torch.float64); J.fill_diagonal_(0)
    return J, torch.randn(n, generator=g, dtype=torch.float64), torch.randn(7, n, generator=g, dtype=torch.float64), g


def test_energy_by_hand():
    J = torch.tensor([[0.0, 2.0], [-1.0, 0.0]], dtype=torch.float64); b = torch.tensor([0.5, 0.0], dtype=torch.float64)
    x = torch.tensor([[0.0, math.atanh(0.5)]], dtype=torch.float64)
    e = torch.tensor([-0.0 + 2.0 * 0.5 + 0.5, -math.atanh(0.5) + 0.0], dtype=torch.float64)
    assert float(energy(x, J, b)) == pytest.approx(0.5 * float((e ** 2).sum()), abs=1e-12)


def test_force_is_minus_grad_energy_and_stepper_matches():
    J, b, x, _ = _net()
    x.requires_grad_(True)
    grad, = torch.autograd.grad(energy(x, J, b).sum(), x)
    np.testing.assert_allclose(force(x.detach(), J, b).numpy(), -grad.numpy(), atol=1e-12)
    # central finite difference on one coordinate
    h = 1e-6; xp = x.detach().clone(); xm = xp.clone(); xp[2, 3] += h; xm[2, 3] -= h
    fd = (energy(xp, J, b)[2] - energy(xm, J, b)[2]) / (2 * h)
    assert float(-fd) == pytest.approx(float(force(x.detach(), J, b)[2, 3]), rel=1e-6)
    # the in-place stepper is x + dt F (one model and a stack)
    y = x.detach().clone(); Stepper(J, b, y).euler(y, 0.03)
    np.testing.assert_allclose(y.numpy(), (x.detach() + 0.03 * force(x.detach(), J, b)).numpy(), atol=1e-12)
    Js = torch.stack([J, 2 * J]); bs = torch.stack([b, -b]); xs = torch.stack([x.detach(), x.detach()])
    y = xs.clone(); Stepper(Js, bs, y).euler(y, 0.03)
    np.testing.assert_allclose(y[1].numpy(), (xs[1] + 0.03 * force(xs[1], 2 * J, -b)).numpy(), atol=1e-12)


def test_rule_is_local_outer_product_and_zero_diagonal():
    J, b, x, g = _net()
    y = torch.randn(9, 5, generator=g, dtype=torch.float64)
    gJ, gb = likelihood_gradient(x, y, J, b)
    # built synapse by synapse from the postsynaptic speed x_i - h_i and the presynaptic rate tanh(x_j)
    def term(z):
        s = -velocity(z, J, b); r = torch.tanh(z)
        return torch.tensor([[float((s[:, i] * r[:, j]).mean()) for j in range(5)] for i in range(5)], dtype=torch.float64)
    want = term(x) - term(y); want.fill_diagonal_(0)
    np.testing.assert_allclose(gJ.numpy(), want.numpy(), atol=1e-12)
    np.testing.assert_allclose(gb.numpy(), (-velocity(x, J, b).mean(0) + velocity(y, J, b).mean(0)).numpy(), atol=1e-12)
    assert float(gJ.diagonal().abs().max()) == 0.0
    w = torch.full((7,), 1 / 7, dtype=torch.float64)
    np.testing.assert_allclose(rule_terms(x, J, b, w)[0].numpy(), rule_terms(x, J, b)[0].numpy(), atol=1e-12)


def test_joint_gradient_equals_the_two_phase_averages_on_every_path():
    """One matrix product over data (+w) and model (−1/M) rows = rule_terms(data) − rule_terms(model):
    fp32 at N = 160 (oneDNN), a stack of two, a stack of one, against float64."""
    g = torch.Generator().manual_seed(4)
    n = 160
    for lead in ((), (2,), (1,)):
        J = torch.randn(*lead, n, n, generator=g) / math.sqrt(n); b = 0.2 * torch.randn(*lead, n, generator=g)
        xd, xm = torch.randn(*lead, 30, n, generator=g), torch.randn(*lead, 50, n, generator=g)
        w = torch.rand(*lead, 30, generator=g); w /= w.sum(-1, keepdim=True)
        gJ, gb = likelihood_gradient(xd, xm, J, b, 2.0, w)
        dJ, db = rule_terms(xd.double(), J.double(), b.double(), w.double())
        mJ, mb = rule_terms(xm.double(), J.double(), b.double())
        want = (dJ - mJ) / 2.0
        want.diagonal(dim1=-2, dim2=-1).zero_()
        assert gJ.shape == want.shape and gb.shape == db.shape
        assert float((gJ.double() - want).abs().max()) < 1e-5 and float((gb.double() - (db - mb) / 2.0).abs().max()) < 1e-5


def test_rule_equals_likelihood_gradient_by_quadrature():
    pts, area = exact.grid(121, 8.0)
    g = torch.Generator().manual_seed(1)
    J = torch.tensor([[0.0, 1.3], [-0.7, 0.0]], dtype=torch.float64); b = torch.tensor([0.3, -0.2], dtype=torch.float64)
    data = torch.randn(4, 2, generator=g, dtype=torch.float64)
    rJ, rb = exact.rule_on_grid(J, b, data, 1.0, pts)
    fJ, fb = exact.finite_difference_gradient(J, b, data, 1.0, pts=pts, area=area)
    np.testing.assert_allclose(rJ.numpy(), fJ.numpy(), atol=1e-7)
    np.testing.assert_allclose(rb.numpy(), fb.numpy(), atol=1e-7)
    assert abs(float(rJ[0, 1] - rJ[1, 0])) > 1e-3                       # asymmetric update
    sym = 0.5 * (rJ + rJ.T)
    assert float((sym - fJ).abs().max()) > 1e-3                        # a symmetrised rule is not the gradient
    # at T = 2 the gradient is halved when the data term and model term are at the same measure
    rJ2, _ = exact.rule_on_grid(J, b, data, 2.0, pts)
    fJ2, _ = exact.finite_difference_gradient(J, b, data, 2.0, pts=pts, area=area)
    np.testing.assert_allclose(rJ2.numpy(), fJ2.numpy(), atol=1e-7)


def test_init_and_asymmetry():
    J, b = init_couplings(400, 2.0, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert float(J.diagonal().abs().max()) == 0.0 and float(b.abs().max()) == 0.0
    assert float(J.std()) == pytest.approx(2.0 / 20.0, rel=0.02)
    assert abs(asymmetry(J)) < 0.02
    assert asymmetry(J + J.T) == pytest.approx(1.0) and asymmetry(J - J.T) == pytest.approx(-1.0)
    Js, _ = init_couplings(10, n_models=3)
    assert Js.shape == (3, 10, 10)


def test_bad_temperature():
    from papers.nlm.model import check_temperature
    for T in (0.0, -1.0, float("nan")):
        with pytest.raises(UserError):
            check_temperature(T)
