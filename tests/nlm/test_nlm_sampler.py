"""Langevin sampler: Boltzmann moments, O(dt) bias, reversibility, guards, determinism."""
import math

import numpy as np
import pytest
import torch

from common.errors import UserError
from papers.nlm import exact, thermo
from papers.nlm.model import energy, force
from papers.nlm.sampler import Divergence, check_step, flow, guard, langevin, log_times

J2 = torch.tensor([[0.0, 1.5], [-1.0, 0.0]], dtype=torch.float64)
B2 = torch.tensor([0.4, -0.3], dtype=torch.float64)


def _exact_moments():
    pts, w = exact.boltzmann_weights(J2, B2, 1.0, exact.grid(301, 9.0)[0])
    return (w[:, None] * pts).sum(0), (w[:, None] * pts ** 2).sum(0)


def test_moments_match_boltzmann_and_bias_shrinks_linearly():
    m1, m2 = _exact_moments()
    errs = {}
    for dt in (0.2, 0.1, 0.05):
        g = torch.Generator().manual_seed(0)
        x0 = torch.randn(20000, 2, generator=g, dtype=torch.float64)
        x, _ = langevin(x0, J2, B2, int(6 / dt), dt, 1.0, g)
        acc = []
        for _ in range(10):                 # time-average to cut the noise (SE about 0.004)
            x, _ = langevin(x, J2, B2, int(0.5 / dt), dt, 1.0, g)
            acc.append((x ** 2).mean(0))
        errs[dt] = float((torch.stack(acc).mean(0) - m2).abs().sum())
    assert errs[0.05] < errs[0.1] < errs[0.2]
    assert errs[0.05] < 0.1                                   # close to the Boltzmann measure
    assert 1.5 < errs[0.2] / errs[0.1] < 2.7                  # bias linear in dt


def test_sampler_reversible_rate_network_not():
    r = thermo.sampler_vs_rate_network(n=6, chains=600, steps=400, burn=500, dt=0.01)
    assert abs(r["sigma_nlm"]) < max(4 * r["sigma_nlm_se"], 0.05)
    assert r["sigma_rnn"] > 10 * r["sigma_rnn_se"] and r["sigma_rnn"] > 0.5
    assert r["asymmetry_J"] < 0.9


def test_flow_lowers_energy_and_determinism():
    g = torch.Generator().manual_seed(3)
    x0 = 3 * torch.randn(50, 2, generator=g, dtype=torch.float64)
    x, e = flow(x0, J2, B2, 200, 0.05, record_energy=True)
    assert e.shape == (201, 50) and float((e[1:] - e[:-1]).max()) <= 0.0
    a, sa = langevin(x0, J2, B2, 30, 0.01, 1.0, torch.Generator().manual_seed(5), snap_at=[0, 10, 30])
    b, sb = langevin(x0, J2, B2, 30, 0.01, 1.0, torch.Generator().manual_seed(5), snap_at=[0, 10, 30])
    assert torch.equal(a, b) and sorted(sa) == [0, 10, 30] and torch.equal(sa[10], sb[10])
    assert torch.allclose(sa[0], torch.tanh(x0), rtol=0, atol=1e-15)


def test_guards_and_bad_steps():
    with pytest.raises(Divergence):
        guard(torch.tensor([[float("nan"), 0.0]]), "t")
    with pytest.raises(Divergence):
        guard(torch.full((2, 3), 100.0), "t")
    guard(torch.ones(2, 3), "t")
    for bad in (0.0, -0.1, 1.0):
        with pytest.raises(UserError):
            check_step(bad)
    with pytest.raises(UserError):
        check_step(0.2, 10 * torch.ones(4, 4))               # (1 + ||J||)^2 dt >= 2
    with pytest.raises(UserError):
        langevin(torch.zeros(1, 2), J2.float(), B2.float(), 1, 0.01, T=0.0)
    assert log_times(1000, 4) == [1, 10, 100, 1000]


def _stationary_moments(J, b, gemm_dtype, seed, chains=2000, burn=300, blocks=10, every=25, noise_threads=1):
    """Per-coordinate <x> and <x^2> (time-averaged per chain) and their SEs over chains."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(chains, J.shape[0], generator=g)
    x, _ = langevin(x, J, b, burn, 0.01, 1.0, g, gemm_dtype=gemm_dtype, noise_threads=noise_threads)
    s1, s2 = torch.zeros_like(x), torch.zeros_like(x)
    for _ in range(blocks):
        x, _ = langevin(x, J, b, every, 0.01, 1.0, g, gemm_dtype=gemm_dtype, noise_threads=noise_threads)
        s1 += x; s2 += x * x
    per = torch.cat([s1, s2], 1) / blocks                         # (chains, 2N): chains are independent
    return per.mean(0), per.std(0) / math.sqrt(chains)


def test_bf16_gemms_keep_the_stationary_moments():
    """bf16 operands in the Langevin matrix products (fp32 state, noise, force) leave <x>, <x^2>
    unchanged within their error; the same test sees a 15 % change of J (its resolution)."""
    g = torch.Generator().manual_seed(11)
    n = 24
    J = torch.randn(n, n, generator=g) * 2.0 / math.sqrt(n); J.fill_diagonal_(0.0)
    b = 0.3 * torch.randn(n, generator=g)
    m32, se32 = _stationary_moments(J, b, None, seed=1)
    m16, se16 = _stationary_moments(J, b, torch.bfloat16, seed=2)
    z = ((m16 - m32) / torch.sqrt(se32 ** 2 + se16 ** 2)).abs()
    assert float(z.max()) < 4.5 and float((z ** 2).mean()) < 2.0     # chi^2 per dof about 1 for equal measures
    m_alt, se_alt = _stationary_moments(1.15 * J, b, None, seed=3)
    z_alt = ((m_alt - m32) / torch.sqrt(se32 ** 2 + se_alt ** 2)).abs()
    assert float((z_alt ** 2).mean()) > 4.0                           # the test resolves a 15 % change of J


def test_noise_is_one_stream_for_any_thread_count_drawn_from_the_generator():
    from papers.nlm.sampler import fill_normal

    def draw(threads, seed=5, n=1 << 20):
        buf = torch.empty(n)
        fill_normal(buf, torch.Generator().manual_seed(seed), threads)
        return buf

    a = draw(1)
    assert torch.equal(a, draw(1)) and torch.equal(a, draw(2))       # same seed: same numbers, any thread count
    assert not torch.equal(a, draw(1, seed=6))
    se = 1 / math.sqrt(len(a))
    assert abs(float(a.mean())) < 5 * se and abs(float(a.var()) - 1) < 5 * math.sqrt(2) * se
    g = torch.Generator().manual_seed(5)                             # each call takes one key from the generator
    b1, b2 = torch.empty(1000), torch.empty(1000)
    fill_normal(b1, g); fill_normal(b2, g)
    assert not torch.equal(b1, b2)


def test_noise_on_two_threads_keeps_the_stationary_moments():
    g = torch.Generator().manual_seed(11)
    n = 24
    J = torch.randn(n, n, generator=g) * 2.0 / math.sqrt(n); J.fill_diagonal_(0.0)
    b = 0.3 * torch.randn(n, generator=g)
    m1, se1 = _stationary_moments(J, b, None, seed=1)
    m2, se2 = _stationary_moments(J, b, None, seed=4, noise_threads=2)
    z = ((m2 - m1) / torch.sqrt(se1 ** 2 + se2 ** 2)).abs()
    assert float(z.max()) < 4.5 and float((z ** 2).mean()) < 2.0


def test_fused_euler_tail_and_one_model_stack_match_the_plain_passes():
    """The numba tail x += dt(e − g + t²g) + s·ξ and the (1, M, N) -> (M, N) route give the torch passes'
    numbers (up to rounding), for one model (oneDNN products at N = 160) and a stack."""
    from papers.nlm import sampler

    g = torch.Generator().manual_seed(0)
    for shape in ((40, 160), (3, 40, 24)):
        n = shape[-1]
        J = torch.randn(*shape[:-2], n, n, generator=g) / math.sqrt(n)
        b = 0.1 * torch.randn(*shape[:-2], n, generator=g)
        x0 = torch.randn(*shape, generator=g)
        xi = torch.randn(*shape, generator=g)
        step = sampler.Stepper(J, b, x0)
        fused, plain = x0.clone(), x0.clone()
        step.euler(fused, 0.01, xi.clone(), 0.3)
        limit, sampler.FUSED_MAX = sampler.FUSED_MAX, -1
        threads = torch.get_num_threads()
        torch.set_num_threads(2)                                   # above FUSED_MAX on 2 threads: torch passes
        try:
            step.euler(plain, 0.01, xi.clone(), 0.3)
        finally:
            sampler.FUSED_MAX = limit
            torch.set_num_threads(threads)
        assert not torch.equal(fused, x0) and torch.allclose(fused, plain, rtol=0, atol=1e-6)
        ref = x0 + 0.01 * force(x0.double(), J.double(), b.double()).float() + 0.3 * xi
        assert torch.allclose(fused, ref, rtol=0, atol=1e-5)
    J1, b1 = J[:1].clone(), b[:1].clone()                          # a stack of one model
    x1 = torch.randn(1, 40, 24, generator=g)
    a, _ = langevin(x1, J1, b1, 7, 0.01, 1.0, torch.Generator().manual_seed(3))
    c, _ = langevin(x1[0], J1[0], b1[0], 7, 0.01, 1.0, torch.Generator().manual_seed(3))
    assert a.shape == x1.shape and torch.equal(a[0], c)


@pytest.mark.parametrize("shape", [(8, 64), (3, 8, 64), (6, 160)])
def test_lean_step_is_the_step_bit_for_bit(shape):
    """`langevin` and `flow` take `Stepper.euler_lean` (checks made once per run): the same numbers as `euler`
    step by step, for one small model (addmm products), a stack and one model with oneDNN products (N = 160)."""
    from papers.nlm import sampler

    g = torch.Generator().manual_seed(1)
    n = shape[-1]
    J = torch.randn(*shape[:-2], n, n, generator=g) * 2 / math.sqrt(n)
    b = 0.1 * torch.randn(*shape[:-2], n, generator=g)
    x0 = torch.randn(*shape, generator=g)
    xi = torch.randn(5, *shape, generator=g)
    for noise in (True, False):
        step = sampler.Stepper(J, b, x0)
        a, c = x0.clone(), x0.clone()
        assert step.lean(c, xi if noise else None)
        xin = xi.view(5, -1).numpy()
        for i in range(5):
            sampler.Stepper(J, b, x0).euler(a, 0.01, xi[i].clone() if noise else None, 0.3 if noise else 0.0)
            step.euler_lean(c, 0.01, xin[i] if noise else None, 0.3 if noise else 0.0)
        assert not torch.equal(c, x0) and torch.equal(a, c)
    assert not sampler.Stepper(J, b, x0).lean(x0.double())           # a dtype other than J's: the plain step


def test_noise_draws_leave_the_generator_where_langevin_does():
    """`noise_draws` (to start a later run where the generator will be) draws what `langevin` draws: one key per
    noise block, for one block, several blocks and none."""
    from papers.nlm.sampler import NOISE_BLOCK, noise_draws

    for n_chains, n, steps in ((100, 8, 37), (NOISE_BLOCK // 3 // 4 + 1, 4, 7), (10, 4, 0)):
        ga, gb = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
        J = torch.zeros(n, n)
        langevin(torch.zeros(n_chains, n), J, torch.zeros(n), steps, 0.01, 1.0, ga, check_every=0)
        noise_draws(steps, n_chains * n, gb)
        assert torch.equal(ga.get_state(), gb.get_state())
    g = torch.Generator().manual_seed(5)
    noise_draws(7, NOISE_BLOCK // 3 + 1, g)                  # blocks of 2 steps: 4 keys
    h = torch.Generator().manual_seed(5)
    for _ in range(4):
        torch.randint(0, 2 ** 63 - 1, (1,), generator=h)
    assert torch.equal(g.get_state(), h.get_state())
