"""One rank of a heterogeneous pipeline run; the torchrun entry point.

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007

    HETERO_VENDORS=nv,nv,amd,amd torchrun --nnodes 1 --nproc-per-node 4 -m papers.hetero.train \
        --link cpu_forward:2 --partition 4,2 --steps 50 --out results/hetero/torchrun
    # two nodes: torchrun --nnodes 2 --node-rank {0,1} --rdzv-endpoint HOST:PORT --nproc-per-node 8 ...

Every rank: gloo world group with a timeout; the ranks check at start-up that they agree on the
job (link, k, schedule, partition, ..., and the vendor map) and fail fast if not; groups per `groups.Groups`; then the
job's mode: `train` (one fresh model per link in `links`), `throughput` (one model, links
interleaved in timed windows) or `p2p` (ping-pong bandwidth). Each rank writes
`<out>/rank<r>.json`. A user error exits 2 with one line; a failed or timed-out peer exits 1 with
one line naming this rank and the cause.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import sys
import time
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist

from common.errors import UserError

from . import data
from .groups import Groups, audit_violations, live_violations
from .job import Job, rank_device, validate
from .links import make_link, parse_link, parse_variant
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
        stage's own grad norm before the cross-stage sum). `dp_average=False` is the control that
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
    h = hashlib.sha256()
    for name, t in mod.state_dict().items():
        h.update(name.encode())
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def maybe_fail(job: Job, rank: int, step: int):
    if rank == job.fail_rank and step == job.fail_step:
        # a stage dies without cleaning up, or hangs (stopped) so only the timeout can catch it
        os.kill(os.getpid(), signal.SIGKILL if job.fail_mode == "kill" else signal.SIGSTOP)


def run_train(me: Rank) -> dict:
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
        for step in range(start, j.steps):
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
            t0 = time.perf_counter()
            for _ in range(j.window_steps):
                me.step(mod, opt, step, *links[spec])
                step += 1
            dist.barrier()
            rates[spec].append(tokens * j.window_steps / (time.perf_counter() - t0))
    counters = {spec: [lk.counters() for lk in pair if lk is not None] for spec, pair in links.items()}
    for pair in links.values():
        for lk in pair:
            if lk is not None:
                lk.close()
    out = {"tokens_per_s": rates, "counters": counters, "tokens_per_step": tokens}
    if j.sizes and me.topo.world == 2:  # the point-to-point benchmark in the same processes
        out.update(run_p2p(me))
    return out


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
                t0 = time.perf_counter()
                _pingpong(me, links[spec], x, buf, iters)
                times[spec].append((time.perf_counter() - t0) / (2 * iters))
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


def selftest_tensors():
    """Awkward payloads: sizes not divisible by 2, 3 or 4, fewer elements than channels, non-contiguous."""
    g = torch.Generator().manual_seed(1234)
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


def _pingpong(me: Rank, pair, x, buf, iters: int):
    link = pair[1] if me.first else pair[0]
    for _ in range(iters):
        if me.first:
            link.send(x, 0).wait()
            link.recv(buf, 1).wait()
        else:
            link.recv(buf, 0).wait()
            link.send(buf, 1).wait()


def disagreement(fingerprints: list[dict]) -> str | None:
    """None when every rank's job fingerprint is the same, else a one-line description."""
    diffs = sorted({k for fp in fingerprints for k in fp if fp[k] != fingerprints[0][k]})
    if not diffs:
        return None
    detail = "; ".join(f"{k}: " + ", ".join(f"rank{r}={fp[k]}" for r, fp in enumerate(fingerprints)) for k in diffs)
    return f"ranks disagree on the job ({detail}); launch every rank with the same settings"


def vendor_map(job: Job, world: int) -> str:
    """This rank's vendor map as it will be used: 'nv,nv,amd,amd' from `job.vendors` or
    $HETERO_VENDORS (normalised, so 'nv:2,amd:2' is the same map), or 'detected'."""
    from .topology import parse_vendors

    spec = job.vendors or os.environ.get("HETERO_VENDORS")
    return ",".join(parse_vendors(spec, world)) if spec else "detected"


def check_agreement(job: Job, world: int):
    """All ranks must run the same job and the same vendor map (they pick each group's backend
    from it); a disagreement (e.g. on k, the link or the vendors) fails fast."""
    allfp = [None] * world
    dist.all_gather_object(allfp, dict(job.fingerprint(), vendors=vendor_map(job, world)))
    msg = disagreement(allfp)
    if msg:
        raise UserError(msg)


def gather_vendors(job: Job, world: int):
    spec = job.vendors or os.environ.get("HETERO_VENDORS")
    if spec:
        return spec
    from .topology import detect_vendor

    got = [None] * world
    dist.all_gather_object(got, detect_vendor())
    return got


def worker(job: Job) -> int:
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    torch.set_num_threads(1)
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS, before CUDA starts
    torch.use_deterministic_algorithms(True)
    if job.pin_cores and hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[int(os.environ.get("LOCAL_RANK", rank)) % len(cpus)]})
    where = f"rank {rank}"
    try:
        validate(job, world, vendors=job.vendors or os.environ.get("HETERO_VENDORS") or ["cpu"] * world)
        dist.init_process_group("gloo", timeout=timedelta(seconds=job.timeout_s))
        check_agreement(job, world)
        vendors, topo = validate(job, world, vendors=gather_vendors(job, world))
        where = f"rank {rank} (stage {topo.stage_of(rank)}, {vendors[rank]})"
        me = Rank(job, rank, world, vendors, topo)
        result = {"rank": rank, "stage": me.stage, "replica": me.replica, "vendor": vendors[rank],
                  "topology": topo.describe(), "corpus": me.corpus_info,
                  "netcluster_node": os.environ.get("NETCLUSTER_NODE"), "device": str(me.device),
                  "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}
        # every rank asks its own live groups; the planned invariant is checked once, on rank 0
        result["audit"] = me.groups.audit()
        result["audit_live_violations"] = live_violations(result["audit"])
        result["audit_control"] = me.groups.audit_control()
        result["audit_control_violations"] = live_violations(result["audit_control"])
        if rank == 0:
            result["audit_violations"] = audit_violations(result["audit"])
        if job.selftest or job.mode == "selftest":
            result.update(run_selftest(me))
        if job.mode != "selftest":
            from .clusterbench import run_cluster

            result.update({"train": run_train, "throughput": run_throughput, "p2p": run_p2p,
                           "cluster": run_cluster}[job.mode](me))
        if job.out:
            Path(job.out).mkdir(parents=True, exist_ok=True)
            tmp = Path(job.out) / f".rank{rank}.json.tmp"
            tmp.write_text(json.dumps(result))
            os.replace(tmp, Path(job.out) / f"rank{rank}.json")
        dist.barrier()
        dist.destroy_process_group()
        return 0
    except UserError as err:
        print(f"error: {err}", file=sys.stderr, flush=True)
        return 2
    except Exception as err:  # a dead or hung peer surfaces here (connection closed / timeout)
        first = (str(err).strip().splitlines() or [""])[0].split(". This is typically")[0][:300]
        peer = any(w in str(err) for w in ("Connection closed", "Connection reset", "Timed out", "timed out", "timeout", "Broken pipe"))
        cause = "a peer failed or timed out" if peer else "crashed"
        print(f"error: {where}: {cause} ({type(err).__name__}: {first})", file=sys.stderr, flush=True)
        return 1


def parse_args(argv=None) -> Job:
    ap = argparse.ArgumentParser(prog="python -m papers.hetero.train", description=__doc__.split("\n\n")[0])
    ap.add_argument("--job", help="a JSON file with the job (other flags override it)")
    ap.add_argument("--mode")
    ap.add_argument("--model")
    ap.add_argument("--stages", type=int)
    ap.add_argument("--partition", help="layers per stage, e.g. 4,2")
    ap.add_argument("--vendors", help="one vendor per rank, e.g. nv:4,amd:4 (default $HETERO_VENDORS, else detected)")
    ap.add_argument("--link", action="append", dest="links", help="direct | cpu_forward:k | device_direct (repeatable)")
    ap.add_argument("--schedule")
    ap.add_argument("--micro-batches", type=int, dest="n_micro")
    ap.add_argument("--micro-size", type=int)
    ap.add_argument("--steps", type=int)
    ap.add_argument("--lr", type=float)
    ap.add_argument("--clip", type=float)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--corpus", help="markov | stdlib")
    ap.add_argument("--corpus-tokens", type=int)
    ap.add_argument("--device", help="auto (default: rank LOCAL_RANK on GPU LOCAL_RANK when torch sees "
                    "GPUs, else the CPU) | cuda (refuses without enough GPUs) | cpu (the emulation)")
    ap.add_argument("--timeout", type=float, dest="timeout_s")
    ap.add_argument("--checkpoint-dir")
    ap.add_argument("--checkpoint-every", type=int)
    ap.add_argument("--resume", action="store_true", default=None)
    ap.add_argument("--out")
    args = vars(ap.parse_args(argv))
    base = json.loads(Path(args.pop("job")).read_text()) if args.get("job") else {}
    if args.get("partition"):
        args["partition"] = [int(x) for x in args["partition"].split(",")]
    base.update({k: v for k, v in args.items() if v is not None})
    base.setdefault("device", "auto")  # under torchrun: one rank per GPU when there are GPUs (the job file's own else)
    return Job.from_dict(base)


def main(argv=None) -> int:
    try:
        job = parse_args(argv)
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return worker(job)


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    if code:
        os._exit(code)  # never hang in interpreter shutdown on a broken process group
    raise SystemExit(0)
