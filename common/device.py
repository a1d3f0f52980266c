"""Device selection for CUDA, ROCm, Intel XPU, Apple MPS and CPU.

Order: explicit request > `$REPRO_DEVICE` > cuda (ROCm builds also answer to "cuda"; reported as
backend `rocm` via `torch.version.hip`) > xpu > mps > cpu. Nothing touches CUDA at import time.
Asking for a device that is absent raises a one-line `UserError`.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass

from .errors import UserError

KNOWN = ("auto", "cpu", "cuda", "rocm", "xpu", "mps")


@dataclass(frozen=True)
class DeviceInfo:
    device: object  # torch.device
    backend: str  # cuda | rocm | xpu | mps | cpu
    name: str
    dtype: str  # preferred compute dtype for training: bfloat16 where fast, else float32
    threads: int

    def record(self) -> dict:
        rec = asdict(self)
        rec["device"] = str(self.device)
        return rec


def _available(kind: str) -> bool:
    import torch

    if kind in ("cuda", "rocm"):
        if not torch.cuda.is_available():
            return False
        return (torch.version.hip is not None) == (kind == "rocm")
    if kind == "xpu":
        return hasattr(torch, "xpu") and torch.xpu.is_available()
    if kind == "mps":
        return torch.backends.mps.is_available()
    return kind == "cpu"


def _info(kind: str, index: int | None) -> DeviceInfo:
    import torch

    threads = torch.get_num_threads()
    if kind in ("cuda", "rocm"):
        idx = index or 0
        if idx >= torch.cuda.device_count():
            raise UserError(f"device cuda:{idx} does not exist ({torch.cuda.device_count()} visible); pick a smaller index")
        dev = torch.device("cuda", idx)
        bf16 = torch.cuda.is_bf16_supported()
        return DeviceInfo(dev, kind, torch.cuda.get_device_name(idx), "bfloat16" if bf16 else "float32", threads)
    if kind == "xpu":
        dev = torch.device("xpu", index or 0)
        return DeviceInfo(dev, "xpu", torch.xpu.get_device_name(index or 0), "bfloat16", threads)
    if kind == "mps":
        return DeviceInfo(torch.device("mps"), "mps", "Apple MPS", "float32", threads)
    import platform

    return DeviceInfo(torch.device("cpu"), "cpu", platform.processor() or platform.machine(), "float32", threads)


def select_device(requested: str | None = None) -> DeviceInfo:
    """Resolve a device request ("auto", "cpu", "cuda", "cuda:1", "rocm", "xpu", "mps")."""
    req = (requested or os.environ.get("REPRO_DEVICE") or "auto").strip().lower()
    kind, _, idx = req.partition(":")
    if kind not in KNOWN or (idx and not idx.isdigit()):
        raise UserError(f"unknown device {req!r}; choose one of {', '.join(KNOWN)} (optionally with :<index>)")
    index = int(idx) if idx else None
    if kind == "auto":
        for cand in ("cuda", "rocm", "xpu", "mps"):
            if _available(cand):
                return _info(cand, None)
        return _info("cpu", None)
    if kind == "cuda" and _available("rocm"):  # ROCm builds use the cuda device string
        kind = "rocm"
    if not _available(kind):
        raise UserError(
            f"device {req!r} is not available on this machine; use --device cpu (or auto), "
            "or install the matching torch build (README: GPU installs)"
        )
    return _info(kind, index)
