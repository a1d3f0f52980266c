"""Notebook 06: the local rule against the likelihood's gradient, the sampler's reversibility, and the
spectrum of J over training age.

Paper: Yu, Huang & Huang, arXiv:2506.23546, Sec. 2: the local rule ΔJ_ij ∝ ⟨(x_i − h_i)φ(x_j)⟩_data −
⟨(x_i − h_i)φ(x_j)⟩_model is the gradient of the log-likelihood L = −β⟨E⟩_data − ln Z of the
Boltzmann-Gibbs measure P(x) ∝ e^{−E/T} that the neural Langevin dynamics samples, and it is asymmetric
(ΔJ_ij ≠ ΔJ_ji); the spectrum-of-J figure (eigenvalues in the complex plane over t_age, the initial disk
of radius g = 2). The grid computation is in `exact`, the reversibility runs in `thermo`; the names the
claims judge are made here (`rule_metrics`, `reversibility_metrics`, `spectrum_metrics`).
"""
from __future__ import annotations

import math

import numpy as np
import torch

from .. import exact, thermo, workers
from ..mainmodel import main_model
from ..model import asymmetry
from ..train import compute_device


def rule_metrics(rule, fd, sym, rJ, hJ) -> dict:
    """Sec. 2's rule against the finite-difference gradient `fd` (both flattened: J then b): the largest
    error relative to the gradient's largest entry, the same for the symmetrised rule `sym` (the test can
    fail); the rule's asymmetry ‖ΔJ − ΔJᵀ‖/‖ΔJ‖ (`rJ`) against the Hebbian correlation rule's (`hJ`)."""
    return {"grad_rel_err": float((rule - fd).abs().max() / fd.abs().max()),
            "grad_rel_err_symmetrised": float((sym - fd).abs().max() / fd.abs().max()),
            "rule_asymmetry": float((rJ - rJ.T).norm() / rJ.norm()),
            "rule_asymmetry_hebbian": float((hJ - hJ.T).norm() / hJ.norm())}


def reversibility_metrics(ep: dict) -> dict:
    """Entropy production of the NLM sampler and of the raw rate network (`thermo.sampler_vs_rate_network`),
    |σ_NLM| in SEs, and the lag-correlation reversibility measures (`rev_*`) as measured."""
    return {"sigma_nlm": ep["sigma_nlm"], "sigma_nlm_se": ep["sigma_nlm_se"], "sigma_rnn": ep["sigma_rnn"],
            "sigma_rnn_se": ep["sigma_rnn_se"], "sigma_nlm_abs_z": abs(ep["sigma_nlm"]) / ep["sigma_nlm_se"],
            "sigma_nlm_euler_loop": ep["sigma_nlm_euler_loop"], "sigma_nlm_euler_loop_se": ep["sigma_nlm_euler_loop_se"],
            **{k: v for k, v in ep.items() if k.startswith("rev_")}}


PARALLEL_MIN_STEPS = 1000   # reversibility runs at least this long (burn + steps): spread over the cores (`rule_checks`)


def rule_checks(cfg, streams, device: str = "cpu") -> dict:
    """A random asymmetric 2-neuron network (J ~ N(0, g²/2), J_ii = 0) and 5 data points, integrated on a
    grid: the local rule with its model phase exact, against central differences of L (Sec. 2); then the
    reversibility runs of `thermo` (`streams`: the run's; "rule network" and "reversibility"). On the CPU, long
    runs (>= PARALLEL_MIN_STEPS) go to the worker processes of `workers.spread` (the same numbers:
    `thermo.sampler_vs_rate_network`'s `spread`)."""
    pts, area = exact.grid(cfg.grad_grid, 9.0)
    g = streams.torch_generator("rule network")
    J = torch.randn(2, 2, generator=g, dtype=torch.float64) * cfg.gain / math.sqrt(2); J.fill_diagonal_(0.0)
    b = 0.5 * torch.randn(2, generator=g, dtype=torch.float64)
    data = 1.5 * torch.randn(5, 2, generator=g, dtype=torch.float64)
    rJ, rb = exact.rule_on_grid(J, b, data, cfg.T, pts)
    fJ, fb = exact.finite_difference_gradient(J, b, data, cfg.T, pts=pts, area=area)
    rule, fd = torch.cat([rJ.reshape(-1), rb]), torch.cat([fJ.reshape(-1), fb])
    # a symmetric (Hebbian-like) variant of the rule, to show the test can fail
    sym = torch.cat([(0.5 * (rJ + rJ.T)).reshape(-1), rb])
    hJ = exact.hebbian_on_grid(J, b, data, cfg.T, pts)   # the symmetric rule a Boltzmann machine would use
    parallel = device == "cpu" and int(cfg.ep_burn) + int(cfg.ep_steps) >= PARALLEL_MIN_STEPS
    ep = thermo.sampler_vs_rate_network(chains=cfg.ep_chains, steps=cfg.ep_steps, burn=cfg.ep_burn, dt=0.01,
                                       generator=streams.torch_generator("reversibility"),
                                       spread=(lambda fn, tasks: workers.spread(fn, tasks, desc="reversibility runs"))
                                       if parallel else None)
    m = {**rule_metrics(rule, fd, sym, rJ, hJ), **reversibility_metrics(ep)}
    return {"rule": rule.numpy(), "fd": fd.numpy(), "metrics": m}


def spectrum_metrics(steps, eig: dict, eta) -> dict:
    """Over training age (`steps`): the asymmetry η of J and the spectral radius of its eigenvalues `eig`."""
    return {"spectrum_updates": steps, "spectrum_asymmetry": eta,
            "spectrum_radius": [float(np.abs(eig[s]).max()) for s in steps]}


def spectrum(model: dict) -> dict:
    """Eigenvalues of J and its symmetry η = Σ J_ij J_ji / Σ J_ij² at each training age of `model`'s snapshots."""
    snaps = model["snaps"]
    steps = sorted(snaps)
    eig = {s: torch.linalg.eigvals(snaps[s][0][0].double()).cpu().numpy() for s in steps}
    eta = [asymmetry(snaps[s][0][0]) for s in steps]
    return {"steps": steps, "eig": eig, "eta": eta, "metrics": spectrum_metrics(steps, eig, eta)}


def measure(cfg, run) -> dict:
    """The rule checks (`"rule"`), then the main model of notebook 01 (its checkpoint in `run.dir` reused when
    present) and its spectrum (`"spectrum"`); `"metrics"`: both."""
    torch.set_num_threads(1)   # small batched GEMMs: one thread is as fast and robust to a shared machine
    try:
        rc = rule_checks(cfg, run.streams, str(compute_device(run.device)))
    finally:
        workers.release()      # the last notebook of a seed that uses the kept workers (04's, then these) joins them
    sp = spectrum(main_model(cfg, run.streams, run.dir, device=run.device))
    return {"rule": rc, "spectrum": sp, "metrics": {**rc["metrics"], **sp["metrics"]}}
