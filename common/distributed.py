"""torch.distributed from torchrun's environment, and a no-op in a single process.

`init_distributed()` reads RANK / WORLD_SIZE / LOCAL_RANK / LOCAL_WORLD_SIZE (set by `torchrun`), picks
nccl on CUDA and ROCm (RCCL answers to "nccl"), xccl on an Intel XPU and gloo on CPU, and binds each rank
to its local GPU; a launch it cannot place is one line naming the fix (`UserError`).
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


def _env_int(name: str, required_for: str | None = None) -> int | None:
    """An integer launcher variable (None when unset); a value that is no integer >= 0 is a UserError, and
    so is a missing one that `required_for` needs."""
    text = os.environ.get(name, "").strip()
    if not text:
        if required_for:
            raise UserError(f"{name} is not set but {required_for}; launch with `torchrun --nproc-per-node N ...` "
                            f"(it sets RANK, LOCAL_RANK and WORLD_SIZE), or unset WORLD_SIZE for one process")
        return None
    if not text.isdigit():
        raise UserError(f"{name}={text!r} is not an integer >= 0; launch with `torchrun`, which sets it")
    return int(text)


def _request(device: str | None) -> tuple[str, int | None]:
    """The requested device kind and its explicit index (None: none given), as `select_device` reads it."""
    req = (device or os.environ.get("REPRO_DEVICE") or "auto").strip().lower()
    kind, _, idx = req.partition(":")
    return kind, int(idx) if idx.isdigit() else None


def _local_rank(rank: int, for_gpu: bool) -> int:
    """LOCAL_RANK, else RANK % LOCAL_WORLD_SIZE; on a GPU neither set is a UserError (every rank would take
    GPU 0), on the CPU the rank stands in (it names no device there)."""
    local = _env_int("LOCAL_RANK")
    if local is not None:
        return local
    per_node = _env_int("LOCAL_WORLD_SIZE")
    if per_node:
        return rank % per_node
    if for_gpu:
        raise UserError(f"rank {rank} has no LOCAL_RANK (nor LOCAL_WORLD_SIZE), so it cannot tell which GPU is its "
                        "own; launch with `torchrun --nproc-per-node N ...`, or set LOCAL_RANK for each rank")
    return rank


def _gpu_index(kind: str, module, rank: int, local: int, explicit: int | None) -> int:
    """This rank's GPU among those it sees: an explicit `cuda:N` as asked; one GPU made visible to this rank
    alone (a per-rank CUDA_VISIBLE_DEVICES) is index 0; else LOCAL_RANK, with the node's ranks
    (LOCAL_WORLD_SIZE) and this rank's LOCAL_RANK checked against the GPUs it sees."""
    n = module.device_count()
    if explicit is not None:
        if explicit >= n:
            raise UserError(f"rank {rank} asks for {kind}:{explicit} but sees {n} GPU{'s' * (n != 1)}; "
                            f"pass --device {kind} (each rank takes {kind}:LOCAL_RANK) or a smaller index")
        return explicit
    visible = os.environ.get("CUDA_VISIBLE_DEVICES" if kind != "xpu" else "ZE_AFFINITY_MASK", "").strip()
    if n == 1 and visible and "," not in visible:
        return 0                                        # the launcher gave this rank a GPU of its own
    per_node = _env_int("LOCAL_WORLD_SIZE")
    need = max(local + 1, per_node or 0)
    if need > n:
        who = (f"{per_node} ranks on this node (LOCAL_WORLD_SIZE) need one GPU each" if per_node and per_node > local
               else f"rank {rank} has LOCAL_RANK {local}")
        raise UserError(f"{who} but this node has {n} GPU{'s' * (n != 1)}; "
                        f"launch with `torchrun --nproc-per-node {max(n, 1)}` or pass --device cpu")
    return local


def init_distributed(device: str | None = None) -> DistContext:
    """The process group of a `torchrun` launch (a no-op context outside one).

    The device follows `device`, else `$REPRO_DEVICE`, else auto (`common.device.select_device`). On a GPU
    each rank takes `cuda:LOCAL_RANK` (LOCAL_RANK, else RANK % LOCAL_WORLD_SIZE; an explicit `cuda:N` as
    asked; index 0 where the launcher made one GPU visible to the rank) with NCCL, its device passed as
    `device_id`; a launch with more ranks per node than GPUs, or without LOCAL_RANK, is a `UserError` naming
    the fix. An XPU takes XCCL, never the CPU in silence; on the CPU every rank uses gloo."""
    from .device import select_device

    world = _env_int("WORLD_SIZE") or 1
    if world <= 1:
        return DistContext(device=select_device(device).device)
    rank = _env_int("RANK", required_for=f"WORLD_SIZE is {world}")
    if rank >= world:
        raise UserError(f"RANK {rank} is not below WORLD_SIZE {world}; launch with `torchrun`, which sets both")
    import torch
    import torch.distributed as dist

    kind, explicit = _request(device)
    chosen = select_device(device).backend
    init_kw: dict = {}
    if chosen in ("cuda", "rocm"):
        local = _local_rank(rank, for_gpu=True)
        idx = _gpu_index("cuda", torch.cuda, rank, local, explicit)
        torch.cuda.set_device(idx)
        dev, backend = torch.device("cuda", idx), "nccl"
        init_kw["device_id"] = dev                      # binds the communicator to this GPU at once
    elif chosen == "xpu":
        if not (hasattr(dist, "is_xccl_available") and dist.is_xccl_available()):
            if kind == "xpu":
                raise UserError("this torch has no XCCL backend for distributed runs on an XPU; install a torch "
                                "build with XPU distributed support, or pass --device cpu (gloo)")
            raise UserError("the XPU found here has no distributed backend in this torch (XCCL); "
                            "pass --device cpu to run the ranks on the CPU with gloo")
        local = _local_rank(rank, for_gpu=True)
        idx = _gpu_index("xpu", torch.xpu, rank, local, explicit)
        torch.xpu.set_device(idx)
        dev, backend = torch.device("xpu", idx), "xccl"
    elif chosen == "mps":
        raise UserError("Apple MPS has no distributed backend; pass --device cpu to run the ranks with gloo")
    else:
        local = _local_rank(rank, for_gpu=False)
        dev, backend = torch.device("cpu"), "gloo"
    if not dist.is_initialized():
        dist.init_process_group(backend=backend, **init_kw)
    return DistContext(rank, world, local, dev, backend)
