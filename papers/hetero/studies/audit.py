"""Notebook 03: the backend plan of every process group for several vendor maps, and its naive control.

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007
(abstract: "differentiated communication back-end selection across parallel groups"; claim
`audit-plan-no-violation`). The rule is `groups.select_backend`; the control, `groups.naive_backend`,
is the vendor library (nccl) for every GPU group, as on a homogeneous cluster.
"""
from __future__ import annotations

from ..groups import Groups, audit_violations, naive_backend, select_backend
from ..topology import build_topology, expand_vendors

AUDIT_CASES = {"nv,amd": 2, "nv:2,amd:2": 2, "nv,nv,amd,amd/4 stages": 4, "nv:8,amd:8": 2, "amd:4,nv:4": 2, "nv:4": 2}


def measure(cfg, run) -> dict:
    """Notebook 03: the plan under the rule and under the naive control (`run` unused: the plan draws nothing and
    writes no file). {"metrics", "matrix", "naive"}."""
    mat, naive = audit_matrix(cfg), audit_matrix(cfg, rule=naive_backend)
    return {"metrics": audit_metrics(mat, naive), "matrix": mat, "naive": naive}


def audit_matrix(cfg, rule=select_backend) -> dict:
    """Backend plan of every group for several vendor maps (no processes needed); `rule` picks the
    backends (`groups.naive_backend` is the control)."""
    out = {}
    for spec, stages in AUDIT_CASES.items():
        vendors = expand_vendors(spec.split("/")[0])
        topo = build_topology(vendors, stages, None, 8)
        groups = Groups(topo, 0, "cpu", 2, 30.0, create=False, rule=rule)
        recs = groups.audit()
        out[spec] = {"groups": recs, "violations": audit_violations(recs),
                     "nccl_mixed": sum(1 for g in recs if g["mixed"] and "nccl" in (g["backend"], g["cluster_backend"]))}
    return out


def audit_metrics(mat: dict, naive: dict) -> dict:
    """Totals over the vendor maps: mixed-vendor groups on nccl, violations under the rule and under the
    naive control, groups planned."""
    return {"audit_matrix_nccl_mixed": sum(v["nccl_mixed"] for v in mat.values()),
            "audit_matrix_violations": sum(len(v["violations"]) for v in mat.values()),
            "audit_matrix_violations_control": sum(len(v["violations"]) for v in naive.values()),
            "audit_matrix_groups": sum(len(v["groups"]) for v in mat.values())}
