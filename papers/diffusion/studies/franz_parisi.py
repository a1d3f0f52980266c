"""Notebook 04: the Franz-Parisi potential V(q), V'(q), V''(q), its secondary minimum and the threshold
time where the minimum disappears (Sec. VII, Eqs. (70)-(79), Fig. 11).

Paper: Yu & Huang, https://arxiv.org/abs/2405.11932. The potential itself is in `papers.diffusion.franz_parisi`.
"""
from __future__ import annotations

import math

import numpy as np

from .. import franz_parisi as fp
from .. import landscape
from ..mixture import GaussianMixture


def measure(cfg, run) -> dict:
    """Notebook 04: Fig. 11's panels, their nulls, and the threshold time with its fold fit (`run.streams`)."""
    return franz_parisi_curves(cfg, run.streams)


# ---- the measurement-to-metric mapping ----------------------------------------------------------------

def time_tag(t: float) -> str:
    """A time as it appears in metric names: 0.42 -> "042", 0.015 -> "0015"."""
    return f"{t:g}".replace(".", "")


def panel_metrics(tag: str, sec: dict | None, inflections: int, v_at_8: float | None, barrier_se) -> dict:
    """One panel of Fig. 11 (time tag `tag`): the secondary minimum (`fp.secondary_minimum`, None when V
    has none: barrier 0), where it lies, V's inflection points, V(8) when the q grid reaches 8, and the
    barrier's standard error."""
    m = {f"fp_t{tag}_barrier": float(sec["barrier"]) if sec else 0.0, f"fp_t{tag}_has_secondary_min": sec is not None}
    if sec:
        m[f"fp_t{tag}_q_min"] = sec["q_min"]; m[f"fp_t{tag}_q_max"] = sec["q_max"]
    m[f"fp_t{tag}_inflections"] = inflections
    if v_at_8 is not None:
        m[f"fp_t{tag}_V_at_8"] = float(v_at_8)
    m[f"fp_t{tag}_barrier_se"] = barrier_se
    return m


def threshold_metrics(thr: float, fold: dict | None, linear: float, exponent: float, reversed_fit: float) -> dict:
    """The threshold time by bisection against where the barrier's fold law (t − t_f)^{3/2} puts it
    (`fp_threshold_minus_fold`, the claim) and where the competing linear law does (its null); the
    log-log exponent and the time-reversed fit for information. `fold` is None when no threshold was found."""
    m = {"fp_threshold_time": float(thr), "fp_threshold_fold": fold["t_fold"] if fold else float("nan")}
    m["fp_threshold_minus_fold"] = float(thr - m["fp_threshold_fold"])
    m["fp_threshold_fold_linear"] = float(linear)
    m["fp_threshold_minus_fold_linear"] = float(thr - linear)
    m["fp_fold_exponent"] = exponent
    m["fp_threshold_fold_reversed"] = reversed_fit
    return m


# ---- the section ----------------------------------------------------------------------------------------

def franz_parisi_curves(cfg, streams) -> dict:
    """Fig 11: V, V', V'' at each t in fp_times, the secondary minimum, and its threshold time.

    Nulls: the same barrier at t = 0.42 for a single Gaussian of the same variance (no second
    cluster); at the smallest-but-one panel time the posterior of t = 0.42 applied to X_t drawn at
    that time (a shuffled-time denoiser); for the fold law B ∝ (t − t_f)^{3/2}, the competing linear
    law B ∝ t − t_f extrapolated from the same barriers (fp_fold_offsets above the threshold). The panels and
    the single-Gaussian null draw the same streams; the threshold's smaller sample its own
    (`streams.child("fp-threshold")`)."""
    q = cfg.fp_q_min + cfg.fp_q_step * np.arange(int(cfg.fp_q_points))
    # a second process takes half of every V(q) (the same numbers bit for bit: `fp.fp_potential`)
    with fp.worker_pool(max(cfg.fp_samples, cfg.fp_threshold_samples) * q.size) as pool:
        return _curves(cfg, streams, q, pool)


def _curves(cfg, streams, q, pool) -> dict:
    mix = GaussianMixture.two_gaussians(cfg.fp_mu, cfg.fp_sigma2)
    samples = fp.draw_samples(mix, cfg.fp_samples, streams)
    curves, m = {}, {}
    for t in cfg.fp_times:
        c = fp.fp_potential(mix, t, q, samples, pool=pool)
        curves[t] = c
        sec = fp.secondary_minimum(c)
        # the barrier as a per-sample average, with its standard error
        se = fp.barrier_with_se(mix, t, samples, sec["q_max"], sec["q_min"])[1] if sec else 0.0
        m.update(panel_metrics(time_tag(t), sec, fp.n_inflection_points(c),
                               np.interp(8.0, q, c["V"]) if q[-1] >= 8.0 else None, se))
    t_hi, t_lo = float(cfg.fp_times[0]), float(cfg.fp_times[1])
    tag_hi, tag_lo = time_tag(t_hi), time_tag(t_lo)
    # null 1: no second cluster, N(0, μ² + σ²) (the pair with μ = 0), same measurement at t_hi
    gauss = GaussianMixture.two_gaussians(0.0, cfg.fp_mu ** 2 + cfg.fp_sigma2)
    g_samples = fp.draw_samples(gauss, cfg.fp_samples, streams)
    sec = fp.secondary_minimum(fp.fp_potential(gauss, t_hi, q, g_samples, pool=pool, curvature=False))
    b, se = fp.barrier_with_se(gauss, t_hi, g_samples, sec["q_max"], sec["q_min"]) if sec else (0.0, 0.0)
    m[f"fp_t{tag_hi}_gauss_barrier"], m[f"fp_t{tag_hi}_gauss_barrier_se"] = float(b), float(se)
    # null 2: X_t drawn at t_lo, read with the posterior of t_hi (the wrong noise level)
    frozen = samples.drawn_at(t_lo)
    sec = fp.secondary_minimum(fp.fp_potential(mix, t_hi, q, frozen, pool=pool, curvature=False))
    m[f"fp_t{tag_lo}_shuffled_time_barrier"] = float(sec["barrier"]) if sec else 0.0
    small = fp.draw_samples(mix, cfg.fp_threshold_samples, streams.child("fp-threshold"))
    thr = fp.threshold_time(mix, q, small, cfg.fp_threshold_hi, cfg.fp_threshold_lo, tol=cfg.fp_threshold_tol, pool=pool)
    fold = fp.fold_threshold(mix, q, small, thr + np.asarray(cfg.fp_fold_offsets), pool=pool) if math.isfinite(thr) \
        else None
    # null 3: the competing law, a barrier vanishing linearly (exponent 1), fitted on the same window;
    # for information the log-log exponent of the barrier against t − (bisection threshold) and the
    # time-reversed fit
    lin = fp.fold_fit(fold["ts"], fold["barriers"], exponent=1.0)[0] if fold else float("nan")
    exponent = fp.fold_exponent(fold["ts"], fold["barriers"], thr) if fold else float("nan")
    reversed_fit = fp.fold_fit(fold["ts"], fold["barriers"][::-1])[0] if fold else float("nan")
    m.update(threshold_metrics(thr, fold, lin, exponent, reversed_fit))
    m["fp_speciation_time"] = landscape.speciation_time_closed_form(cfg.fp_mu, cfg.fp_sigma2)
    return {"q": q, "curves": curves, "fold": fold, "threshold": thr, "metrics": m}
