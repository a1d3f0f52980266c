"""Notebook 05: speciation and collapse in high dimension, and a learned score on real data (new figures
12-14; extensions of Secs. V-VI with Biroli, Bonnaire, de Bortoli and Mézard, arXiv:2402.18491).

Paper: Yu & Huang, https://arxiv.org/abs/2405.11932. The cloning probability crosses the d → ∞ speciation
value at Biroli et al.'s t_s = ½ ln Λ; the empirical score collapses at t_C = ½ ln(1 + σ²/(n^{2/d} − 1));
a score learned by denoising score matching speciates near ½ ln Λ of its data.
"""
from __future__ import annotations

import math

import numpy as np

from common import spawned

from .. import highdim, landscape, learned, workers
from ..mixture import GaussianMixture

COLLAPSE_MIN_DIM = 32        # the collapse claim covers d >= 32
BESIDE_MIN_STEPS = 1000      # score-matching steps (about 2 s) from which a worker process pays for its start


def measure(cfg, run) -> dict:
    """Notebook 05: cloning (Fig. 12), collapse (Fig. 13) and the learned score (Fig. 14, on `run.device`), each
    from `run.streams`; `provenance` is the learned score's dataset provenance (for `run.log_inputs`).

    On the CPU, with a second core and a training long enough to hide a process start (≥ BESIDE_MIN_STEPS), a
    spawned worker runs the sections that do not need the trained network (cloning, collapse and the learned
    score's nulls, `beside_training`) while this process trains: the same numbers from the same streams."""
    streams = run.streams
    beside = str(run.device) == "cpu" and cfg.learned_steps >= BESIDE_MIN_STEPS and workers.cpu_shares() > 1
    with spawned.spawned(1 if beside else 0) as pool:
        if pool is None:
            out = {"cloning": cloning(cfg, streams), "collapse": collapse(cfg, streams),
                   "learned": learned_speciation(cfg, streams, device=run.device)}
        else:
            later = pool.submit(beside_training, cfg, streams)
            learned_out = learned_speciation(cfg, streams, nulls=lambda: later.result()["nulls"])
            done = later.result()
            spawned.record_drawn(streams, done["drawn"])
            out = {"cloning": done["cloning"], "collapse": done["collapse"], "learned": learned_out}
    out["provenance"] = out["learned"]["provenance"]
    out["metrics"] = {**out["cloning"]["metrics"], **out["collapse"]["metrics"], **out["learned"]["metrics"]}
    return out


# ---- the measurement-to-metric mapping ----------------------------------------------------------------

def worst_deviation(devs: list, ses: list) -> tuple[float, float]:
    """The largest finite deviation and the standard error at the same index (the first entry when
    none is finite)."""
    worst = int(np.nanargmax(devs)) if np.any(np.isfinite(devs)) else 0
    return float(devs[worst]), float(ses[worst])


def worst_relative_error(errs: list[tuple[float, float]]) -> tuple[float, float]:
    """The largest (relative error, its SE) pair (nan, nan when there is none)."""
    worst = max(errs) if errs else (float("nan"), float("nan"))
    return float(worst[0]), float(worst[1])


def relative_error(value: float, reference: float) -> float:
    """|value − reference| / reference, nan unless reference > 0."""
    return float(abs(value - reference) / reference) if reference > 0 else float("nan")


def relative_se(se: float, reference: float) -> float:
    """se / reference, nan unless reference > 0."""
    return float(se / reference) if reference > 0 else float("nan")


def clone_check_metrics(p: float, se: float, exact: float, p_shuffled: float, se_shuffled: float) -> dict:
    """The two-clone SDE check: the agreement of clones against the exact cloning probability, the
    shuffled pairs' agreement (the null), and the z-score of the difference."""
    return {"clone_sim_probability": p, "clone_sim_se": se, "clone_sim_exact": exact,
            "clone_sim_shuffled_probability": p_shuffled, "clone_sim_shuffled_se": se_shuffled,
            "clone_sim_z": float(abs(p - exact) / max(se, 1e-12))}


def late_metrics(t_late: float, independent: float, late: dict) -> dict:
    """Past speciation (the last time of the grid, `t_late`): each curve's clone agreement (`late[name] =
    (probability, se)` for learned, untrained, empirical) beside Σ_c w_c² of the training labels (`independent`),
    the value two clones that forgot their start reach."""
    m = {"learned_late_time": float(t_late), "learned_independent_agreement": float(independent)}
    for name, key in (("learned", "learned_late_agreement"), ("untrained", "learned_untrained_late_agreement"),
                      ("empirical", "learned_empirical_late_agreement")):
        m[key], m[key + "_se"] = float(late[name][0]), float(late[name][1])
    return m


def learned_metrics(t_s: float, lam: float, crossings: dict, losses: np.ndarray, n_train: int, dim: int) -> dict:
    """The learned-score section: each curve's crossing of the speciation value (`crossings[name] =
    (crossing, se)` for learned, empirical, untrained, empirical_shuffled) and its relative error from
    t_s = ½ ln Λ (a finding: the untrained network crosses as close, README); the final loss is the mean of
    the last tenth of the training losses."""
    cross, cross_se = crossings["learned"]
    emp, emp_se = crossings["empirical"]
    null, null_se = crossings["untrained"]
    sh, sh_se = crossings["empirical_shuffled"]
    return {"learned_lambda": float(lam), "learned_t_s_theory": float(t_s), "learned_crossing": float(cross),
            "learned_rel_err": relative_error(cross, t_s), "learned_rel_err_se": relative_se(cross_se, t_s),
            "learned_empirical_crossing": float(emp),
            "learned_empirical_rel_err": relative_error(emp, t_s), "learned_empirical_rel_err_se": relative_se(emp_se, t_s),
            "learned_untrained_crossing": float(null), "learned_untrained_rel_err": relative_error(null, t_s),
            "learned_untrained_rel_err_se": relative_se(null_se, t_s),
            "learned_empirical_shuffled_crossing": float(sh), "learned_empirical_shuffled_rel_err": relative_error(sh, t_s),
            "learned_empirical_shuffled_rel_err_se": relative_se(sh_se, t_s),
            "learned_final_loss": float(np.mean(losses[-max(1, len(losses) // 10):])),
            "learned_n_train": int(n_train), "learned_dim": int(dim)}


# ---- the sections ---------------------------------------------------------------------------------------

def cloning(cfg, streams) -> dict:
    """Cloning probability in d dimensions (μ = 1_d, σ² = cloning_sigma2): Monte Carlo against the
    exact curve, and where it crosses the fixed d → ∞ speciation value φ* = 0.7752 (the same level
    for every d and σ²; it is φ where m² = v), against Biroli et al.'s t_s = ½ ln Λ, Λ = |μ|² + σ².

    Null (the competing prediction, judged on the same crossings): the paper's own 1-D speciation
    time (Sec. VI), the curvature of U at 0, carried to d dimensions, ½ ln(|μ|² + √(|μ|⁴ + (σ² − 1)²)). For
    information, the exact crossing ½ ln(|μ|² + 1 − σ²) (`cloning_exact_crossing_d*`): Biroli's
    ½ ln Λ is its large-d limit, off by ½ ln((d + σ²)/(d + 1 − σ²)) at finite d."""
    s2 = float(cfg.cloning_sigma2)
    level = highdim.speciation_value()
    out, m, devs, ses, devs_u = {}, {}, [], [], []
    for d in cfg.cloning_dims:
        mix = GaussianMixture.two_gaussians(1.0, s2, d=int(d))
        mc = highdim.CloningMC(mix, cfg.cloning_samples, streams)
        ts_ = 0.5 * math.log(d + s2)                                  # Biroli et al.: ½ ln Λ
        t_u = landscape.speciation_time_closed_form(math.sqrt(d), s2)  # the paper's U-curvature time
        grid = np.linspace(max(0.02, ts_ - 2.0), ts_ + 2.0, 41)
        mean, se = mc.curve(grid)
        exact = highdim.cloning_probability_exact(math.sqrt(d), s2, grid)
        cross = mc.crossing(level, grid[0], grid[-1])
        cross_se = mc.crossing_se(cross) if math.isfinite(cross) else float("nan")
        out[d] = {"t": grid, "mc": mean, "se": se, "exact": exact, "crossing": cross, "t_s": ts_, "t_u": t_u}
        m[f"cloning_crossing_d{d}"] = float(cross); m[f"cloning_crossing_se_d{d}"] = float(cross_se)
        m[f"cloning_exact_crossing_d{d}"] = float(0.5 * math.log(d + 1.0 - s2))
        m[f"cloning_half_ln_lambda_d{d}"] = float(ts_); m[f"cloning_u_curvature_time_d{d}"] = float(t_u)
        ses.append(cross_se)
        live = exact < 0.999     # near saturation the agreement is a rare-event tail and its SE unreliable
        m[f"cloning_max_z_d{d}"] = float(np.max(np.abs(mean - exact)[live] / se[live]))
        devs.append(abs(cross - ts_)); devs_u.append(abs(cross - t_u))
    m["cloning_speciation_value"] = float(level)
    m["cloning_crossing_max_abs_dev"], m["cloning_crossing_max_abs_dev_se"] = worst_deviation(devs, ses)
    # null: the competing prediction (the U-curvature time) against the same crossings
    m["cloning_u_curvature_max_abs_dev"], m["cloning_u_curvature_max_abs_dev_se"] = worst_deviation(devs_u, ses)
    d = int(cfg.clone_check_d)
    mix = GaussianMixture.two_gaussians(1.0, cfg.cloning_sigma2, d=d)
    t_chk = 0.5 * math.log(d)
    p, se, p_sh, se_sh = highdim.cloning_by_clones(mix, t_chk, cfg.clone_check_n, cfg.clone_check_dt, streams,
                                                 shuffled=True)
    exact = float(highdim.cloning_probability_exact(math.sqrt(d), cfg.cloning_sigma2, t_chk)[0])
    m.update(clone_check_metrics(p, se, exact, p_sh, se_sh))
    return {"curves": out, "metrics": m}


def collapse(cfg, streams) -> dict:
    """Self-overlap of the empirical score against t_C = ½ ln(1 + σ²/(n^{2/d} − 1)) (Biroli et al.);
    null: the same measurement with the exact population score (`highdim.PopulationOverlap`)."""
    out, m, errs = {}, {}, []
    for d in cfg.collapse_dims:
        ov = highdim.EmpiricalOverlap(cfg.collapse_n, int(d), cfg.collapse_test, streams, cfg.collapse_sigma2)
        tc = highdim.collapse_time_theory(cfg.collapse_n, int(d), cfg.collapse_sigma2)
        grid = np.linspace(0.02, 2.5 * tc + 0.2, 25)
        cross = ov.crossing(0.5, 1e-3, 10.0)
        cross_se = ov.crossing_se(cross) if math.isfinite(cross) else float("nan")
        out[d] = {"t": grid, "Y": ov.curve(grid), "t_C": tc, "crossing": cross}
        rel = abs(cross - tc) / tc
        m[f"collapse_time_d{d}"] = float(cross); m[f"collapse_theory_d{d}"] = float(tc)
        m[f"collapse_rel_err_d{d}"] = float(rel); m[f"collapse_time_se_d{d}"] = float(cross_se)
        if d >= COLLAPSE_MIN_DIM:
            errs.append((rel, cross_se / tc))
    m["collapse_max_rel_err_d32plus"], m["collapse_max_rel_err_d32plus_se"] = worst_relative_error(errs)
    # null: the exact population score of N(0, σ²I) (nothing memorised), same training set and
    # starts; two clones collapse together when their nearest training points coincide
    errs2 = []
    for d in cfg.collapse_dims:
        if d < COLLAPSE_MIN_DIM:
            continue
        po = highdim.PopulationOverlap(cfg.collapse_n, int(d), cfg.collapse_test, streams, cfg.collapse_sigma2)
        tc = highdim.collapse_time_theory(cfg.collapse_n, int(d), cfg.collapse_sigma2)
        cross = po.crossing(0.5, 1e-3, 10.0)
        m[f"collapse_population_time_d{d}"] = float(cross)
        errs2.append((abs(cross - tc) / tc, (po.crossing_se(cross) if math.isfinite(cross) else float("nan")) / tc))
    m["collapse_population_max_rel_err_d32plus"], m["collapse_population_max_rel_err_d32plus_se"] = \
        worst_relative_error(errs2)
    return {"curves": out, "metrics": m}


def beside_training(cfg, streams) -> dict:
    """What notebook 05 computes without the trained network, for a worker process (on the CPU): the cloning
    and collapse sections and the learned score's nulls, with the stream keys it drew (`common.spawned.record_drawn`)."""
    out = {"cloning": cloning(cfg, streams), "collapse": collapse(cfg, streams)}
    data = learned.load_two_classes(cfg.learned_dataset, tuple(cfg.learned_classes), cfg.learned_downsample)
    out["nulls"] = learned_nulls(cfg, streams, data, learned_times(cfg, data))
    return {**out, "drawn": streams.drawn()}


def learned_times(cfg, data) -> np.ndarray:
    """The times of the learned-score cloning curves: from 0.15 to 2.5 × ½ ln Λ (at least to 1.25)."""
    return np.linspace(0.15, 2.5 * max(data.speciation_time(), 0.5), int(cfg.learned_times))


def learned_nulls(cfg, streams, data, ts, device="cpu") -> dict:
    """The learned score's curves that need no training, each (agreement, SE) on the times `ts`: the exact
    empirical score, the untrained network (the null) and the empirical score with shuffled labels (the null)."""
    starts, steps, noise = cfg.learned_clone_starts, cfg.learned_clone_steps, cfg.learned_empirical_noise
    return {"empirical": learned.empirical_cloning_curve(data, ts, starts, streams, n_noise=noise, return_se=True),
            "untrained": learned.cloning_curve(learned.untrained_score(data, streams, cfg.learned_hidden, device),
                                               data, ts, starts, steps, streams),
            "empirical_shuffled": learned.empirical_cloning_curve(learned.shuffled_labels(data, streams), ts, starts,
                                                                  streams, n_noise=noise, return_se=True)}


def learned_speciation(cfg, streams, device="cpu", nulls=None) -> dict:
    """Train ε_θ by denoising score matching on two classes, measure cloning: its crossing of the
    speciation value against ½ ln Λ, and past speciation (the grid's last time, 2.5 × ½ ln Λ) whether the
    clones forgot their start (agreement Σ_c w_c², as two independent draws from the data).

    Nulls: the network at its initialisation (learned nothing); the exact empirical score with the
    training labels shuffled. `nulls`, when given, returns `learned_nulls`'s curves computed elsewhere (a worker
    process); otherwise they are computed here, after the training."""
    data = learned.load_two_classes(cfg.learned_dataset, tuple(cfg.learned_classes), cfg.learned_downsample)
    model, losses = learned.train_score(data, cfg.learned_steps, streams, batch=cfg.learned_batch,
                                       lr=cfg.learned_lr, hidden=cfg.learned_hidden, show_progress=True,
                                       device=device)
    lam = data.top_eigenvalue()
    t_s = data.speciation_time()
    ts = learned_times(cfg, data)
    level = highdim.speciation_value()

    def crossing(prob, se):
        return learned.crossing_time(ts, prob, level), learned.crossing_time_se(ts, prob, se, level)
    prob, se = learned.cloning_curve(model, data, ts, cfg.learned_clone_starts, cfg.learned_clone_steps, streams)
    curves = nulls() if nulls is not None else learned_nulls(cfg, streams, data, ts, device)
    (emp, emp_se), (null_prob, null_se) = curves["empirical"], curves["untrained"]
    sh_prob, sh_se = curves["empirical_shuffled"]
    crossings = {"learned": crossing(prob, se), "empirical": crossing(emp, emp_se),
                 "untrained": crossing(null_prob, null_se), "empirical_shuffled": crossing(sh_prob, sh_se)}
    m = learned_metrics(t_s, lam, crossings, losses, data.x_train.shape[0], data.dim)
    m |= late_metrics(ts[-1], data.independent_agreement(),
                      {"learned": (prob[-1], se[-1]), "untrained": (null_prob[-1], null_se[-1]),
                       "empirical": (emp[-1], emp_se[-1])})
    return {"data": data, "losses": losses, "t": ts, "prob": prob, "se": se, "t_s": t_s, "empirical": emp,
            "untrained": null_prob, "empirical_shuffled": sh_prob,
            "crossing": crossings["learned"][0], "level": level, "independent": m["learned_independent_agreement"],
            "provenance": data.provenance, "metrics": m}
