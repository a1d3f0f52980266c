"""What would decide an inconclusive claim: the sample at which the observed effect and spread clear the criterion.

Two questions, one per kind of uncertainty (`common.claims` applies them and words the answer):

- a comparison ("A beats B" on paired replicates): the number of pairs n at which the one-sided 95 % Student-t
  bound of the observed mean difference, at the observed standard deviation, clears the criterion's edge,

      |mean - edge| >= t_{0.95, n-1} * sd / sqrt(n)          (`paired_n`);

- a statistical estimate (a mean with its standard error): the factor k by which the sample must grow so that
  the 95 % normal bound clears the edge, the standard error shrinking as 1 / sqrt(sample),

      k = (z_{0.95} * se / |m - edge|)^2                      (`sample_factor`).

Either answers for whichever side the estimate lies on: inside the accepted region the larger sample would
reproduce, outside it would not reproduce; both decide. An estimate exactly on the edge is decided by no n.
`nearest_edge` gives the edge the estimate must clear.
"""
from __future__ import annotations

import math

CONFIDENCE = 0.95
N_MAX = 100_000   # beyond this many pairs, "no affordable n"


def nearest_edge(x: float, region: tuple[float, float]) -> float | None:
    """The finite edge of the accepted region `[lo, hi]` nearest to `x` (None when neither edge is finite)."""
    edges = [e for e in region if math.isfinite(e)]
    return min(edges, key=lambda e: abs(x - e)) if edges else None


def inside(x: float, region: tuple[float, float]) -> bool:
    lo, hi = region
    return lo <= x <= hi


def paired_n(mean: float, sd: float, edge: float, confidence: float = CONFIDENCE) -> int | None:
    """The smallest n >= 2 with |mean - edge| >= t_{confidence, n-1} sd / sqrt(n); None when no n up to `N_MAX`
    does (the mean on the edge). With sd = 0 any two pairs decide."""
    gap = abs(mean - edge)
    if gap == 0:
        return None
    if sd == 0:
        return 2
    from scipy.stats import t

    def clears(n: int) -> bool:
        return gap >= float(t.ppf(confidence, n - 1)) * sd / math.sqrt(n)

    if not clears(N_MAX):
        return None
    lo, hi = 1, N_MAX  # clears(hi) holds, clears is monotone in n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if mid >= 2 and clears(mid):
            hi = mid
        else:
            lo = mid
    return hi


def sample_factor(measured: float, se: float, edge: float, confidence: float = CONFIDENCE) -> float | None:
    """k = (z se / |m - edge|)^2: how many times the sample must grow for the normal bound to clear `edge`
    (None with the estimate on the edge). k < 1 means the present sample already would."""
    gap = abs(measured - edge)
    if gap == 0:
        return None
    from statistics import NormalDist

    z = NormalDist().inv_cdf(confidence)
    return (z * se / gap) ** 2
