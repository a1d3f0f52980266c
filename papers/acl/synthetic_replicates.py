"""The replicates of the synthetic study: ACL-AE (with its baselines and control), the plain GAN and
ACL-GAN on the 2-D mixtures, in worker processes, scored by distance to the known modes.

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539 (abstract: "experiments on synthetic data"; the protocol, reconstructed,
is VEEGAN's ring / grid with PacGAN's mode rule: `synthetic.mode_stats`, claims `syn-*`).
"""
from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import torch

from common.parallel import pmap

from .nets import mlp
from .samplers import code_model_samples, fit_baselines, mmd_null
from .synthetic import mixture, mode_stats, sample_mixture, uniform_like
from .train import Hyper, fit_code_model, fit_gan, gan_sample


def syn_hyper(cfg) -> Hyper:
    """The 2-D models' settings (`syn_*` keys; the reconstructed method's keys shared with the images)."""
    return Hyper(code_dim=cfg.syn_code_dim, z_dim=cfg.syn_code_dim, hidden=cfg.syn_hidden, depth=2, loss=cfg.loss,
                 gp_weight=cfg.gp_weight, n_critic=cfg.n_critic, mode=cfg.mode, enc_adv_weight=cfg.enc_adv_weight,
                 batch=cfg.syn_batch, code_batch=cfg.syn_batch, lr=cfg.syn_lr, lr_g=cfg.syn_lr_g, lr_d=cfg.syn_lr_d,
                 code_lr=cfg.syn_lr_g, normalize_codes=cfg.normalize_codes, whiten_codes=cfg.syn_whiten_codes,
                 residual_gc=cfg.syn_residual_gc,
                 ae_steps=cfg.syn_ae_steps, code_steps=cfg.syn_code_steps, gan_steps=cfg.syn_gan_steps,
                 rec_weight=cfg.rec_weight, cycle_weight=cfg.cycle_weight, code_weight=cfg.code_weight,
                 image_grad_to_code=cfg.image_grad_to_code, code_rounds=cfg.code_rounds, code_refit=cfg.code_refit,
                 code_lr_final=cfg.syn_code_lr_final).check()


SYN_MODELS = ("aclgan", "aclganmmd", "gan", "ae")   # longest first


def synthetic_task(cfg_dict: dict, mix: str, r: int, streams, model: str) -> dict:
    """One (mixture, replicate, model) run; model in `SYN_MODELS` (aclganmmd: ACL-GAN trained without the
    adversary, `code_objective="mmd"`, the control of the syn-aclgan claims). Returns mode statistics
    (`synthetic.mode_stats`: VEEGAN's HQ fraction, PacGAN's mode count) of each sampler. `streams` are the
    run's: every model of (mix, r) draws from the child ("syn", mix, r), so they share the data ("data") and
    the initial weights ("init"), and are paired."""
    cfg = SimpleNamespace(**cfg_dict)
    st = streams.child("syn", mix, r)
    data = torch.as_tensor(sample_mixture(mix, cfg.syn_n, st.rng("data")))
    means, sigma = mixture(mix)
    hp = syn_hyper(cfg)
    h, c = cfg.syn_hidden, cfg.syn_code_dim
    out = {"mixture": mix, "replicate": r, "streams": repr(st)}
    if model == "ae":
        with st.torch_global("init"):
            E, Dec = mlp([2, h, h, c]), mlp([c, h, h, 2])
        res = fit_code_model(data, E, Dec, hp, st)
        pts = SimpleNamespace(x=data)
        samples = code_model_samples(res, pts, cfg.syn_eval, fit_baselines(res, pts, cfg, st), st.child("samples"))
        res["hp"] = hp
        null = mmd_null(res, data, st)  # the control: ACL's G_c without the adversary, same initialization
        with torch.no_grad():
            samples["mmd_gc"] = res["models"]["Dec"](null.sample(cfg.syn_eval, st.torch_generator("null-noise"))).cpu()
        for name, x in samples.items():
            key = "acl_ae" if name == "acl" else f"ae_{name}"
            out[key] = mode_stats(x.numpy(), means, sigma) | {"points": x[:500].numpy().tolist()}
        u = uniform_like(mix, data.numpy(), cfg.syn_eval, st.rng("uniform"))  # the structureless control
        out["uniform"] = mode_stats(u, means, sigma) | {"points": u[:500].tolist()}
    else:  # gan, aclgan, or aclganmmd: ACL-GAN without the adversary (G_c matched by MMD in both phases)
        with st.torch_global("init"):
            G, Dx = mlp([c, h, h, 2]), mlp([2, h, h, 1], act="leaky")
            E = mlp([2, h, h, c]) if model != "gan" else None
        if model == "aclganmmd":
            hp = replace(hp, code_objective="mmd")
        res = fit_gan(data, G, Dx, hp, st, E=E)
        x = gan_sample(res["models"], cfg.syn_eval, hp, st.torch_generator("eval-noise"))
        out[model] = mode_stats(x.numpy(), means, sigma) | {"points": x[:500].numpy().tolist()}
    return out


def synthetic_study(cfg, streams) -> list[dict]:
    """Every mixture x replicate x {ae (+ baselines), gan, aclgan}, `syn_replicates` of each, on two
    worker processes. The 2-D models are cheap, and the paired GAN comparison needs more than three
    replicates: with three, one collapsed plain GAN on the grid (4 modes) made the verdict change with the seed."""
    tasks = [dict(cfg_dict=vars(cfg), mix=m, r=r, streams=streams, model=k) for m in cfg.syn_mixtures
             for k in (SYN_MODELS if getattr(cfg, "syn_gan", True) else ("ae",)) for r in range(cfg.syn_replicates)]
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
