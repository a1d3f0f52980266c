"""Benchmark: training-step throughput of ACL-AE and ACL-GAN, and the cost of one FID evaluation.

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539

Measured in one run, on 28x28 single-channel images (Fashion-MNIST shape, random pixels):
* images/s of an autoencoder training step: a plain loop written here (one nn.Sequential, MSE,
  one Adam) vs `papers.acl.train.fit_code_model` (ACL-AE: reconstruction + one D_c and one G_c step);
* images/s of a GAN training step: a plain DCGAN-style loop written here vs `fit_gan` for the plain
  GAN and for ACL-GAN (E, G_c, D_c and the reconstruction term on top);
* one FID evaluation at 10k generated vs 10k reference images: feature extraction plus
  torchmetrics' Frechet distance, against a plain numpy/scipy version (scipy.linalg.sqrtm).

* steps/s of the code-only phase (`train.code_step`): the quick default (whitened codes, residual
  G_c = z + MLP(z)) against the earlier per-dimension standardization with a plain MLP G_c, the
  reference of what the fix of G_c costs per step (its step count is in config.py).

Sides are interleaved (A, B, A, B, ...) and the load average is recorded before and after; every
entry gives the median rate and its range over the repeats, ratios from the medians.

    .venv/bin/python benchmarks/bench_acl.py [--batch 64] [--steps 20] [--threads 1] [--repeat 3]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common.bench import write_benchmark  # noqa: E402
from papers.acl.metrics import frechet_distance  # noqa: E402
from papers.acl.nets import Classifier, ConvDecoder, ConvEncoder, batched  # noqa: E402
from common.seed import Streams  # noqa: E402
from papers.acl.train import Hyper, fit_code_model, fit_gan  # noqa: E402


def interleaved(fns: dict, units_per_call: dict, repeat: int = 3) -> dict:
    """{name: {"median", "min", "max"}} units/s, every fn warmed up once, then called in turn `repeat` times."""
    for fn in fns.values():
        fn()
    times = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(units_per_call[k] / (time.perf_counter() - t0))
    return {k: {"median": float(np.median(v)), "min": float(min(v)), "max": float(max(v))} for k, v in times.items()}


def plain_ae(x, batch, steps):
    torch.manual_seed(0)
    model = nn.Sequential(ConvEncoder(1, 28, 16), ConvDecoder(16, 1, 28))
    opt = torch.optim.Adam(model.parameters(), 1e-3)

    def run():
        for i in range(steps):
            xb = x[(i * batch) % len(x):(i * batch) % len(x) + batch]
            loss = F.mse_loss(model(xb), xb)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return run


def plain_gan(x, batch, steps):
    torch.manual_seed(0)
    G, D = ConvDecoder(16, 1, 28), ConvEncoder(1, 28, 1)
    og, od = torch.optim.Adam(G.parameters(), 2e-4, betas=(0.5, 0.999)), torch.optim.Adam(D.parameters(), 2e-4, betas=(0.5, 0.999))
    ones, zeros = torch.ones(batch, 1), torch.zeros(batch, 1)

    def run():
        for i in range(steps):
            xb = x[(i * batch) % len(x):(i * batch) % len(x) + batch]
            fake = G(torch.randn(batch, 16))
            ld = F.binary_cross_entropy_with_logits(D(xb), ones) + F.binary_cross_entropy_with_logits(D(fake.detach()), zeros)
            od.zero_grad()
            ld.backward()
            od.step()
            lg = F.binary_cross_entropy_with_logits(D(fake), ones)
            og.zero_grad()
            lg.backward()
            og.step()
    return run


def plain_fid(a, b):
    from scipy import linalg

    mu1, mu2 = a.mean(0), b.mean(0)
    s1, s2 = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    covmean = linalg.sqrtm(s1 @ s2)
    return float(((mu1 - mu2) ** 2).sum() + np.trace(s1 + s2 - 2 * covmean.real))


def code_phase(whiten: bool, steps: int):
    """`steps` code-only steps on fixed correlated codes (16-d), quick's batch and MLP sizes."""
    from papers.acl.acl import CodeGAN
    from papers.acl.train import code_step

    gen0 = torch.Generator().manual_seed(0)
    codes = torch.randn(10000, 16, generator=gen0) @ torch.randn(16, 16, generator=gen0) + 3
    hp = Hyper(code_dim=16, z_dim=16, code_batch=128, code_steps=steps, whiten_codes=whiten, residual_gc=whiten)

    def run():
        torch.manual_seed(0)
        acl = CodeGAN(16, 16, 256, 2, residual=hp.residual_gc)
        acl.set_scale(codes, whiten=hp.whiten_codes)
        opts = acl.optimizers(hp.code_lr, hp.code_lr)
        gen = torch.Generator().manual_seed(1)
        for k in range(steps):
            code_step(acl, codes, opts, hp, gen, k)
    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--n-fid", type=int, default=10000)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    b, s = args.batch, args.steps
    x = torch.rand(4096, 1, 28, 28)
    hp = Hyper(code_dim=16, z_dim=16, batch=b, ae_steps=s, code_steps=0, gan_steps=s, log_every=10**9)

    def acl_ae():
        torch.manual_seed(0)
        fit_code_model(x, ConvEncoder(1, 28, 16), ConvDecoder(16, 1, 28), hp, Streams(0).child("bench"))

    def gan(variant):
        def run():
            torch.manual_seed(0)
            E = ConvEncoder(1, 28, 16) if variant == "acl" else None
            fit_gan(x, ConvDecoder(16, 1, 28), ConvEncoder(1, 28, 1), hp, Streams(0).child("bench"), E=E)
        return run

    load_before = os.getloadavg()
    res = {"batch": b, "steps": s, "threads": args.threads, "repeat": args.repeat,
           "reference": {"ae_acl": "ae_plain (one nn.Sequential, MSE, one Adam)",
                         "gan_fit_gan": "gan_plain (a DCGAN-style loop written here)", "gan_acl": "gan_plain",
                         "code_whitened_residual": "code_diag_plain (the code phase before the G_c fix)",
                         "fid torchmetrics": "plain numpy/scipy (scipy.linalg.sqrtm)"}}
    ips = interleaved({"ae_plain": plain_ae(x, b, s), "ae_acl": acl_ae}, {"ae_plain": b * s, "ae_acl": b * s}, args.repeat)
    ips |= interleaved({"gan_plain": plain_gan(x, b, s), "gan_fit_gan": gan("gan"), "gan_acl": gan("acl")},
                       {"gan_plain": b * s, "gan_fit_gan": b * s, "gan_acl": b * s}, args.repeat)
    res["images_per_s"] = ips
    cs = 200
    res["code_steps_per_s"] = interleaved({"code_diag_plain": code_phase(False, cs), "code_whitened_residual": code_phase(True, cs)},
                                          {"code_diag_plain": cs, "code_whitened_residual": cs}, args.repeat)
    med = {k: v["median"] for k, v in (ips | res["code_steps_per_s"]).items()}
    res["ratio_ae_acl_vs_plain"] = med["ae_acl"] / med["ae_plain"]
    res["ratio_gan_vs_plain"] = med["gan_fit_gan"] / med["gan_plain"]
    res["ratio_aclgan_vs_plain"] = med["gan_acl"] / med["gan_plain"]
    res["ratio_code_whitened_residual_vs_diag_plain"] = med["code_whitened_residual"] / med["code_diag_plain"]

    torch.manual_seed(0)
    net = Classifier(1, 28).eval()
    dec = ConvDecoder(16, 1, 28).eval()
    real = torch.rand(args.n_fid, 1, 28, 28)
    real_f = batched(net.features, real).double().numpy()

    def fid_eval(fn):
        def run():
            fake = batched(dec, torch.randn(args.n_fid, 16))
            return fn(real_f, batched(net.features, fake).double().numpy())
        return run

    t = {}
    for name, fn in (("torchmetrics", frechet_distance), ("plain_scipy", plain_fid)):
        run = fid_eval(fn)
        run()
        t0 = time.perf_counter()
        val = run()
        t[name] = {"seconds": time.perf_counter() - t0, "fid": val}
    res["fid_eval_10k"] = t
    res["load_average_before"], res["load_average_after"] = list(load_before), list(os.getloadavg())
    for k, v in med.items():
        print(f"{k:>24}: {v:8.0f} /s  (range {ips.get(k, res['code_steps_per_s'].get(k))['min']:.0f}-"
              f"{ips.get(k, res['code_steps_per_s'].get(k))['max']:.0f})")
    print("FID at", args.n_fid, {k: round(v["seconds"], 2) for k, v in t.items()}, "values agree:",
          abs(t["torchmetrics"]["fid"] - t["plain_scipy"]["fid"]) < 1e-3 * max(1, t["plain_scipy"]["fid"]), "load", res["load_average_after"])
    write_benchmark("acl", res)


if __name__ == "__main__":
    main()
