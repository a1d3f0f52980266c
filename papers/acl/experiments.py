"""The studies the notebooks call: synthetic mode coverage, AE vs ACL-AE and baselines, classifier
to generator, GAN vs ACL-GAN, and sample quality by region of the prior.

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539

Every comparison is paired: replicate r of every method uses the same seed, data subset and, for
the autoencoder baselines, the same trained decoder. Trained models are checkpointed in
`<run_dir>/ckpt/`, so a later notebook (or a rerun) loads them instead of training again.
"""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import torch
from torch import nn

from common.data import load_dataset
from common.io import atomic_write_bytes
from common.parallel import one_thread, pmap
from common.seed import numpy_rng

from .acl import CodeGAN
from .baselines import BASELINES, code_samplers, fit_gaussian
from .metrics import Evaluator, accuracy, train_feature_net, weights_sha256
from .mmd import fit_mmd_code_generator
from .nets import Classifier, ConvDecoder, ConvEncoder, mlp, seed_init
from .regions import orthant_noise, shell_noise
from .synthetic import mixture, mode_stats, sample_mixture, uniform_like
from .train import Hyper, acl_sample, encode_all, fit_code_model, fit_gan, gan_sample, prior_dim
from .twosample import c2st_accuracy


def rep_seed(seed: int, *keys) -> int:
    """Independent integer seed for (master seed, keys)."""
    return int(numpy_rng(seed, *keys).integers(2**31 - 1))


# ------------------------------------------------------------------------------------------------
# data and the evaluation network
# ------------------------------------------------------------------------------------------------
class Images:
    """Training subset, held-out reference (test split), a disjoint real set for the floor."""

    def __init__(self, cfg, device="cpu"):
        train = load_dataset(cfg.dataset, "train")
        test = load_dataset(cfg.dataset, "test")
        self.classes, self.provenance = train.classes, train.provenance + test.provenance
        order = np.random.default_rng(0).permutation(len(train))
        n = len(train) if cfg.n_train in (0, None) else min(cfg.n_train, len(train))
        tr, rest = order[:n], order[n:]
        if len(rest) < cfg.n_floor:  # small sets (digits): the floor set overlaps training
            rest = order
        fl = np.sort(rest[:cfg.n_floor])
        te = np.sort(np.random.default_rng(1).permutation(len(test))[:cfg.n_eval])
        X, Y = np.asarray(train.x), train.y
        self.x = torch.as_tensor(X[np.sort(tr)], device=device)
        self.y = torch.as_tensor(Y[np.sort(tr)], device=device)
        self.floor_x = torch.as_tensor(X[fl])
        self.test_x = torch.as_tensor(np.asarray(test.x)[te])
        self.test_y = torch.as_tensor(test.y[te])
        self.all_x, self.all_y = torch.as_tensor(X), torch.as_tensor(Y)
        self.channels, self.size = self.x.shape[1], self.x.shape[2]

    def info(self) -> dict:
        return {"n_train": len(self.x), "n_test_ref": len(self.test_x), "n_floor": len(self.floor_x),
                "shape": list(self.x.shape[1:]), "classes": len(self.classes)}


def image_device(cfg) -> str:
    """Where the image models of a run train: the run's device (`cfg.device`, set by the notebooks), else the CPU."""
    return str(getattr(cfg, "device", None) or "cpu")


SPLIT = ("train: the first n_train images of permutation(seed 0) of the training split; reference: n_eval images "
         "of permutation(seed 1) of the test split; floor: the next n_floor training images (disjoint from train)")


def provenance(cfg, seed: int, images: Images | None = None, featinfo: dict | None = None) -> dict:
    """What every results file carries: seed, sizes, the split, the evaluation network's hash and accuracy."""
    out = {"seed": int(seed), "profile_dataset": cfg.dataset if images is not None else "2-D mixtures"}
    if images is not None:  # the image models train where the images are; every metric is computed on the CPU
        out.update(n_train=len(images.x), n_eval=len(images.test_x), n_floor=len(images.floor_x), split=SPLIT,
                   image_models_device=image_device(cfg), evaluation_device="cpu")
    else:
        out.update(n_train=int(cfg.syn_n), n_eval=int(cfg.syn_eval), mixtures=list(cfg.syn_mixtures),
                   split="2-D points drawn fresh per replicate (seeded); scored against the known modes",
                   synthetic_device="cpu")
    if featinfo is not None:
        out.update(featnet_sha256=featinfo["featnet_sha256"], featnet_test_acc=featinfo["featnet_test_acc"])
    else:
        out.update(featnet_sha256="none (no evaluation network: 2-D points are scored by distance to the modes)",
                   featnet_test_acc=None)
    return out


def feature_net(cfg, images: Images, run_dir) -> tuple[Classifier, dict]:
    """The evaluation classifier, trained once per run directory on the training split (fixed seed)."""
    path = Path(run_dir) / "ckpt" / "featnet.pt"
    if path.exists():
        net = Classifier(images.channels, images.size, len(images.classes))
        net.load_state_dict(torch.load(path, weights_only=True))
        net.eval()
    else:
        net = train_feature_net(images.all_x, images.all_y, len(images.classes), cfg.feat_epochs, seed=cfg.feat_seed)
        _save_atomic(net.state_dict(), path)
    info = {"featnet_sha256": weights_sha256(net), "featnet_test_acc": accuracy(net, images.test_x, images.test_y),
            "featnet_dim": net.num_features, "featnet_train_images": len(images.all_x), "featnet_epochs": cfg.feat_epochs}
    return net, info


@one_thread()
def evaluator(cfg, images: Images, run_dir) -> tuple[Evaluator, dict]:
    """The feature network (trained here once per run) and an Evaluator on the test reference."""
    net, info = feature_net(cfg, images, run_dir)
    ev = Evaluator(net, images.test_x, images.x.cpu(), images.floor_x, len(images.classes), n_prdc=cfg.n_prdc,
                   n_mem=cfg.n_mem, k=cfg.prdc_k, kid_subsets=cfg.kid_subsets, kid_subset_size=cfg.kid_subset_size)
    return ev, info


def _ckpt(run_dir, name) -> Path:
    p = Path(run_dir) / "ckpt" / f"{name}.pt"
    p.parent.mkdir(parents=True, exist_ok=True)
    return p


# ------------------------------------------------------------------------------------------------
# autoencoder + ACL, classifier + ACL
# ------------------------------------------------------------------------------------------------
def ae_replicate(cfg, images: Images, seed: int, r: int, run_dir) -> dict:
    """Train (or load) replicate r of the autoencoder with ACL attached."""
    rs = rep_seed(seed, "ae", r)
    hp = Hyper.from_cfg(cfg)
    seed_init(rs)
    E = ConvEncoder(images.channels, images.size, cfg.code_dim, cfg.width).to(images.x.device)
    Dec = ConvDecoder(cfg.code_dim, images.channels, images.size, cfg.width).to(images.x.device)
    out = fit_code_model(images.x, E, Dec, hp, seed=rs, ckpt=_ckpt(run_dir, f"ae-r{r}"), ckpt_every=500, desc=f"ACL-AE r{r}")
    out.update(seed=rs, hp=hp)
    return out


def cls_hyper(cfg, **over) -> Hyper:
    """The classifier variant's settings: its feature size and its own code phase (`cls_*` keys)."""
    vals = dict(code_dim=cfg.cls_feat_dim, whiten_codes=cfg.cls_whiten_codes, residual_gc=cfg.cls_residual_gc,
                code_lr_final=cfg.cls_code_lr_final)
    return Hyper.from_cfg(cfg, **(vals | over))


def classifier_replicate(cfg, images: Images, seed: int, r: int, run_dir) -> dict:
    """Train (or load) replicate r of a standard classifier, its feature-inversion decoder and ACL."""
    rs = rep_seed(seed, "cls", r)
    hp = cls_hyper(cfg)
    seed_init(rs)
    dev = images.x.device
    C = Classifier(images.channels, images.size, len(images.classes), cfg.width // 2, cfg.cls_feat_dim).to(dev)
    Dec = ConvDecoder(cfg.cls_feat_dim, images.channels, images.size, cfg.width).to(dev)
    out = fit_code_model(images.x, C, Dec, hp, seed=rs, y=images.y, objective="classifier",
                         ckpt=_ckpt(run_dir, f"cls-r{r}"), ckpt_every=500, desc=f"ACL-classifier r{r}")
    out.update(seed=rs, hp=hp, cls_acc=accuracy(C.eval(), images.test_x.to(dev), images.test_y.to(dev)))
    return out


def fit_baselines(out: dict, images: Images, cfg, seed: int) -> dict:
    """The three code samplers (N(0, I), fitted Gaussian, GMM) fitted once on the codes of the training set."""
    codes = encode_all(out["encode"], images.x).cpu()
    return code_samplers(codes.numpy(), cfg.gmm_components, seed, cfg.gmm_iters)


def code_model_samples(out: dict, images: Images, n: int, samplers: dict, seed: int, z: torch.Tensor | None = None) -> dict:
    """Samples of ACL and of the baselines (`fit_baselines`) on the same decoder: {name: images}."""
    models = out["models"]
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        res = {"acl": acl_sample(models, n, gen, z).cpu()}
        for name, sampler in samplers.items():
            c = torch.as_tensor(sampler(n, np.random.default_rng(seed)), dtype=torch.float32).to(images.x.device)
            res[name] = models["Dec"](c).cpu()
    return res


NULLS = ("mmd_gc",)  # G_c of ACL's size trained without the adversary (`mmd`), the control of the ACL claims


def mmd_null(res: dict, x: torch.Tensor, seed: int) -> CodeGAN:
    """The control of a trained ACL model `res` (fit_code_model / fit_gan's output, with its "hp"): a G_c
    of the same size, standardization and schedule fitted by MMD to the same cached codes E(x) of the
    trained encoder (`mmd.fit_mmd_code_generator`), from the same seeded initialization as ACL's G_c."""
    encode = res.get("encode") or res["models"]["E"]
    return fit_mmd_code_generator(encode_all(encode, x), res["hp"], seed)


def evaluate_samples(ev: Evaluator, samples: dict, full: bool = True) -> dict:
    """Metrics per sampler; the memorization ratio only for the generators (not the code baselines or nulls)."""
    return {name: ev.evaluate(x, memorization=full and name not in BASELINES + NULLS, full=full)
            for name, x in samples.items()}


def gaussian_code_map(encode, x: torch.Tensor):
    """z -> mu + A z with (mu, A A^T) the Gaussian fitted to the codes E(x): the fitted-Gaussian
    baseline as a map of the prior, so its shells of |z| can be scored like G_c's."""
    mu, cov = fit_gaussian(encode_all(encode, x).cpu().double().numpy())
    w, v = np.linalg.eigh(cov)
    a = torch.as_tensor(v * np.sqrt(np.clip(w, 0, None)), dtype=torch.float32)
    mu = torch.as_tensor(mu, dtype=torch.float32)
    return lambda z: mu + z @ a.T


def code_c2st(res: dict, images: Images, samplers: dict, null, n: int, seed: int) -> dict:
    """Classifier two-sample accuracy of each code sampler against held-out codes E(x_test) (`twosample`):
    G_c ("acl"), the baselines, the MMD-trained G_c (`null`), and the floor: training codes vs held-out codes."""
    held = encode_all(res["encode"], images.test_x.to(images.x.device)).cpu()
    gen = torch.Generator().manual_seed(seed)
    fakes = {"acl": res["models"]["acl"].sample(n, gen).cpu(), "mmd_gc": null.sample(n, gen).cpu()}
    fakes |= {k: sampler(n, np.random.default_rng(seed)) for k, sampler in samplers.items()}
    train_codes = encode_all(res["encode"], images.x).cpu()
    fakes["train_codes"] = train_codes[torch.randperm(len(train_codes), generator=gen)[:n]]
    return {k: c2st_accuracy(held, f, seed=rep_seed(seed, "c2st")) for k, f in fakes.items()}


def region_metrics(ev: Evaluator, sample_fn, z_dim: int, cfg, seed: int) -> list[dict]:
    """Metrics of the samples of every region of the prior: `n_regions` shells of |z|, then 2^m orthants
    (signs of the first m = log2(n_regions) coordinates), each of equal prior mass."""
    return [ev.evaluate(x, memorization=False) | {"region": name}
            for name, x in region_samples(sample_fn, z_dim, cfg.n_regions, cfg.n_region, seed)]


def image_task(cfg_dict: dict, run_dir: str, seed: int, r: int, study: str) -> dict:
    """One replicate of one image study, in a worker: train (or load), sample, evaluate.

    study: "ae" (ACL-AE and its three baselines), "cls" (ACL-classifier and baselines), "gan", "aclgan".
    Returns {"metrics": {method: metrics}, "grid": {method: (n_grid, C, H, W) array}, ...}.
    """
    from types import SimpleNamespace

    cfg = SimpleNamespace(**cfg_dict)
    images = Images(cfg, device=image_device(cfg))
    ev, featinfo = evaluator(cfg, images, run_dir)
    gen_seed = rep_seed(seed, "samples", study, r)
    out = {"study": study, "replicate": r, "provenance": provenance(cfg, seed, images, featinfo)}
    if study in ("ae", "cls"):
        res = (ae_replicate if study == "ae" else classifier_replicate)(cfg, images, seed, r, run_dir)
        samplers = fit_baselines(res, images, cfg, gen_seed)
        samples = code_model_samples(res, images, cfg.n_eval, samplers, gen_seed)
        null = mmd_null(res, images.x, res["seed"])  # ACL's G_c without the adversary, same initialization
        with torch.no_grad():
            samples["mmd_gc"] = res["models"]["Dec"](null.sample(cfg.n_eval, torch.Generator().manual_seed(gen_seed))).cpu()
        zg = fixed_noise(seed, cfg.n_grid, res["hp"].z_dim)
        grid = code_model_samples(res, images, cfg.n_grid, samplers, seed, z=zg)
        out["c2st"] = code_c2st(res, images, samplers, null, cfg.n_eval, gen_seed)
        if study == "cls":
            out["cls_acc"] = res["cls_acc"]
            with torch.no_grad():  # the classifier's own head on the generated codes
                codes = res["models"]["acl"].sample(cfg.n_eval, torch.Generator().manual_seed(gen_seed))
                lab = res["models"]["E"].head(codes).argmax(1).cpu().numpy()
            out["own_head_class_frac"] = (np.bincount(lab, minlength=len(images.classes)) / len(lab)).tolist()
    else:
        res = gan_replicate(cfg, images, seed, r, "acl" if study == "aclgan" else "gan", run_dir)
        zd = prior_dim(res["models"], res["hp"])  # the plain GAN takes code_dim-wide noise, ACL-GAN z_dim
        gen = torch.Generator().manual_seed(gen_seed)
        samples = {study: gan_sample(res["models"], cfg.n_eval, res["hp"], gen).cpu()}
        if study == "aclgan":  # the null: the same trained G fed a G_c refit by MMD in place of the adversary
            null = {"G": res["models"]["G"], "acl": mmd_null(res, images.x, res["seed"])}
            samples["mmd_gc"] = gan_sample(null, cfg.n_eval, res["hp"], torch.Generator().manual_seed(gen_seed)).cpu()
        grid = {study: gan_sample(res["models"], cfg.n_grid, res["hp"], z=fixed_noise(seed, cfg.n_grid, zd)).cpu()}
        out["regions"] = region_metrics(ev, lambda z: gan_sample(res["models"], len(z), res["hp"], z=z).cpu(), zd, cfg,
                                        rep_seed(seed, "regions", r))
    out["metrics"] = evaluate_samples(ev, samples, full=True)
    out["grid"] = {k: v.numpy() for k, v in grid.items()}
    out["history"] = res["history"]
    if study == "ae":
        rseed = rep_seed(seed, "regions", r)
        out["regions"] = region_metrics(ev, lambda z: acl_sample(res["models"], len(z), z=z).cpu(), res["hp"].z_dim, cfg, rseed)
        gmap = gaussian_code_map(res["encode"], images.x)  # the control: the fitted Gaussian's regions, same decoder
        with torch.no_grad():
            out["regions_gauss"] = region_metrics(ev, lambda z: res["models"]["Dec"](gmap(z).to(images.x.device)).cpu(),
                                                  cfg.code_dim, cfg, rseed)
    return out


def fixed_noise(seed: int, n: int, dim: int) -> torch.Tensor:
    """The fixed noise of the sample grids (one per seed and width)."""
    return torch.as_tensor(np.random.default_rng(seed).standard_normal((n, dim)), dtype=torch.float32)


def _save_atomic(obj, path: Path) -> None:
    """torch.save through a temporary file: a notebook running beside this one never reads half a file."""
    buf = io.BytesIO()
    torch.save(obj, buf)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, buf.getvalue())


def _task_cache(run_dir, seed: int, study: str, r: int) -> Path:
    return Path(run_dir) / "ckpt" / f"task-{study}-s{seed}-r{r}.pt"


def cached_image_task(cfg_dict: dict, run_dir: str, seed: int, r: int, study: str) -> dict:
    """`image_task`, its result stored in the run's checkpoint folder for a later notebook."""
    out = image_task(cfg_dict, run_dir, seed, r, study)
    _save_atomic(out, _task_cache(run_dir, seed, study, r))
    return out


def image_study(cfg, run_dir, seed: int, studies: list[str], also: tuple[str, ...] = ()) -> list[dict]:
    """Every replicate of the given studies, two worker processes (one thread each).

    `also`: studies a later notebook of the same run needs, trained in the same worker pool (an odd
    number of tasks on 2 workers would leave one idle) and cached; a replicate already cached is loaded.
    Every task seeds itself, so pooling or caching changes no number.
    """
    wanted = [(s, r) for s in list(studies) + [a for a in also if a not in studies] for r in range(n_replicates(cfg, s))]
    todo = [dict(cfg_dict=vars(cfg), run_dir=str(run_dir), seed=seed, r=r, study=s)
            for s, r in sorted(wanted, key=lambda sr: _COST_ORDER.get(sr[0], 0))
            if not _task_cache(run_dir, seed, s, r).exists()]
    if todo:
        pmap(cached_image_task, todo, workers=cfg.workers or None, desc=f"{'+'.join(sorted({t['study'] for t in todo}))} replicates")
    return [torch.load(_task_cache(run_dir, seed, s, r), weights_only=False) for s in studies for r in range(n_replicates(cfg, s))]


_COST_ORDER = {"aclgan": 0, "cls": 1, "ae": 2, "gan": 3}  # longest tasks first: two workers finish together


def n_replicates(cfg, study: str) -> int:
    """Paired replicates of an image study: `replicates` (autoencoder), `cls_replicates`, `gan_replicates`."""
    return getattr(cfg, {"ae": "replicates", "cls": "cls_replicates"}.get(study, "gan_replicates"))


# ------------------------------------------------------------------------------------------------
# GAN vs ACL-GAN
# ------------------------------------------------------------------------------------------------
def gan_replicate(cfg, images: Images, seed: int, r: int, variant: str, run_dir) -> dict:
    """Train (or load) replicate r of the plain GAN or ACL-GAN (same G and D_x architectures, same seed)."""
    rs = rep_seed(seed, "gan", r)
    hp = Hyper.from_cfg(cfg)
    seed_init(rs)
    dev = images.x.device
    G = ConvDecoder(cfg.code_dim, images.channels, images.size, cfg.width).to(dev)
    Dx = ConvEncoder(images.channels, images.size, 1, cfg.width).to(dev)
    E = ConvEncoder(images.channels, images.size, cfg.code_dim, cfg.width).to(dev) if variant == "acl" else None
    out = fit_gan(images.x, G, Dx, hp, seed=rs, E=E, ckpt=_ckpt(run_dir, f"{variant}gan-r{r}"), ckpt_every=500,
                  desc=f"{variant.upper()}-GAN r{r}")
    out.update(seed=rs, hp=hp)
    return out


# ------------------------------------------------------------------------------------------------
# synthetic 2-D mixtures (run in worker processes)
# ------------------------------------------------------------------------------------------------
def _syn_hyper(cfg, which: str) -> Hyper:
    return Hyper(code_dim=cfg.syn_code_dim, z_dim=cfg.syn_code_dim, hidden=cfg.syn_hidden, depth=2, loss=cfg.loss,
                 gp_weight=cfg.gp_weight, n_critic=cfg.n_critic, mode=cfg.mode, enc_adv_weight=cfg.enc_adv_weight,
                 batch=cfg.syn_batch, code_batch=cfg.syn_batch, lr=cfg.syn_lr, lr_g=cfg.syn_lr_g, lr_d=cfg.syn_lr_d,
                 code_lr=cfg.syn_lr_g, normalize_codes=cfg.normalize_codes, whiten_codes=cfg.syn_whiten_codes,
                 residual_gc=cfg.syn_residual_gc,
                 ae_steps=cfg.syn_ae_steps, code_steps=cfg.syn_code_steps, gan_steps=cfg.syn_gan_steps,
                 rec_weight=cfg.rec_weight, cycle_weight=cfg.cycle_weight, code_weight=cfg.code_weight,
                 image_grad_to_code=cfg.image_grad_to_code, code_rounds=cfg.code_rounds, code_refit=cfg.code_refit,
                 code_lr_final=cfg.syn_code_lr_final).check()


def synthetic_task(cfg_dict: dict, mix: str, r: int, seed: int, model: str) -> dict:
    """One (mixture, replicate, model) run; model in {ae, gan, aclgan}. Returns mode statistics."""
    from types import SimpleNamespace

    cfg = SimpleNamespace(**cfg_dict)
    rs = rep_seed(seed, "syn", mix, r)
    data = torch.as_tensor(sample_mixture(mix, cfg.syn_n, numpy_rng(rs, "data")))
    means, sigma = mixture(mix)
    hp = _syn_hyper(cfg, model)
    h, c = cfg.syn_hidden, cfg.syn_code_dim
    seed_init(rs)
    out = {"mixture": mix, "replicate": r, "seed": rs}
    gen = torch.Generator().manual_seed(rep_seed(seed, "syn-eval", mix, r))
    if model == "ae":
        E, Dec = mlp([2, h, h, c]), mlp([c, h, h, 2])
        res = fit_code_model(data, E, Dec, hp, seed=rs)
        pts = SimpleNamespace(x=data)
        samples = code_model_samples(res, pts, cfg.syn_eval, fit_baselines(res, pts, cfg, rs), rs)
        res["hp"] = hp
        null = mmd_null(res, data, rs)  # the control: ACL's G_c without the adversary, same initialization
        with torch.no_grad():
            samples["mmd_gc"] = res["models"]["Dec"](null.sample(cfg.syn_eval, torch.Generator().manual_seed(rs))).cpu()
        for name, x in samples.items():
            key = "acl_ae" if name == "acl" else f"ae_{name}"
            out[key] = mode_stats(x.numpy(), means, sigma) | {"points": x[:500].numpy().tolist()}
        u = uniform_like(mix, data.numpy(), cfg.syn_eval, numpy_rng(rs, "uniform"))  # the structureless control
        out["uniform"] = mode_stats(u, means, sigma) | {"points": u[:500].tolist()}
    else:
        G, Dx = mlp([c, h, h, 2]), mlp([2, h, h, 1], act="leaky")
        E = mlp([2, h, h, c]) if model == "aclgan" else None
        res = fit_gan(data, G, Dx, hp, seed=rs, E=E)
        x = gan_sample(res["models"], cfg.syn_eval, hp, gen)
        out[model] = mode_stats(x.numpy(), means, sigma) | {"points": x[:500].numpy().tolist()}
        if model == "aclgan":  # the control: the same trained G fed a G_c refit by MMD in place of the adversary
            res["hp"] = hp
            null = {"G": res["models"]["G"], "acl": mmd_null(res, data, rs)}
            x = gan_sample(null, cfg.syn_eval, hp, torch.Generator().manual_seed(rep_seed(seed, "syn-eval", mix, r)))
            out["aclgan_mmd_gc"] = mode_stats(x.numpy(), means, sigma) | {"points": x[:500].numpy().tolist()}
    return out


def synthetic_study(cfg, seed: int) -> list[dict]:
    """Every mixture x replicate x {ae (+ baselines), gan, aclgan}, `syn_replicates` of each, on two
    worker processes. The 2-D models are cheap, and the paired GAN comparison needs more than three
    replicates: with three, one collapsed plain GAN on the grid (4 modes) made the verdict change with the seed."""
    tasks = [dict(cfg_dict=vars(cfg), mix=m, r=r, seed=seed, model=k) for m in cfg.syn_mixtures
             for k in ("aclgan", "gan", "ae") for r in range(cfg.syn_replicates)]
    return pmap(synthetic_task, tasks, workers=cfg.workers or None, desc="synthetic runs")


def synthetic_table(results: list[dict]) -> list[dict]:
    """Long table: one row per (mixture, replicate, method) with hq_frac, modes, kl."""
    rows = []
    for res in results:
        for key, st in res.items():
            if isinstance(st, dict) and "hq_frac" in st:
                rows.append({"mixture": res["mixture"], "replicate": res["replicate"], "method": key,
                             "hq_frac": st["hq_frac"], "modes": st["modes"], "modes_any": st["modes_any"],
                             "n_modes": st["n_modes"], "kl": st["kl"]})
    return rows


# ------------------------------------------------------------------------------------------------
# quality by region of the prior
# ------------------------------------------------------------------------------------------------
def region_samples(sample_fn, z_dim: int, n_regions: int, n: int, seed: int) -> list[tuple[str, torch.Tensor]]:
    """(name, samples) of each region of the prior: `n_regions` shells of |z| with equal prior mass
    (shell k: chi quantiles k/K..(k+1)/K), then the 2^m orthants of the first m = floor(log2 n_regions)
    coordinates (at most z_dim), also of equal mass."""
    out = []
    for k in range(n_regions):
        z = shell_noise(n, z_dim, k / n_regions, (k + 1) / n_regions, np.random.default_rng(rep_seed(seed, "shell", k)))
        out.append((f"shell{k}", sample_fn(torch.as_tensor(z, dtype=torch.float32))))
    m = max(1, min(z_dim, int(np.log2(n_regions))))
    for k in range(2 ** m):
        z = orthant_noise(n, z_dim, k, m, np.random.default_rng(rep_seed(seed, "orthant", k)))
        out.append((f"orthant{k}", sample_fn(torch.as_tensor(z, dtype=torch.float32))))
    return out
