"""Start-up agreement of the ranks: every rank must run the same job on the same vendor map.

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007

The ranks pick each group's backend from the vendor map (`groups.select_backend`), so ranks that
disagree on it, or on the job (link, k, schedule, partition, ...), would build different groups and
hang; they compare fingerprints over the gloo world group and fail fast in one line instead.
"""
from __future__ import annotations

import os

import torch.distributed as dist

from common.errors import UserError

from .job import Job
from .topology import detect_vendor, parse_vendors


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
    """The vendor map: `job.vendors` or $HETERO_VENDORS, else every rank's detected vendor, gathered."""
    spec = job.vendors or os.environ.get("HETERO_VENDORS")
    if spec:
        return spec
    got = [None] * world
    dist.all_gather_object(got, detect_vendor())
    return got
