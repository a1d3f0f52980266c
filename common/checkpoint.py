"""Checkpoints that resume a loop exactly.

A checkpoint holds the step, the model/optimizer/scheduler state and every RNG state (python,
numpy's global state, torch CPU and accelerator), so a run resumed from step k produces the same
numbers as one that never stopped. Writes are atomic.
"""
from __future__ import annotations

import io
import random
from pathlib import Path

import numpy as np

from .io import atomic_write_bytes


def rng_state() -> dict:
    import torch

    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    import torch

    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if state.get("cuda") and torch.cuda.is_available():
        # a checkpoint written with more GPUs than this machine has (8 on the cluster, 1 here) restores the
        # generators of the devices present, in order; set_rng_state_all would fail on the missing ones
        for index, cuda_state in enumerate(state["cuda"][:torch.cuda.device_count()]):
            torch.cuda.set_rng_state(cuda_state, index)


def save_checkpoint(path, step: int, model=None, optimizer=None, scheduler=None, extra: dict | None = None) -> Path:
    import torch

    payload = {"step": int(step), "rng": rng_state(), "extra": extra or {}}
    for key, obj in (("model", model), ("optimizer", optimizer), ("scheduler", scheduler)):
        if obj is not None:
            payload[key] = obj.state_dict()
    buf = io.BytesIO()
    torch.save(payload, buf)
    return atomic_write_bytes(path, buf.getvalue())


def load_checkpoint(path, model=None, optimizer=None, scheduler=None, map_location="cpu") -> tuple[int, dict]:
    """Restore states in place; returns (step, extra). RNG states are restored too."""
    import torch

    payload = torch.load(path, map_location=map_location, weights_only=False)
    for key, obj in (("model", model), ("optimizer", optimizer), ("scheduler", scheduler)):
        if obj is not None and key in payload:
            obj.load_state_dict(payload[key])
    set_rng_state(payload["rng"])
    return payload["step"], payload["extra"]
