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

    .venv/bin/python benchmarks/bench_acl.py [--batch 64] [--steps 20] [--threads 1]
"""
from __future__ import annotations

import argparse
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
from papers.acl.train import Hyper, fit_code_model, fit_gan  # noqa: E402


def rate(fn, images_per_call: int, repeat: int = 2) -> float:
    """Best images/s over `repeat` timed calls after one warm-up call."""
    fn()
    best = 0.0
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = max(best, images_per_call / (time.perf_counter() - t0))
    return best


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--n-fid", type=int, default=10000)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    b, s = args.batch, args.steps
    x = torch.rand(4096, 1, 28, 28)
    hp = Hyper(code_dim=16, z_dim=16, batch=b, ae_steps=s, code_steps=0, gan_steps=s, log_every=10**9)

    def acl_ae():
        torch.manual_seed(0)
        fit_code_model(x, ConvEncoder(1, 28, 16), ConvDecoder(16, 1, 28), hp, seed=0)

    def gan(variant):
        def run():
            torch.manual_seed(0)
            E = ConvEncoder(1, 28, 16) if variant == "acl" else None
            fit_gan(x, ConvDecoder(16, 1, 28), ConvEncoder(1, 28, 1), hp, seed=0, E=E)
        return run

    res = {"batch": b, "steps": s, "threads": args.threads, "images_per_s": {}}
    ips = res["images_per_s"]
    ips["ae_plain"] = rate(plain_ae(x, b, s), b * s)
    ips["ae_acl"] = rate(acl_ae, b * s)
    ips["gan_plain"] = rate(plain_gan(x, b, s), b * s)
    ips["gan_fit_gan"] = rate(gan("gan"), b * s)
    ips["gan_acl"] = rate(gan("acl"), b * s)
    res["ratio_ae_acl_vs_plain"] = ips["ae_acl"] / ips["ae_plain"]
    res["ratio_gan_vs_plain"] = ips["gan_fit_gan"] / ips["gan_plain"]
    res["ratio_aclgan_vs_plain"] = ips["gan_acl"] / ips["gan_plain"]

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
    for k, v in ips.items():
        print(f"{k:>14}: {v:8.0f} images/s")
    print("FID at", args.n_fid, {k: round(v["seconds"], 2) for k, v in t.items()}, "values agree:",
          abs(t["torchmetrics"]["fid"] - t["plain_scipy"]["fid"]) < 1e-3 * max(1, t["plain_scipy"]["fid"]))
    write_benchmark("acl", res)


if __name__ == "__main__":
    main()
