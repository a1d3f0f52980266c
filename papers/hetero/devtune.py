"""Development-seed runs that set hetero's tolerances (never seeds 0-2, the reported ones).

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007

    python -m papers.hetero.devtune perfmodel [--seeds 100 101 102]

`perfmodel`: notebook 04's emulated cluster (`studies.cluster.measure`) at the quick profile, per seed the
held-out errors of the calibrated 1F1B simulation (`cluster-perfmodel-calibrated`'s metric), of its
control (M x the slowest stage, calibrated the same way) and of the speed-blind simulation (the former
control), the partition claims' ratios with their controls, and the device-direct throughput claim's
ratio with its control (M = cluster_n_micro micro-batches in the vendor-speed windows). The claim's tolerance is
`tolerance_from_dev`: twice the largest error of the simulation over these seeds, rounded up to a
whole percent (claims.yaml holds the result as `cluster-perfmodel-calibrated`'s value; `config.TUNED`
points the README's generated tuned block at this run). Needs the privileges of the emulated cluster
(root or CAP_NET_ADMIN + CAP_SYS_ADMIN). Seeds below `common.devseeds.FIRST` are refused. Results:
results/hetero/dev/perfmodel.json (`common.devseeds.result_path`), with the revision at the start and,
when it changed during the run, at the end.
"""
from __future__ import annotations

import argparse
import math
import statistics
import tempfile

from common import devseeds
from common.errors import UserError, user_errors_exit
from common.study import open_run

from .studies import cluster


def tolerance_from_dev(errors) -> float:
    """Twice the largest development error, rounded up to a whole percent (0.0314 -> 0.07)."""
    return math.ceil(200.0 * max(abs(e) for e in errors) - 1e-9) / 100.0


def tune_perfmodel(seed: int) -> dict:
    """One development seed of notebook 04 at the quick profile: the simulation's, its control's and the
    speed-blind simulation's largest held-out errors, and the partition claims' mean ratios."""
    with tempfile.TemporaryDirectory(prefix="hetero-devtune-") as tmp:  # the run's work files; the result is the json
        cfg, run = open_run("hetero", "quick", seed=seed, device="cpu", run_dir=tmp)
        res = cluster.measure(cfg, run)
    if not res["available"]:
        raise UserError(f"the emulated cluster is not available here ({res['why']}); run as root on Linux")
    m = res["metrics"]
    mean = statistics.mean
    return {"max_abs_err": m["cluster_model_max_abs_err"], "max_abs_err_control": m["cluster_model_max_abs_err_control"],
            "max_abs_err_speed_blind": m["cluster_model_max_abs_err_speed_blind"],
            "mixed_vs_amd": mean(m["cluster_mixed_vs_amd"]), "mixed_even_vs_amd": mean(m["cluster_mixed_even_vs_amd"]),
            "uneven_vs_even": mean(m["cluster_uneven_vs_even"]), "uneven_vs_even_rho1": mean(m["cluster_uneven_vs_even_rho1"]),
            "dd_vs_homog": mean(m["cluster_dd_vs_homog"]), "cf1_vs_homog": mean(m["cluster_cf1_vs_homog"]),
            "paper_rho_mixed_vs_amd": [m[f"cluster_paper_rho{t}_mixed_vs_amd"] for t in ("092", "0945", "097")]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("perfmodel",))
    ap.add_argument("--seeds", type=int, nargs="+", default=list(devseeds.DEFAULT))
    args = ap.parse_args(argv)
    with user_errors_exit():
        devseeds.run_seeds("hetero", args.what, args.seeds, tune_perfmodel, summarise=lambda res: {
            "tolerance": tolerance_from_dev([r["max_abs_err"] for r in res.values()])})


if __name__ == "__main__":
    main()
