"""Notebook 01: fluctuation theorems, the second law and entropy histograms (Figs 1, 2, 3, 7, 8; Secs. IV-V).

Paper: Yu & Huang, https://arxiv.org/abs/2405.11932. The integral fluctuation theorem ⟨e^{−ΔS_tot}⟩ = 1
forward (Sec. IV, Fig. 2) and backward (Sec. V, Fig. 7), the second law ⟨ΔS_tot⟩ = KL(p_0‖N) − KL(p_T‖N)
(Eqs. (24)-(30), (54)-(64) integrated over t), the detailed theorem P[X]/P̃[X̃] = e^{ΔS_tot} (Sec. IV),
and the heavy-tailed regime of Fig. 3.
"""
from __future__ import annotations

import numpy as np

from .. import thermo
from ..mixture import GaussianMixture
from ..processes import simulate_backward, simulate_forward, wrong_noise_score


def measure(cfg, run) -> dict:
    """Every section of notebook 01, in its order: the schematic (Fig. 1), the fluctuation theorems
    (Figs. 2, 7, 8), the detailed theorem, the heavy tails (Fig. 3), each from `run.streams`."""
    streams = run.streams
    out = {"schematic": schematic_2d(cfg, streams), "ift": fluctuation_theorems(cfg, streams),
           "dft": detailed_fluctuation_theorem(cfg, streams), "heavy": heavy_tails(cfg, streams)}
    out["metrics"] = {**out["ift"]["metrics"], **out["dft"]["metrics"], **out["heavy"]["metrics"]}
    return out


# ---- the measurement-to-metric mapping ----------------------------------------------------------------

def ift_metrics(name: str, stats: dict) -> dict:
    """`ift_<name>_mean` and `_se`: ⟨e^{−ΔS_tot}⟩ and its standard error (`thermo.ift_statistics`)."""
    return {f"ift_{name}_mean": stats["mean"], f"ift_{name}_se": stats["se"]}


def path_metrics(name: str, stats: dict, dstot: tuple[float, float], dsys_mean, dmed_mean) -> dict:
    """The IFT of one set of paths (`ift_metrics`), its ⟨ΔS_tot⟩ with SE (the second law) and the means
    of the system and medium parts."""
    return {**ift_metrics(name, stats), f"dstot_{name}_mean": dstot[0], f"dstot_{name}_se": dstot[1],
            f"dsys_{name}_mean": float(dsys_mean), f"dmed_{name}_mean": float(dmed_mean)}


def dft_metrics(fit: dict, same: dict, ito: dict, wrong: dict, frac_negative) -> dict:
    """The detailed-FT fits (`thermo.crooks_fit`) as metrics: the paper's reversed-protocol ratio (`dft_`),
    the same-process ratio, the Itô medium entropy (for information) and the doubled-noise null."""
    return {"dft_slope": fit["slope"], "dft_slope_se": fit["slope_se"], "dft_intercept": fit["intercept"],
            "dft_intercept_se": fit["intercept_se"], "dft_n": fit["n_forward"],
            "dft_same_process_slope": same["slope"], "dft_same_process_slope_se": same["slope_se"],
            "dft_ito_slope": ito["slope"], "dft_ito_slope_se": ito["slope_se"],
            "dft_ito_intercept": ito["intercept"], "dft_ito_intercept_se": ito["intercept_se"],
            "dft_wrong_noise_slope": wrong["slope"], "dft_wrong_noise_slope_se": wrong["slope_se"],
            "dft_wrong_noise_intercept": wrong["intercept"], "dft_wrong_noise_intercept_se": wrong["intercept_se"],
            "dft_frac_negative": float(frac_negative)}


def heavy_tail_metrics(stats: list[dict], dstot_means: list) -> dict:
    """Fig. 3's heavy tails over several seeds: the spread of the IFT means, the first seed's quantiles,
    the largest e^{−ΔS_tot} seen and the mean ⟨ΔS_tot⟩ (no standard-error criterion applies)."""
    means = np.array([st["mean"] for st in stats])
    return {"heavy_ift_mean_min": float(means.min()), "heavy_ift_mean_max": float(means.max()),
            "heavy_ift_mean_median": float(np.median(means)),
            "heavy_q50": stats[0]["q50"], "heavy_q99": stats[0]["q99"],
            "heavy_max": float(max(st["max"] for st in stats)),
            "heavy_dstot_mean": float(np.mean(dstot_means))}


# ---- the sections ---------------------------------------------------------------------------------------

def fluctuation_theorems(cfg, streams) -> dict:
    """Figs 2/7 and 8: IFT forward (Sec. IV) and backward (Sec. V) and the second law against the KL drop,
    at μ = 1, σ² = 1 and T = ift_T (≈ 1, where ⟨e^{−ΔS_tot}⟩ depends on the dynamics).

    Nulls, each breaking the theorem with a near miss: forward paths simulated with the noise
    variance doubled but weighed as the paper's process (`*_forward_wrong_noise_*`); backward paths
    of a sampler whose score is that of the noise-doubled process (`wrong_noise_score`), weighed
    with the exact f*, p_T and p_0 (`*_backward_wrong_score_*`). For information, the same at
    T = ift_T_long (the paper's T = 10) on ift_long_fraction of the paths, where the forward IFT
    depends on X_0 alone and cannot fail (`*_T10_*`). Every set of paths draws the same streams (`streams`,
    common random numbers): the nulls differ from the paper's process by their mechanism alone."""
    mix = GaussianMixture.two_gaussians(cfg.ift_mu, cfg.ift_sigma2)
    T, c = float(cfg.ift_T), float(cfg.ift_wrong_noise)
    fwd = simulate_forward(mix, T, cfg.forward_dt, cfg.n_forward, streams, show_progress=True)
    bwd = simulate_backward(mix, T, cfg.backward_dt, cfg.n_backward, streams, show_progress=True)
    fwd_wrong = simulate_forward(mix, T, cfg.forward_dt, cfg.n_forward, streams, noise_scale=c)
    bwd_wrong = simulate_backward(mix, T, cfg.backward_dt, cfg.n_backward, streams,
                                  sampler_score=wrong_noise_score(mix, c))
    kl_drop = thermo.kl_to_standard_normal(mix, 0.0) - thermo.kl_to_standard_normal(mix, T)
    out = {"forward": fwd, "backward": bwd, "kl_drop": kl_drop, "T": T,
           "metrics": {"kl_drop": float(kl_drop), "ift_T": T}}
    for name, paths in (("forward", fwd), ("backward", bwd), ("forward_wrong_noise", fwd_wrong),
                        ("backward_wrong_score", bwd_wrong)):
        st = thermo.ift_statistics(paths.total)
        out["ift_" + name] = st
        out["metrics"].update(path_metrics(name, st, thermo.mean_and_se(paths.total), paths.system.mean(),
                                           paths.medium.mean()))
    for name in ("forward", "backward"):
        out["metrics"].update({f"ift_{name}_n": int(out["ift_" + name]["n"]),
                               f"frac_negative_{name}": out["ift_" + name]["frac_negative"]})
    # for information: the paper's T = 10, where the forward IFT cannot fail (ΔS_tot ≈ ln p_0(X_0)/N(X_0))
    T10, n10 = float(cfg.ift_T_long), max(2, int(cfg.n_forward * cfg.ift_long_fraction))
    nb10 = max(2, int(cfg.n_backward * cfg.ift_long_fraction))
    for name, paths in (
            ("forward_T10", simulate_forward(mix, T10, cfg.forward_dt, n10, streams)),
            ("forward_T10_wrong_noise", simulate_forward(mix, T10, cfg.forward_dt, n10, streams, noise_scale=c)),
            ("backward_T10", simulate_backward(mix, T10, cfg.backward_dt, nb10, streams)),
            ("backward_T10_gauss_score", simulate_backward(
                mix, T10, cfg.backward_dt, nb10, streams,
                sampler_score=GaussianMixture.single_gaussian(0.0, cfg.ift_mu ** 2 + cfg.ift_sigma2).score))):
        out["metrics"].update({**ift_metrics(name, thermo.ift_statistics(paths.total)),
                               f"dstot_{name}_mean": float(paths.total.mean())})
    # the per-path identity ΔS_E = (X_0² − X_T²)/2 of the forward Stratonovich sum
    ident = 0.5 * ((fwd.x_start ** 2).sum(-1) - (fwd.x_end ** 2).sum(-1))
    out["metrics"]["forward_medium_identity_maxerr"] = float(np.abs(fwd.medium - ident).max())
    return out


def heavy_tails(cfg, streams) -> dict:
    """Fig 3 setting (σ² = 0.1, T = 1): e^{−ΔS_tot} is heavy-tailed, so report quantiles and running means over
    hist_seeds independent runs (run k draws the streams `streams.child("heavy-tails", k)`)."""
    mix = GaussianMixture.two_gaussians(cfg.ift_mu, cfg.hist_forward_sigma2)
    runs = []
    for k in range(int(cfg.hist_seeds)):
        paths = simulate_forward(mix, cfg.hist_forward_T, cfg.forward_dt, cfg.n_hist, streams.child("heavy-tails", k))
        runs.append({"paths": paths, "stats": thermo.ift_statistics(paths.total, n_checkpoints=200)})
    metrics = heavy_tail_metrics([r["stats"] for r in runs], [r["paths"].total.mean() for r in runs])
    return {"runs": runs, "metrics": metrics}


def detailed_fluctuation_theorem(cfg, streams) -> dict:
    """Detailed FT (Sec. IV, P[X]/P̃[X̃] = e^{ΔS_tot}) on distributions: forward paths from p_0 against
    paths of the reversed protocol (the same OU started from p_T), slope and intercept of
    ln P(ΔS_tot = s)/P̃(ΔS̃_tot = −s) = s by logistic regression, with standard errors, on n_dft paths
    each way (enough that the doubled-noise null's intercept, about 0.009, resolves from 0: devtune dft_paths).
    The reversed-protocol paths draw their own streams (`streams.child("dft-reverse")`); the null's forward paths
    the forward paths' (common random numbers)."""
    mix = GaussianMixture.two_gaussians(cfg.dft_mu, cfg.dft_sigma2)
    T = cfg.dft_T
    fwd = simulate_forward(mix, T, cfg.forward_dt, cfg.n_dft, streams, ito=True)
    rev = simulate_forward(mix.at(T), T, cfg.forward_dt, cfg.n_dft, streams.child("dft-reverse"), ito=True)
    # ΔS̃_tot along a reversed-protocol path Y: medium ½(|Y_0|² − |Y_T|²) + ln p_T(Y_0) − ln p_0(Y_T)
    rev_system = mix.log_prob(rev.x_start, T) - mix.log_prob(rev.x_end, 0.0)
    rev_total = rev.medium + rev_system
    fit = thermo.crooks_fit(fwd.total, rev_total)
    # null: forward paths with the noise variance doubled, weighed as the paper's process (the
    # same wrong noise scale as the IFT's null), against the same reversed-protocol paths
    wrong = thermo.crooks_fit(simulate_forward(mix, T, cfg.forward_dt, cfg.n_dft, streams,
                                               noise_scale=cfg.ift_wrong_noise).total, rev_total)
    # for information: the left-point (Itô) medium entropy in both directions, which shifts ΔS_tot
    # by ½Σ(ΔX)² (a bookkeeping offset, not a broken theorem); the same-process ratio ln P(s)/P(−s)
    ito = thermo.crooks_fit(fwd.total_ito, rev.medium_ito + rev_system)
    same = thermo.crooks_fit(fwd.total, fwd.total)
    m = dft_metrics(fit, same, ito, wrong, np.mean(fwd.total < 0))
    return {"forward": fwd.total, "reverse": rev_total, "fit": fit, "metrics": m}


def schematic_2d(cfg, streams) -> dict:
    """Fig 1: forward and backward paths for ½N(±(4, 4), I) in two dimensions, T = 3."""
    mix = GaussianMixture.two_gaussians([4.0, 4.0], 1.0)
    fwd = simulate_forward(mix, 3.0, 0.01, 2000, streams, keep_paths=12)
    bwd = simulate_backward(mix, 3.0, 0.01, 2000, streams, keep_paths=12)
    return {"forward": fwd, "backward": bwd}
