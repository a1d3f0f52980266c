"""GPipe and 1F1B pipeline schedules over M micro-batches with explicit isend/irecv.

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007
(pipeline parallelism is where the vendors meet). `batch_isend_irecv` is avoided: it can hang on
gloo. Sends are asynchronous and waited at the end of the step.

Both schedules run the backward passes in micro-batch order 0..M-1, so gradients accumulate in
the same order as in `reference.py` and the two schedules give bitwise-equal gradients. Receives are posted at the start of the step
into one buffer per micro-batch and direction, and waited when needed.

Emulated device speed (`pace=(forward_s, backward_s)`): each forward (backward) pass of a micro-batch
is padded with a sleep to at least `forward_s` (`backward_s`), the compute time of the emulated
device (see `clusterbench.stage_pace`); `timings` collects each pass's duration, a measurement.
"""
from __future__ import annotations

import time

import torch

from .model import lm_loss

SCHEDULES = ("gpipe", "1f1b")
FWD, BWD = 0, 1


def order(schedule: str, stage: int, n_stages: int, n_micro: int) -> list[tuple[str, int]]:
    """The sequence of ('F', m) / ('B', m) a stage executes. The paper's schedule is not public (its
    heterogeneity is in pipeline parallelism only, third-party summary); these are GPipe and the
    non-interleaved 1F1B of Megatron-LM (`megatron/core/pipeline_parallel/schedules.py`,
    `forward_backward_pipelining_without_interleaving`): S - s - 1 warm-up forwards, then one forward
    and one backward in turn."""
    if schedule == "gpipe":
        return [("F", m) for m in range(n_micro)] + [("B", m) for m in range(n_micro)]
    if schedule != "1f1b":
        raise ValueError(schedule)
    warm = min(n_stages - stage - 1, n_micro)  # forwards in flight before the first backward
    ops = [("F", m) for m in range(warm)]
    f, b = warm, 0
    while b < n_micro:
        if f < n_micro:
            ops.append(("F", f))
            f += 1
        ops.append(("B", b))
        b += 1
    return ops


def run_step(stage_mod, schedule: str, s: int, n_stages: int, n_micro: int, inputs, targets, act_shape, prev_link, next_link,
             dtype=torch.float32, device=None, pace=None, timings=None):
    """One step's forward and backward passes on stage `s`; returns this stage's loss sum (last stage)
    as a float tensor, else zero. Gradients accumulate into the stage's parameters. `pace` and
    `timings` (a dict 'F'/'B' -> list of seconds): see the module doc."""
    first, last = s == 0, s == n_stages - 1
    xs, ys, losses, pending = {}, {}, {}, []
    total = torch.zeros((), dtype=torch.float32, device=device)
    # every receive of the step is posted up front (distinct tags), so posting is off the critical path
    fwd_in = {} if first else {m: torch.empty(act_shape, dtype=dtype, device=device) for m in range(n_micro)}
    bwd_in = {} if last else {m: torch.empty(act_shape, dtype=dtype, device=device) for m in range(n_micro)}
    fwd_h = {m: prev_link.recv(buf, 2 * m + FWD) for m, buf in fwd_in.items()}
    bwd_h = {m: next_link.recv(buf, 2 * m + BWD) for m, buf in bwd_in.items()}
    for op, m in order(schedule, s, n_stages, n_micro):
        if op == "F":
            if first:
                x = inputs[m]
            else:
                fwd_h.pop(m).wait()
                x = fwd_in.pop(m).requires_grad_(True)
            t0 = time.perf_counter()
            y = stage_mod(x)
            xs[m] = x
            if last:
                losses[m] = lm_loss(y, targets[m]) / n_micro  # mean over micro-batches
                total += losses[m].detach()
            _pad(t0, pace, timings, "F")
            if not last:
                ys[m] = y
                pending.append(next_link.send(y.detach(), 2 * m + FWD))
        else:
            if last:
                t0 = time.perf_counter()
                losses.pop(m).backward()
            else:
                bwd_h.pop(m).wait()
                t0 = time.perf_counter()
                ys.pop(m).backward(bwd_in.pop(m))
            _pad(t0, pace, timings, "B")
            x = xs.pop(m)
            if not first:
                pending.append(prev_link.send(x.grad, 2 * m + BWD))
    for h in pending:
        h.wait()
    return total


def _pad(t0: float, pace, timings, op: str) -> None:
    """Sleep until the pass begun at `t0` has lasted its paced time; record its duration."""
    if pace is not None:
        left = pace[0 if op == "F" else 1] - (time.perf_counter() - t0)
        if left > 0:
            time.sleep(left)
    if timings is not None:
        timings.setdefault(op, []).append(time.perf_counter() - t0)
