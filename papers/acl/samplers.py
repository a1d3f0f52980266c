"""The code samplers compared on one trained decoder: ACL's G_c, the baselines fitted to the codes
(N(0, I), a fitted Gaussian, RAE's 10-component GMM) and the control, a G_c of ACL's size trained by MMD
instead of the adversary.

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539 (abstract: ACL turns autoencoders and classifiers into generators;
sampling is Dec(G_c(z)), the reconstruction of papers/acl/README.md "What is reconstructed").
"""
from __future__ import annotations

import numpy as np
import torch

from .acl import CodeGAN
from .baselines import code_samplers, fit_gaussian
from .mmd import fit_mmd_code_generator
from .train import acl_sample, encode_all, train_codes

NULLS = ("mmd_gc",)  # G_c of ACL's size trained without the adversary (`mmd`), the control of the ACL claims


def fit_baselines(out: dict, images, cfg, streams) -> dict:
    """The three code samplers (N(0, I), fitted Gaussian, GMM) fitted once on the codes of the training set
    (RAE's ex-post density, official code `estimate_density_and_sample.py`, "GMM_10"); the GMM's EM starts from
    the stream "gmm-init" of `streams`."""
    codes = train_codes(out, images.x).cpu()
    return code_samplers(codes.numpy(), cfg.gmm_components, int(streams.rng("gmm-init").integers(2**31 - 1)), cfg.gmm_iters)


def code_model_samples(out: dict, images, n: int, samplers: dict, streams, z: torch.Tensor | None = None) -> dict:
    """Samples of ACL (Dec(G_c(z)), the abstract's autoencoder-as-generator) and of the baselines
    (`fit_baselines`) on the same decoder: {name: images}. G_c's noise is the stream "acl-noise" of `streams`;
    every baseline draws from the stream "baseline-noise" (the same draws for each: common random numbers)."""
    models = out["models"]
    gen = streams.torch_generator("acl-noise")
    with torch.no_grad():
        res = {"acl": acl_sample(models, n, gen, z).cpu()}
        for name, sampler in samplers.items():
            c = torch.as_tensor(sampler(n, streams.rng("baseline-noise")), dtype=torch.float32).to(images.x.device)
            res[name] = models["Dec"](c).cpu()
    return res


def mmd_null(res: dict, x: torch.Tensor, streams) -> CodeGAN:
    """The control of a trained ACL model `res` (fit_code_model / fit_gan's output, with its "hp"): a G_c
    of the same size, standardization and schedule fitted by MMD to the same cached codes E(x) of the
    trained encoder (`mmd.fit_mmd_code_generator`), from the same initialization as ACL's G_c: `streams` is the
    training streams of `res` (its "gc-init" stream built ACL's G_c)."""
    return fit_mmd_code_generator(train_codes(res, x), res["hp"], streams)


def gaussian_code_map(encode, x: torch.Tensor, codes: torch.Tensor | None = None):
    """z -> mu + A z with (mu, A A^T) the Gaussian fitted to the codes E(x): the fitted-Gaussian
    baseline as a map of the prior, so its shells of |z| can be scored like G_c's (the control of the
    `prior-regions-*` claims). The columns of A are the principal directions in DESCENDING order of
    variance, so the orthants of (z_1, z_2) split the codes along their two largest-variance directions
    (`eigh` returns them ascending: its first columns would be the directions that barely change an image).
    `codes`: E(x) when already encoded (`train.train_codes`)."""
    codes = encode_all(encode, x) if codes is None else codes
    mu, cov = fit_gaussian(codes.cpu().double().numpy())
    w, v = np.linalg.eigh(cov)
    order = np.argsort(w)[::-1]
    w, v = w[order], v[:, order]
    a = torch.as_tensor(v * np.sqrt(np.clip(w, 0, None)), dtype=torch.float32)
    mu = torch.as_tensor(mu, dtype=torch.float32)
    return lambda z: mu + z @ a.T
