"""Notebook 02: memorization to generalization over the training-set size P.

Paper: Yu, Huang & Huang, arXiv:2506.23546, the memorization-generalization figure (Acc_S, Acc_T and E_AAI
against N_data; released script `From memory to generalization_tage=20000`: 5 runs per P sharing their
initial J, P chains from noise, 5·10⁴ steps). The measures are in `sweep`; the names the claims judge are
made here, from the sweep's curves (`paper_terms`, `heldout_terms`, `copies_terms`, `large_p_terms`).
"""
from __future__ import annotations

import math

import numpy as np
import torch

from .. import encoding, metrics
from ..generation import from_noise, time_average
from ..model import init_couplings, phi
from ..sampler import flow, langevin
from ..sweep import (basin_diagnostics, binomial_se, crossing, crossing_margin, generalization_both, paired_gap, relative_crossing,
                     sweep_accuracies, trend)
from ..train import Trainer, compute_device, train_config


def fraction_metrics(sizes, mean) -> dict:
    """The per-P curves of the single-sample and time-averaged measures and the memorized fraction's summary.
    `mean(key)`: the replicate mean at every P of a per-model quantity (`metrics.quality` keys and the sweep's
    own: avg_memorized, untrained_memorized, quench_memorized, avg_generalized, untrained_generalized, ...)."""
    mem = mean("avg_memorized")
    mem_u = mean("untrained_memorized")
    rho, rho_u = trend(sizes, mem), trend(sizes, mem_u)
    return {"sweep_sizes": sizes, "sweep_memorized": mem, "sweep_memorized_hot": mean("memorized"),
            "sweep_memorized_quench": mean("quench_memorized"),
            "sweep_first_group_e_aai_test": mean("e_aai_test"), "sweep_first_group_acc_s_train": mean("acc_s_train"),
            "sweep_first_group_acc_t_train": mean("acc_t_train"),
            "sweep_quench_e_aai_test": mean("quench_e_aai_test"),
            "sweep_dgen_over_dtest": [metrics.distance_ratio(a, c) for a, c in zip(mean("d_gen_median"), mean("d_test_median"))],
            "sweep_spectral_norm": mean("spectral_norm"), "sweep_euler_stability": mean("stability"),
            "mem_small_p": mem[0], "mem_large_p": mem[-1], "mem_spearman": rho,
            "p_star_memorized_fraction": crossing(sizes, mem),
            "sweep_generalized": mean("avg_generalized"), "gen_large_p": mean("avg_generalized")[-1],
            "sweep_untrained_memorized": mem_u, "sweep_untrained_generalized": mean("untrained_generalized"),
            "sweep_untrained_first_group_e_aai_test": mean("untrained_e_aai_test"),
            "mem_small_p_untrained": mem_u[0], "mem_large_p_untrained": mem_u[-1], "mem_spearman_untrained": rho_u,
            "gen_large_p_untrained": mean("untrained_generalized")[-1]}


def per_p_metrics(acc: dict, sizes, tag: str = "", names=("acc_s", "acc_t", "e_aai"), se: bool = True) -> dict:
    """One scalar per P (for the README tables): `sweep{tag}_p{P}_{name}_{ref}` (and `_se`) from the curves
    `sweep{tag}_{name}_{ref}` of `acc` (a `sweep.sweep_accuracies` result), ref = train, test."""
    m = {}
    for i, p in enumerate(sizes):
        for nm in names:
            for ref in ("train", "test"):
                m[f"sweep{tag}_p{p}_{nm}_{ref}"] = acc[f"sweep{tag}_{nm}_{ref}"][i]
                if se:
                    m[f"sweep{tag}_p{p}_{nm}_{ref}_se"] = acc[f"sweep{tag}_{nm}_{ref}_se"][i]
    return m


def paper_terms(m: dict) -> dict:
    """The claims in the paper's terms, for the chains from noise (tag ""), the untrained network and the
    persistent chains (`_pcd`): memorization at the smallest P, max(Acc_S, Acc_T) against the training set
    (`mem_acc_small_p{tag}`); generalization at the largest P, the larger |Acc - 1/2| of Acc_S, Acc_T against
    the held-out images (`gen_acc_dev_large_p{tag}`, the SE of that term); the held-out E_AAI's SE there."""
    out = {}
    for tag in ("", "_untrained", "_pcd"):
        out[f"mem_acc_small_p{tag}"] = m[f"sweep{tag}_acc_max_train"][0]
        out[f"mem_acc_small_p{tag}_se"] = m[f"sweep{tag}_acc_max_train_se"][0]
        out[f"e_aai_test_large_p{tag}_se"] = m[f"sweep{tag}_e_aai_test_se"][-1]
        dev_s, dev_t = abs(m[f"sweep{tag}_acc_s_test"][-1] - 0.5), abs(m[f"sweep{tag}_acc_t_test"][-1] - 0.5)
        out[f"gen_acc_dev_large_p{tag}"] = max(dev_s, dev_t)
        out[f"gen_acc_dev_large_p{tag}_se"] = m[f"sweep{tag}_acc_s_test_se"][-1] if dev_s >= dev_t else m[f"sweep{tag}_acc_t_test_se"][-1]
    return out


def heldout_terms(m: dict) -> dict:
    """The memorization claims' null: held-out images as the samples, max(Acc_S, Acc_T) at the smallest P."""
    return {"mem_acc_small_p_heldout": m["sweep_heldout_acc_max_train"][0],
            "mem_acc_small_p_heldout_se": m["sweep_heldout_acc_max_train_se"][0]}


# sample sets judged against new data (issue #41): the persistent chains, the chains from noise, the untrained
# network, and half the held-out images against the other half (new data against new data: the nulls)
RELATIVE_SETS = (("_pcd", "pcd"), ("", "noise"), ("_untrained", "untrained"), ("_heldout_split", "heldout_a"))


def relative_terms(m: dict, boots: dict) -> dict:
    """The memorization claims judged against new data's level, from the sweep's paired bootstrap replicates
    (`boots[set][(ref, name)]`, `sweep_accuracies`): the reference set is the held-out images used as samples
    ("heldout"; for the split null its other half, "heldout_b").

    `mem_gap_small_p{tag}`: max(Acc_S, Acc_T) against the training set at the smallest P minus new data's, with
    the SE of the paired difference; `cross_margin_rel{tag}`: by how much (Acc_S + Acc_T)/2 lies below new data's
    at the smallest P and above it at the largest (the smaller of the two, with its paired bootstrap SE: the
    transition inside the range, relative to new data); `p_cross_rel{tag}_inside`: the fraction of replicates in
    which it crosses (logged; the claim's metric until it sat on its threshold); `rel_acc_mean_{small,large}_p{tag}`:
    that difference at both ends."""
    out = {}
    for tag, key in RELATIVE_SETS:
        ref_tag, ref = ("_heldout_b", "heldout_b") if key == "heldout_a" else ("_heldout", "heldout")
        a_tag = "_heldout_a" if key == "heldout_a" else tag
        b, rb = boots[key], boots[ref]
        g, se = paired_gap(m[f"sweep{a_tag}_acc_max_train"], b[("train", "acc_max")],
                           m[f"sweep{ref_tag}_acc_max_train"], rb[("train", "acc_max")])
        out[f"mem_gap_small_p{tag}"], out[f"mem_gap_small_p{tag}_se"] = g, se
        out[f"p_cross_rel{tag}_inside"] = relative_crossing(b[("train", "acc_mean")], rb[("train", "acc_mean")])
        out[f"cross_margin_rel{tag}"], out[f"cross_margin_rel{tag}_se"] = crossing_margin(
            m[f"sweep{a_tag}_acc_mean_train"], b[("train", "acc_mean")], m[f"sweep{ref_tag}_acc_mean_train"], rb[("train", "acc_mean")])
        for end, i in (("small", 0), ("large", -1)):
            d, d_se = paired_gap(m[f"sweep{a_tag}_acc_mean_train"], b[("train", "acc_mean")],
                                 m[f"sweep{ref_tag}_acc_mean_train"], rb[("train", "acc_mean")], i)
            out[f"rel_acc_mean_{end}_p{tag}"], out[f"rel_acc_mean_{end}_p{tag}_se"] = d, d_se
    return out


def fall_terms(mem, mem_heldout, n_samples: int, n_heldout: int) -> dict:
    """The memorized fraction's fall from the smallest to the largest P (`mem_fall`), of the time-averaged samples
    and of the held-out images used as samples (`mem_fall_heldout`, the null), each with a binomial SE over the
    pooled samples (the replicates' spread is not in it)."""
    out = {}
    for tag, v, n in (("", mem, n_samples), ("_heldout", mem_heldout, n_heldout)):
        out[f"mem_fall{tag}"] = float(v[0] - v[-1])
        out[f"mem_fall{tag}_se"] = math.hypot(binomial_se(v[0], n), binomial_se(v[-1], n))
    return out


def copies_terms(acc_copies: dict) -> dict:
    """The generalization claims' null: the training set returned as the samples, its `sweep_copies_*` curves
    (of the largest P alone) as scalars `large_p_copies_*`."""
    return {key.replace("sweep_copies_", "large_p_copies_"): v[-1] for key, v in acc_copies.items()
            if key.startswith("sweep_copies_")}


def large_p_terms(m: dict) -> dict:
    """At the largest P: the generalization measures against both references (`sweep.generalization_both`) of
    the persistent chains, the chains from noise, the untrained network and the copies, then the held-out
    E_AAI of the first three (`e_aai_test_large_p{tag}`)."""
    out = {}
    for tag, at in (("_pcd", lambda key: m[f"sweep_pcd_{key}"][-1]), ("", lambda key: m[f"sweep_{key}"][-1]),
                    ("_untrained", lambda key: m[f"sweep_untrained_{key}"][-1]), ("_copies", lambda key: m[f"large_p_copies_{key}"])):
        out.update(generalization_both(at, tag))
    out["e_aai_test_large_p"] = m["sweep_e_aai_test"][-1]
    out["e_aai_test_large_p_untrained"] = m["sweep_untrained_e_aai_test"][-1]
    out["e_aai_test_large_p_pcd"] = m["sweep_pcd_e_aai_test"][-1]
    return out


def binomial_terms(m: dict, n_samples: int) -> dict:
    """Binomial SEs of the generalized fractions at the largest P over the `n_samples` pooled chains."""
    return {key + "_se": binomial_se(m[key], n_samples) for key in ("gen_large_p", "gen_large_p_untrained")}


def measure(cfg, run) -> dict:
    """Stacked PCD training over P × replicates (shared initial J per replicate), generate, average, quench.

    Memorization is measured on time-averaged samples (the images of chains from noise averaged over
    the last `avg_steps` Langevin steps); E_AAI on single (hot) samples, as in the paper; the quench
    (noiseless flow) is reported alongside. Every draw is a keyed stream of the run's (`run.streams`): replicate r's
    training list ("training list", dataset, "sweep replicate", r; replicate 0 the run's own list, the main model's)
    and initial network ("sweep initial network", r), the training ("sweep training"), the generation, the bootstraps.
    """
    torch.set_num_threads(1)   # small batched GEMMs: one thread is as fast and robust to a shared machine
    streams = run.streams
    data = encoding.load(cfg.dataset, cfg.n_test, streams.rng("training list", cfg.dataset))
    sizes = [int(p) for p in cfg.sweep_sizes]
    encoding.check_sizes(data, sizes)
    reps = int(cfg.sweep_replicates)
    J0 = [init_couplings(data.n, cfg.gain, generator=streams.torch_generator("sweep initial network", r)) for r in range(reps)]
    per_model = [(p, r) for r in range(reps) for p in sizes]
    # each replicate trains on its own shuffled list (first P images), sharing J0 across P
    lists = [encoding.load(cfg.dataset, cfg.n_test, streams.rng("training list", cfg.dataset, "sweep replicate", r)).x_train
             if r else data.x_train for r in range(reps)]
    X = torch.stack([torch.as_tensor(lists[r]) for _, r in per_model])
    init_J = torch.stack([J0[r][0] for _, r in per_model]); init_b = torch.stack([J0[r][1] for _, r in per_model])
    tr = Trainer(X, [p for p, _ in per_model], train_config(cfg, lr=cfg.sweep_lr, freeze_at=cfg.sweep_freeze_at),
                 generator=streams.torch_generator("sweep training"), init=(init_J, init_b), device=compute_device(run.device))
    tr.train(cfg.sweep_updates, desc=f"P-sweep ({len(per_model)} stacked models)")
    J, b = tr.params()
    x, _ = from_noise(J, b, cfg.sweep_gen, cfg.sweep_gen_steps, cfg, streams, "sweep")
    # the model's persistent chains, continued at the final (J, b) as long as the chains from noise run:
    # samples of the basins training left them in (chains from noise at quick length do not find those)
    gp = streams.torch_generator("generate", "sweep-persistent")
    xp, _ = langevin(tr.chains, J, b, cfg.sweep_gen_steps, cfg.dt, cfg.T, gp, where="sweep persistent chains", show_progress=True)
    x_end, avg = time_average(x, J, b, cfg, streams, "sweep", cfg.avg_steps)
    xq, _ = flow(x, J, b, cfg.quench_steps, cfg.dt)
    # the null: each replicate's untrained network (its shared J0, b = 0), sampled and averaged the same way
    J0s, b0s = torch.stack([j for j, _ in J0]).to(J.device), torch.stack([c for _, c in J0]).to(J.device)
    xu, _ = from_noise(J0s, b0s, cfg.sweep_gen, cfg.sweep_gen_steps, cfg, streams, "sweep-untrained")
    _, avg_u = time_average(xu, J0s, b0s, cfg, streams, "sweep-untrained", cfg.avg_steps)
    test_img = data.images("test")
    # every sample set's images, brought to the host once (the measurements below are numpy)
    img = {"noise": phi(x), "pcd": phi(xp), "quench": phi(xq), "untrained": phi(xu), "avg": avg, "avg_untrained": avg_u}
    img = {key: v.cpu().numpy() for key, v in img.items()}
    rows = []
    norms = torch.linalg.matrix_norm(J.double(), ord=2).cpu()              # ‖J‖₂ of every model, once
    for k, (p, r) in enumerate(per_model):
        train_img = np.tanh(lists[r][:p])
        q = metrics.quality(img["noise"][k], train_img, test_img)             # single samples (paper)
        av = metrics.quality(img["avg"][k], train_img, test_img)              # time-averaged
        qu = metrics.quality(img["quench"][k], train_img, test_img)           # quenched
        un = metrics.quality(img["untrained"][r], train_img, test_img)        # untrained, single samples
        q.update({"untrained_memorized": metrics.memorized_fraction(img["avg_untrained"][r], train_img),
                  "untrained_generalized": metrics.generalized_fraction(img["avg_untrained"][r], train_img, test_img),
                  "untrained_e_aai_test": un["e_aai_test"],
                  "avg_generalized": metrics.generalized_fraction(img["avg"][k], train_img, test_img)})
        q.update({"P": p, "rep": r, "avg_memorized": av["memorized"], "quench_memorized": qu["memorized"],
                  "avg_acc_s_train": av["acc_s_train"], "avg_acc_t_train": av["acc_t_train"],
                  "quench_e_aai_test": qu["e_aai_test"], "spectral_norm": float(norms[k]),
                  "stability": float(cfg.dt * (1.0 + norms[k]) ** 2)})
        rows.append(q)
    # the paper's metrics, every sample used (disjoint groups of min(P, S)), bootstrap SEs, P* with an interval
    train_lists = {k: np.tanh(lists[r][:p]) for k, (p, r) in enumerate(per_model)}
    boot = streams.child("sweep bootstrap")   # one stream for every sample set: the same resamples (paired)
    bt = {key: {} for key in ("noise", "untrained", "pcd", "heldout", "heldout_a", "heldout_b")}   # paired replicates
    acc = sweep_accuracies(sizes, per_model, dict(enumerate(img["noise"])), train_lists, test_img, int(cfg.sweep_boot), boot, "",
                           boots=bt["noise"])
    acc_u = sweep_accuracies(sizes, per_model, {k: img["untrained"][r] for k, (p, r) in enumerate(per_model)},
                             train_lists, test_img, int(cfg.sweep_boot), boot, "_untrained", boots=bt["untrained"])
    mean = lambda key: [float(np.mean([q[key] for q in rows if q["P"] == p])) for p in sizes]  # noqa: E731
    m = fraction_metrics(sizes, mean)
    # secondary diagnostic: the same measure on the time-averaged images (each chain's basin centre)
    acc_avg = sweep_accuracies(sizes, per_model, dict(enumerate(img["avg"])), train_lists, test_img, 50, boot, "_avg")
    acc_p = sweep_accuracies(sizes, per_model, dict(enumerate(img["pcd"])), train_lists, test_img, int(cfg.sweep_boot), boot, "_pcd",
                             boots=bt["pcd"])
    m.update(acc); m.update(acc_u); m.update(acc_avg); m.update(acc_p)
    m.update(per_p_metrics(acc, sizes))                               # one scalar per P (for the README tables)
    m["sweep_frozen_at"] = [int(f) for f in tr.frozen_at]
    # the claims in the paper's terms (smallest / largest P)
    m.update(paper_terms(m))
    # nulls made of data (issue #36: the untrained network fails on being unlike any image, not on copying):
    # held-out images as the "samples" (data-like and new, never copies: the null of the memorization claims,
    # as many as the persistent chains), and each model's own training set (data-like, all copies:
    # the null of the generalization claims at the largest P, which therefore also ask for Acc ~ 1/2 on the
    # training set, the paper's own criterion)
    n_s = int(xp.shape[-2])
    held = {k: test_img[:n_s] for k in range(len(per_model))}
    m.update(sweep_accuracies(sizes, per_model, held, train_lists, test_img, int(cfg.sweep_boot), boot, "_heldout", refs=("train",),
                              boots=bt["heldout"]))
    m.update(heldout_terms(m))
    # the relative claims' null: half the held-out images as the samples against the other half as new data's level
    half = len(test_img) // 2
    for key, rows_ in (("heldout_a", test_img[:half]), ("heldout_b", test_img[half:2 * half])):
        m.update(sweep_accuracies(sizes, per_model, {k: rows_ for k in range(len(per_model))}, train_lists, test_img,
                                  int(cfg.sweep_boot), boot, "_" + key, refs=("train",), boots=bt[key]))
    m.update(relative_terms(m, bt))
    mem_h = [float(np.mean([metrics.memorized_fraction(held[k], train_lists[k]) for k, (pp, _) in enumerate(per_model) if pp == p]))
             for p in sizes]
    m["sweep_heldout_memorized"], m["mem_spearman_heldout"] = mem_h, trend(sizes, mem_h)
    m.update(fall_terms(m["sweep_memorized"], mem_h, int(cfg.sweep_gen) * reps, n_s * reps))
    copies = {k: train_lists[k] for k, (p, _) in enumerate(per_model) if p == sizes[-1]}   # all P: every one a copy
    m.update(copies_terms(sweep_accuracies(sizes[-1:], per_model, copies, train_lists, test_img, int(cfg.sweep_boot), boot, "_copies")))
    m.update(large_p_terms(m))
    m.update(per_p_metrics(acc_p, sizes, "_pcd", names=("acc_s", "acc_t"), se=False))   # persistent-chain samples, per P
    ends = [k for k, (p, _) in enumerate(per_model) if p in (sizes[0], sizes[-1])]   # quench only the models it reads
    xpq = dict(zip(ends, flow(xp[ends], J[ends], b[ends], cfg.quench_steps, cfg.dt)[0]))
    diag = basin_diagnostics(per_model, lists, data.x_test, x, xp, xq, xpq, J, b, cfg.T)
    if set(diag) & set(m):                                            # a diagnostic must not replace a metric
        raise RuntimeError(f"basin_diagnostics would overwrite {sorted(set(diag) & set(m))}")
    m.update(diag)
    n_samples = int(cfg.sweep_gen) * reps                              # samples behind each fraction at one P
    m.update(binomial_terms(m, n_samples))
    return {"rows": rows, "sizes": sizes, "images": img["avg"][:, :8].copy(), "images_pcd": img["pcd"][:, :8].copy(), "per_model": per_model,
            "shape": data.shape, "metrics": m}

