"""paperid's full profile on one H100 (the contract: `estimate(cfg) -> common.costmodel.Estimate`, read by
`benchmarks/full_cost.py`). TEMPLATE: count your profile's work from its own sizes and list what you assumed.
Documentation (`common.stamp.DOCUMENTATION`): no notebook or module of the paper imports it.
"""
from __future__ import annotations

from common.costmodel import Estimate, GpuPart, make_data, reproduce_command

PASSES = 12   # float64 tensors of n_draws read or written by the study: draws, integrands, pairs (counted by hand)


def estimate(cfg) -> Estimate:
    """The cost of one run of the full profile `cfg` (`common.study.get_config("paperid", "full")`)."""
    n = cfg.n_draws
    return Estimate(
        data="none: the draws are generated in the run", make_data=make_data([]), commands=[reproduce_command("paperid")],
        gpu=[GpuPart("uniform draws, integrands and pair means (elementwise, memory-bound)", flops=30.0 * n,
                     bytes=PASSES * 8.0 * n, ops=40)],
        memory_gb=6 * 8.0 * n / 1e9,
        assumptions=[f"{n} draws in float64; {PASSES} passes over a tensor of that size (counted, not measured)"])
