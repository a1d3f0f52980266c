"""One function per notebook section: run the computation, return arrays and JSON-ready metrics.

Paper: Yu, Huang & Huang, https://arxiv.org/abs/2506.23546. The notebooks call these, plot through
`figures` and log `result["metrics"]` (floats, ints, bools and lists of them only). `device`: where the
training and the long Langevin runs go (the notebooks pass the run's device; `compute_device` keeps a
CUDA or ROCm GPU and sends anything else to the CPU); the measurements are made on the CPU, in numpy.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
from scipy.stats import spearmanr

from common.seed import torch_generator

from . import denoise as dn
from . import bootstrap, encoding, exact, metrics, thermo
from .model import asymmetry, init_couplings, phi
from .sampler import flow, langevin, log_times
from .train import Trainer, TrainConfig, load_state


def compute_device(device) -> torch.device:
    """A CUDA (or ROCm) device as given; anything else (None, the CPU, Apple MPS, Intel XPU) is the CPU:
    MPS has no float64 for the Euler-stability check, and nlm has not been tried on XPU."""
    d = torch.device(device or "cpu")
    return d if d.type == "cuda" else torch.device("cpu")


def train_config(cfg, **over) -> TrainConfig:
    base = dict(n_chains=cfg.n_chains, k=cfg.k, mode="pcd", optimizer=cfg.optimizer, lr=cfg.lr,
                weight_decay=cfg.weight_decay, bias=cfg.bias, batch=cfg.batch, dt=cfg.dt, T=cfg.T, gain=cfg.gain,
                gemm_dtype=cfg.gemm_dtype, noise_threads=cfg.noise_threads)
    base.update(over)
    return TrainConfig(**base)


def _gen(J, b, n, steps, cfg, seed, key, snap_at=()):
    """n chains from N(0, I) per model of a stack, `steps` Langevin steps; images and snapshots."""
    g = torch_generator(int(seed), "generate", key)
    x0 = torch.randn((*J.shape[:-2], n, J.shape[-1]), generator=g, dtype=J.dtype).to(J.device)
    return langevin(x0, J, b, steps, cfg.dt, cfg.T, g, snap_at=snap_at, where=f"generate {key}", show_progress=True)


# ---- notebook 01: training and samples over training age -----------------------------------------

def ages(n_updates: int, n: int) -> list[int]:
    return log_times(n_updates, n, t_min=max(1, n_updates // 100))


def main_model(cfg, seed: int, run_dir=None, dataset: str | None = None, p: int | None = None, updates: int | None = None,
               device=None) -> dict:
    """PCD-k training of one model with (J, b) snapshots at log-spaced ages; cached in run_dir."""
    dataset = dataset or cfg.dataset
    p = p or cfg.main_p
    updates = cfg.main_updates if updates is None else updates
    data = encoding.load(dataset, cfg.n_test, seed)
    encoding.check_sizes(data, [p])
    tcfg = train_config(cfg)
    cache = Path(run_dir) / "checkpoints" / f"main-{dataset}-P{p}-U{updates}-s{seed}.pt" if run_dir else None
    if cache is not None and cache.exists():
        st = load_state(cache)
        if st.get("config") == tcfg.__dict__:
            return {"data": data, "state": st, "snaps": st["snaps"], "p": p, "cached": True}
    tr = Trainer(data.x_train, [p], tcfg, seed=seed, device=compute_device(device))
    snaps = tr.train(updates, snap_at=[0] + ages(updates, cfg.n_ages), desc=f"train {dataset} P={p}")
    snaps = {s: (J.cpu(), b.cpu()) for s, (J, b) in snaps.items()}   # the same as a cached run's
    st = tr.state()
    st["snaps"] = snaps
    if cache is not None:
        import io

        from common.io import atomic_write_bytes
        buf = io.BytesIO(); torch.save(st, buf); atomic_write_bytes(cache, buf.getvalue())
    return {"data": data, "state": st, "snaps": snaps, "p": p, "cached": False}


def samples_over_age(cfg, seed: int, model: dict, prefix: str = "age", device=None) -> dict:
    """Generate from each age's (J, b) (stacked) and measure sample quality against train/test."""
    data, snaps, p = model["data"], model["snaps"], model["p"]
    steps = sorted(snaps)
    J = torch.stack([snaps[s][0][0] for s in steps]).to(compute_device(device))
    b = torch.stack([snaps[s][1][0] for s in steps]).to(compute_device(device))
    x, _ = _gen(J, b, cfg.n_gen, cfg.gen_steps, cfg, seed, prefix)
    train_img, test_img = data.images("train")[:p], data.images("test")
    rows = [metrics.quality(phi(x[i]).cpu().numpy(), train_img, test_img) for i in range(len(steps))]
    pcd = metrics.quality(phi(model["state"]["chains"][0]).cpu().numpy(), train_img, test_img)
    last = rows[-1]
    m = {f"{prefix}_updates": steps, f"{prefix}_e_aai_test": [r["e_aai_test"] for r in rows],
         f"{prefix}_e2_test": [r["e2_test"] for r in rows],
         f"{prefix}_final_e_aai_test": last["e_aai_test"], f"{prefix}_final_memorized": last["memorized"],
         f"{prefix}_final_dgen_over_dtest": last["d_gen_median"] / last["d_test_median"],
         f"{prefix}_pcd_e_aai_test": pcd["e_aai_test"], f"{prefix}_chain_abs_x": float(model["state"]["chains"].abs().mean())}
    return {"steps": steps, "images": phi(x).cpu().numpy(), "rows": rows, "shape": data.shape, "train": train_img, "metrics": m}


# ---- notebook 02: memorization to generalization ------------------------------------------------------

def crossing(sizes, values, level: float = 0.5) -> float:
    """P where `values` first falls through `level` (log-linear interpolation); NaN if never."""
    s, v = np.log(np.asarray(sizes, float)), np.asarray(values, float)
    for i in range(len(v) - 1):
        if v[i] >= level > v[i + 1]:
            return float(np.exp(s[i] + (v[i] - level) / (v[i] - v[i + 1]) * (s[i + 1] - s[i])))
    return float("nan")


def rise_through(sizes, values, level: float = 0.5) -> float:
    """P where `values` first rises from below `level` to at least `level` (log-linear); NaN if never."""
    s, v = np.log(np.asarray(sizes, float)), np.asarray(values, float)
    for i in range(len(v) - 1):
        if v[i] < level <= v[i + 1]:
            return float(np.exp(s[i] + (level - v[i]) / (v[i + 1] - v[i]) * (s[i + 1] - s[i])))
    return float("nan")


def sweep_accuracies(sizes, per_model, samples, train_lists, test_img, n_boot: int, seed: int, tag: str,
                     refs=("train", "test")) -> dict:
    """Acc_S, Acc_T, E_AAI against the training set and the held-out images for every P, pooled over the
    replicates at that P, with bootstrap SEs; the memorization criterion max(Acc_S, Acc_T) on the
    training set; the transition P* where (Acc_S + Acc_T)/2 on the training set rises through 1/2, with
    a 95 % bootstrap interval and the fraction of replicates whose crossing lies inside the swept range.

    samples: {model index: (S, D) images}; train_lists: {model index: (P, D) training images}; refs: the
    references measured ("train" is needed for P*).
    """
    out = {}
    for ref in refs:
        for name in ("e_aai", "acc_s", "acc_t", "acc_max", "acc_mean"):
            out[(ref, name)] = ([], [])
    for p in sizes:
        ks = [k for k, (pp, _) in enumerate(per_model) if pp == p]
        for ref in refs:
            res = [bootstrap.adversarial_groups(samples[k], train_lists[k] if ref == "train" else test_img, n_boot,
                                                seed * 1000 + 17 * k + (ref == "test")) for k in ks]
            pooled = {nm: (float(np.mean([r[nm][0] for r in res])), np.mean([r[nm][1] for r in res], 0))
                      for nm in ("e_aai", "acc_s", "acc_t")}
            pooled["acc_max"] = (max(pooled["acc_s"][0], pooled["acc_t"][0]), np.maximum(pooled["acc_s"][1], pooled["acc_t"][1]))
            pooled["acc_mean"] = (0.5 * (pooled["acc_s"][0] + pooled["acc_t"][0]), 0.5 * (pooled["acc_s"][1] + pooled["acc_t"][1]))
            for nm, v in pooled.items():
                out[(ref, nm)][0].append(v[0]); out[(ref, nm)][1].append(v[1])
    m = {}
    for (ref, nm), (est, boots) in out.items():
        m[f"sweep{tag}_{nm}_{ref}"] = [float(e) for e in est]
        m[f"sweep{tag}_{nm}_{ref}_se"] = [float(np.std(b, ddof=1)) for b in boots]
    est, boots = out[("train", "acc_mean")]
    boots = np.stack(boots, 1)                                            # (n_boot, P)
    p_star = rise_through(sizes, est)
    p_b = np.array([rise_through(sizes, b) for b in boots])
    inside = np.isfinite(p_b)
    m[f"p_star{tag}"] = p_star
    m[f"p_star{tag}_lo"], m[f"p_star{tag}_hi"] = ([float(np.percentile(p_b[inside], q)) for q in (2.5, 97.5)]
                                                  if inside.any() else [float("nan")] * 2)
    m[f"p_star{tag}_inside"] = float(inside.mean())
    return m


def generalization_both(at, tag: str) -> dict:
    """The large-P generalization measures against both references (the paper's training set and our
    held-out images): `gen_acc_dev_both_large_p{tag}` = the largest |Acc - 1/2| of Acc_S, Acc_T on either,
    `e_aai_both_large_p{tag}` = the larger E_AAI, each with the SE of the term that is largest.
    `at(key)`: the largest P's value of a sweep key such as "acc_s_train" or "acc_s_train_se"."""
    dev = {f"{a}_{r}": abs(at(f"{a}_{r}") - 0.5) for a in ("acc_s", "acc_t") for r in ("train", "test")}
    worst = max(dev, key=dev.get)
    e = {r: at(f"e_aai_{r}") for r in ("train", "test")}
    we = max(e, key=e.get)
    return {f"gen_acc_dev_both_large_p{tag}": dev[worst], f"gen_acc_dev_both_large_p{tag}_se": at(f"{worst}_se"),
            f"e_aai_both_large_p{tag}": e[we], f"e_aai_both_large_p{tag}_se": at(f"e_aai_{we}_se")}


def trend(sizes, values) -> float:
    """Spearman rho of values against P; 0 for a constant curve (no trend, e.g. nothing ever memorized)."""
    return float(spearmanr(sizes, values).statistic) if len(set(values)) > 1 else 0.0


def binomial_se(fraction: float, n: int) -> float:
    """Standard error of a fraction of n independent samples."""
    return float(math.sqrt(max(fraction * (1.0 - fraction), 0.0) / n))


def time_average(x, J, b, cfg, seed, key, steps: int, every: int = 10):
    """Continue chains `steps` Langevin steps and average the images φ(x) every `every` steps.

    At T = 1 a single sample sits ~1 away from its basin's centre in every saturated coordinate;
    the average over a window shorter than the time to leave the basin estimates the basin's image.
    Returns (final x, averaged images).
    """
    g = torch_generator(int(seed), "time-average", key)
    acc, n = torch.zeros_like(x), 0
    for _ in range(max(1, steps // every)):
        x, _ = langevin(x, J, b, every, cfg.dt, cfg.T, g, check_every=0, where=f"time-average {key}")
        acc += phi(x); n += 1
    return x, acc / n


def _nearest_other(a) -> np.ndarray:
    """Distance of each row of a to its nearest other row."""
    d = metrics.pairwise(a, a)
    d.fill_diagonal_(float("inf"))
    return d.min(1).values.cpu().numpy()


def basin_diagnostics(per_model, lists, test_x, x, xp, xq, xpq, J, b, T: float) -> dict:
    """Where each sample set sits, at the sweep's smallest and largest P (medians over the samples of
    every replicate of that P), for the README's account of the claims quick does not reproduce.

    `{small,large}_p_{src}_d_train_median`: distance of a sample's image to its nearest training image,
    for src = noise (chains from N(0, I)), noise_quench (the same after the T = 0 flow), pcd (the
    persistent chains), pcd_quench; `*_test_d_train_median`: the same for held-out images (the scale of
    "near the data"). `*_{pcd,pcd_quench}_acc_{t,s}_test`: the adversarial accuracies of the first n
    persistent chains, hot and quenched, against the first n held-out images (n = the fewer of the two;
    mean over replicates; no bootstrap), with `*_{pcd,pcd_quench}_d_other_sample_median`, a sample's
    distance to its nearest other sample (also for the chains from noise, hot), against
    `*_test_d_other_test_median` (samples drawn together sit nearer each other than held-out images do).
    `xpq` may hold only the models of the smallest and largest P (a dict by stack index).
    `*_noise_quench_frac_saturated`: fraction of the quenched noise chains' coordinates with |x| > 4
    (tanh > 0.999, far beyond the data's |x| <= atanh 0.97 = 2.09). Energies E = ½‖ẋ‖² (medians):
    `*_energy_{pcd,pcd_quench,noise,noise_quench,train,test}` against `energy_equipartition` = N·T/2, the mean of E
    for a Gaussian well at temperature T (each of the N directions of ẋ carries T/2).
    """
    from .model import energy

    sizes = sorted({p for p, _ in per_model})
    test_img = np.tanh(test_x)
    out = {"energy_equipartition": 0.5 * float(T) * x.shape[-1]}
    for tag, P in (("small_p", sizes[0]), ("large_p", sizes[-1])):
        ks = [k for k, (p, _) in enumerate(per_model) if p == P]
        train = {k: np.tanh(lists[per_model[k][1]][:P]) for k in ks}
        img = {src: {k: phi(X[k]).cpu().numpy() for k in ks}          # each sample set's images, once
               for src, X in (("noise", x), ("noise_quench", xq), ("pcd", xp), ("pcd_quench", xpq))}
        for src in img:
            d = np.concatenate([metrics.nearest_distance(img[src][k], train[k]) for k in ks])
            out[f"{tag}_{src}_d_train_median"] = float(np.median(d))
        out[f"{tag}_test_d_train_median"] = float(np.median(np.concatenate([metrics.nearest_distance(test_img, train[k]) for k in ks])))
        n = min(len(test_img), xp.shape[-2])                     # held-out images against as many samples
        out[f"{tag}_test_d_other_test_median"] = float(np.median(_nearest_other(test_img[:n])))
        out[f"{tag}_noise_d_other_sample_median"] = float(np.median(np.concatenate([_nearest_other(img["noise"][k][:n]) for k in ks])))
        for src in ("pcd", "pcd_quench"):
            imgs = [img[src][k][:n] for k in ks]
            out[f"{tag}_{src}_d_other_sample_median"] = float(np.median(np.concatenate([_nearest_other(a) for a in imgs])))
            acc = [metrics.adversarial_accuracy(test_img[:n], a) for a in imgs]
            for key in ("acc_t", "acc_s"):
                out[f"{tag}_{src}_{key}_test"] = float(np.mean([a[key] for a in acc]))
        out[f"{tag}_noise_quench_frac_saturated"] = float(np.mean([float((xq[k].abs() > 4.0).float().mean()) for k in ks]))
        e = lambda pts: float(np.median(torch.cat([energy(pts(k), J[k], b[k]) for k in ks]).cpu().numpy()))  # noqa: E731
        out[f"{tag}_energy_pcd"] = e(lambda k: xp[k])
        out[f"{tag}_energy_noise"] = e(lambda k: x[k])
        out[f"{tag}_energy_noise_quench"] = e(lambda k: xq[k])
        out[f"{tag}_energy_pcd_quench"] = e(lambda k: xpq[k])
        out[f"{tag}_energy_train"] = e(lambda k: torch.as_tensor(lists[per_model[k][1]][:P], device=J.device))
        out[f"{tag}_energy_test"] = e(lambda k: torch.as_tensor(test_x, dtype=J.dtype, device=J.device))
    return out


def memorization_sweep(cfg, seed: int, device=None) -> dict:
    """Stacked PCD training over P × replicates (shared initial J per replicate), generate, average, quench.

    Memorization is measured on time-averaged samples (the images of chains from noise averaged over
    the last `avg_steps` Langevin steps); E_AAI on single (hot) samples, as in the paper; the quench
    (noiseless flow) is reported alongside.
    """
    data = encoding.load(cfg.dataset, cfg.n_test, seed)
    sizes = [int(p) for p in cfg.sweep_sizes]
    encoding.check_sizes(data, sizes)
    reps = int(cfg.sweep_replicates)
    g = torch.Generator().manual_seed(int(seed) * 7919 + 17)
    J0 = [init_couplings(data.n, cfg.gain, generator=g) for _ in range(reps)]
    per_model = [(p, r) for r in range(reps) for p in sizes]
    # each replicate trains on its own shuffled list (first P images), sharing J0 across P
    lists = [encoding.load(cfg.dataset, cfg.n_test, seed * 100 + r).x_train if r else data.x_train for r in range(reps)]
    X = torch.stack([torch.as_tensor(lists[r]) for _, r in per_model])
    init_J = torch.stack([J0[r][0] for _, r in per_model]); init_b = torch.stack([J0[r][1] for _, r in per_model])
    tr = Trainer(X, [p for p, _ in per_model], train_config(cfg, lr=cfg.sweep_lr, freeze_at=cfg.sweep_freeze_at), seed=seed, init=(init_J, init_b),
                 device=compute_device(device))
    tr.train(cfg.sweep_updates, desc=f"P-sweep ({len(per_model)} stacked models)")
    J, b = tr.params()
    x, _ = _gen(J, b, cfg.sweep_gen, cfg.sweep_gen_steps, cfg, seed, "sweep")
    # the model's persistent chains, continued at the final (J, b) as long as the chains from noise run:
    # samples of the basins training left them in (chains from noise at quick length do not find those)
    gp = torch_generator(int(seed), "generate", "sweep-persistent")
    xp, _ = langevin(tr.chains, J, b, cfg.sweep_gen_steps, cfg.dt, cfg.T, gp, where="sweep persistent chains", show_progress=True)
    x_end, avg = time_average(x, J, b, cfg, seed, "sweep", cfg.avg_steps)
    xq, _ = flow(x, J, b, cfg.quench_steps, cfg.dt)
    # the null: each replicate's untrained network (its shared J0, b = 0), sampled and averaged the same way
    J0s, b0s = torch.stack([j for j, _ in J0]).to(J.device), torch.stack([c for _, c in J0]).to(J.device)
    xu, _ = _gen(J0s, b0s, cfg.sweep_gen, cfg.sweep_gen_steps, cfg, seed, "sweep-untrained")
    _, avg_u = time_average(xu, J0s, b0s, cfg, seed, "sweep-untrained", cfg.avg_steps)
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
    acc = sweep_accuracies(sizes, per_model, dict(enumerate(img["noise"])), train_lists, test_img, int(cfg.sweep_boot), seed, "")
    acc_u = sweep_accuracies(sizes, per_model, {k: img["untrained"][r] for k, (p, r) in enumerate(per_model)},
                             train_lists, test_img, int(cfg.sweep_boot), seed, "_untrained")
    mean = lambda key: [float(np.mean([q[key] for q in rows if q["P"] == p])) for p in sizes]  # noqa: E731
    mem = mean("avg_memorized")
    mem_u = mean("untrained_memorized")
    rho, rho_u = trend(sizes, mem), trend(sizes, mem_u)
    m = {"sweep_sizes": sizes, "sweep_memorized": mem, "sweep_memorized_hot": mean("memorized"),
         "sweep_memorized_quench": mean("quench_memorized"),
         "sweep_first_group_e_aai_test": mean("e_aai_test"), "sweep_first_group_acc_s_train": mean("acc_s_train"),
         "sweep_first_group_acc_t_train": mean("acc_t_train"),
         "sweep_quench_e_aai_test": mean("quench_e_aai_test"), "sweep_dgen_over_dtest": [a / c for a, c in zip(mean("d_gen_median"), mean("d_test_median"))],
         "sweep_spectral_norm": mean("spectral_norm"), "sweep_euler_stability": mean("stability"),
         "mem_small_p": mem[0], "mem_large_p": mem[-1], "mem_spearman": rho,
         "p_star_memorized_fraction": crossing(sizes, mem),
         "sweep_generalized": mean("avg_generalized"), "gen_large_p": mean("avg_generalized")[-1],
         "sweep_untrained_memorized": mem_u, "sweep_untrained_generalized": mean("untrained_generalized"),
         "sweep_untrained_first_group_e_aai_test": mean("untrained_e_aai_test"),
         "mem_small_p_untrained": mem_u[0], "mem_large_p_untrained": mem_u[-1], "mem_spearman_untrained": rho_u,
         "gen_large_p_untrained": mean("untrained_generalized")[-1]}
    # secondary diagnostic: the same measure on the time-averaged images (each chain's basin centre)
    acc_avg = sweep_accuracies(sizes, per_model, dict(enumerate(img["avg"])), train_lists, test_img, 50, seed, "_avg")
    acc_p = sweep_accuracies(sizes, per_model, dict(enumerate(img["pcd"])), train_lists, test_img, int(cfg.sweep_boot), seed, "_pcd")
    m.update(acc); m.update(acc_u); m.update(acc_avg); m.update(acc_p)
    for i, p in enumerate(sizes):                                      # one scalar per P (for the README tables)
        for nm in ("acc_s", "acc_t", "e_aai"):
            for ref in ("train", "test"):
                m[f"sweep_p{p}_{nm}_{ref}"] = acc[f"sweep_{nm}_{ref}"][i]
                m[f"sweep_p{p}_{nm}_{ref}_se"] = acc[f"sweep_{nm}_{ref}_se"][i]
    m["sweep_frozen_at"] = [int(f) for f in tr.frozen_at]
    # the claims in the paper's terms (smallest / largest P)
    for tag in ("", "_untrained", "_pcd"):
        m[f"mem_acc_small_p{tag}"] = m[f"sweep{tag}_acc_max_train"][0]
        m[f"mem_acc_small_p{tag}_se"] = m[f"sweep{tag}_acc_max_train_se"][0]
        m[f"e_aai_test_large_p{tag}_se"] = m[f"sweep{tag}_e_aai_test_se"][-1]
        dev_s, dev_t = abs(m[f"sweep{tag}_acc_s_test"][-1] - 0.5), abs(m[f"sweep{tag}_acc_t_test"][-1] - 0.5)
        m[f"gen_acc_dev_large_p{tag}"] = max(dev_s, dev_t)
        m[f"gen_acc_dev_large_p{tag}_se"] = m[f"sweep{tag}_acc_s_test_se"][-1] if dev_s >= dev_t else m[f"sweep{tag}_acc_t_test_se"][-1]
    # nulls made of data (issue #36: the untrained network fails on being unlike any image, not on copying):
    # held-out images as the "samples" (data-like and new, never copies: the null of the memorization claims,
    # as many as the persistent chains), and each model's own training set (data-like, all copies:
    # the null of the generalization claims at the largest P, which therefore also ask for Acc ~ 1/2 on the
    # training set, the paper's own criterion)
    n_s = int(xp.shape[-2])
    held = {k: test_img[:n_s] for k in range(len(per_model))}
    m.update(sweep_accuracies(sizes, per_model, held, train_lists, test_img, int(cfg.sweep_boot), seed, "_heldout", refs=("train",)))
    m["mem_acc_small_p_heldout"] = m["sweep_heldout_acc_max_train"][0]
    m["mem_acc_small_p_heldout_se"] = m["sweep_heldout_acc_max_train_se"][0]
    mem_h = [float(np.mean([metrics.memorized_fraction(held[k], train_lists[k]) for k, (pp, _) in enumerate(per_model) if pp == p]))
             for p in sizes]
    m["sweep_heldout_memorized"], m["mem_spearman_heldout"] = mem_h, trend(sizes, mem_h)
    copies = {k: train_lists[k] for k, (p, _) in enumerate(per_model) if p == sizes[-1]}   # all P: every one a copy
    m.update({key.replace("sweep_copies_", "large_p_copies_"): v[-1] for key, v in
              sweep_accuracies(sizes[-1:], per_model, copies, train_lists, test_img, int(cfg.sweep_boot), seed, "_copies").items()
              if key.startswith("sweep_copies_")})
    for tag, at in (("_pcd", lambda key: m[f"sweep_pcd_{key}"][-1]), ("", lambda key: m[f"sweep_{key}"][-1]),
                    ("_untrained", lambda key: m[f"sweep_untrained_{key}"][-1]), ("_copies", lambda key: m[f"large_p_copies_{key}"])):
        m.update(generalization_both(at, tag))
    m["e_aai_test_large_p"] = m["sweep_e_aai_test"][-1]
    m["e_aai_test_large_p_untrained"] = m["sweep_untrained_e_aai_test"][-1]
    m["e_aai_test_large_p_pcd"] = m["sweep_pcd_e_aai_test"][-1]
    for i, p in enumerate(sizes):                                      # persistent-chain samples, per P
        for nm in ("acc_s", "acc_t"):
            for ref in ("train", "test"):
                m[f"sweep_pcd_p{p}_{nm}_{ref}"] = acc_p[f"sweep_pcd_{nm}_{ref}"][i]
    ends = [k for k, (p, _) in enumerate(per_model) if p in (sizes[0], sizes[-1])]   # quench only the models it reads
    xpq = dict(zip(ends, flow(xp[ends], J[ends], b[ends], cfg.quench_steps, cfg.dt)[0]))
    diag = basin_diagnostics(per_model, lists, data.x_test, x, xp, xq, xpq, J, b, cfg.T)
    if set(diag) & set(m):                                            # a diagnostic must not replace a metric
        raise RuntimeError(f"basin_diagnostics would overwrite {sorted(set(diag) & set(m))}")
    m.update(diag)
    n_samples = int(cfg.sweep_gen) * reps                              # samples behind each fraction at one P
    for key in ("gen_large_p", "gen_large_p_untrained"):               # binomial SE over the pooled chains
        m[key + "_se"] = binomial_se(m[key], n_samples)
    return {"rows": rows, "sizes": sizes, "images": img["avg"][:, :8].copy(), "images_pcd": img["pcd"][:, :8].copy(), "per_model": per_model,
            "shape": data.shape, "metrics": m}


# ---- notebook 03: out-of-equilibrium generation --------------------------------------------------------

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


def ooe_window_statistics(times, pcd_images, rdm_images, test_img, k: int, t_end: int, n_boot: int, seed: int,
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
    est, boot = bootstrap.e_aai_curve(stack, test_img, n_boot=n_boot, seed=seed)
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


def out_of_equilibrium(cfg, seed: int, device=None) -> dict:
    """PCD-k vs Rdm-k' (its own training length), `ooe_replicates` models of each from as many initial
    networks (replicate r of both modes starts from the same one); E_AAI, E_2 along generation time.

    Curves are replicate means; window differences as in `ooe_window_statistics`, each replicate against
    the untrained network it started from.
    """
    data = encoding.load(cfg.dataset, cfg.ooe_n_test, seed)
    encoding.check_sizes(data, [cfg.ooe_p])
    R = int(cfg.ooe_replicates)
    g = torch.Generator().manual_seed(int(seed) * 31 + 5)
    init = init_couplings(data.n, cfg.gain, n_models=R, generator=g)
    k_rdm = int(cfg.ooe_rdm_k)
    u_rdm = int(cfg.ooe_rdm_updates) or max(1, cfg.ooe_updates * cfg.k // k_rdm)   # 0: the PCD run's Langevin budget
    models, chains = {}, {}
    for name, over, upd in (("pcd", {}, cfg.ooe_updates), ("rdm", {"mode": "rdm", "k": k_rdm}, u_rdm)):
        tr = Trainer(data.x_train, [cfg.ooe_p] * R, train_config(cfg, **over), seed=seed, init=init, device=compute_device(device))
        tr.train(upd, desc=f"train {name} x{R}")
        models[name] = tr.params(); chains[name] = tr.chains
    J = torch.cat([models["pcd"][0], models["rdm"][0]]); b = torch.cat([models["pcd"][1], models["rdm"][1]])
    times = ooe_snapshot_times(cfg.ooe_gen_steps, cfg.ooe_times, k_rdm, int(cfg.ooe_window_frames))
    _, snaps = _gen(J, b, cfg.ooe_gen, cfg.ooe_gen_steps, cfg, seed, "ooe", snap_at=times)
    # the null: the untrained networks the replicates started from, generated the same way (their own noise)
    _, null_snaps = _gen(init[0].to(J.device), init[1].to(J.device), cfg.ooe_gen, cfg.ooe_gen_steps, cfg, seed, "ooe-untrained", snap_at=times)
    # the images, brought to the host once (the measurements below are numpy)
    snaps = {t: v.cpu().numpy() for t, v in snaps.items()}
    null_snaps = {t: v.cpu().numpy() for t, v in null_snaps.items()}
    pcd_chains = phi(chains["pcd"]).cpu().numpy()
    train_img, test_img = data.images("train")[: cfg.ooe_p], data.images("test")
    row = {"pcd": lambda r: r, "rdm": lambda r: R + r}           # rows of the generated stack
    curves = {}
    for name in ("pcd", "rdm"):
        q = [[metrics.quality(snaps[t][row[name](r)], train_img, test_img) for t in times] for r in range(R)]
        curves[name] = {key: np.mean([[x[f"{key}_test"] for x in qr] for qr in q], axis=0) for key in ("e_aai", "e2")}
    rd, pc = curves["rdm"]["e_aai"], curves["pcd"]["e_aai"]
    i_min = int(np.argmin(rd))
    t_min = times[i_min]
    m = {"ooe_times": times, "ooe_rdm_k": k_rdm, "ooe_replicates": R, "ooe_pcd_e_aai": pc.tolist(), "ooe_rdm_e_aai": rd.tolist(),
         "ooe_pcd_e2": curves["pcd"]["e2"].tolist(), "ooe_rdm_e2": curves["rdm"]["e2"].tolist(),
         "pcd_final_e_aai": float(pc[-1]), "ooe_rdm_updates": int(u_rdm),
         # the old estimators, kept for comparison only (no claim): a noisy curve's minimum is biased low
         "rdm_best_time": t_min, "rdm_best_log3_ratio": abs(math.log(t_min / k_rdm)) / math.log(3.0),
         "rdm_best_e_aai": float(rd[i_min]), "rdm_long_excess": float(rd[-1] - rd[i_min]),
         "pcd_long_excess": float(pc[-1] - pc.min())}
    # does generation from noise reach the distribution of the PCD models' own persistent chains? (means over replicates)
    reach = []
    for r in range(R):
        pq = metrics.quality(pcd_chains[r], train_img, test_img)
        end = snaps[times[-1]][row["pcd"](r)]
        reach.append((pq["e_aai_test"], pq["e2_test"], metrics.adversarial_accuracy(pcd_chains[r], end[: len(pcd_chains[r])])["e_aai"]))
    reach = np.mean(reach, axis=0)
    m.update({"ooe_pcd_chains_e_aai_test": float(reach[0]), "ooe_pcd_chains_e2_test": float(reach[1]),
              "ooe_pcd_gen_end_e_aai_test": float(pc[-1]), "ooe_pcd_gen_end_e2_test": float(curves["pcd"]["e2"][-1]),
              "ooe_pcd_chains_vs_gen_end_e_aai": float(reach[2])})
    m.update(ooe_window_statistics(times, [{t: snaps[t][row["pcd"](r)] for t in times} for r in range(R)],
                                   [{t: snaps[t][row["rdm"](r)] for t in times} for r in range(R)], test_img, k_rdm,
                                   cfg.ooe_gen_steps, cfg.ooe_boot, seed,
                                   null_images=[{t: null_snaps[t][r] for t in times} for r in range(R)]))
    return {"times": times, "curves": curves, "images": {t: snaps[t][:, :8].copy() for t in times}, "shape": data.shape, "metrics": m}


# ---- notebook 04: phase-space exploration ------------------------------------------------------------------

def count_transitions(labels, min_dwell: int = 3) -> tuple[int, list]:
    """Class changes of a label sequence, ignoring visits shorter than `min_dwell` frames."""
    runs = []
    for lab in labels:
        if runs and runs[-1][0] == lab:
            runs[-1][1] += 1
        else:
            runs.append([lab, 1])
    kept = [r for r in runs if r[1] >= min_dwell]
    merged = []
    for lab, n in kept:
        if merged and merged[-1][0] == lab:
            merged[-1][1] += n
        else:
            merged.append([lab, n])
    return max(0, len(merged) - 1), merged


def window_images(frames, window: int):
    """Average consecutive frames (T, ..., D) in non-overlapping windows of `window` frames."""
    frames = np.asarray(frames)
    n = len(frames) // max(1, window)
    return frames[: n * window].reshape(n, window, *frames.shape[1:]).mean(1)


def window_classes(windows, train_img, labels, radius: float) -> np.ndarray:
    """The class each of one chain's time-averaged windows (W, D) visits, −1 where it visits none.

    A window is a visit of a class only when it is data-like: its nearest training image lies within
    `radius` (the 95th percentile of the held-out images' own nearest-training distance), and then its
    class is the nearest class centroid (labels are >= 0). A chain of noise images is never data-like.
    """
    ok = metrics.nearest_distance(windows, train_img) <= radius
    cls = np.full(len(ok), -1, dtype=np.int64)
    if ok.any():
        cls[ok] = metrics.nearest_centroid_labels(windows[ok], train_img, labels)
    return cls


def class_visits(windows, train_img, labels, radius: float, dwell: int = 1) -> dict:
    """Classes visited and class transitions of one chain's windows (`window_classes`, `visits`)."""
    return visits(window_classes(windows, train_img, labels, radius), dwell)


def visits(cls, dwell: int = 1) -> dict:
    """Classes visited, class transitions and the data-like fraction of one chain's window classes (−1:
    off the data). A visit of a class counts only when the chain stays in it for at least `dwell`
    successive data-like windows (off-data windows skipped); transitions are class changes between
    successive counted visits. dwell = 1: every data-like window counts."""
    cls = np.asarray(cls)
    seq = cls[cls >= 0].tolist()
    n_trans, runs = count_transitions(seq, min_dwell=int(dwell))
    return {"classes": len({r[0] for r in runs}), "transitions": n_trans,
            "data_like": float((cls >= 0).mean()) if len(cls) else float("nan")}


# the main model at T = 1; the same J, b at T = 0 (the noiseless flow) from the same persistent states (the
# null: no thermal exploration); its J, b at update 0; J = 0, b = 0 (Ornstein-Uhlenbeck)
EXPLORE_MODELS = ("trained", "quench", "untrained", "j0")


def exploration(cfg, seed: int, model: dict, device=None) -> dict:
    """Long chains of the main model (from its persistent chains) and of three nulls, stacked.

    The nulls: `quench`, the trained J, b without noise (T = 0, the noiseless flow) from the SAME
    persistent states as the trained chains: what the paper credits for exploration is the thermal
    dynamics of the trained network, and this null keeps everything else (couplings, starting states,
    windows, data-like gate); `untrained` (its J, b at update 0) and `j0` (J = 0, b = 0), from N(0, I).
    After a burn-in of `explore_burn` steps, each chain's images are averaged over windows of
    `avg_steps` Langevin steps (as the memorization measure does); `class_visits` counts the digit
    classes visited (a visit lasts at least `explore_dwell` data-like windows) and the transitions
    between them per chain. The old measure (nearest-centroid label of every single frame, from step 0,
    visits >= 3 frames) is logged as `explore_*_ungated` for comparison: it counts noise as class changes.
    """
    data, st, snaps = model["data"], model["state"], model["snaps"]
    J1, b1 = st["J"][0], st["b"][0]
    J0, b0 = snaps[0][0][0], snaps[0][1][0]
    J = torch.stack([J1, J0, torch.zeros_like(J0)]); b = torch.stack([b1, b0, torch.zeros_like(b0)])
    n_chains = int(cfg.explore_chains)
    g = torch.Generator().manual_seed(int(seed) * 101 + 3)
    x = torch.randn((3, n_chains, data.n), generator=g, dtype=J.dtype)
    # the trained model's chains start from its persistent training chains (its own long-run samples;
    # chains from noise need far longer than the run to reach them, see notebook 03); so does the quench
    # null (the same states); the other nulls from noise
    pcd = st["chains"][0]
    x[0] = pcd[torch.randperm(len(pcd), generator=g)[:n_chains]].to(J.dtype) if len(pcd) >= n_chains else x[0]
    dev = compute_device(device)
    x, J, b = x.to(dev), J.to(dev), b.to(dev)
    xq = x[0].clone()
    every = int(cfg.explore_every)
    frames = []
    from common.progress import progress
    for _ in progress(range(cfg.explore_steps // every), desc="long chains"):
        x, _ = langevin(x, J, b, every, cfg.dt, cfg.T, g, check_every=0, where="exploration")
        xq, _ = flow(xq, J[0], b[0], every, cfg.dt)
        frames.append(phi(torch.stack([x[0], xq, x[1], x[2]])).cpu().numpy().copy())
    frames = np.asarray(frames)                                       # (frames, model, chain, N)
    train_img, labels = data.images("train")[: model["p"]], data.y_train[: model["p"]]
    radius = float(np.quantile(metrics.nearest_distance(data.images("test"), train_img), 0.95))
    burn = int(cfg.explore_burn) // every
    per_window = max(1, int(cfg.avg_steps) // every)                  # frames per window
    win = window_images(frames[burn:], per_window)                    # (windows, model, chain, N)
    dwell = int(cfg.explore_dwell)
    m = {"explore_radius": radius, "explore_frames": int(len(frames)), "explore_windows": int(len(win)),
         "explore_chains": n_chains, "explore_dwell": dwell}
    classes = {}
    for k, name in enumerate(EXPLORE_MODELS):
        cls = classes[name] = [window_classes(win[:, k, c], train_img, labels, radius) for c in range(n_chains)]
        per = [visits(c, dwell) for c in cls]
        cl, tr = [v["classes"] for v in per], [v["transitions"] for v in per]
        m[f"explore_{name}_classes"] = cl
        m[f"explore_{name}_classes_median"] = float(np.median(cl))
        m[f"explore_{name}_transitions"] = tr
        m[f"explore_{name}_transitions_mean"] = float(np.mean(tr))
        m[f"explore_{name}_transitions_se"] = float(np.std(tr, ddof=1) / math.sqrt(n_chains)) if n_chains > 1 else float("nan")
        m[f"explore_{name}_data_like"] = float(np.nanmean([v["data_like"] for v in per]))
        m[f"explore_{name}_transitions_dwell1_mean"] = float(np.mean([visits(c, 1)["transitions"] for c in cls]))
        lab0 = metrics.nearest_centroid_labels(frames[:, k, 0], train_img, labels)
        n0, runs0 = count_transitions(lab0.tolist())
        m[f"explore_{name}_classes_ungated"] = int(len({r[0] for r in runs0}))
        m[f"explore_{name}_transitions_ungated"] = int(n0)
    chain = frames[:, 0, 0]
    mu = train_img.mean(0)
    _, _, vt = np.linalg.svd(train_img - mu, full_matrices=False)
    return {"frames": chain, "labels": metrics.nearest_centroid_labels(chain, train_img, labels),
            "pc_frames": (chain - mu) @ vt[:3].T, "pc_train": (train_img - mu) @ vt[:3].T,
            "train_labels": labels, "shape": data.shape, "every": every, "burn_steps": int(cfg.explore_burn),
            "window_steps": per_window * every, "window_classes": {name: c[0] for name, c in classes.items()},   # chain 0 (the figure)
            "window_classes_all": classes, "metrics": m}


# ---- notebook 05: denoising ------------------------------------------------------------------------------------

def denoising(cfg, seed: int) -> dict:
    """One pattern per digit class 0-9 (sklearn digits), 25% corrupted, noiseless flow."""
    from common.data import load_dataset

    d = load_dataset("digits", "train")
    x = np.asarray(d.x).reshape(len(d.y), -1)
    rng = np.random.default_rng(seed)
    pats = np.stack([x[rng.choice(np.where(d.y == c)[0])] for c in range(10)])
    x = encoding.encode(pats)
    out = dn.denoise(x, cfg.denoise_fraction, cfg.denoise_steps, cfg.denoise_dt, seed=seed)
    out["metrics"].update(dn.controls(x, cfg.denoise_fraction, cfg.denoise_steps, cfg.denoise_dt, seed=seed, gain=cfg.gain,
                                      fitted=(out["J"], out["b"])))
    nlm = denoising_by_nlm(cfg, seed, x)
    out["metrics"].update(nlm["metrics"])
    out["nlm_images"] = nlm["images"]
    out["shape"] = (8, 8)
    return out


def denoising_by_nlm(cfg, seed: int, x) -> dict:
    """The same 10 patterns learned by the NLM rule itself (PCD-k, the profile's optimizer), then the
    same corrupted inputs restored by the model's own T = 1 Langevin dynamics (images averaged over
    `denoise_nlm_steps` steps, `denoise_reps` noise replicas each). Nulls: the untrained network the
    training started from, and J = 0, b = 0, run the same way. The trained model's noiseless flow is
    logged too (it lands on fixed points E = 0 off the data). Returns {"metrics", "images"}: images of the
    clean and corrupted patterns and of each network's restoration (its first noise replica, averaged)."""
    X = torch.as_tensor(x, dtype=torch.float32)
    tcfg = train_config(cfg, freeze_at=cfg.sweep_freeze_at)
    tr = Trainer(X, [len(X)], tcfg, seed=int(seed) + 4242)
    J0, b0 = tr.params()
    tr.train(int(cfg.denoise_nlm_updates), desc="train NLM on the 10 patterns")
    J, b = tr.params()
    x0 = dn.corrupt(x, cfg.denoise_fraction, seed)
    target = phi(X)
    steps, reps = int(cfg.denoise_nlm_steps), int(cfg.denoise_reps)
    m, images = {}, {"clean": target.numpy(), "corrupted": phi(x0).numpy()}
    for name, (Jm, bm) in (("nlm", (J[0], b[0])), ("nlm_untrained", (J0[0], b0[0])),
                           ("nlm_j0", (torch.zeros_like(J0[0]), torch.zeros_like(b0[0])))):
        res = dn.langevin_restore(x0, Jm, bm, target, steps, cfg.dt, cfg.T, reps, seed)
        r, images[name] = res["ratio"], res["images"]
        m[f"denoise_{name}_ratio_median"] = float(np.median(r))
        m[f"denoise_{name}_n_good"] = float((r <= 0.3).sum(1).mean())       # of 10, mean over the replicas
    rf = dn.flow_ratio(x0, J[0], b[0], target, int(round(cfg.denoise_steps * cfg.denoise_dt / cfg.dt)), cfg.dt)
    m["denoise_nlm_flow_ratio_median"] = float(np.median(rf))
    m["denoise_nlm_flow_n_good"] = int((rf <= 0.3).sum())
    m["denoise_nlm_euler_stability"] = float(cfg.dt * (1.0 + torch.linalg.matrix_norm(J[0].double(), ord=2)) ** 2)
    return {"metrics": m, "images": images}


# ---- notebook 06: the learning rule, reversibility, spectrum --------------------------------------------------

def rule_checks(cfg, seed: int) -> dict:
    pts, area = exact.grid(cfg.grad_grid, 9.0)
    g = torch.Generator().manual_seed(int(seed))
    J = torch.randn(2, 2, generator=g, dtype=torch.float64) * cfg.gain / math.sqrt(2); J.fill_diagonal_(0.0)
    b = 0.5 * torch.randn(2, generator=g, dtype=torch.float64)
    data = 1.5 * torch.randn(5, 2, generator=g, dtype=torch.float64)
    rJ, rb = exact.rule_on_grid(J, b, data, cfg.T, pts)
    fJ, fb = exact.finite_difference_gradient(J, b, data, cfg.T, pts=pts, area=area)
    rule, fd = torch.cat([rJ.reshape(-1), rb]), torch.cat([fJ.reshape(-1), fb])
    # a symmetric (Hebbian-like) variant of the rule, to show the test can fail
    sym = torch.cat([(0.5 * (rJ + rJ.T)).reshape(-1), rb])
    hJ = exact.hebbian_on_grid(J, b, data, cfg.T, pts)   # the symmetric rule a Boltzmann machine would use
    ep = thermo.sampler_vs_rate_network(chains=cfg.ep_chains, steps=cfg.ep_steps, burn=cfg.ep_burn, dt=0.01, seed=seed)
    m = {"grad_rel_err": float((rule - fd).abs().max() / fd.abs().max()),
         "grad_rel_err_symmetrised": float((sym - fd).abs().max() / fd.abs().max()),
         "rule_asymmetry": float((rJ - rJ.T).norm() / rJ.norm()),
         "rule_asymmetry_hebbian": float((hJ - hJ.T).norm() / hJ.norm()),
         "sigma_nlm": ep["sigma_nlm"], "sigma_nlm_se": ep["sigma_nlm_se"], "sigma_rnn": ep["sigma_rnn"],
         "sigma_rnn_se": ep["sigma_rnn_se"], "sigma_nlm_abs_z": abs(ep["sigma_nlm"]) / ep["sigma_nlm_se"],
         "sigma_nlm_euler_loop": ep["sigma_nlm_euler_loop"], "sigma_nlm_euler_loop_se": ep["sigma_nlm_euler_loop_se"],
         **{k: v for k, v in ep.items() if k.startswith("rev_")}}
    return {"rule": rule.numpy(), "fd": fd.numpy(), "metrics": m}


def spectrum(model: dict) -> dict:
    snaps = model["snaps"]
    steps = sorted(snaps)
    eig = {s: torch.linalg.eigvals(snaps[s][0][0].double()).cpu().numpy() for s in steps}
    eta = [asymmetry(snaps[s][0][0]) for s in steps]
    m = {"spectrum_updates": steps, "spectrum_asymmetry": eta,
         "spectrum_radius": [float(np.abs(eig[s]).max()) for s in steps]}
    return {"steps": steps, "eig": eig, "eta": eta, "metrics": m}
