"""The single-process reference: the whole model, the same micro-batches in the same order.

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007
(the paper reports matching loss curves; this is the yardstick for ours).

Per step: for each data-parallel replica r (in rank order) the gradients of its M micro-batches
accumulate in order 0..M-1 (loss / M each); replicas are averaged, the global norm is clipped to
`clip`, AdamW steps. This is what the pipeline computes, without any communication.
"""
from __future__ import annotations

import torch

from . import data
from .job import Job
from .model import CONFIGS, Decoder, lm_loss


def reference_run(job: Job, dp: int, steps: int | None = None, threads: int = 1) -> dict:
    """{'losses', 'grad_norms', 'model'} of the single-process run of `job` with `dp` replicas
    (`job.clip` <= 0: no clipping): what the pipeline's losses and parameters must equal (abstract: training
    correctness preserved, loss convergence matching the homogeneous baselines)."""
    cfg = CONFIGS[job.model]
    corpus, _ = data.load_corpus(job.corpus, job.corpus_tokens, seed=0)
    model = Decoder(cfg, seed=job.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=job.lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0)
    params = list(model.parameters())
    losses, norms = [], []
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for step in range(steps or job.steps):
            starts = data.batch_indices(job.seed, step, dp * job.n_micro * job.micro_size, len(corpus), cfg.seq_len)
            grads, loss_sum = None, 0.0
            for slots in data.global_batch_layout(dp, job.n_micro, job.micro_size):
                opt.zero_grad(set_to_none=False)
                replica_loss = torch.zeros((), dtype=torch.float32)
                for sl in slots:
                    x, y = data.micro_batch(corpus, starts[sl], cfg.seq_len)
                    loss = lm_loss(model(x), y) / job.n_micro
                    loss.backward()
                    replica_loss += loss.detach()
                loss_sum += float(replica_loss)
                g = [p.grad.clone() for p in params]
                grads = g if grads is None else [a + b for a, b in zip(grads, g)]
            for p, g in zip(params, grads):
                p.grad.copy_(g / dp)  # data-parallel mean
            norm = float(torch.stack([p.grad.double().pow(2).sum() for p in params]).sum().sqrt())
            if 0 < job.clip < norm:
                for p in params:
                    p.grad.mul_(job.clip / (norm + 1e-6))
            opt.step()
            losses.append(loss_sum / dp)
            norms.append(norm)
    finally:
        torch.set_num_threads(old)
    return {"losses": losses, "grad_norms": norms, "model": model}


def stage_state(model: Decoder, layers: range, first: bool, last: bool) -> dict:
    """The reference's parameters under the names a pipeline stage saves."""
    return model.stage(layers, first, last).state_dict()


def untrained_losses(job: Job, dp: int, steps, threads: int = 1) -> dict:
    """{step: loss} of the initial model, never updated, on the batches of `steps` (the same mean over
    replicas and micro-batches as a training step logs): the null of a model that learned nothing.
    One thread by default, as `reference_run`: the tiny model gains nothing from more, and on a loaded
    machine two spinning threads made this 20x slower."""
    cfg = CONFIGS[job.model]
    corpus, _ = data.load_corpus(job.corpus, job.corpus_tokens, seed=0)
    model = Decoder(cfg, seed=job.seed)
    out = {}
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with torch.no_grad():
            for step in steps:
                starts = data.batch_indices(job.seed, step, dp * job.n_micro * job.micro_size, len(corpus), cfg.seq_len)
                total = 0.0
                for slots in data.global_batch_layout(dp, job.n_micro, job.micro_size):
                    replica = torch.zeros((), dtype=torch.float32)
                    for sl in slots:
                        x, y = data.micro_batch(corpus, starts[sl], cfg.seq_len)
                        replica += lm_loss(model(x), y) / job.n_micro
                    total += float(replica)
                out[step] = total / dp
    finally:
        torch.set_num_threads(old)
    return out
