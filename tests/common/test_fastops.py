"""common.fastops: Philox against its published known answers, the Gaussians' law and thread
invariance, tanh's accuracy, and linear against torch."""
import math

import numpy as np
import pytest
import torch

from common import fastops


# Random123's known-answer vectors for Philox4x32-10 (counter, key, result)
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF, 0xFFFFFFFF), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("counter,key,expected", KAT)
def test_philox_reference_matches_the_published_known_answers(counter, key, expected):
    assert fastops.philox4x32(counter, key) == expected


@pytest.mark.skipif(not fastops.philox_available(), reason="numba absent: normal_ uses torch's generator")
def test_compiled_uniforms_are_the_reference_words_top_bits():
    key = 0x299F31D0A4093822
    for dtype, bits in ((np.float32, 23), (np.float64, 32)):
        out = np.empty(12, dtype)
        fastops.philox_uniform(out, key, 5)
        for i in range(3):                                   # counters 5, 6, 7: (index low, high, 0, 0)
            words = fastops.philox4x32((5 + i, 0, 0, 0), (key & 0xFFFFFFFF, key >> 32))
            want = [((w >> (32 - bits)) + 0.5) * 2.0 ** -bits for w in words]
            assert out[4 * i: 4 * i + 4].tolist() == pytest.approx(want, rel=0, abs=0)


@pytest.mark.skipif(not fastops.philox_available(), reason="numba absent: normal_ uses torch's generator")
def test_normal_is_deterministic_the_same_for_any_thread_count_and_standard_normal():
    n = 3 * fastops.CHUNK + 4 * 1234 + 2                       # whole chunks and a ragged last one
    draws = {th: fastops.normal_(torch.empty(n), 42, th) for th in (1, 2, 3)}
    assert torch.equal(draws[1], draws[2]) and torch.equal(draws[1], draws[3])
    assert torch.equal(draws[1], fastops.normal_(torch.empty(n), 42))
    other = fastops.normal_(torch.empty(n), 43)
    assert not torch.equal(other, draws[1])
    z = torch.cat([fastops.normal_(torch.empty(1 << 21), k, 2) for k in range(3)]).double()
    se = 1 / math.sqrt(len(z))
    assert abs(float(z.mean())) < 4.5 * se
    assert abs(float(z.var()) - 1) < 4.5 * math.sqrt(2) * se
    assert abs(float((z ** 4).mean()) - 3) < 4.5 * math.sqrt(96) * se         # kurtosis (var of z^4 is 96)
    assert float(z.abs().max()) <= math.sqrt(48 * math.log(2)) + 1e-6          # 23-bit uniforms bound |z|
    from scipy import stats

    assert stats.kstest(z[: 200_000].numpy(), "norm").pvalue > 1e-4
    # the two halves of a chunk (cos and sin of one angle) and neighbouring chunks are uncorrelated
    c = fastops.CHUNK
    a = draws[1][: 3 * c].view(3, c)
    for u, v in ((a[0, : c // 2], a[0, c // 2:]), (a[0], a[1]), (a[1], a[2])):
        assert abs(float(torch.corrcoef(torch.stack([u, v]))[0, 1])) < 4.5 / math.sqrt(len(u))
    # float64 buffers (32-bit uniforms), tiny and odd lengths
    z64 = fastops.normal_(torch.empty(1 << 18, dtype=torch.float64), 7)
    assert z64.dtype == torch.float64 and abs(float(z64.var()) - 1) < 4.5 * math.sqrt(2 / len(z64))
    for m in (1, 2, 3, 5, 7):
        t = fastops.normal_(torch.empty(m), 9)
        assert torch.isfinite(t).all() and float(t.abs().max()) < 6


def test_normal_falls_back_on_non_contiguous_buffers():
    buf = torch.zeros(64, 64).t()
    out = fastops.normal_(buf, 3)
    assert out is buf and float(buf.std()) > 0.5
    assert torch.equal(fastops.normal_(torch.zeros(64, 64).t(), 3), buf)       # deterministic per key


def test_tanh_is_within_two_ulp_and_keeps_torch_semantics():
    x = torch.linspace(-20, 20, 400_001)
    ref = torch.tanh(x.double())
    y = fastops.tanh(x)
    ulp = torch.from_numpy(np.spacing(np.abs(ref.float().numpy()))).double()
    assert float(((y.double() - ref).abs() / ulp).max()) <= 2.0
    out = torch.empty_like(x)
    assert fastops.tanh(x, out=out) is out and torch.equal(out, y)
    special = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan")])
    s = fastops.tanh(special)
    assert s[:4].tolist() == [0.0, -0.0, 1.0, -1.0] and math.isnan(s[4]) and math.copysign(1, s[1]) < 0
    xg = torch.linspace(-2, 2, 11, requires_grad=True)          # autograd: torch's own tanh
    fastops.tanh(xg).sum().backward()
    assert torch.allclose(xg.grad, 1 - torch.tanh(xg.detach()) ** 2)
    strided = torch.linspace(-3, 3, 20)[::2]
    assert torch.allclose(fastops.tanh(strided), torch.tanh(strided), rtol=0, atol=1e-7)


@pytest.mark.parametrize("n", [64, 200])
def test_linear_matches_torch(n):
    g = torch.Generator().manual_seed(0)
    x, W, b = torch.randn(300, n, generator=g), torch.randn(n + 3, n, generator=g), torch.randn(n + 3, generator=g)
    ref = x.double() @ W.double().t() + b.double()
    for y in (fastops.linear(x, W, b), fastops.linear(x, W) + b):
        assert float((y.double() - ref).abs().max()) < 1e-5 * float(ref.abs().max())
    yb = fastops.linear(x.bfloat16(), W.bfloat16())
    assert yb.dtype == torch.bfloat16
    assert float((yb.double() - (ref - b.double())).abs().max()) < 0.02 * float(ref.abs().max())
    Wg = W.clone().requires_grad_(True)                           # autograd: torch's linear
    fastops.linear(x, Wg, b).sum().backward()
    assert torch.allclose(Wg.grad, x.sum(0).expand(n + 3, n), rtol=1e-5, atol=1e-4)
