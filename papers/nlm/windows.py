"""Pre-declared windows of generation time and E_AAI window differences with their SEs (notebook 03).

Paper: Yu, Huang & Huang, arXiv:2506.23546, the E_AAI vs generation time figure (PCD-10 against
Rdm-500, after Decelle, Furtlehner & Seoane, NeurIPS 2021): Rdm-k's samples are best near its training
chain length k and degrade at long times, PCD-k's do not. The claims compare windows fixed by k and
the run length, never by the curve.
"""
from __future__ import annotations

import math

import numpy as np

from . import bootstrap
from .sampler import log_times


def ooe_windows(times, k: int, t_end: int) -> dict:
    """Pre-declared windows of generation time (set by k and the run length, never by the curve).

    near_k: [k/2, 2k], where the paper puts Rdm-k's best samples; mid: [t_end/20, t_end/3], the decade
    before the end; late: [t_end/2, t_end]. Boolean masks over `times`.
    """
    return {"near_k": bootstrap.window_mask(times, k / 2, 2 * k),
            "mid": bootstrap.window_mask(times, t_end / 20, t_end / 3),
            "late": bootstrap.window_mask(times, t_end / 2, t_end)}


def ooe_snapshot_times(t_end: int, n_log: int, k: int, window_frames: int = 0) -> list[int]:
    """Generation times at which samples are measured: n_log log-spaced in [k/20, t_end], plus
    `window_frames` evenly spaced inside each pre-declared window (more frames per window average the
    samples' fluctuations down; the windows themselves do not move)."""
    times = set(log_times(t_end, n_log, t_min=max(1, k // 20)))
    if window_frames > 0:
        for lo, hi in ((k / 2, 2 * k), (t_end / 20, t_end / 3), (t_end / 2, t_end)):
            times.update(int(round(v)) for v in np.linspace(math.ceil(lo), math.floor(hi), window_frames))
    return sorted(t for t in times if 1 <= t <= t_end)


def ooe_window_statistics(times, pcd_images, rdm_images, test_img, k: int, t_end: int, n_boot: int, generator,
                          null_images=None) -> dict:
    """Window differences of E_AAI, averaged over trained replicates, with their standard errors.

    pcd_images / rdm_images (/ null_images, optional: the untrained network): {t: (n, D) images} for one
    trained model, or a list of such dicts, one per replicate (replicate r of each mode from the same
    initial network). Metrics: rdm_late_minus_near_k, rdm_late_minus_mid, pcd_late_minus_mid,
    pcd_late_minus_near_k, rdm_minus_pcd_late_rise (paired by replicate) and, with a null,
    untrained_late_minus_mid and untrained_minus_pcd_late_rise. For each:

    * `<key>`: the mean over replicates;
    * `<key>_boot_se`: its bootstrap SE, one resample of the held-out images shared by every replicate (they
      are one reference set, so their noise does not average out over replicates) and of the chains (one
      index draw for every model, replicate and time; the chains of different models are independent);
    * `<key>_between_se`: sd over replicates / √R, the variation between trained models (None for R = 1);
    * `<key>_se`: √(boot² + between²), the SE the claims use (the bootstrap alone for R = 1; the chains' share
      counts in both terms, so it errs on the wide side);
    * `<key>_reps`, `<key>_reps_se`: each replicate's value and bootstrap SE.
    """
    reps = lambda x: list(x) if isinstance(x, (list, tuple)) else [x]   # noqa: E731
    sets = {"pcd": reps(pcd_images), "rdm": reps(rdm_images), **({"untrained": reps(null_images)} if null_images is not None else {})}
    R = len(sets["pcd"])
    if any(len(v) != R for v in sets.values()):
        raise ValueError(f"every model needs the same number of replicates, got { {k: len(v) for k, v in sets.items()} }")
    win = ooe_windows(times, k, t_end)
    keep = [i for i in range(len(times)) if any(w[i] for w in win.values())]
    kt = [times[i] for i in keep]
    order = [(model, r) for model in sets for r in range(R)]             # rows of `stack`: (model, replicate, time)
    stack = np.stack([np.asarray(sets[model][r][t]) for model, r in order for t in kt])
    est, boot = bootstrap.e_aai_curve(stack, test_img, n_boot=n_boot, generator=generator)
    n = len(kt)

    def rows(model, r, name):                                # the row indices of one window of one replicate
        j = order.index((model, r))
        return j * n + np.flatnonzero(win[name][keep])

    def rise(e, model, r, late, early):                      # window mean difference on the last axis
        return e[..., rows(model, r, late)].mean(-1) - e[..., rows(model, r, early)].mean(-1)

    def summarize(key, per_rep):                             # per_rep(e): (..., ) difference of replicate r
        v = [float(per_rep(est, r)) for r in range(R)]
        b = np.stack([per_rep(boot, r) for r in range(R)])   # (R, n_boot)
        out = {key: float(np.mean(v)), key + "_reps": v, key + "_reps_se": [float(x) for x in b.std(1, ddof=1)],
               key + "_boot_se": float(b.mean(0).std(ddof=1)),
               key + "_between_se": float(np.std(v, ddof=1) / math.sqrt(R)) if R > 1 else None}
        out[key + "_se"] = float(math.hypot(out[key + "_boot_se"], out[key + "_between_se"] or 0.0))
        return out

    m = {"ooe_replicates": R}
    pairs = [("rdm_late_minus_near_k", "rdm", "late", "near_k"), ("rdm_late_minus_mid", "rdm", "late", "mid"),
             ("pcd_late_minus_mid", "pcd", "late", "mid"), ("pcd_late_minus_near_k", "pcd", "late", "near_k")]
    if null_images is not None:
        pairs.append(("untrained_late_minus_mid", "untrained", "late", "mid"))
    for key, model, late, early in pairs:
        m.update(summarize(key, lambda e, r, model=model, late=late, early=early: rise(e, model, r, late, early)))
    # paired by replicate: (Rdm rise) − (PCD rise) between the decade before the end and the end, same resamples
    for other in [o for o in sets if o != "pcd"]:
        m.update(summarize(f"{other}_minus_pcd_late_rise",
                           lambda e, r, other=other: rise(e, other, r, "late", "mid") - rise(e, "pcd", r, "late", "mid")))
    m.update({f"ooe_window_{name}": [t for t, w in zip(times, win[name]) if w] for name in win})
    for model in sets:                                       # SE of the replicate-mean curve at each time point
        j0 = order.index((model, 0))
        m[f"ooe_boot_se_e_aai_{model}"] = boot[:, j0 * n:(j0 + R) * n].reshape(-1, R, n).mean(1).std(0, ddof=1).tolist()
    m["ooe_boot_times"] = kt
    return m

