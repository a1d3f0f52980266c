"""Point-to-point timing between the two ranks of a run: one-way seconds per message size and link.

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007

Ping-pong over the links of the first pipeline boundary, links interleaved in rotating order every
window so that no link always goes first; the receiving rank checks the payload arrived intact. Used
by the `p2p` and `throughput` modes (`modes`) and by the emulated cluster's phases (`clusterbench`).
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from .devsync import now
from .rank import Rank


def run_p2p(me: Rank) -> dict:
    """Ping-pong between the two ranks: one-way seconds per message size and link."""
    j = me.job
    return {"one_way_s": p2p_times(me, list(j.p2p_links or j.links), j.sizes, j.p2p_iters, j.windows)[0]}


def p2p_times(me: Rank, specs: list, sizes: list, iters: int, windows: int, copy_rate_bps: float = 0.0):
    """({link: {size: [one-way seconds per window]}}, {link: counters of this rank's link}); links
    interleaved in rotating order every window, `iters` round trips per window."""
    links = {spec: me.links(spec, copy_rate_bps) for spec in specs}
    res = {spec: {} for spec in specs}
    for size in sizes:
        n = max(1, int(size) // 4)
        x = torch.arange(n, dtype=torch.float32, device=me.device)
        buf = torch.empty_like(x)
        for spec in specs:  # warm-up (allocates staging buffers)
            _pingpong(me, links[spec], x, buf, 1)
        times = {spec: [] for spec in specs}
        for w in range(windows):
            order = specs[w % len(specs):] + specs[:w % len(specs)]
            for spec in order:
                dist.barrier()
                t0 = now(me.device)  # timers read after the device's queued work (devsync)
                _pingpong(me, links[spec], x, buf, iters)
                times[spec].append((now(me.device) - t0) / (2 * iters))
        if me.rank == 1 and not torch.equal(buf, x):
            raise RuntimeError("p2p payload corrupted")
        for spec in specs:
            res[spec][str(size)] = times[spec]
    counters = {}
    for spec, pair in links.items():
        counters[spec] = [lk.counters() for lk in pair if lk is not None]
        for lk in pair:
            if lk is not None:
                lk.close()
    return res, counters


def _pingpong(me: Rank, pair, x, buf, iters: int):
    link = pair[1] if me.first else pair[0]
    for _ in range(iters):
        if me.first:
            link.send(x, 0).wait()
            link.recv(buf, 1).wait()
        else:
            link.recv(buf, 0).wait()
            link.send(buf, 1).wait()
