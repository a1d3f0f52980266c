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


if njit is not None:
    @njit(cache=True, fastmath={"reassoc", "contract"}, nogil=True)
    def _symmetric_rows(s1, s2, c12, dz, wp, w0, out):  # pragma: no cover - compiled
        h = wp.shape[0]
        a = np.empty(h)
        for i in range(h):
            a[i] = np.tanh(np.sqrt(s1) * ((i + 1) * dz))
        X = np.empty(h)
        C = np.empty(h)
        wsum = w0 + 2.0 * wp.sum()
        for m in range(s2.shape[0]):
            p = s1 * s2[m]
            r = min(max(c12[m] / np.sqrt(max(p, 1e-300)), -1.0), 1.0)
            sd = np.sqrt(s2[m])
            ka = -2.0 * sd * r * dz                 # exp(-2 alpha z_j) = exp(ka (j + 1))
            kb = -2.0 * sd * np.sqrt(1.0 - r * r) * dz
            if max(abs(ka), abs(kb)) * h <= 300.0:  # geometric: two exponentials per entry
                qa, qb = np.exp(ka), np.exp(kb)
                xa = 1.0
                eb = 1.0
                for j in range(h):
                    xa *= qa
                    eb *= qb
                    X[j] = xa
                    C[j] = eb + 1.0 / eb
            else:                                   # huge variances: each exponent clipped at 300
                for j in range(h):
                    X[j] = np.exp(min(max(ka * (j + 1), -300.0), 300.0))
                    eb = np.exp(min(max(kb * (j + 1), -300.0), 300.0))
                    C[j] = eb + 1.0 / eb
            acc = 0.0
            for i in range(h):
                x = X[i]
                x2 = x * x
                half = w0 / (1.0 + x)
                for j in range(h):
                    xc = x * C[j]
                    half += wp[j] * (2.0 + xc) / (1.0 + xc + x2)
                acc += a[i] * wp[i] * (2.0 * half - wsum)
            out[m] = 2.0 * acc


def symmetric_tanh_quadrature(s1: float, s2: np.ndarray, c12: np.ndarray, dz: float, wp: np.ndarray,
                              w0: float) -> np.ndarray:
    """E[tanh(u) tanh(v)] per entry (Var u = s1, Var v = s2[m], Cov = c12[m]) on the symmetric node grid
    z = 0, +-dz, ..., +-h dz with weights w0 at 0 and wp[j] at +-(j + 1) dz (`dmft.bivariate_phi`).

    The same tensor-product rule as `logistic_quadrature`'s, folded by the grid's symmetry: tanh(u) is odd
    in z1 and so is E[tanh(v) | z1], so only z1 > 0 is summed (twice); the nodes +-z2 pair as
    1 / (1 + x e) + 1 / (1 + x / e) = (2 + x c) / (1 + x c + x^2), c = e + 1 / e, with x = exp(-2 alpha z1),
    e = exp(-2 beta z2); the exponentials along the uniform grid are powers of one. A quarter of the
    divisions and 2 exponentials per entry instead of 2 n; equal to the unfolded rule to rounding (~1e-15).
    Fused in numba when present, numpy otherwise (the same formula)."""
    s2 = np.ascontiguousarray(s2, dtype=np.float64).ravel()
    c12 = np.ascontiguousarray(c12, dtype=np.float64).ravel()
    wp = np.ascontiguousarray(wp, dtype=np.float64)
    out = np.empty(s2.shape)
    if njit is not None:
        _symmetric_rows(float(s1), s2, c12, float(dz), wp, float(w0), out)
        return out
    zp = (np.arange(len(wp)) + 1) * dz
    r = np.clip(c12 / np.sqrt(np.maximum(s1 * s2, 1e-300)), -1.0, 1.0)
    sd = np.sqrt(s2)[:, None]
    x = np.exp(np.clip(-2.0 * (sd * r[:, None]) * zp, -300.0, 300.0))[:, :, None]            # (M, i, 1)
    e = np.exp(np.clip(-2.0 * (sd * np.sqrt(1 - r**2)[:, None]) * zp, -300.0, 300.0))
    xc = x * (e + 1.0 / e)[:, None, :]                                                          # (M, i, j)
    half = w0 / (1.0 + x[..., 0]) + ((2.0 + xc) / (1.0 + xc + x * x)) @ wp
    return 2.0 * ((2.0 * half - (w0 + 2.0 * wp.sum())) @ (np.tanh(np.sqrt(s1) * zp) * wp))


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
