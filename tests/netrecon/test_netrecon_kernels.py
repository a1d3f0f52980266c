"""The fused pair product equals J @ v for each row; the Lyapunov estimate does not depend on it."""
import numpy as np
import pytest

from papers.netrecon import kernels, lyap, rnn

needs_numba = pytest.mark.skipif(not kernels.available(), reason="numba is not installed")


@needs_numba
@pytest.mark.parametrize("M", [1, 2, 3, 5])
@pytest.mark.parametrize("N", [7, 16, 41])
def test_pair_kernel_equals_blas_for_every_row_count_and_remainder(M, N):
    rng = np.random.default_rng(N * 10 + M)
    J = rng.standard_normal((N, N))
    rows = rng.standard_normal((M, N))
    got = kernels.rows_times_JT(rows, J, np.ascontiguousarray(J.T))
    np.testing.assert_allclose(got, rows @ J.T, rtol=0, atol=1e-12 * np.abs(J).sum(1).max())


@needs_numba
def test_pair_kernel_integer_valued_case_is_exact():
    # small integers: every partial sum is exact in float64, so any summation order gives the same bits
    J = np.arange(81, dtype=np.float64).reshape(9, 9) % 7 - 3
    rows = np.stack([np.arange(9.0), np.ones(9), -np.arange(9.0) % 4])
    got = kernels.rows_times_JT(rows, J, np.ascontiguousarray(J.T))
    assert np.array_equal(got, rows @ J.T)
    assert got.dtype == np.float64


@needs_numba
def test_pair_kernel_keeps_single_precision():
    rng = np.random.default_rng(0)
    J = rng.standard_normal((24, 24)).astype(np.float32)
    rows = rng.standard_normal((2, 24)).astype(np.float32)
    got = kernels.rows_times_JT(rows, J, np.ascontiguousarray(J.T))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, rows @ J.T, rtol=0, atol=1e-4)


def test_unfused_path_is_blas_and_many_rows_fall_back():
    rng = np.random.default_rng(1)
    J = rng.standard_normal((10, 10))
    rows = rng.standard_normal((kernels.MAX_FUSED_ROWS + 1, 10))
    assert np.array_equal(kernels.rows_times_JT(rows, J, J.T.copy()), rows @ J.T.copy())
    assert np.array_equal(kernels.rows_times_JT(rows[:2], J, J.T.copy(), fused=False), rows[:2] @ J.T.copy())


@pytest.mark.parametrize("method", ["two-trajectory", "tangent"])
def test_lyapunov_exponent_is_the_same_with_and_without_the_fused_kernel(method):
    rng = np.random.default_rng(3)
    N = 120
    J = rnn.make_J(N, 2.0, rng)
    x0 = rng.standard_normal((2, N))
    a = lyap.largest_exponent(J, x0, t_transient=5.0, t_average=20.0, method=method, rng=np.random.default_rng(4))
    b = lyap.largest_exponent(J, x0, t_transient=5.0, t_average=20.0, method=method, rng=np.random.default_rng(4),
                              fused=False)
    # same map, summation order only: chaos amplifies 1e-16 differences, but over t = 25 by at most
    # e^(lambda t) ~ 1e2, far below the exponent's own statistical error
    np.testing.assert_allclose(a.lam, b.lam, rtol=0, atol=1e-8)
    assert a.lam.min() > 0.01  # chaotic at g = 2: the comparison is not of two zeros
