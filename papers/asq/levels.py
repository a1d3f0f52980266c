"""Weight level sets and the nearest-level projection.

Paper: "Precision Neural Network Quantization via Learnable Adaptive Modules",
arXiv:2504.17263, https://arxiv.org/abs/2504.17263 (POST = power of sqrt(2) weight grid).

Every grid here is a *normalised* set of levels in [-1, 1]; a per-output-channel clip `alpha`
scales it to weights, w_hat = alpha * P(clamp(w / alpha, -1, 1)).

| grid            | magnitudes (besides 0)                         | levels    | bits to store |
|-----------------|------------------------------------------------|-----------|---------------|
| `uniform`       | k / 2^(b-1), k = -2^(b-1) .. 2^(b-1)-1          | 2^b       | b             |
| `pot`           | 2^-j,     j = 0 .. 2^(b-1)-2                   | 2^b - 1   | b             |
| `post`          | 2^(-j/2), j = 0 .. 2^(b-1)-2  (the default)    | 2^b - 1   | b             |
| `post_released` | 2^(-j/2), j = 0 .. 2^(b-1)-1                   | 2^b + 1   | b + 1         |
| `pot_released`  | 2^-j,     j = 0 .. 2^(b-1)-1  (code as released)| 2^b + 1   | b + 1         |
| `apot`          | additive powers of two (Li et al., ICLR 2020)  | 2^b - 1   | b             |

The b-bit storable log grids use a sign bit and a (b-1)-bit magnitude code whose code 0 means
zero, so magnitude code c >= 1 stands for 2^(-(c-1)/2) (POST) or 2^-(c-1) (POT). The released
code (`build_power_value`) adds one more magnitude, so its set needs b + 1 bits; it also has the
sqrt(2) base commented out, which makes its "POST" a POT grid (`pot_released`).

POST levels are fixed-point numbers with `LUT_FRAC_BITS` fractional bits, exactly the entries of
the look-up table that integer inference uses (`integer.py`), so fake quantization and the
integer path share one level set.
"""
from __future__ import annotations

import math

import torch

from common.errors import UserError

#: fractional bits of the fixed-point POST look-up table: L[c] = round(2^15 * 2^(-(c-1)/2))
LUT_FRAC_BITS = 15

GRIDS = ("uniform", "pot", "post", "post_released", "pot_released", "apot")
LOG_GRIDS = ("pot", "post", "post_released", "pot_released", "apot")
#: weight bit widths each grid can hold (32 = leave the layer in float)
GRID_BITS = {"uniform": range(2, 9), "pot": range(2, 6), "post": range(2, 6),
             "post_released": range(2, 6), "pot_released": range(2, 6), "apot": range(2, 6)}


def check_grid(grid: str, bits: int) -> None:
    """Raise a one-line `UserError` unless `grid` is known and can hold `bits` (or bits = 32)."""
    if grid not in GRIDS:
        raise UserError(f"unknown weight grid {grid!r}; choose one of {', '.join(GRIDS)}")
    if int(bits) == 32:
        return
    allowed = GRID_BITS[grid]
    if int(bits) != bits or int(bits) not in allowed:
        raise UserError(f"weight grid {grid!r} holds {allowed.start}..{allowed.stop - 1} bits "
                        f"(or 32 for float); got bits={bits}")


def fixed_point(value: float, frac_bits: int = LUT_FRAC_BITS) -> float:
    """Round to the nearest multiple of 2^-frac_bits (the LUT's resolution): L[c] = round(2^F m_c) / 2^F, the
    fixed-point POST levels of the LUT (abstract, "LUT"; a reconstruction, README "Method as implemented")."""
    return round(value * 2**frac_bits) / 2**frac_bits


def magnitudes(grid: str, bits: int, exact: bool = False) -> torch.Tensor:
    """Nonzero magnitudes of a log grid, largest first (float64); magnitude code c >= 1 is index c-1.

    The levels are fixed-point numbers (`fixed_point`); `exact=True` gives the real values before that
    rounding (2^(-j/2) for POST), from which a LUT with another rounding mode can be built.
    POST = powers of sqrt 2 (abstract); the released sets are the official code's `post.py: build_power_value`
    (with its sqrt 2 base restored, `post_released`, and as shipped, `pot_released`: errata 1 and 2)."""
    check_grid(grid, bits)
    fp = (lambda v: v) if exact else fixed_point
    if grid not in LOG_GRIDS:
        raise UserError(f"grid {grid!r} is not a log grid; use level_set for it")
    half = 2 ** (bits - 1)
    if grid == "pot":
        mags = [2.0 ** -j for j in range(half - 1)]                       # 2^-j
    elif grid == "post":
        mags = [fp(2.0 ** (-j / 2)) for j in range(half - 1)]             # 2^(-j/2), Eq. POST
    elif grid == "post_released":
        mags = [fp(2.0 ** (-j / 2)) for j in range(half)]                 # released: one more level
    elif grid == "pot_released":
        mags = [2.0 ** -j for j in range(half)]                           # released, base 2
    else:  # apot: sums of one term from each of two PoT sets, normalised to max 1
        mags = [fp(v) for v in _apot_magnitudes(bits)]
    return torch.tensor(mags, dtype=torch.float64)


def _apot_magnitudes(bits: int) -> list[float]:
    """Additive powers of two with two terms (APoT, arXiv:1909.13144; its code's `quant_layer.py:
    build_power_value(B, additive=True)`): 2^(b-1) - 1 magnitudes.

    The b-1 magnitude bits split into ceil((b-1)/2) bits for p1 in {0, 2^0, 2^-2, 2^-4, ...} and
    floor((b-1)/2) bits for p2 in {0, 2^-1, 2^-3, ...}; the 2^(b-1) sums p1 + p2 are distinct
    (even and odd powers), and they are normalised so that the largest is 1.
    """
    n = bits - 1
    n1, n2 = (n + 1) // 2, n // 2
    p1 = [0.0] + [2.0 ** (-2 * i) for i in range(2**n1 - 1)]
    p2 = [0.0] + [2.0 ** (-2 * i - 1) for i in range(2**n2 - 1)]
    sums = sorted({a + b for a in p1 for b in p2 if a + b > 0}, reverse=True)
    top = sums[0]
    return [s / top for s in sums]


def level_set(grid: str, bits: int) -> torch.Tensor:
    """All normalised levels of `grid` at `bits`, sorted ascending (float64): the level sets of the module
    docstring's table (uniform: LSQ's signed range; log grids: `magnitudes`, mirrored, with zero)."""
    check_grid(grid, bits)
    if grid == "uniform":
        half = 2 ** (bits - 1)
        return torch.arange(-half, half, dtype=torch.float64) / half      # k / 2^(b-1)
    mags = magnitudes(grid, bits)
    return torch.cat([-mags, torch.zeros(1, dtype=torch.float64), mags.flip(0)]).sort().values


def storage_bits(grid: str, bits: int) -> int:
    """Bits needed to store one weight code: ceil(log2(number of levels)) (the released 2^b + 1-level sets
    need b + 1: erratum 2)."""
    return math.ceil(math.log2(level_set(grid, bits).numel()))


def project(v: torch.Tensor, levels: torch.Tensor, key: tuple | None = None) -> torch.Tensor:
    """Nearest level of each entry of v (levels sorted ascending), without a levels x weights tensor.

    The nearest-level projection of the release (official code `post.py: post_quantization`, there an argmin
    over a levels x weights distance tensor). The midpoints between neighbouring levels are the decision
    thresholds. Every grid here has
    dyadic levels (multiples of 2^-15 or coarser), so their midpoints are multiples of 2^-K with
    K <= 16 and the nearest level is a table look-up, exact and ties included:

        level(v) = T[ceil(v * 2^K)],  T[c] = levels[#{midpoints m : m * 2^K <= c - 1}]

    (a midpoint m lies below v exactly when m * 2^K <= ceil(v * 2^K) - 1, m * 2^K an integer).
    Other level sets go through a binary search (`torch.bucketize`), O(n log L).
    `key`: the levels as a tuple of floats (`levels_key`), which names the cached table without reading
    `levels` back to the host; the quantizers pass it, so a projection on a GPU costs no device sync.
    """
    table = lookup_table(levels, v.dtype, values=True, device=v.device, key=key)
    if table is None:
        return levels.to(device=v.device, dtype=v.dtype)[project_index(v, levels, key)]
    return _look_up(v, *table)


def project_index(v: torch.Tensor, levels: torch.Tensor, key: tuple | None = None) -> torch.Tensor:
    """Index into `levels` of the nearest level of each entry of v (ties go to the lower level); `key` as in
    `project`."""
    table = lookup_table(levels, v.dtype, values=False, device=v.device, key=key)
    if table is not None:
        return _look_up(v, *table)
    levels = levels.to(device=v.device, dtype=v.dtype)
    mids = (levels[1:] + levels[:-1]) / 2                                 # decision thresholds
    return torch.bucketize(v, mids)


_MAX_TABLE_BITS = 16
_TABLES: dict = {}


def levels_key(levels: torch.Tensor) -> tuple:
    """The level set as a tuple of Python floats: the name of its cached look-up tables (`lookup_table`).
    Reads `levels` on the host, so compute it once (the quantizers do at construction), not per projection."""
    return tuple(levels.detach().double().cpu().tolist())


def lookup_table(levels: torch.Tensor, dtype: torch.dtype, values: bool, device=None, key: tuple | None = None):
    """(K, table) for dyadic levels within [-1, 1], else None; built once per level set on the CPU and
    kept on `device` (the device of the values looked up), cached per (level set, dtype, device). `key` is
    `levels_key(levels)` when the caller has it (no host read of `levels`)."""
    if dtype not in (torch.float32, torch.float64) or levels.numel() < 2:
        return None
    device = torch.device("cpu") if device is None else torch.device(device)
    lkey = levels_key(levels) if key is None else key
    key = (lkey, dtype, values, str(device))
    if key not in _TABLES and device.type != "cpu":
        cpu = lookup_table(levels, dtype, values, key=lkey)
        _TABLES[key] = None if cpu is None else (cpu[0], cpu[1].to(device))
    if key not in _TABLES:
        lv = levels.detach().double().cpu()
        mids = (lv[1:] + lv[:-1]) / 2
        table = None
        if float(lv.abs().max()) <= 1.0 and bool((lv[1:] > lv[:-1]).all()):
            for K in range(_MAX_TABLE_BITS + 1):
                scaled = mids * 2.0**K
                if torch.equal(scaled, scaled.round()):
                    c = torch.arange(-2**K, 2**K + 1, dtype=torch.float64)
                    index = torch.searchsorted(scaled, c - 1, right=True)   # #{m : m 2^K <= c - 1}
                    table = (K, lv.to(dtype)[index] if values else index)
                    break
        _TABLES[key] = table
    return _TABLES[key]


def _look_up(v: torch.Tensor, K: int, table: torch.Tensor) -> torch.Tensor:
    c = torch.ceil(v * 2.0**K).clamp_(-2.0**K, 2.0**K).add_(2.0**K)    # exact: a power-of-two scale
    return torch.index_select(table, 0, c.reshape(-1).to(torch.int32)).reshape(v.shape)


def weight_mse(w: torch.Tensor, grid: str, bits: int, n_alpha: int = 64, levels: torch.Tensor | None = None) -> torch.Tensor:
    """Per-row mean squared error of the best clipped grid, alpha grid-searched per row: the weight-error
    measure of the identity `post-vs-apot-mse-w4` (abstract: POST fits bell-shaped weights better).

    w: (rows, n). The candidate clips are alpha = r * max|w_row| for r on a grid in (0, 1].
    `levels` (sorted, within [-1, 1]) replaces the grid's level set when given.
    Returns (rows,) float64 MSE at the best alpha, on w's device.
    """
    w = w.to(torch.float64)
    levels = (level_set(grid, bits) if levels is None else levels).to(device=w.device, dtype=torch.float64)
    key = levels_key(levels)                                              # one host read, not one per pass
    amax = w.abs().amax(dim=1, keepdim=True).clamp_min(1e-12)
    ratios = torch.linspace(0.05, 1.0, n_alpha, dtype=torch.float64).tolist()
    best = torch.full((w.shape[0],), float("inf"), dtype=torch.float64, device=w.device)
    for r in ratios:  # n_alpha small passes, each vectorised over all rows and weights (in place where it can be)
        alpha = amax * r
        q = project(torch.div(w, alpha).clamp_(-1.0, 1.0), levels, key).mul_(alpha)
        best = torch.minimum(best, q.sub_(w).square_().mean(dim=1))      # mean((q - w)^2), the same operations
    return best
