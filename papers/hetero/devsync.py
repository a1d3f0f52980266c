"""Device-agnostic synchronisation for timers: GPU work is queued, so a timer read without waiting
for the device measures the queueing, not the work.

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007

`synchronize(device)` waits for the work queued on `device` (`torch.<type>.synchronize`: cuda, which
is also ROCm, xpu, mps, ...; a no-op on the CPU, whose ops run eagerly); `now(device)` is
`time.perf_counter()` read after that wait. Every timer of the pipeline passes (`schedule.run_step`),
the ping-pong (`p2p`) and the timed windows (`modes`, `clusterbench`) reads `now(device)`.
"""
from __future__ import annotations

import time

import torch


def synchronize(device) -> None:
    """Wait until the work queued on `device` (a torch.device, or anything with `.type`) has finished."""
    kind = getattr(device, "type", None) or str(device).split(":")[0]
    if kind == "cpu":
        return
    fn = getattr(getattr(torch, kind, None), "synchronize", None)
    if fn is None:
        raise RuntimeError(f"cannot synchronize device type {kind!r}: torch.{kind}.synchronize does not exist")
    try:
        fn(device)
    except TypeError:  # e.g. torch.mps.synchronize() takes no device
        fn()


def now(device) -> float:
    """`time.perf_counter()` after the work queued on `device` has finished."""
    synchronize(device)
    return time.perf_counter()
