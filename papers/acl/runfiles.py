"""Files a run keeps in its folder: model checkpoints and finished replicates in `<run_dir>/ckpt/`, written
atomically so that a notebook running beside another never reads half a file.

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539
"""
from __future__ import annotations

import io
from contextlib import contextmanager
from pathlib import Path

import torch

from common.io import atomic_write_bytes


def ckpt_path(run_dir, name) -> Path:
    """`<run_dir>/ckpt/<name>.pt`, its folder created."""
    p = Path(run_dir) / "ckpt" / f"{name}.pt"
    p.parent.mkdir(parents=True, exist_ok=True)
    return p


def save_atomic(obj, path: Path) -> None:
    """torch.save through a temporary file: a notebook running beside this one never reads half a file."""
    buf = io.BytesIO()
    torch.save(obj, buf)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, buf.getvalue())


def task_cache(run_dir, seed: int, study: str, r: int) -> Path:
    """Where replicate r of an image study (`image_replicates.cached_image_task`) is kept for a later notebook."""
    return Path(run_dir) / "ckpt" / f"task-{study}-s{seed}-r{r}.pt"


@contextmanager
def run_lock(run_dir, name: str):
    """Hold `<run_dir>/ckpt/<name>.lock` exclusively (`flock` on the file as each caller opens it: it excludes
    the run's other processes, and other threads that take it): what one caller computes for the run's folder under
    it, another waits for and then reads."""
    import fcntl

    path = ckpt_path(run_dir, name).with_suffix(".lock")
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
