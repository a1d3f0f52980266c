"""Float pre-training and QAT fine-tuning, with checkpoints, exact resume and DDP.

Paper: "Precision Neural Network Quantization via Learnable Adaptive Modules",
arXiv:2504.17263, https://arxiv.org/abs/2504.17263

Released recipe for QAT: SGD (momentum 0.9, weight decay 1e-4, lr 0.01) on every parameter
(weights, steps, clips and adapters in one group), cosine schedule, starting from the float
checkpoint, activation steps initialised from the first batch. Here that batch is a *training*
batch (the release takes it from the validation loader).

The data order of epoch e is a permutation drawn from the stream (key, e) of the training replicate's
streams (`common.seed.Streams`), so a run resumed from its last epoch checkpoint repeats the uninterrupted run,
and LSQ and ASQ runs of one replicate see the same batches (paired comparison). Under torchrun each rank takes every
world_size-th example of each global batch and the model is wrapped in DistributedDataParallel.
"""
from __future__ import annotations

import math
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from common.errors import UserError

from .convert import init_step_sizes, quantize_model
from .data import Split


def _order(n: int, streams, key: str, epoch: int) -> torch.Tensor:
    """The data order of one epoch: a permutation from the stream (key, epoch) of `streams`."""
    return torch.randperm(n, generator=streams.torch_generator(key, epoch))


def cosine_factor(t: int, steps_per_epoch: int, epochs: int, per: str = "step") -> float:
    """The learning rate of step t over the initial one: (1 + cos(pi u)) / 2, with u the share of the schedule
    done, counted in steps (`per="step"`) or in whole epochs (`per="epoch"`: constant within an epoch, the
    release's `CosineAnnealingLR(T_max=epochs)` stepped after each epoch); u stops at 1."""
    total = max(1, epochs * steps_per_epoch)
    if per == "step":
        return 0.5 * (1 + math.cos(math.pi * min(t, total) / total))
    n_ep = max(1, epochs)
    return 0.5 * (1 + math.cos(math.pi * min(t // steps_per_epoch, n_ep) / n_ep))


def fit(model: nn.Module, train: Split, *, epochs: int, lr: float, weight_decay: float, batch_size: int,
        streams, key: str, momentum: float = 0.9, ckpt: Path | None = None, device="cpu",
        dist=None, desc: str | None = None, stop_epoch: int | None = None, augment: bool = False,
        eval_data: Split | None = None, eval_batch: int = 1000, cosine_per: str = "step") -> dict:
    """Train with SGD + a cosine schedule; returns {"loss": [mean loss per epoch]}. The released QAT
    recipe (official code `default.yaml`, `quant_train.py`: SGD momentum 0.9, cosine; lr and weight decay from
    the profile) and, with the float profile values, the float pre-training.

    `cosine_per="epoch"`: the learning rate of epoch e is lr (1 + cos(pi e / epochs)) / 2 for every step of the
    epoch, the release's `CosineAnnealingLR(T_max=epochs)` stepped once per epoch (the full profile);
    `"step"`: the same curve evaluated at every step (smoke and quick, whose 1-6 epochs a per-epoch schedule
    would leave at a few plateaus).

    `streams` (a `common.seed.Streams`): the data order is its stream (key, epoch), the augmentation its stream
    ("augment", epoch). With `ckpt`, a checkpoint is written after each epoch and an existing one is resumed.
    `stop_epoch` ends this call early (after that many epochs of the schedule), e.g. to split a
    long run into time-limited jobs; the next call with the same `ckpt` carries on.
    `augment`: the training batches are augmented (`Split.train_batches`; the full profile). With `eval_data`,
    the test accuracy after every epoch is kept in the history as "val_acc" (the release reports the best of
    them, `best_acc1`; the claims judge the final model).
    """
    from common.checkpoint import load_checkpoint, save_checkpoint
    from common.progress import progress

    if epochs < 0 or batch_size <= 0 or lr <= 0:
        raise UserError("epochs must be >= 0, batch_size > 0 and lr > 0")
    if cosine_per not in ("step", "epoch"):
        raise UserError(f"cosine_per must be 'step' or 'epoch'; got {cosine_per!r}")
    n = len(train)
    steps_per_epoch = max(1, n // batch_size)                      # drop the last partial batch
    net = model
    world = dist.world_size if dist is not None else 1
    rank = dist.rank if dist is not None else 0
    if world > 1:
        net = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda t: cosine_factor(t, steps_per_epoch, epochs, cosine_per))
    history = {"loss": [], "val_acc": []}
    start_epoch = 0
    if ckpt is not None and Path(ckpt).exists():
        step, extra = load_checkpoint(ckpt, model, opt, sched)
        start_epoch, history = step // steps_per_epoch, extra.get("history", history)
    model.train()
    end = epochs if stop_epoch is None else min(epochs, stop_epoch)
    for epoch in progress(range(start_epoch, end), total=max(end - start_epoch, 0), desc=desc or key):
        order = _order(n, streams, key, epoch)
        running = torch.zeros((), dtype=torch.float64, device=device)   # summed where the loss is: no sync per step
        batches = [order[i * batch_size:(i + 1) * batch_size][rank::world] for i in range(steps_per_epoch)]
        for xb, yb in train.train_batches(batches, streams=streams, epoch=epoch, augment=augment, device=device):
            loss = F.cross_entropy(net(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            running += loss.detach().double()
        history["loss"].append(float(running.cpu() / steps_per_epoch))
        if eval_data is not None:
            history.setdefault("val_acc", []).append(accuracy(model, eval_data, eval_batch, device))
            model.train()
        if ckpt is not None and rank == 0:
            save_checkpoint(ckpt, (epoch + 1) * steps_per_epoch, model, opt, sched, extra={"history": history})
        if dist is not None:
            dist.barrier()
    return history


@torch.no_grad()
def predict(model: nn.Module, data: Split, batch_size: int = 1000, device=None, dtype=None) -> torch.Tensor:
    """Logits for every example of `data` (eval mode), optionally in another dtype (float64).

    Batches go to `device` (None: the device of the model's parameters); the logits come back on the CPU."""
    if device is None:
        p = next(model.parameters(), None)
        device = "cpu" if p is None else p.device
    model.eval()
    out = []
    for xb, _ in data.eval_batches(batch_size):
        xb = xb.to(device) if dtype is None else xb.to(device=device, dtype=dtype)
        out.append(model(xb).cpu())
    return torch.cat(out)


def accuracy(model: nn.Module, data: Split, batch_size: int = 1000, device=None) -> float:
    """Top-1 accuracy in percent."""
    logits = predict(model, data, batch_size, device)
    return float((logits.argmax(1) == data.y).double().mean() * 100)


def make_qat(float_model: nn.Module, train: Split, *, method: str, w_bits: int, a_bits: int, grid: str,
             first_last: str, streams, init_batch: int = 256, device="cpu") -> nn.Module:
    """Convert the float model and initialise activation steps from one training batch (`quantize_model`,
    `init_step_sizes`): the start of QAT in the released recipe (official code `quant_train.py`). The adapters
    and the batch draw from `streams` (the training replicate's)."""
    qmodel = quantize_model(float_model, method, w_bits, a_bits, grid, first_last, streams=streams).to(device)
    idx = _order(len(train), streams, "init-batch", 0)[:init_batch]
    init_step_sizes(qmodel, train.batch(idx)[0].to(device))
    return qmodel
