"""The replicates of the image studies: train (or load) one ACL-AE, ACL-classifier, GAN or ACL-GAN,
sample it and its baselines and control, and score them; in worker processes, each replicate cached in
the run's folder so that a later notebook of the run loads it.

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539 (abstract: autoencoders and standard classifiers turned into generators,
and GANs improved, by adversarial code learning; the formulation is reconstructed, papers/acl/README.md).

Every comparison is paired: replicate r of every method uses the same random streams, data subset and, for
the autoencoder baselines, the same trained decoder. Trained models are checkpointed in
`<run_dir>/ckpt/`, so a later notebook (or a rerun) loads them instead of training again.
"""
from __future__ import annotations

import numpy as np
import torch

from common.parallel import n_workers, pmap

from .evaluation import code_c2st, evaluate_samples, evaluator, region_metrics
from .images import Images, image_device, provenance
from .metrics import accuracy
from .nets import Classifier, ConvDecoder, ConvEncoder
from .runfiles import ckpt_path, save_atomic, task_cache
from .samplers import code_model_samples, fit_baselines, gaussian_code_map, mmd_null
from .seeds import grid_noise
from .train import Hyper, acl_sample, fit_code_model, fit_gan, gan_sample, prior_dim, train_codes


def ae_replicate(cfg, images: Images, streams, r: int, run_dir) -> dict:
    """Train (or load) replicate r of the autoencoder with ACL attached (ACL-AE, the abstract's
    autoencoder turned generator; `train.fit_code_model`); `streams` are the replicate's training streams."""
    hp = Hyper.from_cfg(cfg)
    with streams.torch_global("init"):
        E = ConvEncoder(images.channels, images.size, cfg.code_dim, cfg.width).to(images.x.device)
        Dec = ConvDecoder(cfg.code_dim, images.channels, images.size, cfg.width).to(images.x.device)
    out = fit_code_model(images.x, E, Dec, hp, streams, ckpt=ckpt_path(run_dir, f"ae-r{r}"), ckpt_every=500, desc=f"ACL-AE r{r}")
    out.update(streams=streams, hp=hp)
    return out


def cls_hyper(cfg, **over) -> Hyper:
    """The classifier variant's settings: its feature size and its own code phase (`cls_*` keys)."""
    vals = dict(code_dim=cfg.cls_feat_dim, whiten_codes=cfg.cls_whiten_codes, residual_gc=cfg.cls_residual_gc,
                code_lr_final=cfg.cls_code_lr_final)
    for key in ("code_batch", "code_lr", "code_steps"):
        if getattr(cfg, f"cls_{key}", 0):   # 0: the autoencoder's setting
            vals[key] = getattr(cfg, f"cls_{key}")
    for key in ("null_batch", "null_lr", "null_steps"):   # 0: the classifier's own ACL setting (never the autoencoder's null)
        vals[key] = getattr(cfg, f"cls_{key}", 0)
    return Hyper.from_cfg(cfg, **(vals | over))


def classifier_replicate(cfg, images: Images, streams, r: int, run_dir) -> dict:
    """Train (or load) replicate r of a standard classifier, its feature-inversion decoder and ACL (the
    abstract's classifier turned generator); `streams` are the replicate's training streams."""
    hp = cls_hyper(cfg)
    dev = images.x.device
    with streams.torch_global("init"):
        C = Classifier(images.channels, images.size, len(images.classes), cfg.width // 2, cfg.cls_feat_dim).to(dev)
        Dec = ConvDecoder(cfg.cls_feat_dim, images.channels, images.size, cfg.width).to(dev)
    out = fit_code_model(images.x, C, Dec, hp, streams, y=images.y, objective="classifier",
                         ckpt=ckpt_path(run_dir, f"cls-r{r}"), ckpt_every=500, desc=f"ACL-classifier r{r}")
    out.update(streams=streams, hp=hp, cls_acc=accuracy(C.eval(), images.test_x.to(dev), images.test_y.to(dev)))
    return out


GAN_VARIANTS = {"gan": "", "aclgan": "acl", "aclganmmd": "aclmmd"}   # study -> variant of `gan_replicate`


def gan_replicate(cfg, images: Images, streams, r: int, variant: str, run_dir) -> dict:
    """Train (or load) replicate r of the plain GAN ("gan"), ACL-GAN ("acl") or ACL-GAN without the adversary
    ("aclmmd": G_c matched to E(x) by MMD in both phases, `code_objective="mmd"`; the control of gan-improves)
    (the abstract's "improve existing GANs"; same G and D_x architectures and the same streams for every variant
    of replicate r, so G and D_x start from the same weights; `train.fit_gan`)."""
    hp = Hyper.from_cfg(cfg, code_objective="mmd" if variant == "aclmmd" else "adv")
    dev = images.x.device
    with streams.torch_global("init"):
        G = ConvDecoder(cfg.code_dim, images.channels, images.size, cfg.width).to(dev)
        Dx = ConvEncoder(images.channels, images.size, 1, cfg.width).to(dev)
        E = ConvEncoder(images.channels, images.size, cfg.code_dim, cfg.width).to(dev) if variant != "gan" else None
    out = fit_gan(images.x, G, Dx, hp, streams, E=E, ckpt=ckpt_path(run_dir, f"{variant}gan-r{r}"), ckpt_every=500,
                  desc=f"{variant.upper()}-GAN r{r}")
    out.update(streams=streams, hp=hp)
    return out


TRAIN_KEY = {"ae": "ae", "cls": "cls"}   # the training streams of a study's replicate ("gan" for every GAN variant)


def scorer(cfg, images: Images, run_dir, seed: int):
    """(the run's evaluator, the provenance of a replicate's result), asked for once the replicate has trained: the
    evaluation network and the reference may still be under construction in the notebook's process then
    (`evaluation.reference_features` waits for them)."""
    ev, featinfo = evaluator(cfg, images, run_dir)
    return ev, provenance(cfg, seed, images, featinfo)


def image_task(cfg_dict: dict, run_dir: str, streams, seed: int, r: int, study: str) -> dict:
    """One replicate of one image study, in a worker: train (or load), sample, evaluate.

    study: "ae" (ACL-AE and its three baselines), "cls" (ACL-classifier and baselines), "gan", "aclgan".
    `streams` are the run's (`run.streams`): replicate r trains from the child (study's training key, r), samples
    from ("samples", study, r), scores its prior regions from ("regions", r); `seed` only names the result. The
    evaluator is built after training (`scorer`), so that the notebook may build the reference meanwhile.
    Returns {"metrics": {method: metrics}, "grid": {method: (n_grid, C, H, W) array}, ...}.
    """
    from types import SimpleNamespace

    cfg = SimpleNamespace(**cfg_dict)
    images = Images(cfg, device=image_device(cfg))
    train = streams.child(TRAIN_KEY.get(study, "gan"), r)
    draw = streams.child("samples", study, r)
    regions = streams.child("regions", r)   # the same regions for ACL-AE and its fitted Gaussian (paired)
    out = {"study": study, "replicate": r, "provenance": None}
    if study in ("ae", "cls"):
        res = (ae_replicate if study == "ae" else classifier_replicate)(cfg, images, train, r, run_dir)
        ev, out["provenance"] = scorer(cfg, images, run_dir, seed)
        samplers = fit_baselines(res, images, cfg, draw)
        samples = code_model_samples(res, images, cfg.n_eval, samplers, draw)
        null = mmd_null(res, images.x, train)  # ACL's G_c without the adversary, same initialization
        with torch.no_grad():
            samples["mmd_gc"] = res["models"]["Dec"](null.sample(cfg.n_eval, draw.torch_generator("null-noise"))).cpu()
        zg = grid_noise(streams, cfg.n_grid, res["hp"].z_dim)
        grid = code_model_samples(res, images, cfg.n_grid, samplers, streams.child("grid"), z=zg)
        if getattr(cfg, "code_c2st", True):   # keyed streams of their own: skipping them changes no other number
            out["c2st"] = code_c2st(res, images, samplers, null, cfg.n_eval, draw, steps=getattr(cfg, "c2st_steps", 300))
        if study == "cls":
            out["cls_acc"] = res["cls_acc"]
            with torch.no_grad():  # the classifier's own head on the generated codes
                codes = res["models"]["acl"].sample(cfg.n_eval, draw.torch_generator("own-head-codes"))
                lab = res["models"]["E"].head(codes).argmax(1).cpu().numpy()
            out["own_head_class_frac"] = (np.bincount(lab, minlength=len(images.classes)) / len(lab)).tolist()
    else:
        res = gan_replicate(cfg, images, train, r, GAN_VARIANTS[study] or "gan", run_dir)
        ev, out["provenance"] = scorer(cfg, images, run_dir, seed)
        zd = prior_dim(res["models"], res["hp"])  # the plain GAN takes code_dim-wide noise, ACL-GAN z_dim
        samples = {study: gan_sample(res["models"], cfg.n_eval, res["hp"], draw.torch_generator("noise")).cpu()}
        grid = {study: gan_sample(res["models"], cfg.n_grid, res["hp"], z=grid_noise(streams, cfg.n_grid, zd)).cpu()}
        if study != "aclganmmd":   # the null of gan-improves is scored on FID and PRDC only
            out["regions"] = region_metrics(ev, lambda z: gan_sample(res["models"], len(z), res["hp"], z=z).cpu(), zd, cfg,
                                        regions)
    out["metrics"] = evaluate_samples(ev, samples, full=True)
    out["grid"] = {k: v.numpy() for k, v in grid.items()}
    out["history"] = res["history"]
    if study == "ae":
        out["regions"] = region_metrics(ev, lambda z: acl_sample(res["models"], len(z), z=z).cpu(), res["hp"].z_dim, cfg, regions)
        gmap = gaussian_code_map(res["encode"], images.x, train_codes(res, images.x))  # the control: the fitted Gaussian's regions, same decoder
        with torch.no_grad():
            out["regions_gauss"] = region_metrics(ev, lambda z: res["models"]["Dec"](gmap(z).to(images.x.device)).cpu(),
                                                  cfg.code_dim, cfg, regions)
    return out


def cached_image_task(cfg_dict: dict, run_dir: str, streams, seed: int, r: int, study: str) -> dict:
    """`image_task`, its result stored in the run's checkpoint folder for a later notebook."""
    out = image_task(cfg_dict, run_dir, streams, seed, r, study)
    save_atomic(out, task_cache(run_dir, seed, study, r))
    return out


COST_ORDER = {"aclgan": 0, "aclganmmd": 0, "cls": 1, "ae": 2, "gan": 3}  # longest tasks first: two workers finish together


def n_replicates(cfg, study: str) -> int:
    """Paired replicates of an image study: `replicates` (autoencoder), `cls_replicates`, `gan_replicates`."""
    return getattr(cfg, {"ae": "replicates", "cls": "cls_replicates"}.get(study, "gan_replicates"))


def trains_here(cfg, run, studies: list[str], also: tuple[str, ...] = ()) -> bool:
    """Whether `image_study` would train a replicate in this process: some replicate is not cached and
    `common.parallel.pmap` would run its missing tasks with one worker (here, under a one-thread limit), not in
    worker processes. A resumed run with one replicate left trains it here even where the cores allow two."""
    todo = missing_tasks(cfg, run, studies, also)
    return bool(todo) and n_workers(len(todo), cfg.workers or None) == 1


def missing_tasks(cfg, run, studies: list[str], also: tuple[str, ...] = ()) -> list[dict]:
    """The `cached_image_task` tasks of `image_study` whose replicate is not cached yet, the costliest first."""
    run_dir, seed = run.dir, run.seed
    wanted = [(s, r) for s in list(studies) + [a for a in also if a not in studies] for r in range(n_replicates(cfg, s))]
    return [dict(cfg_dict=vars(cfg), run_dir=str(run_dir), streams=run.streams, seed=seed, r=r, study=s)
            for s, r in sorted(wanted, key=lambda sr: COST_ORDER.get(sr[0], 0))
            if not task_cache(run_dir, seed, s, r).exists()]


def image_study(cfg, run, studies: list[str], also: tuple[str, ...] = ()) -> list[dict]:
    """Every replicate of the given studies, two worker processes (one thread each).

    `also`: studies a later notebook of the same run needs, trained in the same worker pool (an odd
    number of tasks on 2 workers would leave one idle) and cached; a replicate already cached is loaded.
    Every task draws from its own keyed streams of `run.streams`, so pooling or caching changes no number.
    """
    run_dir, seed = run.dir, run.seed
    todo = missing_tasks(cfg, run, studies, also)
    if todo:
        pmap(cached_image_task, todo, workers=cfg.workers or None, desc=f"{'+'.join(sorted({t['study'] for t in todo}))} replicates")
    return [torch.load(task_cache(run_dir, seed, s, r), weights_only=False) for s in studies for r in range(n_replicates(cfg, s))]


def without_grids(results: list[dict]) -> list[dict]:
    """The replicates without their sample grids (what the results files keep)."""
    return [{k: v for k, v in r.items() if k != "grid"} for r in results]


def results_record(prov: dict, results: list[dict]) -> dict:
    """The `*_results.json` a notebook saves: `{"provenance", "replicates"}` (notebook 05 reads 02's and 04's)."""
    return {"provenance": prov, "replicates": without_grids(results)}
