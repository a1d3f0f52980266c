"""One pass over J for a few states at once: the product that dominates the Lyapunov estimators.

Z. Yu and H. Huang, "Network reconstruction may not mean dynamics prediction",
https://arxiv.org/abs/2409.04240

Every step of the two-trajectory (and tangent) estimator needs J phi for two vectors: the reference
state and its companion. With N = 1000 in float64, J is 8 MB; two matrix-vector products read it
twice per step, and BLAS's general matrix product for two or four right-hand sides is slower still
(its small-matrix path; 1.5-3x two gemv calls here). `rows_times_JT` reads each row of J once per
*pair* of vectors, eight rows at a time, so a pair costs about one gemv:

    out[k] = J @ rows[k]   for k = 0 .. M-1      (rows (M, N), pairs share one pass over J)

It needs numba; without it (or for many rows, where BLAS's blocked product is efficient) the
caller's BLAS product is used, with the same result up to summation order (~1e-15 relative).
"""
from __future__ import annotations

import numpy as np

try:  # an optional accelerator: the package works without it
    from numba import njit
except ImportError:  # pragma: no cover - exercised only where numba is absent
    njit = None

MAX_FUSED_ROWS = 16  # above this BLAS's blocked product reads J fewer times than pairs do


def available() -> bool:
    """Whether the fused kernel is compiled in (numba importable)."""
    return njit is not None


if njit is not None:
    # reassociation (vector lanes) and fused multiply-add only: NaN and inf keep their meaning
    @njit(cache=True, fastmath={"reassoc", "contract"}, nogil=True)
    def _pair(J, a, b, oa, ob):  # pragma: no cover - compiled
        """oa = J a, ob = J b, each row of J loaded once; eight rows per sweep of a and b."""
        n, m = J.shape
        n8 = n - n % 8
        zero = oa.dtype.type(0)  # accumulate in the arrays' own precision
        for i in range(0, n8, 8):
            a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = zero
            b0 = b1 = b2 = b3 = b4 = b5 = b6 = b7 = zero
            for j in range(m):
                x = a[j]
                y = b[j]
                v = J[i, j]
                a0 += v * x
                b0 += v * y
                v = J[i + 1, j]
                a1 += v * x
                b1 += v * y
                v = J[i + 2, j]
                a2 += v * x
                b2 += v * y
                v = J[i + 3, j]
                a3 += v * x
                b3 += v * y
                v = J[i + 4, j]
                a4 += v * x
                b4 += v * y
                v = J[i + 5, j]
                a5 += v * x
                b5 += v * y
                v = J[i + 6, j]
                a6 += v * x
                b6 += v * y
                v = J[i + 7, j]
                a7 += v * x
                b7 += v * y
            oa[i], oa[i + 1], oa[i + 2], oa[i + 3] = a0, a1, a2, a3
            oa[i + 4], oa[i + 5], oa[i + 6], oa[i + 7] = a4, a5, a6, a7
            ob[i], ob[i + 1], ob[i + 2], ob[i + 3] = b0, b1, b2, b3
            ob[i + 4], ob[i + 5], ob[i + 6], ob[i + 7] = b4, b5, b6, b7
        for i in range(n8, n):
            sa = zero
            sb = zero
            for j in range(m):
                sa += J[i, j] * a[j]
                sb += J[i, j] * b[j]
            oa[i] = sa
            ob[i] = sb

    @njit(cache=True, nogil=True)
    def _rows(J, rows, out):  # pragma: no cover - compiled
        M = rows.shape[0]
        for k in range(0, M - 1, 2):
            _pair(J, rows[k], rows[k + 1], out[k], out[k + 1])
        if M % 2:
            _pair(J, rows[M - 1], rows[M - 1], out[M - 1], out[M - 1])


if njit is not None:
    @njit(cache=True, fastmath={"reassoc", "contract"}, nogil=True)
    def _logistic_rows(e1, e2, w, out):  # pragma: no cover - compiled
        M, n = e1.shape
        k = e2.shape[1]
        for m in range(M):
            for i in range(n):
                x = e1[m, i]
                acc = 0.0
                for j in range(k):
                    acc += w[j] / (1.0 + x * e2[m, j])
                out[m, i] = acc


def logistic_quadrature(e1: np.ndarray, e2: np.ndarray, w: np.ndarray) -> np.ndarray:
    """out[m, i] = sum_j w[j] / (1 + e1[m, i] e2[m, j]) for e1 (M, n), e2 (M, k), w (k,), float64.

    The inner Gaussian integral of the two-replica kernel (`dmft.bivariate_phi`): with
    e1 e2 = exp(-2 v), 2 / (1 + exp(-2 v)) - 1 = tanh(v). Fused (numba: no (M, n, k) temporary, the
    divisions in vector lanes) when numba is present; numpy in blocks of 32 rows otherwise. The two
    agree to summation order (~1e-16)."""
    e1 = np.ascontiguousarray(e1, dtype=np.float64)
    e2 = np.ascontiguousarray(e2, dtype=np.float64)
    w = np.ascontiguousarray(w, dtype=np.float64)
    out = np.empty(e1.shape)
    if njit is not None:
        _logistic_rows(e1, e2, w, out)
        return out
    buf = np.empty((32, e1.shape[1], e2.shape[1]))
    for i in range(0, e1.shape[0], 32):
        k = min(32, e1.shape[0] - i)
        v = buf[:k]
        np.multiply(e1[i:i + k, :, None], e2[i:i + k, None, :], out=v)
        v += 1.0
        np.reciprocal(v, out=v)
        np.matmul(v, w, out=out[i:i + k])
    return out


def rows_times_JT(rows: np.ndarray, J: np.ndarray, JT: np.ndarray, fused: bool = True) -> np.ndarray:
    """(J @ rows[k]) for every row, i.e. `rows @ JT`; `J` and `JT` are the same matrix, C-contiguous
    and transposed. Fused pairs when asked, numba is present, the rows are few and the dtypes agree."""
    if (fused and njit is not None and rows.ndim == 2 and rows.shape[0] <= MAX_FUSED_ROWS
            and rows.dtype == J.dtype and J.flags.c_contiguous):
        out = np.empty_like(rows)
        _rows(J, np.ascontiguousarray(rows), out)
        return out
    if rows.ndim == 2 and rows.shape[0] <= 2 and JT.shape[0] >= 500:
        return np.stack([r @ JT for r in rows])  # two gemv beat BLAS's small-matrix product here
    return rows @ JT
