"""Where the nlm runs go: a CPU run is the same with device="cpu" as without; on a GPU (these tests run
where torch sees one, and are skipped elsewhere) the sampler keeps the stationary measure the CPU's has,
a training run is fixed by its seed, resumes exactly and writes checkpoints that load on the CPU."""
import math

import numpy as np
import pytest
import torch

from papers.nlm.model import likelihood_gradient
from papers.nlm.sampler import device_generator, langevin
from papers.nlm.train import Trainer, TrainConfig, generate

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _data():
    return torch.randn(30, 6, generator=torch.Generator().manual_seed(0)) * 0.8


def _cfg(**kw):
    return TrainConfig(**(dict(n_chains=8, k=3, lr=1e-2, batch=10) | kw))


def test_a_cpu_run_is_the_same_with_device_cpu_as_without():
    for mode in ("pcd", "rdm"):
        a = Trainer(_data(), [5, 30], _cfg(mode=mode), seed=3); a.train(6, show_progress=False)
        b = Trainer(_data(), [5, 30], _cfg(mode=mode), seed=3, device="cpu"); b.train(6, show_progress=False)
        assert torch.equal(a.J, b.J) and torch.equal(a.chains, b.chains)
    g = torch.Generator()
    assert device_generator(g, "cpu") is g and device_generator(None, "cuda") is None


def _moments(J, b, device, gemm_dtype=None, seed=1, chains=2000, burn=300, blocks=10, every=25):
    """Per-coordinate <x>, <x^2> (time-averaged per chain) on `device`, and their SEs over chains."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(chains, J.shape[0], generator=g).to(device)
    x, _ = langevin(x, J.to(device), b.to(device), burn, 0.01, 1.0, g, gemm_dtype=gemm_dtype)
    s1, s2 = torch.zeros_like(x), torch.zeros_like(x)
    for _ in range(blocks):
        x, _ = langevin(x, J, b, every, 0.01, 1.0, g, gemm_dtype=gemm_dtype)
        s1 += x; s2 += x * x
    per = (torch.cat([s1, s2], 1) / blocks).cpu()
    return per.mean(0), per.std(0) / math.sqrt(chains)


@cuda
def test_on_a_gpu_the_sampler_keeps_the_cpu_stationary_moments():
    """fp32 and bf16 products on the GPU against fp32 on the CPU: chi^2 per dof about 1; the same test
    resolves a 15 % change of J."""
    g = torch.Generator().manual_seed(11)
    n = 24
    J = torch.randn(n, n, generator=g) * 2.0 / math.sqrt(n); J.fill_diagonal_(0.0)
    b = 0.3 * torch.randn(n, generator=g)
    m_cpu, se_cpu = _moments(J, b, "cpu", seed=1)
    for gemm, seed in ((None, 2), (torch.bfloat16, 3)):
        m, se = _moments(J, b, "cuda", gemm, seed=seed)
        z = ((m - m_cpu) / torch.sqrt(se_cpu ** 2 + se ** 2)).abs()
        assert float(z.max()) < 4.5 and float((z ** 2).mean()) < 2.0, gemm
    m_alt, se_alt = _moments(1.15 * J, b, "cuda", seed=4)
    assert float((((m_alt - m_cpu) / torch.sqrt(se_cpu ** 2 + se_alt ** 2)) ** 2).mean()) > 4.0


@cuda
def test_on_a_gpu_the_rule_is_the_cpu_rule():
    g = torch.Generator().manual_seed(5)
    data, model = torch.randn(40, 9, generator=g, dtype=torch.float64), torch.randn(30, 9, generator=g, dtype=torch.float64)
    J, b = torch.randn(9, 9, generator=g, dtype=torch.float64), torch.randn(9, generator=g, dtype=torch.float64)
    cpu = likelihood_gradient(data, model, J, b, 1.0)
    gpu = likelihood_gradient(*(t.cuda() for t in (data, model, J, b)), 1.0)
    for a, c in zip(cpu, gpu):
        assert torch.allclose(a, c.cpu(), rtol=1e-12, atol=1e-12)


@cuda
def test_on_a_gpu_a_run_is_fixed_by_its_seed_resumes_exactly_and_loads_on_the_cpu(tmp_path):
    x = _data()
    for mode in ("pcd", "rdm"):
        a = Trainer(x, [5, 30], _cfg(mode=mode), seed=4, device="cuda"); a.train(12, show_progress=False)
        assert a.J.device.type == a.chains.device.type == "cuda"
        b = Trainer(x, [5, 30], _cfg(mode=mode), seed=4, device="cuda"); b.train(7, show_progress=False)
        b.save(tmp_path / "ck.pt")
        c = Trainer(x, [5, 30], _cfg(mode=mode), seed=99, device="cuda").resume(tmp_path / "ck.pt")
        c.train(5, show_progress=False)
        assert torch.equal(a.J, c.J) and torch.equal(a.chains, c.chains)
        cpu = Trainer(x, [5, 30], _cfg(mode=mode), seed=4); cpu.train(12, show_progress=False)
        assert not torch.equal(a.J.cpu(), cpu.J)                 # the GPU's noise is its own stream
    st = torch.load(tmp_path / "ck.pt", map_location="cpu", weights_only=False)
    assert st["J"].device.type == "cpu"
    img_cpu, _ = generate(tmp_path / "ck.pt", n=4, steps=20, seed=2)
    img_gpu, _ = generate(tmp_path / "ck.pt", n=4, steps=20, seed=2, device="cuda")
    assert img_cpu.shape == img_gpu.shape == (4, 6) and np.abs(img_gpu).max() < 1


@cuda
def test_on_a_gpu_the_local_rule_learns_the_data_mean():
    """As on the CPU (test_nlm_train): b moves until the model phase matches shifted data."""
    x = torch.full((50, 3), 1.0) + 0.1 * torch.randn(50, 3, generator=torch.Generator().manual_seed(0))
    t = Trainer(x, [50], _cfg(optimizer="sgd", lr=0.05, n_chains=200, k=20, batch=50, gain=0.0), seed=0, device="cuda")
    t.train(150, show_progress=False)
    assert abs(float(t.chains.mean()) - 1.0) < 0.25
