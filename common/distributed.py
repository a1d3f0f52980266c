"""torch.distributed from torchrun's environment, and a no-op in a single process.

`init_distributed()` reads RANK / WORLD_SIZE / LOCAL_RANK (set by `torchrun`), picks nccl on CUDA
and ROCm (RCCL answers to "nccl") and gloo on CPU, and binds each rank to its local GPU.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from .errors import UserError


@dataclass
class DistContext:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: object = None
    backend: str | None = None

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    def barrier(self) -> None:
        if self.enabled:
            import torch.distributed as dist

            dist.barrier()

    def all_reduce_mean(self, tensor):
        if self.enabled:
            import torch.distributed as dist

            dist.all_reduce(tensor)
            tensor /= self.world_size
        return tensor

    def log(self, msg: str) -> None:
        """Print on rank 0 only, prefixed with the rank when distributed."""
        if self.is_main:
            print(f"[rank 0/{self.world_size}] {msg}" if self.enabled else msg, file=sys.stderr, flush=True)

    def shutdown(self) -> None:
        """Barrier, then destroy the process group; safe to call twice or when never initialised."""
        if self.enabled:
            import torch.distributed as dist

            if dist.is_initialized():
                dist.barrier()
                dist.destroy_process_group()


def init_distributed(device: str | None = None) -> DistContext:
    """The process group of a `torchrun` launch (a no-op context outside one).

    The device follows `device`, else `$REPRO_DEVICE`, else auto (`common.device.select_device`): on a
    GPU each rank takes `cuda:LOCAL_RANK` with NCCL, and a launch with more ranks per node than GPUs is a
    `UserError` naming the fix; on the CPU every rank uses gloo."""
    from .device import select_device

    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return DistContext(device=select_device(device).device)
    import torch
    import torch.distributed as dist

    rank, local = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    kind = select_device(device).backend
    if kind in ("cuda", "rocm"):
        n = torch.cuda.device_count()
        if local >= n:
            raise UserError(f"rank {rank} has LOCAL_RANK {local} but this node has {n} GPU{'s' * (n != 1)}; "
                            f"launch with `torchrun --nproc-per-node {max(n, 1)}` or pass --device cpu")
        torch.cuda.set_device(local)
        dev, backend = torch.device("cuda", local), "nccl"
    else:
        dev, backend = torch.device("cpu"), "gloo"
    if not dist.is_initialized():
        dist.init_process_group(backend=backend)
    return DistContext(rank, world, local, dev, backend)
