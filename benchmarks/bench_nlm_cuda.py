"""Benchmark on a CUDA GPU: papers.nlm at the full profile's sizes, and what the full profile costs there.

Paper: Yu, Huang & Huang, https://arxiv.org/abs/2506.23546. Three parts, written to
`results/bench/nlm_cuda.json`:

- `released_settings`: one training update at N = 784, 1000 chains, k = 10, batch 1000 (the released
  training script's sizes), the reference in the released structure (`bench_nlm.reference_update`, fp32,
  on the GPU) against ours (`Trainer(device="cuda")`, fp32 products, and bf16 operands with fp32
  accumulation); interleaved rounds, each round's ratio.
- `p_sweep_stack`: the quick profile's stacked P-sweep (14 models, N = 64) against the same models
  trained one at a time, on the GPU.
- `full_profile`: the per-update and per-step times of every training and sampling shape the full profile
  runs (taken from `papers.nlm.config.PROFILES["full"]`), each measured here, and the whole profile's time
  per seed *projected* from them (counts from the config times measured unit times; not a timing of the
  profile, which needs MNIST; a lower bound: the measurements on the CPU, the quench, data loading and
  checkpoints are left out). Data are random rows of the profile's size: speed does not depend on them.

`python benchmarks/bench_nlm_cuda.py` (`--quick`: fewer rounds). Exits 2 with one line where torch sees
no CUDA device. Nothing here asserts a time.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_nlm import bench_released, bench_stack, summary, time_per_call  # noqa: E402

from common.bench import write_benchmark  # noqa: E402
from common.io import atomic_write_json  # noqa: E402
from common.profiles import resolve  # noqa: E402
from papers.nlm.config import PROFILES  # noqa: E402
from papers.nlm.sampler import langevin  # noqa: E402
from papers.nlm.train import Trainer, TrainConfig, train_config  # noqa: E402

GPU_SIDES = (("ours_fp32", "float32", 1), ("ours_bf16", "bfloat16", 1))


def update_time(K, n, m, batch, k, mode="pcd", gemm="float32", reps=3, per=3, device="cuda"):
    """Seconds per update of K stacked models (median of `reps` timings of `per` updates), with the full
    profile's optimizer (Adam, weight decay on J, a bias: `PROFILES["full"]`)."""
    data = torch.randn(max(batch, 64), n) * 0.8
    cfg = train_config(resolve(PROFILES, "full"), n_chains=m, k=k, mode=mode, batch=batch, gemm_dtype=gemm)
    tr = Trainer(data, [len(data)] * K, cfg, generator=torch.Generator().manual_seed(0), device=device)
    tr.update()
    return summary([time_per_call(tr.update, per) for _ in range(reps)])


def stability_time(K, n, reps=3, per=3, device="cuda"):
    """Seconds per Euler-stability check (`Trainer.check_stability`: ‖J‖₂ of K models in float64, done
    every 100 updates)."""
    tr = Trainer(torch.randn(64, n) * 0.8, [64] * K, TrainConfig(n_chains=1, batch=8), generator=torch.Generator().manual_seed(0), device=device)
    tr.check_stability()
    return summary([time_per_call(tr.check_stability, per) for _ in range(reps)])


def step_time(K, m, n, steps=200, reps=3, device="cuda"):
    """Seconds per Langevin step of K stacked models with m chains each (generation)."""
    g = torch.Generator().manual_seed(0)
    J = (torch.randn(K, n, n, generator=g) * 2 / n ** 0.5).to(device)
    b = torch.zeros(K, n, device=device)
    x = torch.randn(K, m, n, generator=g).to(device)
    langevin(x, J, b, 10, 0.01, 1.0, g, check_every=0)
    return summary([time_per_call(lambda: langevin(x, J, b, steps, 0.01, 1.0, g, check_every=0), 1) / steps for _ in range(reps)])


TINY = dict(n=16, chains=8, K_sweep=2, k_rdm=20)   # dry runs: the same code on the CPU at these sizes (counts unchanged)


def full_profile(gemm="float32", quick=False, device="cuda", tiny=False):
    """Unit times of the full profile's shapes and the projected seconds per seed of each notebook's work.

    tiny=True: every shape shrunk to TINY (N, chains, batch, stacked sweep models; one repetition), for a dry
    run of the same code on the CPU; the counts stay the full profile's."""
    c = resolve(PROFILES, "full")
    n, m, B = 784, int(c.n_chains), int(c.batch)
    K_sweep = len(c.sweep_sizes) * int(c.sweep_replicates)
    gen = {key: int(getattr(c, key)) for key in ("n_gen", "sweep_gen", "ooe_gen", "explore_chains")}
    if tiny:
        n, m, B, K_sweep = TINY["n"], TINY["chains"], TINY["chains"], TINY["K_sweep"]
        gen = dict.fromkeys(gen, TINY["chains"])
    R = int(c.ooe_replicates)
    k_rdm = int(c.ooe_rdm_k)
    u_rdm = int(c.ooe_rdm_updates) or max(1, c.ooe_updates * c.k // k_rdm)
    k_rdm_timed = TINY["k_rdm"] if tiny else k_rdm
    reps = 1 if tiny else 2 if quick else 3
    per = 1 if tiny else None
    d = dict(device=device)
    unit = {
        "update_main": update_time(1, n, m, B, c.k, gemm=gemm, reps=reps, per=per or 3, **d),
        "update_sweep": update_time(K_sweep, n, m, B, c.k, gemm=gemm, reps=reps, per=per or 2, **d),
        "update_ooe_pcd": update_time(R, n, m, B, c.k, gemm=gemm, reps=reps, per=per or 3, **d),
        "update_ooe_rdm": update_time(R, n, m, B, k_rdm_timed, mode="rdm", gemm=gemm, reps=reps, per=1, **d),
        "step_ages": step_time(int(c.n_ages), gen["n_gen"], n, steps=20 if tiny else 200, reps=reps, **d),
        "step_sweep": step_time(K_sweep, gen["sweep_gen"], n, steps=20 if tiny else 50, reps=reps, **d),
        "step_ooe": step_time(2 * R, gen["ooe_gen"], n, steps=20 if tiny else 200, reps=reps, **d),
        # three stacked models at T = 1, the quench null (the noiseless flow) and the restart null: five model-steps
        "step_explore": step_time(5, gen["explore_chains"], n, steps=20 if tiny else 500, reps=reps, **d),
        "check_main": stability_time(1, n, reps=reps, per=per or 3, **d),
        "check_sweep": stability_time(K_sweep, n, reps=reps, per=1, **d),
        "check_ooe": stability_time(R, n, reps=reps, per=per or 3, **d),
    }
    t = {key: v["median"] for key, v in unit.items()}
    updates = {"main (notebooks 01, 04, 06 share it)": (c.main_updates, "update_main"),
               "second data set (notebook 01)": (c.second_updates, "update_main"),
               "explored model (notebook 04)": (c.explore_updates, "update_main"),
               "P-sweep (notebook 02)": (c.sweep_updates, "update_sweep"),
               "PCD replicates (notebook 03)": (c.ooe_updates, "update_ooe_pcd"),
               "Rdm replicates (notebook 03)": (u_rdm, "update_ooe_rdm")}
    # sampling: the ages (main and second model), the sweep's chains from noise, persistent chains and the
    # untrained null (as many steps each; the null's 5 models cost at most the 50-model stack), its
    # time average; the out-of-equilibrium generation and its null; the exploration chains
    steps = {"ages (notebook 01)": (2 * c.gen_steps, "step_ages"),
             "sweep generation (notebook 02)": (3 * c.sweep_gen_steps + 2 * c.avg_steps, "step_sweep"),
             "out-of-equilibrium generation (notebook 03)": (2 * c.ooe_gen_steps, "step_ooe"),
             "exploration (notebook 04)": (c.explore_steps, "step_explore")}
    # the Euler-stability check every 100 updates of every training run
    checks = {"stability checks, main, second and explored": ((c.main_updates + c.second_updates + c.explore_updates) // 100,
                                                               "check_main"),
              "stability checks, P-sweep": (c.sweep_updates // 100, "check_sweep"),
              "stability checks, PCD and Rdm replicates": ((c.ooe_updates + u_rdm) // 100, "check_ooe")}
    updates |= checks
    parts = {name: int(cnt) * t[key] for name, (cnt, key) in (updates | steps).items()}
    return {"gemm_dtype": gemm, "unit": unit, "counts": {name: int(cnt) for name, (cnt, _) in (updates | steps).items()},
            "unit_keys": {name: key for name, (_, key) in (updates | steps).items()},
            "projected_s": parts, "projected_total_s_per_seed": sum(parts.values()),
            "projected_total_h_per_seed": sum(parts.values()) / 3600,
            "note": ("projection: counts from PROFILES['full'] times unit times measured here; not a run of the "
                     "profile. A lower bound: it leaves out the measurements on the CPU (nearest neighbours, "
                     "adversarial accuracies, bootstraps), the T = 0 quench, loading MNIST and writing checkpoints")}


def main():
    from common.errors import UserError, user_errors_exit

    with user_errors_exit():
        if not torch.cuda.is_available():
            raise UserError("no CUDA device visible to torch; run this on a machine with an NVIDIA GPU "
                            "(benchmarks/bench_nlm.py times the CPU)")
        run(quick="--quick" in sys.argv)


def run(quick=False):
    res = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
           "cpu_count": os.cpu_count(), "tf32_matmul": torch.backends.cuda.matmul.allow_tf32}
    res["released_settings"] = bench_released(rounds=3 if quick else 6, per_round=10, device="cuda", sides=GPU_SIDES)
    print("released settings:", res["released_settings"], flush=True)
    res["p_sweep_stack"] = bench_stack(updates=10 if quick else 40, rounds=2 if quick else 4, device="cuda")
    print("P-sweep stack:", res["p_sweep_stack"], flush=True)
    for gemm, key in (("float32", "full_profile"), ("bfloat16", "full_profile_bf16")):
        res[key] = full_profile(gemm, quick)
        print(key, res[key], flush=True)
    out = write_benchmark("nlm_cuda", res)
    rec = json.loads(out.read_text())
    if not (rec.get("git") or {}).get("sha") and os.environ.get("REPRO_GIT_SHA"):
        # the GPU machine got a copy of the working tree without .git: the caller names its commit
        rec["git"] = {"sha": os.environ["REPRO_GIT_SHA"], "dirty": False, "source": "REPRO_GIT_SHA (tree copied without .git)"}
        atomic_write_json(out, rec)


if __name__ == "__main__":
    main()
