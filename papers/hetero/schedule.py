"""GPipe and 1F1B pipeline schedules over M micro-batches with explicit isend/irecv.

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007
(pipeline parallelism is where the vendors meet). `batch_isend_irecv` is avoided: it can hang on
gloo. Sends are asynchronous and waited at the end of the step.

Both schedules run the backward passes in micro-batch order 0..M-1, so gradients accumulate in
the same order as in `reference.py` and the two schedules give bitwise-equal gradients.

Posting order (NCCL-safe): NCCL matches point-to-point operations by their order on a communicator,
not by tag, and each posted operation occupies the communicator's stream until its peer posts the
matching one; posting every receive of a step before the first send (as this module did before) leaves
both neighbours waiting on a receive: a deadlock on GPUs. Each receive is therefore posted just before
the pass that needs it, at the communication point after the previous pass, and at each such point the
send and the receive are ordered by stage parity, as Megatron-LM's `_p2p_ops` (`POST_ORDER`): even
stages send to the next stage, receive from the previous, send to the previous, receive from the next;
odd stages receive from the previous, send to the next, receive from the next, send to the previous. `tests/hetero/test_hetero_ordering.py` runs every schedule's posting trace
through a model of NCCL's matching for 2-4 stages and 1-8 micro-batches. Gloo and UCC match by tag, so
the order changes nothing there (the losses stay bitwise those of the reference).

Emulated device speed (`pace=(forward_s, backward_s)`): each forward (backward) pass of a micro-batch
is padded with a sleep to at least `forward_s` (`backward_s`), the compute time of the emulated
device (see `clusterbench.stage_pace`); `timings` collects each pass's duration, a measurement, read
after the device's queued work has finished (`devsync.now`).
"""
from __future__ import annotations

import time

import torch

from .devsync import now
from .model import lm_loss

SCHEDULES = ("gpipe", "1f1b")
FWD, BWD = 0, 1
# the order of a communication point's operations on even and odd stages (Megatron-LM's `_p2p_ops`)
POST_ORDER = (("send_next", "recv_prev", "send_prev", "recv_next"), ("recv_prev", "send_next", "recv_next", "send_prev"))


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
    `timings` (a dict 'F'/'B' -> list of seconds): see the module doc; receives and sends are posted
    in the NCCL-safe order of the module doc."""
    first, last = s == 0, s == n_stages - 1
    ops = order(schedule, s, n_stages, n_micro)
    xs, ys, losses, pending, posted = {}, {}, {}, [], {}
    total = torch.zeros((), dtype=torch.float32, device=device)
    timed = pace is not None or timings is not None

    def post_recv(op, m):
        """Post the receive the pass (op, m) needs, if any: the activation from the previous stage for a
        forward, the gradient from the next stage for a backward."""
        if (op == "F" and first) or (op == "B" and last):
            return
        buf = torch.empty(act_shape, dtype=dtype, device=device)
        link, tag = (prev_link, 2 * m + FWD) if op == "F" else (next_link, 2 * m + BWD)
        posted[op, m] = (link.recv(buf, tag), buf)

    def received(op, m):
        h, buf = posted.pop((op, m))
        h.wait()
        return buf

    post_recv(*ops[0])
    for i, (op, m) in enumerate(ops):
        if op == "F":
            x = inputs[m] if first else received(op, m).requires_grad_(True)
            t0 = now(device) if timed else 0.0
            y = stage_mod(x)
            xs[m] = x
            if last:
                losses[m] = lm_loss(y, targets[m]) / n_micro  # mean over micro-batches
                total += losses[m].detach()
            _pad(t0, pace, timings, "F", device)
            send = None if last else (next_link, y.detach(), 2 * m + FWD)
            if not last:
                ys[m] = y
        else:
            grad = None if last else received(op, m)
            t0 = now(device) if timed else 0.0
            if last:
                losses.pop(m).backward()
            else:
                ys.pop(m).backward(grad)
            _pad(t0, pace, timings, "B", device)
            x = xs.pop(m)
            send = None if first else (prev_link, x.grad, 2 * m + BWD)
        nxt = ops[i + 1] if i + 1 < len(ops) else None
        todo = []  # this communication point: the pass's send and the next pass's receive, in parity order
        if send is not None:
            todo.append(("send_next" if send[0] is next_link else "send_prev",
                         lambda send=send: pending.append(send[0].send(send[1], send[2]))))
        if nxt is not None and not ((nxt[0] == "F" and first) or (nxt[0] == "B" and last)):
            todo.append(("recv_prev" if nxt[0] == "F" else "recv_next", lambda: post_recv(*nxt)))
        rank_of = POST_ORDER[s % 2]
        for _, post in sorted(todo, key=lambda t: rank_of.index(t[0])):
            post()
    for h in pending:
        h.wait()
    return total


def _pad(t0: float, pace, timings, op: str, device=None) -> None:
    """Sleep until the pass begun at `t0` has lasted its paced time; record its duration (read after the
    device's queued work has finished)."""
    if pace is None and timings is None:
        return
    t = now(device)
    if pace is not None:
        left = pace[0 if op == "F" else 1] - (t - t0)
        if left > 0:
            time.sleep(left)
    if timings is not None:
        timings.setdefault(op, []).append(time.perf_counter() - t0)
