"""The Franz-Parisi potential of the reverse step read as inference.

Paper: Yu & Huang, https://arxiv.org/abs/2405.11932 (Sec. VII, Eqs. 70-79, Fig. 11).

Denoising X_t is inference of X_0 with Hamiltonian (X_t is quenched disorder)

    H(X_0; X_t) = |X_t − e^{−t} X_0|² / (2Δ_t) − ln p_0(X_0).

A reference configuration X_0' and X_t are drawn *jointly* (X_0' ~ p_0, X_t | X_0' forward);
a second replica X_0 is constrained at squared distance q from X_0'. In one dimension
d(X_0, X_0') = (X_0 − X_0')², and the constrained partition function is

    Z(q) = [e^{−H(X_0' + √q)} + e^{−H(X_0' − √q)}] / (2√q),          V(q) = −⟨ln Z(q)⟩.

V, V' and V'' are computed here analytically per sample (no finite differences): with r = √q,
L(r) = ln[e^{g(X_0'+r)} + e^{g(X_0'−r)}], g = −H and softmax weights w±,

    L' = w₊ g'(y₊) − w₋ g'(y₋),   L'' = w₊ g''(y₊) + w₋ g''(y₋) + w₊w₋ (g'(y₊) + g'(y₋))²,
    d ln Z/dq = L'/(2r) − 1/(2q),   d² ln Z/dq² = L''/(4q) − L'/(4r³) + 1/(2q²).

A *secondary minimum* is an interior local minimum of V (V' crossing zero upwards): the second
replica can sit in the other cluster. It disappears as t decreases; `threshold_time` finds when.
"""
from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from common.errors import UserError
from common.seed import Streams
from common.spawned import spawned

from .mixture import GaussianMixture, log_cosh, ou_decay, ou_delta
from .workers import cpu_shares


@dataclass
class FPSamples:
    """Common random numbers for V at several t: X_0' and the standard normal Z of X_t."""

    x0: np.ndarray
    z: np.ndarray
    xt_fixed: np.ndarray | None = None    # a null: X_t drawn at one time, whatever t the posterior uses

    def xt(self, t: float) -> np.ndarray:
        if self.xt_fixed is not None:
            return self.xt_fixed
        return float(ou_decay(t)) * self.x0 + math.sqrt(float(ou_delta(t))) * self.z   # X_t = e^{−t}X_0' + √Δ_t Z

    def drawn_at(self, t_data: float) -> "FPSamples":
        """The same pairs with X_t frozen at time t_data: the posterior of another t then reads the
        data at the wrong noise level (a shuffled-time denoiser, a null)."""
        return FPSamples(self.x0, self.z, self.xt(t_data).copy())


def draw_samples(mix: GaussianMixture, n: int, streams: Streams) -> FPSamples:
    """n joint pairs (X_0' ~ p_0, the standard normal Z of X_t | X_0') over which V(q) = −⟨ln Z(q)⟩
    averages (Sec. VII, Eqs. (70)-(79); 10⁵ pairs in the official `fpp.py`), as common random numbers."""
    if mix.d != 1:
        raise UserError("the Franz-Parisi potential is implemented for d=1 (as in the paper)")
    if int(n) < 2:
        raise UserError(f"need at least 2 samples; got {n}")
    rng = streams.rng("franz-parisi")
    x0 = mix.sample(int(n), rng)[:, 0]
    z = rng.standard_normal(int(n))
    return FPSamples(x0, z)


def _logp0_derivs(mix: GaussianMixture):
    """y ↦ (ln p_0(y), d/dy, d²/dy²) for a 1-D mixture (tanh fast path for the symmetric pair)."""
    pair = mix.symmetric_pair()
    if pair is not None:
        mu, s2 = float(pair[0][0]), pair[1]
        c = -0.5 * math.log(2 * math.pi * s2) - 0.5 * mu * mu / s2

        def f(y):
            z = (mu / s2) * y
            th = np.tanh(z)
            lp = -0.5 * y * y / s2 + log_cosh(z) + c
            return lp, (mu * th - y) / s2, ((mu * mu / s2) * (1.0 - th * th) - 1.0) / s2
        return f
    means = mix.means[:, 0]; var = mix.variances; lw = np.log(mix.weights)

    def f(y):
        lj = np.stack([lw[k] - 0.5 * (y - means[k]) ** 2 / var[k] - 0.5 * math.log(2 * math.pi * var[k])
                       for k in range(mix.k)])
        top = lj.max(0)
        r = np.exp(lj - top)
        tot = r.sum(0)
        lp = top + np.log(tot)
        r /= tot
        u = np.stack([(means[k] - y) / var[k] for k in range(mix.k)])
        s = (r * u).sum(0)
        inv_var = (1.0 / var).reshape((-1,) + (1,) * y.ndim)
        h = (r * (u * u - inv_var)).sum(0) - s * s        # (ln p)'' = Σ r_k (u_k² − 1/s_k) − s²
        return lp, s, h
    return f


def fp_potential(mix: GaussianMixture, t: float, q: np.ndarray, samples: FPSamples, *,
                 block: int = 4096, q_block: int = 2, pool=None, fast: bool = True, curvature: bool = True) -> dict:
    """V(q), V'(q), V''(q) averaged over the joint samples, vectorised over (q, samples).

    Sec. VII, Eqs. (70)-(79): V(q) = −⟨ln Z(q)⟩, V'(q), V''(q) (Fig. 11; the official `fpp.py` takes finite
    differences).

    Tiles of q_block q values × block samples: 2 × 4096 keeps each temporary at 64 KB, inside a core's L2 (4 × 4096
    took 40 % longer on a Xeon with 2 MB of L2 per core). q_block changes V not at all and V', V'' by rounding
    (a BLAS product over the block's samples, ~1e-15); block (the order of the partial sums) changes all three by
    rounding.

    curvature=False leaves V'' out (the returned dict has no "ddV"): a secondary minimum, its barrier and the
    threshold read V and V' only, which are then the same bit for bit.

    pool (`worker_pool`): its processes take a share of the q values each (whole tiles, so every tile is the one
    computed in one process) while this one takes the first; the blocks' sums are then added in the same order, so
    the numbers are those of one process bit for bit. Without a pool everything runs here (threads gained nothing:
    the tiles are small enough for NumPy's calls to hold the GIL much of the time)."""
    q = np.asarray(q, dtype=np.float64)
    if np.any(q <= 0):
        raise UserError("q must be positive (it is a squared distance)")
    if t <= 0:
        raise UserError(f"t must be positive; got {t}")
    job = (mix, float(t), q, samples.x0, samples.xt(t), int(block), int(q_block), fast, curvature)
    k = 1 if pool is None else pool.shares
    tiles = -(-q.size // int(q_block))
    cuts = [int(q_block) * (tiles * i // k) for i in range(k)] + [q.size]
    futures = [pool.submit(_block_sums, *job, cuts[i], cuts[i + 1]) for i in range(1, k)]
    parts = np.concatenate([_block_sums(*job, cuts[0], cuts[1])] + [f.result() for f in futures], axis=2)
    sums = sum(parts) / samples.x0.size
    out = {"q": q, "V": -sums[0], "dV": -sums[1]}
    if curvature:
        out["ddV"] = -sums[2]
    return out


def _block_sums(mix, t, q, a_all, x_all, block, q_block, fast, curvature, q_lo, q_hi) -> np.ndarray:
    """The sums of ln Z, d ln Z/dq (and d² ln Z/dq²) over each block of samples, for the q values q[q_lo:q_hi]
    (q_lo a multiple of q_block): an array (blocks, 3 or 2, q_hi − q_lo), in cache-sized tiles of q_block × block."""
    e = float(ou_decay(t)); delta = float(ou_delta(t))
    r_all = np.sqrt(q)[:, None]
    derivs = _logp0_derivs(mix)

    def part(lo):
        """Sums over one block of samples, for q[q_lo:q_hi] (cache-sized tiles of q_block × block)."""
        out = np.zeros((3 if curvature else 2, q_hi - q_lo))
        for qlo in range(q_lo, q_hi, q_block):
            out[:, qlo - q_lo: qlo - q_lo + q_block] = tile(lo, qlo)
        return out

    def tile(lo, qlo):
        a = a_all[lo: lo + block][None, :]
        x = x_all[lo: lo + block][None, :]
        r = r_all[qlo: qlo + q_block]

        def g(y):   # g = −H and its first two derivatives in y
            lp, s0, h0 = derivs(y)
            res = x - e * y
            return lp - 0.5 * res * res / delta, s0 + e * res / delta, h0 - e * e / delta

        gp, dgp, ddgp = g(a + r)
        gm, dgm, ddgm = g(a - r)
        top = np.maximum(gp, gm)
        ep = np.exp(gp - top); em = np.exp(gm - top)
        tot = ep + em
        big_l = top + np.log(tot)                         # L = ln(e^{g+} + e^{g−})
        wp = ep / tot; wm = em / tot
        dl = wp * dgp - wm * dgm
        qq = r * r
        lnz = big_l - math.log(2.0) - np.log(r)           # ln Z = L − ln(2√q)
        dlnz = dl / (2 * r) - 0.5 / qq
        if not curvature:
            return lnz.sum(1), dlnz.sum(1)
        ddl = wp * ddgp + wm * ddgm + wp * wm * (dgp + dgm) ** 2
        ddlnz = ddl / (4 * qq) - dl / (4 * r ** 3) + 0.5 / (qq * qq)
        return lnz.sum(1), dlnz.sum(1), ddlnz.sum(1)

    pair = mix.symmetric_pair()
    if pair is not None and fast:
        tile = _pair_tile(float(pair[0][0]), pair[1], e, delta, a_all, x_all, r_all, block, q_block, curvature)
    return np.stack([part(lo) for lo in range(0, a_all.size, block)])


class _Shares:
    """Worker processes (`common.spawned.spawned`) that take all but one of `shares` shares of the q values."""

    def __init__(self, executor, shares: int):
        self._ex, self.shares = executor, shares
        self._ex.submit(_ready)              # the workers import this module while the caller works

    def submit(self, fn, *args):
        return self._ex.submit(fn, *args)


def _ready() -> bool:
    return True


@contextmanager
def worker_pool(work: float):
    """A pool for `fp_potential(pool=...)` when `work` (samples × q values of the largest call) is worth a
    process start (≥ WORKER_POOL_MIN_WORK) and `workers.cpu_shares()` allows more than one process; None
    otherwise (everything then runs in the caller)."""
    shares = cpu_shares() if work >= WORKER_POOL_MIN_WORK else 1
    with spawned(shares - 1) as executor:
        yield None if executor is None else _Shares(executor, shares)


WORKER_POOL_MIN_WORK = 4e6     # about 0.15 s of one call in one process: a spawned worker starts in about 0.5 s


def secondary_minimum(curve: dict) -> dict | None:
    """The interior local minimum of V (V' − → +) beyond the first local maximum, or None.

    Sec. VII, Fig. 11 (the other cluster, at t = 0.42)."""
    q, dv, v = curve["q"], curve["dV"], curve["V"]
    down = np.where((dv[:-1] > 0) & (dv[1:] <= 0))[0]    # local maxima
    up = np.where((dv[:-1] < 0) & (dv[1:] >= 0))[0]      # local minima
    if up.size == 0 or down.size == 0:
        return None
    i_max = down[0]
    later = up[up > i_max]
    if later.size == 0:
        return None
    i_min = later[0]

    def root(i):
        return float(q[i] - dv[i] * (q[i + 1] - q[i]) / (dv[i + 1] - dv[i]))
    sec = {"q_max": root(i_max), "q_min": root(i_min), "barrier": float(v[i_max] - v[i_min])}
    if "ddV" in curve:
        sec["n_inflections"] = n_inflection_points(curve)
    return sec


def threshold_time(mix: GaussianMixture, q: np.ndarray, samples: FPSamples, t_hi: float, t_lo: float,
                   tol: float = 2e-3, **kw) -> float:
    """The time below which the secondary minimum is gone, by bisection on common random numbers.

    Requires a secondary minimum at t_hi and none at t_lo; returns nan otherwise.

    Sec. VII, Fig. 11 (the minimum present at t = 0.42, gone at 0.015; the time itself is not stated in the
    paper).
    """
    kw.setdefault("curvature", False)   # whether V has a secondary minimum is read from V' alone
    has = lambda t: secondary_minimum(fp_potential(mix, t, q, samples, **kw)) is not None  # noqa: E731
    if not has(t_hi) or has(t_lo):
        return float("nan")
    lo, hi = t_lo, t_hi
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if has(mid):
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


def n_inflection_points(curve: dict) -> int:
    """Sign changes of V'' on the q grid: the extra inflection points of V as t → 0 that Sec. VII reads as
    fragmentation (Fig. 11, t = 0.01)."""
    return int(np.sum(np.diff(np.sign(curve["ddV"])) != 0))



def _pair_tile(mu, s2, e, delta, a_all, x_all, r_all, block, q_block, curvature=True):
    """Fast tile for ½N(±μ, σ²): g(a ± r) = Q(a) ± rQ'(a) + ½r²Q'' + ln cosh(k(a ± r)) + c,
    with Q(y) = −y²/(2σ²) − (x − e y)²/(2Δ) quadratic and k = μ/σ², so that
    L = ½(g₊ + g₋) + ln 2 + ln cosh(D/2), D = g₊ − g₋, and w± = ½(1 ± tanh(D/2))."""
    k = mu / s2
    c0 = -0.5 * math.log(2 * math.pi * s2) - 0.5 * mu * mu / s2
    q2 = -1.0 / s2 - e * e / delta                                   # Q''
    qa = -0.5 * a_all ** 2 / s2 - 0.5 * (x_all - e * a_all) ** 2 / delta  # Q(a)
    q1 = -a_all / s2 + e * (x_all - e * a_all) / delta                # Q'(a)
    ka = k * a_all

    def tile(lo, qlo):
        sl = slice(lo, lo + block)
        r = r_all[qlo: qlo + q_block]                  # (nq, 1)
        m = ka[sl].size
        up = ka[sl][None, :] + k * r; um = ka[sl][None, :] - k * r
        thp, lcp = _tanh_logcosh(up)
        thm, lcm = _tanh_logcosh(um)
        half_d = r * q1[sl][None, :] + 0.5 * (lcp - lcm)               # D/2
        th, lch = _tanh_logcosh(half_d)
        rr = r[:, 0]
        # Σ L = Σ Q(a) + m(½r²Q'' + c + ln 2) + Σ[½(lc₊ + lc₋) + ln cosh(D/2)]
        sum_l = qa[sl].sum() + m * (0.5 * rr * rr * q2 + c0 + math.log(2.0)) \
            + (0.5 * (lcp + lcm) + lch).sum(1)
        # L' = Q'·T + rQ'' + k[½(th₊ − th₋) + ½T(th₊ + th₋)],  T = tanh(D/2) = w₊ − w₋
        sp = thp + thm
        sum_dl = th @ q1[sl] + m * rr * q2 + k * (0.5 * (thp - thm) + 0.5 * th * sp).sum(1)
        qq = rr * rr
        lnz = sum_l - m * (math.log(2.0) + np.log(rr))                  # ln Z = L − ln(2√q)
        dlnz = sum_dl / (2 * rr) - 0.5 * m / qq
        if not curvature:
            return np.stack([lnz, dlnz])
        # L'' = Q'' + k² − k²(w₊th₊² + w₋th₋²) + ¼(1 − T²)(2Q' + k(th₊ + th₋))²
        wsq = 0.5 * (thp * thp + thm * thm) + 0.5 * th * (thp * thp - thm * thm)
        gsum = 2.0 * q1[sl][None, :] + k * sp
        sum_ddl = m * (q2 + k * k) - k * k * wsq.sum(1) + 0.25 * ((1.0 - th * th) * gsum * gsum).sum(1)
        ddlnz = sum_ddl / (4 * qq) - sum_dl / (4 * rr ** 3) + 0.5 * m / (qq * qq)
        return np.stack([lnz, dlnz, ddlnz])
    return tile


def _tanh_logcosh(u):
    """(tanh u, ln cosh u) from one exponential: with E = e^{−2|u|}, tanh|u| = (1 − E)/(1 + E) and
    ln cosh u = |u| + ln(1 + E) − ln 2."""
    a = np.abs(u)
    e = np.exp(-2.0 * a)
    th = (1.0 - e) / (1.0 + e)
    np.copysign(th, u, out=th)
    lc = a + np.log1p(e) - math.log(2.0)
    return th, lc


def ln_z_per_sample(mix: GaussianMixture, t: float, q: float, samples: FPSamples) -> np.ndarray:
    """ln Z(q) for each joint sample (X_0', X_t), the Franz-Parisi constrained partition function of Sec. VII
    (Eqs. (70)-(79)) read in 1-D: ln[e^{g(X_0'+√q)} + e^{g(X_0'−√q)}] − ln 2√q."""
    e = float(ou_decay(t)); delta = float(ou_delta(t))
    a, x = samples.x0, samples.xt(t)
    r = math.sqrt(float(q))
    lp = _logp0_derivs(mix)

    def g(y):   # g = −H(y; X_t) = ln p_0(y) − (X_t − e^{−t} y)²/(2Δ_t)
        return lp(y)[0] - 0.5 * (x - e * y) ** 2 / delta
    return np.logaddexp(g(a + r), g(a - r)) - math.log(2.0 * r)


def barrier_with_se(mix: GaussianMixture, t: float, samples: FPSamples, q_max: float, q_min: float) -> tuple[float, float]:
    """Barrier V(q_max) − V(q_min) = ⟨ln Z(q_min) − ln Z(q_max)⟩ and its standard error over samples.

    Sec. VII, Eqs. (70)-(79), Fig. 11."""
    diff = ln_z_per_sample(mix, t, q_min, samples) - ln_z_per_sample(mix, t, q_max, samples)
    return float(diff.mean()), float(diff.std(ddof=1) / math.sqrt(diff.size))


def fold_fit(ts, barriers, exponent: float = 1.5) -> tuple[float, float, float]:
    """(t_f, slope, intercept) of the least-squares line through (t, B^{1/exponent}); nan when
    fewer than three finite positive barriers. exponent = 3/2 is the fold; another exponent, or the
    barriers paired with the times in reverse order, gives the nulls of the fold reading.

    For the threshold of Sec. VII (Fig. 11); the fold law is our reconstruction, not the paper's."""
    ts = np.asarray(ts, dtype=np.float64); b = np.asarray(barriers, dtype=np.float64)
    ok = np.isfinite(b) & (b > 0)
    if ok.sum() < 3:
        return float("nan"), float("nan"), float("nan")
    slope, icpt = np.polyfit(ts[ok], b[ok] ** (1.0 / exponent), 1)
    return float(-icpt / slope), float(slope), float(icpt)


def fold_exponent(ts, barriers, t_threshold: float) -> float:
    """Least-squares slope of ln B against ln(t − t_threshold): the barrier's exponent read directly
    (3/2 at a fold, 1 for a linear vanishing); nan when fewer than two usable points.

    For the threshold of Sec. VII (Fig. 11)."""
    ts = np.asarray(ts, dtype=np.float64); b = np.asarray(barriers, dtype=np.float64)
    ok = np.isfinite(b) & (b > 0) & (ts > t_threshold)
    if ok.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(ts[ok] - t_threshold), np.log(b[ok]), 1)[0])


def fold_threshold(mix: GaussianMixture, q: np.ndarray, samples: FPSamples, ts, **kw) -> dict:
    """Threshold time read from how the barrier vanishes: at a fold (saddle-node) of V' the local
    maximum and minimum merge and the barrier B(t) ∝ (t − t_f)^{3/2}, so B^{2/3} is linear in t;
    a least-squares line through (t, B^{2/3}) at times `ts` above the threshold gives t_f.

    For the threshold of Sec. VII (Fig. 11); not in the paper."""
    ts = np.asarray(ts, dtype=np.float64)
    kw.setdefault("curvature", False)   # the barrier is read from V and V' alone
    barriers = []
    for t in ts:
        sec = secondary_minimum(fp_potential(mix, float(t), q, samples, **kw))
        barriers.append(sec["barrier"] if sec else float("nan"))
    b = np.array(barriers)
    t_f, slope, icpt = fold_fit(ts, b)
    return {"t_fold": t_f, "ts": ts, "barriers": b, "fit": (slope, icpt)}
