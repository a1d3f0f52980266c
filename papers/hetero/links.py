"""Point-to-point links at a pipeline boundary, behind one interface.

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007
(CPU-Forwarding with multi-NIC transfer; Device-Direct with a CPU-offloading P2P mechanism; the
mechanics below are our reconstruction, see README).

* `DirectLink`: isend/irecv of the tensor itself on the boundary's pp group (same vendor, or the
  emulated homogeneous baseline on CPU).
* `CpuForwardLink`: copy into a host staging buffer (pinned on GPUs), split the flat buffer into
  k chunks sent on k gloo groups (one per NIC on a cluster), receive into views of one flat host
  buffer (no reassembly copy), copy back to the device.
* `DeviceDirectLink`: a proxy thread posts the transfer on the tensor's own memory (zero staging
  copies) on the proxy group; the caller waits on the completion. On a cluster the proxy group is
  a registered backend (UCC) doing GPU-memory RDMA.

Every link counts the bytes it stages (`staged_bytes`), the payload it moves and its transfers.
Wire tags are deterministic: tag = (2 * micro_batch + direction) * k + chunk.
"""
from __future__ import annotations

import queue
import threading
from concurrent.futures import Future

import torch
import torch.distributed as dist

from common.errors import UserError

from .specs import name_count

LINKS = ("direct", "cpu_forward", "device_direct")


def parse_link(spec: str) -> tuple[str, int]:
    """'direct', 'device_direct', 'cpu_forward' (k=1) or 'cpu_forward:3' -> (name, k)."""
    name, k = name_count(spec, LINKS, "link", "cpu_forward:3")
    if name != "cpu_forward" and k != 1:
        raise UserError(f"link {spec!r}: only cpu_forward takes k >= 1 channels")
    return name, k


class Handle:
    """Completion of one transfer; `wait()` returns once the data is in place."""

    def __init__(self, works, finalize=None, keep=None, future: Future | None = None, timeout: float | None = None):
        self.works, self.finalize, self.keep, self.future, self.timeout = works, finalize, keep, future, timeout

    def wait(self):
        if self.future is not None:  # posted by a proxy thread
            self.works = [self.future.result(timeout=self.timeout)]
        for w in self.works:
            w.wait()
        if self.finalize is not None:
            self.finalize()
            self.finalize = None
        self.keep = None


class Link:
    name = "link"

    def __init__(self, peer: int, k: int = 1):
        self.peer, self.k = peer, k
        self.staged_bytes = 0
        self.payload_sent = 0
        self.payload_received = 0
        self.packed_bytes = 0  # layout copies of non-contiguous tensors (not staging)
        self.transfers = 0

    def wire_tag(self, tag: int, chunk: int = 0) -> int:
        return tag * self.k + chunk  # (2 mb + dir) * k + chunk

    def counters(self) -> dict:
        return {"link": self.label, "staged_bytes": self.staged_bytes, "payload_sent": self.payload_sent,
                "payload_received": self.payload_received, "packed_bytes": self.packed_bytes, "transfers": self.transfers}

    @property
    def label(self) -> str:
        return f"{self.name}:{self.k}" if self.name == "cpu_forward" else self.name

    def _contiguous(self, t):
        if t.is_contiguous():
            return t
        self.packed_bytes += t.numel() * t.element_size()
        return t.contiguous()

    def send(self, t: torch.Tensor, tag: int) -> Handle:
        raise NotImplementedError

    def recv(self, out: torch.Tensor, tag: int) -> Handle:
        raise NotImplementedError

    def close(self):
        pass


class DirectLink(Link):
    name = "direct"

    def __init__(self, group, peer: int):
        super().__init__(peer)
        self.group = group

    def send(self, t, tag):
        src = self._contiguous(t.detach())
        self.payload_sent += src.numel() * src.element_size()
        self.transfers += 1
        return Handle([dist.isend(src, self.peer, group=self.group, tag=self.wire_tag(tag))], keep=src)

    def recv(self, out, tag):
        buf = out if out.is_contiguous() else torch.empty(out.shape, dtype=out.dtype, device=out.device)
        self.payload_received += buf.numel() * buf.element_size()
        work = dist.irecv(buf, self.peer, group=self.group, tag=self.wire_tag(tag))
        return Handle([work], finalize=None if buf is out else (lambda: out.copy_(buf)))


class CpuForwardLink(Link):
    name = "cpu_forward"

    def __init__(self, groups: list, peer: int, pin: bool = False):
        super().__init__(peer, k=len(groups))
        self.groups, self.pin = groups, pin
        self._buffers: dict = {}

    def _buffer(self, key, numel, dtype):
        buf = self._buffers.get((key, numel, dtype))
        if buf is None:  # preallocated once per (slot, size); pinned host memory on GPUs
            buf = torch.empty(numel, dtype=dtype, device="cpu", pin_memory=self.pin)
            self._buffers[(key, numel, dtype)] = buf
        return buf

    def _chunks(self, flat):
        return [c for c in flat.tensor_split(self.k)]  # sizes differ by at most one element

    def send(self, t, tag):
        t = t.detach()
        flat = self._buffer(("send", tag), t.numel(), t.dtype)
        flat.view(t.shape).copy_(t)  # device -> host staging copy (handles non-contiguous t)
        nbytes = t.numel() * t.element_size()
        self.staged_bytes += nbytes
        self.payload_sent += nbytes
        self.transfers += 1
        works = [dist.isend(c, self.peer, group=g, tag=self.wire_tag(tag, i))
                 for i, (c, g) in enumerate(zip(self._chunks(flat), self.groups)) if c.numel()]
        return Handle(works, keep=flat)

    def recv(self, out, tag):
        flat = self._buffer(("recv", tag), out.numel(), out.dtype)
        works = [dist.irecv(c, self.peer, group=g, tag=self.wire_tag(tag, i))
                 for i, (c, g) in enumerate(zip(self._chunks(flat), self.groups)) if c.numel()]
        nbytes = out.numel() * out.element_size()

        def finalize():
            out.copy_(flat.view(out.shape))  # host -> device copy
            self.staged_bytes += nbytes
            self.payload_received += nbytes

        return Handle(works, finalize=finalize)


class DeviceDirectLink(Link):
    """A proxy thread posts isend/irecv on the caller's tensors; nothing is staged."""

    name = "device_direct"

    def __init__(self, group, peer: int, timeout_s: float = 60.0):
        super().__init__(peer)
        self.group, self.timeout = group, timeout_s
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._proxy, name="p2p-proxy", daemon=True)
        self._thread.start()

    def _proxy(self):
        while True:
            job = self._jobs.get()
            if job is None:
                return
            op, tensor, tag, fut = job
            try:
                fn = dist.isend if op == "send" else dist.irecv
                fut.set_result(fn(tensor, self.peer, group=self.group, tag=tag))
            except Exception as err:  # surfaced to the caller by Handle.wait
                fut.set_exception(err)

    def _post(self, op, tensor, tag) -> Future:
        fut: Future = Future()
        self._jobs.put((op, tensor, self.wire_tag(tag), fut))
        return fut

    def send(self, t, tag):
        src = self._contiguous(t.detach())
        self.payload_sent += src.numel() * src.element_size()
        self.transfers += 1
        return Handle([], keep=src, future=self._post("send", src, tag), timeout=self.timeout)

    def recv(self, out, tag):
        buf = out if out.is_contiguous() else torch.empty(out.shape, dtype=out.dtype, device=out.device)
        self.payload_received += buf.numel() * buf.element_size()
        return Handle([], future=self._post("recv", buf, tag), timeout=self.timeout,
                      finalize=None if buf is out else (lambda: out.copy_(buf)))

    def close(self):
        if self._thread.is_alive():
            self._jobs.put(None)
            self._thread.join(timeout=5)


def make_link(spec: str, groups, replica: int, boundary: int, peer: int, device_type: str, mixed: bool,
              timeout_s: float = 60.0) -> Link:
    """The link of `spec` at (replica, boundary) toward global rank `peer`."""
    name, k = parse_link(spec)
    if name == "direct" and mixed and device_type != "cpu":
        raise UserError("the direct link cannot cross vendors on GPUs; use cpu_forward:k or device_direct")
    if name == "direct":
        return DirectLink(groups.pp[replica, boundary].handle, peer)
    if name == "cpu_forward":
        chans = groups.channels[replica, boundary]
        if k > len(chans):
            raise UserError(f"link {spec!r} needs {k} channels but the run created {len(chans)}; raise k_max")
        return CpuForwardLink([c.handle for c in chans[:k]], peer, pin=device_type != "cpu")
    return DeviceDirectLink(groups.proxy[replica, boundary].handle, peer, timeout_s)
