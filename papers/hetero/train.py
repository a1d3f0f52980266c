"""One rank of a heterogeneous pipeline run; the torchrun entry point.

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007

    HETERO_VENDORS=nv,nv,amd,amd torchrun --nnodes 1 --nproc-per-node 4 -m papers.hetero.train \
        --link cpu_forward:2 --partition 4,2 --steps 50 --out results/hetero/torchrun
    # two nodes: torchrun --nnodes 2 --node-rank {0,1} --rdzv-endpoint HOST:PORT --nproc-per-node 8 ...

Every rank: gloo world group with a timeout; the ranks check at start-up that they agree on the
job (link, k, schedule, partition, ..., and the vendor map; `agreement`) and fail fast if not; the
rank's context (`rank.Rank`: groups per `groups.Groups`, stage module, links); then the job's mode:
`train` (one fresh model per link in `links`), `throughput` (one model, links interleaved in timed
windows), `selftest` (`modes`), `p2p` (ping-pong bandwidth, `p2p`) or `cluster` (the emulated
cluster's phases and vendor-speed windows, `clusterbench`). Each rank writes `<out>/rank<r>.json`. A user error exits 2 with one line; a failed or timed-out peer exits 1 with
one line naming this rank and the cause.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist

from common.errors import UserError

from .agreement import check_agreement, gather_vendors
from .clusterbench import run_cluster
from .groups import audit_violations, live_violations
from .job import Job, validate
from .modes import run_selftest, run_throughput, run_train
from .p2p import run_p2p
from .rank import Rank

MODES = {"train": run_train, "throughput": run_throughput, "p2p": run_p2p, "cluster": run_cluster}


def worker(job: Job) -> int:
    """One rank of `job` (rank and world from torchrun's environment): 0 done, 2 a user error, 1 a failed or
    timed-out peer or a crash, each failure one line on stderr."""
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
            result.update(MODES[job.mode](me))
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
