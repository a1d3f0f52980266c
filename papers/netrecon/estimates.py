"""Standard errors of the Monte Carlo estimates the claims test.

Z. Yu and H. Huang, "Network reconstruction may not mean dynamics prediction",
https://arxiv.org/abs/2409.04240

Every simulated quantity here is an average over independent samples (networks, initial states);
a claim judges it with its standard error. Plain means use sd / sqrt(n); a derived statistic (a
maximum over time of a mean curve, a fitted slope, a ratio) uses the delete-one jackknife.
"""
from __future__ import annotations

from typing import Callable

import numpy as np


def sem(samples) -> float:
    """Standard error of the mean of `samples` (NaN with fewer than two finite values)."""
    x = np.asarray(samples, dtype=np.float64).ravel()
    x = x[np.isfinite(x)]
    return float(np.std(x, ddof=1) / np.sqrt(len(x))) if len(x) > 1 else float("nan")


def jackknife_se(samples, statistic: Callable[[np.ndarray], float]) -> float:
    """Delete-one jackknife standard error of `statistic(samples)`; samples along axis 0.

    se^2 = (n-1)/n * sum_i (theta_(i) - mean theta_(.))^2, theta_(i) the statistic without sample i.
    """
    x = np.asarray(samples)
    n = x.shape[0]
    if n < 2:
        return float("nan")
    theta = np.array([statistic(np.delete(x, i, axis=0)) for i in range(n)], dtype=np.float64)
    if not np.all(np.isfinite(theta)):
        return float("nan")
    return float(np.sqrt((n - 1) / n * np.sum((theta - theta.mean()) ** 2)))
