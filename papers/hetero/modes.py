"""The run modes of one rank: `train`, `throughput` and `selftest` (`p2p` is in `p2p`, `cluster` in
`clusterbench`); each takes the rank context (`rank.Rank`) and returns this rank's result dict.

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007

`train`: one fresh model per link (variant) of the job, trained on the same micro-batches, with
checkpoints, resume and fault injection; `throughput`: one model, the links interleaved in timed
windows; `selftest`: awkward payloads over every link, checked bit for bit.
"""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import torch
import torch.distributed as dist

from common.seed import Streams

from .devsync import now
from .job import Job
from .links import parse_variant
from .p2p import run_p2p
from .rank import Rank, digest, file_label


def maybe_fail(job: Job, rank: int, step: int):
    """Fault injection: the job's `fail_rank` dies (SIGKILL) or hangs (SIGSTOP) at the start of `fail_step`."""
    if rank == job.fail_rank and step == job.fail_step:
        # a stage dies without cleaning up, or hangs (stopped) so only the timeout can catch it
        os.kill(os.getpid(), signal.SIGKILL if job.fail_mode == "kill" else signal.SIGSTOP)


def run_train(me: Rank) -> dict:
    """Every link (variant) of the job trains a fresh model on the same micro-batches; losses, norms, digests."""
    from common.checkpoint import load_checkpoint, save_checkpoint

    j, out = me.job, {}
    for variant in j.links:
        spec, nodp = parse_variant(variant)
        mod, opt = me.new_model()
        prev, nxt = me.links(spec)
        label = (prev if prev is not None else nxt).label + ("/nodp" if nodp else "")
        start, losses, norms, local_norms = 0, [], [], []
        if j.resume:
            start = me.latest_common_checkpoint(label)
            if start:
                _, extra = load_checkpoint(me.checkpoint_path(label, start), model=mod, optimizer=opt)
                losses, norms = list(extra["losses"]), list(extra["grad_norms"])
        t0 = time.perf_counter()
        for step in range(start, min(j.steps, (j.variant_steps or {}).get(variant, j.steps))):
            maybe_fail(j, me.rank, step)
            loss, norm, local = me.step(mod, opt, step, prev, nxt, dp_average=not nodp)
            losses.append(loss)
            norms.append(norm)
            local_norms.append(local)
            if j.checkpoint_dir and j.checkpoint_every and (step + 1) % j.checkpoint_every == 0 and me.replica == 0:
                save_checkpoint(me.checkpoint_path(label, step + 1), step + 1, model=mod, optimizer=opt,
                                extra={"losses": losses, "grad_norms": norms})
        wall = time.perf_counter() - t0
        counters = [lk.counters() for lk in (prev, nxt) if lk is not None]
        out[label] = {"losses": losses, "grad_norms": norms, "local_norms": local_norms,
                      "clipped": sum(n > j.clip for n in norms),
                      "digest": digest(mod), "counters": counters, "wall_s": wall, "start_step": start}
        if j.save_params and me.replica == 0 and j.out:
            torch.save({k: v.cpu() for k, v in mod.state_dict().items()}, Path(j.out) / f"params-{file_label(label)}-stage{me.stage}.pt")
        for lk in (prev, nxt):
            if lk is not None:
                lk.close()
    return {"variants": out}


def run_throughput(me: Rank) -> dict:
    """Links interleaved in timed windows on one model (rotating order, so no link always goes first)."""
    j = me.job
    mod, opt = me.new_model()
    links = {spec: me.links(spec) for spec in j.links}
    tokens = me.topo.dp * j.n_micro * j.micro_size * me.mcfg.seq_len
    step = 0
    for spec in j.links:
        for _ in range(j.warmup_steps):
            me.step(mod, opt, step, *links[spec])
            step += 1
    rates = {spec: [] for spec in j.links}
    for w in range(j.windows):
        order = j.links[w % len(j.links):] + j.links[:w % len(j.links)]
        for spec in order:
            dist.barrier()
            t0 = now(me.device)  # timers read after the device's queued work (devsync)
            for _ in range(j.window_steps):
                me.step(mod, opt, step, *links[spec])
                step += 1
            t1 = now(me.device)
            dist.barrier()
            rates[spec].append(tokens * j.window_steps / (t1 - t0))
    counters = {spec: [lk.counters() for lk in pair if lk is not None] for spec, pair in links.items()}
    for pair in links.values():
        for lk in pair:
            if lk is not None:
                lk.close()
    out = {"tokens_per_s": rates, "counters": counters, "tokens_per_step": tokens}
    if j.sizes and me.topo.world == 2:  # the point-to-point benchmark in the same processes
        out.update(run_p2p(me))
    return out


def selftest_tensors():
    """Awkward payloads: sizes not divisible by 2, 3 or 4, fewer elements than channels, non-contiguous."""
    g = Streams(0).torch_generator("selftest")  # fixed payloads, the same in every run
    big = torch.randn(1_000_003, generator=g)
    mat = torch.randn(53, 37, generator=g).t()  # non-contiguous view
    tiny = torch.arange(2, dtype=torch.int64) - 7
    strided = torch.randn(10, 9, generator=g)[::2, 1::3]  # non-contiguous, gaps
    return [big, mat, tiny, strided]


def run_selftest(me: Rank) -> dict:
    """Every link sends the awkward payloads both ways; the receiver checks them bit for bit,
    receiving the non-contiguous ones into non-contiguous destinations."""
    out = {}
    if me.stage > 1:  # the first boundary is tested
        return {"selftest": out}
    for spec in dict.fromkeys(parse_variant(v)[0] for v in me.job.links):
        prev, nxt = me.links(spec)
        link = nxt if me.first else prev
        for other in (prev, nxt):
            if other is not None and other is not link:
                other.close()
        ok = []
        for direction in (0, 1):
            sender = (direction == 0) == me.first
            for i, t in enumerate(t.to(me.device) for t in selftest_tensors()):
                tag = 2 * i + direction
                if sender:
                    link.send(t, tag).wait()
                else:
                    dest = (torch.full(t.shape[::-1], -1, dtype=t.dtype, device=t.device).t()
                            if not t.is_contiguous() else torch.full_like(t, -1))
                    link.recv(dest, tag).wait()
                    ok.append(bool(torch.equal(dest, t)) and dest.is_contiguous() == t.is_contiguous())
        out[spec] = {"intact": ok, "counters": link.counters()}
        link.close()
    return {"selftest": out}
