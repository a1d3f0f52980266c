"""The netrecon quick Lyapunov sweep (notebook 01: the lambda(g) grid and the g < 1 networks) through a
2-worker Dask LocalCluster on 127.0.0.1 against the local process pool, on the same 2 cores.

Both sides run the same task list with the same `common.parallel.pmap` call; only $REPRO_CLUSTER
differs. The sides are interleaved (local, cluster, local, cluster, ...) so that a change in the
machine's load hits both; each pair gives a ratio cluster / local, reported with its range and the
load average before and after. The local pool starts its two spawned processes in every call (as a
notebook's pmap does); the cluster is started once, outside the timings (its start-up is reported
apart), as a user's long-running cluster would be. Results of the two sides are checked bitwise equal.

    python benchmarks/bench_cluster.py [--pairs 3] [--profile quick]
"""
from __future__ import annotations

import argparse
import os
import pickle
import time


def sweep_tasks(profile: str, seed: int = 0) -> list[dict]:
    """The (g, seed) tasks of notebook 01's `lyapunov` pmap at `profile` (grid + sub-critical networks)."""
    from papers.netrecon.config import get_config
    from papers.netrecon.tasks import grid_tasks

    cfg = get_config(profile)
    sub = [dict(N=cfg.sub_N, g=float(g), seed=seed * 1000 + s, n_traj=cfg.sub_n_traj, t_transient=cfg.sub_t_transient,
                t_average=cfg.sub_t_average, t_align=cfg.sub_t_align, dt=cfg.dt)
           for g in cfg.sub_gs for s in range(cfg.sub_seeds)]
    return grid_tasks(cfg, seed) + sub


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--profile", default="quick")
    args = ap.parse_args()

    from distributed import LocalCluster

    from common import cluster
    from common.bench import write_benchmark
    from common.parallel import pmap
    from papers.netrecon.tasks import lyapunov_task

    tasks = sweep_tasks(args.profile)
    os.environ.pop("REPRO_CLUSTER", None)
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    lc = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0", worker_dashboard_address="127.0.0.1:0")
    startup = time.perf_counter() - t0
    local_s, cluster_s, equal_each = [], [], []
    try:
        for k in range(args.pairs):
            os.environ.pop("REPRO_CLUSTER", None)
            t = time.perf_counter()
            ref = pmap(lyapunov_task, tasks, workers=2, desc="local pool")
            local_s.append(time.perf_counter() - t)
            os.environ["REPRO_CLUSTER"] = lc.scheduler_address
            t = time.perf_counter()
            got = pmap(lyapunov_task, tasks, desc="cluster")
            cluster_s.append(time.perf_counter() - t)
            # value by value (a pickle of the whole list also encodes which objects are shared, which
            # depends on how the results were deserialized, not on their values)
            diff = [(i, key) for i, (a, b) in enumerate(zip(ref, got)) for key in a.keys() | b.keys()
                    if pickle.dumps(a.get(key)) != pickle.dumps(b.get(key))]
            equal_each.append(len(ref) == len(got) and not diff)
            if diff:
                print(f"pair {k}: results differ in {len(diff)} (task, key): {diff[:5]}", flush=True)
            print(f"pair {k}: local {local_s[-1]:.2f} s, cluster {cluster_s[-1]:.2f} s, "
                  f"ratio {cluster_s[-1] / local_s[-1]:.3f}, load {os.getloadavg()[0]:.2f}", flush=True)
    finally:
        os.environ.pop("REPRO_CLUSTER", None)
        cluster.close_all()
        lc.close()
    ratios = [c / l for c, l in zip(cluster_s, local_s)]
    load_after = os.getloadavg()
    res = {
        "what": f"netrecon {args.profile} Lyapunov sweep (notebook 01), {len(tasks)} tasks, 2 workers each side",
        "tasks": len(tasks), "pairs": args.pairs,
        "local_pool_s": [round(x, 3) for x in local_s], "cluster_s": [round(x, 3) for x in cluster_s],
        "ratio_cluster_over_local": [round(r, 4) for r in ratios],
        "ratio_median": round(sorted(ratios)[len(ratios) // 2], 4),
        "ratio_range": [round(min(ratios), 4), round(max(ratios), 4)],
        "cluster_startup_s": round(startup, 2),
        "results_bitwise_equal": all(equal_each), "results_bitwise_equal_each_pair": equal_each,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "cpus": os.cpu_count(),
        "note": "cluster / local < 1 means the cluster is faster; the local pool pays its process start-up in every "
                "call, the cluster once (cluster_startup_s). The machine may be shared: see the load averages.",
    }
    print(f"cluster / local pool: median {res['ratio_median']} (range {res['ratio_range'][0]}-{res['ratio_range'][1]}), "
          f"start-up {startup:.1f} s, equal {equal_each}, load {load_before[0]:.2f} -> {load_after[0]:.2f}")
    write_benchmark("cluster", res)


if __name__ == "__main__":
    main()
