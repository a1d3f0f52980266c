"""Classifier two-sample test (C2ST) on codes: how well a small classifier tells generated codes from
held-out encoder codes E(x).

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539 -- ACL's premise is that G_c(z) learns the distribution of E(x).
Test (Lopez-Paz & Oquab, ICLR 2017): label held-out codes 1 and generated codes 0, train a classifier
on half of each, report its accuracy on the other half. 0.5: indistinguishable; 1.0: separable.
Both sets are standardized with the mean / sd of the real training half, so the classifier's
optimization does not depend on the codes' scale.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from .nets import adam, mlp


def c2st_accuracy(real, fake, streams, hidden: int = 64, steps: int = 300, lr: float = 3e-3) -> float:
    """Held-out accuracy of an MLP (2 x `hidden`, ReLU) trained full-batch with Adam for `steps` to tell
    `real` (label 1) from `fake` (label 0). Uses min(len(real), len(fake)) of each; half train, half test.
    `streams` (a `common.seed.Streams`): the subsets ("split") and the MLP's initial weights ("init")."""
    real = torch.as_tensor(np.asarray(real.detach().cpu() if torch.is_tensor(real) else real), dtype=torch.float32)
    fake = torch.as_tensor(np.asarray(fake.detach().cpu() if torch.is_tensor(fake) else fake), dtype=torch.float32)
    n = min(len(real), len(fake))
    if n < 4 or real.shape[1:] != fake.shape[1:]:
        raise ValueError(f"need two sets of >= 4 codes of the same width, got {tuple(real.shape)} and {tuple(fake.shape)}")
    gen = streams.torch_generator("split")
    real = real[torch.randperm(len(real), generator=gen)[:n]]
    fake = fake[torch.randperm(len(fake), generator=gen)[:n]]
    h = n // 2
    mu, sd = real[:h].mean(0), real[:h].std(0).clamp_min(1e-6)
    xtr = (torch.cat([real[:h], fake[:h]]) - mu) / sd
    xte = (torch.cat([real[h:], fake[h:]]) - mu) / sd
    ytr = torch.cat([torch.ones(h), torch.zeros(h)])
    yte = torch.cat([torch.ones(n - h), torch.zeros(n - h)])
    with streams.torch_global("init"):  # torch's global generators restored after
        net = mlp([real.shape[1], hidden, hidden, 1])
    opt = adam(net.parameters(), lr)
    with torch.enable_grad():  # callable under no_grad
        for _ in range(steps):
            loss = F.binary_cross_entropy_with_logits(net(xtr).squeeze(1), ytr)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    with torch.no_grad():
        return float(((net(xte).squeeze(1) > 0).float() == yte).float().mean())
