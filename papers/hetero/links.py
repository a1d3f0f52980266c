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

Deliberately broken variants, the controls of the claims (never used for the paper's numbers):
`device_direct_staged` (the proxy posts a host staging buffer: it stages), `cpu_forward_reassemble:k`
(chunks received into separate buffers and concatenated: one extra copy), `cpu_forward_bf16:k`
(a bf16 staging buffer: a lossy transport), `cpu_forward_onechannel:k` (the same k chunks, all on
the first channel: one connection), `cpu_forward_samenic:k` (k channels of their own, all bound to
NIC 0 of an emulated cluster: k connections, one NIC).

Where the bytes go is MEASURED, not booked: every buffer handed to the transport (isend/irecv) is
compared, by the start of its storage (`untyped_storage().data_ptr()`), with the caller's tensor
(and a same-device layout copy of it); bytes posted from any other buffer are staged bytes. Every
tensor copy executed inside a link call (aten copy_, _to_copy, clone, cat) is counted by a torch
dispatch mode around the call. Wire tags are deterministic: tag = (2 * micro_batch + direction) * k + chunk.

Staging cost: the staging copies of CPU-forwarding (and of the staged control) go through a
`CopyEngine`, a modelled device<->host copy path whose rate is an explicit input (`copy_rate`,
bits/s; 0 = this machine's plain memcpy): each copy takes at least bytes / rate, as a PCIe copy of a
GPU node would. The direct and device-direct links have no staging copy, so they never use it.
"""
from __future__ import annotations

import os
import queue
import threading
import time
from concurrent.futures import Future

import torch
import torch.distributed as dist
from torch.utils._python_dispatch import TorchDispatchMode

from common.errors import UserError

from .specs import name_count

LINKS = ("direct", "cpu_forward", "device_direct")
CONTROL_LINKS = ("device_direct_staged", "cpu_forward_reassemble", "cpu_forward_bf16", "cpu_forward_onechannel",
                 "cpu_forward_samenic")
_CHANNELED = ("cpu_forward", "cpu_forward_reassemble", "cpu_forward_bf16", "cpu_forward_onechannel", "cpu_forward_samenic")
_aten = torch.ops.aten
_COPY_OPS = {_aten.copy_.default, _aten._to_copy.default, _aten.clone.default, _aten.cat.default}


def parse_link(spec: str) -> tuple[str, int]:
    """'direct', 'device_direct', 'cpu_forward' (k=1) or 'cpu_forward:3' -> (name, k); the control
    variants (`CONTROL_LINKS`) parse the same way."""
    name, k = name_count(spec, LINKS + CONTROL_LINKS, "link", "cpu_forward:3")
    if name not in _CHANNELED and k != 1:
        raise UserError(f"link {spec!r}: only cpu_forward takes k >= 1 channels")
    return name, k


def channels_needed(spec: str, nics: int = 1) -> int:
    """Channel groups the link `spec` uses: k, or for `cpu_forward_samenic:k` on `nics` NICs the channels
    0, nics, 2 nics, ... (channel c is bound to NIC c mod nics), so (k - 1) nics + 1."""
    name, k = parse_link(spec)
    if name == "cpu_forward_samenic":
        return (k - 1) * max(1, int(nics)) + 1
    return k if name in _CHANNELED else 1


def storage_of(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


class CopyCounter(TorchDispatchMode):
    """Counts the tensor copies (and the bytes they write) executed while it is active, on this thread."""

    def __init__(self, link: "Link"):
        super().__init__()
        self.link = link

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func in _COPY_OPS:
            res = out if isinstance(out, torch.Tensor) else args[0]
            self.link.copies += 1
            self.link.copied_bytes += res.numel() * res.element_size()
        return out


class CopyEngine:
    """The staging copy path of a link: `copy(dst, src)` copies and, with `rate_bps` > 0, takes at least
    8 * bytes / rate_bps seconds (the wait is a sleep: the modelled engine, not this machine's CPU, sets the
    time). Counts the bytes and seconds it carried."""

    def __init__(self, rate_bps: float = 0.0):
        self.rate_bps = float(rate_bps)
        self.bytes, self.seconds = 0, 0.0

    def copy(self, dst: torch.Tensor, src: torch.Tensor):
        t0 = time.perf_counter()
        dst.copy_(src)
        nbytes = dst.numel() * dst.element_size()
        if self.rate_bps > 0:
            left = 8 * nbytes / self.rate_bps - (time.perf_counter() - t0)
            if left > 0:
                time.sleep(left)
        self.bytes += nbytes
        self.seconds += time.perf_counter() - t0


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
    """`send`/`recv` wrap each link's `_send`/`_recv` in the copy counter; links post every buffer
    through `_wire`, which compares it with the caller's tensor."""

    name = "link"

    def __init__(self, peer: int, k: int = 1, backend: str = "gloo"):
        self.peer, self.k = peer, k
        self.backend = backend  # of the groups the link posts on (the plan's; see `_wire`)
        self.wire_bytes = 0
        self.staged_bytes = 0   # measured: bytes posted from a buffer that is not the caller's tensor
        self.copies = 0         # measured: tensor copies inside the link calls
        self.copied_bytes = 0
        self.payload_sent = 0
        self.payload_received = 0
        self.packed_bytes = 0   # layout copies of non-contiguous tensors (same device, not staging)
        self.transfers = 0
        self.engine = CopyEngine()  # staging copies only (CPU-forwarding, the staged control)
        self._lock = threading.Lock()

    def wire_tag(self, tag: int, chunk: int = 0) -> int:
        return tag * self.k + chunk  # (2 mb + dir) * k + chunk

    def counters(self) -> dict:
        return {"link": self.label, "staged_bytes": self.staged_bytes, "wire_bytes": self.wire_bytes,
                "copies": self.copies, "copied_bytes": self.copied_bytes, "payload_sent": self.payload_sent,
                "payload_received": self.payload_received, "packed_bytes": self.packed_bytes, "transfers": self.transfers,
                "engine_bytes": self.engine.bytes, "engine_s": self.engine.seconds, "copy_rate_bps": self.engine.rate_bps}

    @property
    def label(self) -> str:
        return f"{self.name}:{self.k}" if self.name in _CHANNELED else self.name

    def _wire(self, op: str, buf: torch.Tensor, owners: set, group, tag: int):
        """Post `buf` on the transport, recording whether it is the caller's own memory. NCCL (and RCCL) carry
        only device memory: a host buffer on an nccl group is a one-line `UserError`, never a silent hang."""
        if self.backend == "nccl" and buf.device.type == "cpu":
            raise UserError(f"link {self.label}: a host buffer cannot go on an nccl group (its staging lives in host "
                            "memory); use it across vendors, where its group is gloo or ucc")
        nbytes = buf.numel() * buf.element_size()
        with self._lock:
            self.wire_bytes += nbytes
            if storage_of(buf) not in owners:
                self.staged_bytes += nbytes
        return (dist.isend if op == "send" else dist.irecv)(buf, self.peer, group=group, tag=tag)

    def _contiguous(self, t, owners: set):
        if t.is_contiguous():
            return t
        self.packed_bytes += t.numel() * t.element_size()
        c = t.contiguous()
        owners.add(storage_of(c))
        return c

    def _layout_buffer(self, out, owners: set):
        """`out` itself, or a contiguous buffer on its device for a non-contiguous `out`."""
        if out.is_contiguous():
            return out
        self.packed_bytes += out.numel() * out.element_size()
        buf = torch.empty(out.shape, dtype=out.dtype, device=out.device)
        owners.add(storage_of(buf))
        return buf

    def send(self, t: torch.Tensor, tag: int) -> Handle:
        t = t.detach()
        self.payload_sent += t.numel() * t.element_size()
        self.transfers += 1
        with CopyCounter(self):
            return self._send(t, tag, {storage_of(t)})

    def recv(self, out: torch.Tensor, tag: int) -> Handle:
        self.payload_received += out.numel() * out.element_size()
        with CopyCounter(self):
            h = self._recv(out, tag, {storage_of(out)})
        if h.finalize is not None:
            fin = h.finalize

            def counted():
                with CopyCounter(self):
                    fin()

            h.finalize = counted
        return h

    def _send(self, t, tag, owners) -> Handle:
        raise NotImplementedError

    def _recv(self, out, tag, owners) -> Handle:
        raise NotImplementedError

    def close(self):
        pass


class DirectLink(Link):
    """The homogeneous baseline the paper's throughput is measured against (abstract: "NVIDIA homogeneous
    system"): isend/irecv of the tensor itself (same vendor; on CPU the emulated homogeneous link)."""

    name = "direct"

    def __init__(self, group, peer: int, backend: str = "gloo"):
        super().__init__(peer, backend=backend)
        self.group = group

    def _send(self, t, tag, owners):
        src = self._contiguous(t, owners)
        return Handle([self._wire("send", src, owners, self.group, self.wire_tag(tag))], keep=src)

    def _recv(self, out, tag, owners):
        buf = self._layout_buffer(out, owners)
        work = self._wire("recv", buf, owners, self.group, self.wire_tag(tag))
        return Handle([work], finalize=None if buf is out else (lambda: out.copy_(buf)))


class CpuForwardLink(Link):
    """CPU-forwarding, the paper's first step (abstract: "compatibility-oriented CPU-Forwarding Communication"
    with "multi-NIC parallel data transfer"; mechanics reconstructed, README "What is reconstructed", Links):
    device -> host staging buffer -> k chunks on k gloo channels (one per NIC) -> host -> device.
    `reassemble`, `dtype` and `serial` make the broken control variants (see the module doc)."""

    name = "cpu_forward"

    def __init__(self, groups: list, peer: int, pin: bool = False, name: str = "cpu_forward", backend: str = "gloo"):
        super().__init__(peer, k=len(groups), backend=backend)
        self.groups, self.pin, self.name = groups, pin, name
        self.reassemble = name == "cpu_forward_reassemble"
        if name == "cpu_forward_onechannel":  # control: k chunks, one connection
            self.groups = [groups[0]] * len(groups)
        self.stage_dtype = torch.bfloat16 if name == "cpu_forward_bf16" else None
        self.buffers: dict = {}  # the host staging buffers by ((direction, slot), numel, dtype), allocated once

    def _buffer(self, key, numel, dtype):
        dtype = self.stage_dtype or dtype
        buf = self.buffers.get((key, numel, dtype))
        if buf is None:  # preallocated once per (slot, size); pinned host memory on GPUs
            buf = torch.empty(numel, dtype=dtype, device="cpu", pin_memory=self.pin)
            self.buffers[(key, numel, dtype)] = buf
        return buf

    def _chunks(self, flat):
        return [c for c in flat.tensor_split(self.k)]  # sizes differ by at most one element

    def _send(self, t, tag, owners):
        flat = self._buffer(("send", tag), t.numel(), t.dtype)
        self.engine.copy(flat.view(t.shape), t)  # device -> host staging copy (handles non-contiguous t)
        works = []
        for i, (c, g) in enumerate(zip(self._chunks(flat), self.groups)):
            if c.numel():
                works.append(self._wire("send", c, owners, g, self.wire_tag(tag, i)))
        return Handle(works, keep=flat)

    def _recv(self, out, tag, owners):
        flat = self._buffer(("recv", tag), out.numel(), out.dtype)
        chunks = self._chunks(flat)
        if self.reassemble:  # control: separate receive buffers, concatenated afterwards
            chunks = [torch.empty_like(c) for c in chunks]
        works = [self._wire("recv", c, owners, g, self.wire_tag(tag, i))
                 for i, (c, g) in enumerate(zip(chunks, self.groups)) if c.numel()]

        def finalize():
            src = torch.cat(chunks) if self.reassemble else flat
            self.engine.copy(out, src.view(out.shape))  # host -> device copy

        return Handle(works, finalize=finalize)


class DeviceDirectLink(Link):
    """Device-direct, the paper's second step (abstract: "a CPU-offloading P2P mechanism" so GPUs of different
    vendors exchange data "without host-memory staging"; GPUDirect RDMA per a third-party summary): a proxy
    thread posts isend/irecv on the caller's tensors; nothing is staged."""

    name = "device_direct"

    def __init__(self, group, peer: int, timeout_s: float = 60.0, backend: str = "gloo"):
        super().__init__(peer, backend=backend)
        self.group, self.timeout = group, timeout_s
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._proxy, name="p2p-proxy", daemon=True)
        self._thread.start()

    def _proxy(self):
        while True:
            job = self._jobs.get()
            if job is None:
                return
            op, tensor, owners, tag, fut = job
            try:
                fut.set_result(self._wire(op, tensor, owners, self.group, tag))
            except Exception as err:  # surfaced to the caller by Handle.wait
                fut.set_exception(err)

    def _post(self, op, tensor, owners, tag) -> Future:
        fut: Future = Future()
        self._jobs.put((op, tensor, owners, self.wire_tag(tag), fut))
        return fut

    def _send(self, t, tag, owners):
        src = self._contiguous(t, owners)
        return Handle([], keep=src, future=self._post("send", src, owners, tag), timeout=self.timeout)

    def _recv(self, out, tag, owners):
        buf = self._layout_buffer(out, owners)
        return Handle([], future=self._post("recv", buf, owners, tag), timeout=self.timeout,
                      finalize=None if buf is out else (lambda: out.copy_(buf)))

    def close(self):
        if self._thread.is_alive():
            self._jobs.put(None)
            self._thread.join(timeout=5)


class DeviceDirectStagedLink(DeviceDirectLink):
    """Control: the same proxy, but it posts a host staging buffer (one copy in, one copy out)."""

    name = "device_direct_staged"

    def __init__(self, group, peer: int, timeout_s: float = 60.0, backend: str = "gloo"):
        super().__init__(group, peer, timeout_s, backend)
        self.buffers: dict = {}  # the host staging buffers by ((direction, slot), numel, dtype), allocated once

    def _host(self, key, like):
        buf = self.buffers.get((key, like.numel(), like.dtype))
        if buf is None:
            buf = self.buffers[key, like.numel(), like.dtype] = torch.empty(like.numel(), dtype=like.dtype, device="cpu")
        return buf

    def _send(self, t, tag, owners):
        buf = self._host(("send", tag), t)
        self.engine.copy(buf.view(t.shape), t)
        return Handle([], keep=buf, future=self._post("send", buf, owners, tag), timeout=self.timeout)

    def _recv(self, out, tag, owners):
        buf = self._host(("recv", tag), out)
        return Handle([], future=self._post("recv", buf, owners, tag), timeout=self.timeout,
                      finalize=lambda: self.engine.copy(out, buf.view(out.shape)))


def make_link(spec: str, groups, replica: int, boundary: int, peer: int, device_type: str, mixed: bool,
              timeout_s: float = 60.0, copy_rate_bps: float = 0.0) -> Link:
    """The link of `spec` at (replica, boundary) toward global rank `peer`; `copy_rate_bps` is the rate of
    its staging copy engine (0: plain memcpy)."""
    link = _make_link(spec, groups, replica, boundary, peer, device_type, mixed, timeout_s)
    link.engine.rate_bps = float(copy_rate_bps)
    return link


def _make_link(spec, groups, replica, boundary, peer, device_type, mixed, timeout_s) -> Link:
    name, k = parse_link(spec)
    if name == "direct" and mixed and device_type != "cpu":
        raise UserError("the direct link cannot cross vendors on GPUs; use cpu_forward:k or device_direct")
    if name == "direct":
        rec = groups.pp[replica, boundary]
        return DirectLink(rec.handle, peer, rec.backend)
    if name in _CHANNELED:
        chans = groups.channels[replica, boundary]
        nics = int(os.environ.get("HETERO_NICS") or 1)  # set by the launcher inside an emulated cluster
        use = chans[0::nics][:k] if name == "cpu_forward_samenic" else chans[:k]
        if len(use) < k:
            raise UserError(f"link {spec!r} needs {channels_needed(spec, nics)} channels but the run created "
                            f"{len(chans)}; raise k_max")
        backends = {c.backend for c in use}
        if backends != {"gloo"}:  # host buffers: never on nccl (groups.select_backend puts every channel on gloo)
            raise UserError(f"link {spec!r}: its channel groups are on {sorted(backends)}; CPU-forwarding posts host "
                            "buffers and needs gloo channels")
        return CpuForwardLink([c.handle for c in use], peer, pin=device_type != "cpu", name=name, backend="gloo")
    cls = DeviceDirectStagedLink if name == "device_direct_staged" else DeviceDirectLink
    rec = groups.proxy[replica, boundary]
    return cls(rec.handle, peer, timeout_s, rec.backend)


def parse_variant(spec: str) -> tuple[str, bool]:
    """A training variant: a link spec, optionally '/nodp' (control: data-parallel gradients not averaged)."""
    link, sep, flag = str(spec).partition("/")
    if sep and flag != "nodp":
        raise UserError(f"variant {spec!r}: the only modifier is '/nodp' (e.g. direct/nodp)")
    parse_link(link)
    return link, bool(sep)
