"""This process's place in a heterogeneous pipeline run: the rank context every run mode works in.

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007

`Rank` holds the topology (stage, replica, vendor boundary), the process groups (`groups.Groups`), the
rank's device, the corpus and the links to the neighbouring stages; `Rank.step` is one optimizer step of
the whole pipeline (schedule, data-parallel mean inside the vendor, global clipping across the stages);
checkpoints are per training variant (link) and stage.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import torch
import torch.distributed as dist

from . import data
from .groups import Groups
from .job import Job, rank_device
from .links import make_link, parse_link
from .model import CONFIGS, Decoder
from .schedule import run_step


def uses_proxy(job: Job) -> bool:
    """Whether a link of the job runs on the device-direct proxy group (only then is it created)."""
    return any(parse_link(s)[0].startswith("device_direct") for s in job.link_specs())


class Rank:
    """This process's place in the run: topology, groups, stage module, links."""

    def __init__(self, job: Job, rank: int, world: int, vendors: list[str], topo):
        self.job, self.rank, self.world, self.topo = job, rank, world, topo
        self.stage = topo.stage_of(rank)
        self.replica = topo.replica_of(rank)
        self.first, self.last = self.stage == 0, self.stage == topo.n_stages - 1
        self.mcfg = CONFIGS[job.model]
        # CPU emulation (device cpu): vendors select backends and links, never numerics, and no rank
        # touches a GPU. Real devices (cuda, or auto with GPUs): rank LOCAL_RANK takes GPU LOCAL_RANK
        # (CUDA or ROCm; both answer to torch.cuda); more ranks than GPUs on a node is a one-line error.
        self.device = torch.device(rank_device(job.device, int(os.environ.get("LOCAL_RANK", "0")),
                                               int(os.environ.get("LOCAL_WORLD_SIZE", "1"))))
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
        self.device_type = self.device.type
        self.groups = Groups(topo, rank, self.device_type, job.k_max, job.timeout_s, control=job.audit_control,
                             proxy=uses_proxy(job))
        self.corpus, self.corpus_info = (None, None) if job.mode in ("p2p", "selftest") else data.load_corpus(job.corpus, job.corpus_tokens, seed=0)
        self.act_shape = (job.micro_size, self.mcfg.seq_len, self.mcfg.d_model)

    def links(self, spec: str, copy_rate_bps: float = 0.0):
        """(link to the previous stage, link to the next stage) for `spec`; `copy_rate_bps`: the rate of
        the links' staging copy engine (0: plain memcpy)."""
        t, r, s = self.topo, self.replica, self.stage
        pipe = t.pipeline_ranks(r)
        prev = None if self.first else make_link(spec, self.groups, r, s - 1, pipe[s - 1], self.device_type,
                                                  t.boundary_mixed(s - 1), self.job.timeout_s, copy_rate_bps)
        nxt = None if self.last else make_link(spec, self.groups, r, s, pipe[s + 1], self.device_type,
                                               t.boundary_mixed(s), self.job.timeout_s, copy_rate_bps)
        return prev, nxt

    def new_model(self, partition=None):
        """This stage's module (of the run's partition, or of `partition`) and its optimizer."""
        full = Decoder(self.mcfg, seed=self.job.seed)  # identical init on every rank and in the reference
        if partition is None:
            layers = self.topo.layers(self.stage)
        else:
            start = sum(partition[:self.stage])
            layers = range(start, start + partition[self.stage])
        mod = full.stage(layers, self.first, self.last).to(self.device)
        opt = torch.optim.AdamW(mod.parameters(), lr=self.job.lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0)
        return mod, opt

    def step(self, mod, opt, step: int, prev, nxt, dp_average: bool = True, pace=None,
             timings=None) -> tuple[float, float, float]:
        """One optimizer step of the whole pipeline; returns (global mean loss, global grad norm, this
        stage's own grad norm before the cross-stage sum). The data-parallel mean stays inside the vendor
        and the global norm is summed across the stages on gloo (claims `dp-replicas-identical`,
        `clipping-every-step`: Sec. 1's cross-stage collectives, reconstructed; README "Optimizer step"). `dp_average=False` is the control that
        skips the data-parallel mean; `pace`, `timings`: the emulated device speed (`schedule.run_step`)."""
        j, t = self.job, self.topo
        starts = data.batch_indices(j.seed, step, t.dp * j.n_micro * j.micro_size, len(self.corpus), self.mcfg.seq_len)
        slots = data.global_batch_layout(t.dp, j.n_micro, j.micro_size)[self.replica]
        mbs = [tuple(t.to(self.device) for t in data.micro_batch(self.corpus, starts[sl], self.mcfg.seq_len)) for sl in slots]
        opt.zero_grad(set_to_none=False)
        loss = run_step(mod, j.schedule, self.stage, t.n_stages, j.n_micro,
                        [x for x, _ in mbs] if self.first else None, [y for _, y in mbs] if self.last else None,
                        self.act_shape, prev, nxt, device=self.device, pace=pace, timings=timings)
        params = list(mod.parameters())
        if t.dp > 1 and dp_average:  # data parallel inside the vendor: one flat bucket
            flat = torch.cat([p.grad.reshape(-1) for p in params])
            dist.all_reduce(flat, group=self.groups.dp[self.stage].handle)
            flat /= t.dp
            off = 0
            for p in params:
                p.grad.copy_(flat[off:off + p.numel()].view_as(p.grad))
                off += p.numel()
        sq = torch.stack([p.grad.double().pow(2).sum() for p in params]).sum().reshape(1).cpu()
        local = float(sq.sqrt())
        dist.all_reduce(sq, group=self.groups.scalar[self.replica].handle)  # ||g||^2 = sum over stages, gloo on CPU
        norm = float(sq.sqrt())
        if norm > j.clip:  # global clipping: g <- g * c / ||g||
            coef = j.clip / (norm + 1e-6)
            for p in params:
                p.grad.mul_(coef)
        opt.step()
        lt = loss.reshape(1).double().cpu()
        dist.all_reduce(lt)  # loss: only last stages contribute, summed over replicas
        return float(lt) / t.dp, norm, local

    def checkpoint_path(self, label: str, step: int) -> Path:
        """`<label>-stage<s>-step<t>.pt`: one series per training variant (link), so the links of one
        job never overwrite each other's checkpoints."""
        return Path(self.job.checkpoint_dir) / f"{file_label(label)}-stage{self.stage}-step{step}.pt"

    def latest_common_checkpoint(self, label: str) -> int:
        """The largest step for which every stage saved a checkpoint of variant `label` (0 if none)."""
        d = Path(self.job.checkpoint_dir)
        steps = None
        for s in range(self.topo.n_stages):
            have = {int(p.stem.rsplit("step", 1)[1]) for p in d.glob(f"{file_label(label)}-stage{s}-step*.pt")}
            steps = have if steps is None else steps & have
        return max(steps) if steps else 0


def file_label(label: str) -> str:
    """A variant label as a file-name part: 'cpu_forward:2/nodp' -> 'cpu_forward_2_nodp'."""
    return label.replace(":", "_").replace("/", "_")


def digest(mod) -> str:
    """SHA-256 of a module's state (names and bytes, in state-dict order): equal digests are bitwise-equal parameters."""
    h = hashlib.sha256()
    for name, t in mod.state_dict().items():
        h.update(name.encode())
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()
