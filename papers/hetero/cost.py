"""hetero's full profile: the tiny pipeline model, steps x ranks of the full profile's launches (papers.hetero.gpuslice), billed in CPU core-hours.

The paper's cost model (common/README.md, the contract: `estimate(cfg) -> common.costmodel.Estimate`),
read by `benchmarks/full_cost.py`. Every number is an estimate from assumed inputs, listed in the record.
"""
from __future__ import annotations

from common.costmodel import (H100, CpuPart, Estimate, count_time, make_data, reproduce_command, round3, train_memory_gb)

# `reproduce all --jobs N` (common/runner/concurrent.py) runs this paper after the others, with the machine to itself:
RUNS_ALONE = ("its claims are timings (step times of the emulated cluster, link throughput, the perfmodel's "
              "calibration): another paper on the same cores would move them")


KERNELS_PER_LAYER = 75   # one decoder layer's forward + backward of one micro-batch, in eager ops (assumed)


def estimate(cfg) -> Estimate:
    """The cost of one run of the full profile `cfg` (`config.get_config("full")`), from its counts."""
    from papers.hetero import gpuslice
    from papers.hetero.model import CONFIGS, LLAMA3_8B, flops_per_token

    mcfg = CONFIGS[cfg.model]
    counts = gpuslice.full_step_counts(cfg)
    part = list(cfg.partition)
    stages = len(part)
    tokens_micro = cfg.micro_size * mcfg.seq_len
    # one pipeline step (1F1B, M micro-batches): M + S - 1 slots of the slowest stage, plus the optimizer
    slot_ops = max(part) * KERNELS_PER_LAYER + 10
    step_ops = (cfg.n_micro + stages - 1) * slot_ops + 20
    step_s = count_time(step_ops, H100["op_overhead_s"])
    hours = gpuslice.projected_gpu_hours(counts, step_s)
    rank_steps = sum(s * r for s, r in counts.values())
    # FLOPs: every rank runs its stage's layers on its micro-batches
    per_rank_step = cfg.n_micro * tokens_micro * (max(part) * flops_per_token(mcfg, "layer") + flops_per_token(mcfg, "head") / stages)
    # the full profile is the CPU emulation (its ranks are processes on one host, vendors emulated): CPU time only
    cpu = [CpuPart(f"{name}: {s} steps x {r} ranks", s * r * per_rank_step, "small_gflops_per_core")
           for name, (s, r) in counts.items()]
    layer_8b = flops_per_token(LLAMA3_8B, "layer") * LLAMA3_8B.n_layers + flops_per_token(LLAMA3_8B, "head")
    rank_gb = train_memory_gb(_tiny_params(mcfg), 4 * cfg.n_micro * tokens_micro * mcfg.d_model * max(part))
    return Estimate(
        data="none: the corpora are generated (a Markov chain) or read from the Python standard library's sources",
        make_data=make_data([]),
        commands=[reproduce_command("hetero"),
                  f"torchrun --nnodes 2 --node-rank {{0,1}} --rdzv-endpoint HOST:PORT --nproc-per-node 8 "
                  f"-m papers.hetero.train --link {cfg.stability_link} --partition {','.join(map(str, part))} "
                  f"--corpus {cfg.corpus} --steps {cfg.stability_steps} --out results/hetero/torchrun",
                  f"HETERO_VENDORS=nv,nv,amd,amd torchrun --nproc-per-node 4 -m papers.hetero.train --link cpu_forward:2 "
                  f"--partition {','.join(map(str, part))} --steps {cfg.correctness_steps} --out results/hetero/torchrun"],
        gpu=[], cpu=cpu, memory_gb=0.0,
        assumptions=[
            "the full profile runs the paper's protocol as a CPU emulation: its ranks are processes on one host with the "
            "vendors emulated, because on GPUs of one vendor the vendor boundary cannot be carried (gloo has no GPU "
            "send/recv, device-direct needs a torch built with UCC, NCCL refuses two ranks of one group on one GPU); it is "
            "billed in CPU core-hours, no GPU-hours; the GPU path is the torchrun lines on a real mixed cluster",
            f"host memory: {cfg.processes} processes x {rank_gb:.2g} GB each",
            f"model {cfg.model!r} (d_model {mcfg.d_model}, {mcfg.n_layers} layers, seq {mcfg.seq_len}), partition {part}, "
            f"{cfg.n_micro} micro-batches of {cfg.micro_size}; FLOPs per token from papers.hetero.model.flops_per_token",
            "steps x ranks of the full profile's launches from papers.hetero.gpuslice.full_step_counts: "
            + ", ".join(f"{k} {s} x {r}" for k, (s, r) in counts.items()) + f" = {rank_steps} rank-steps, one GPU per rank",
            f"one pipeline step = (M + S - 1) slots x {max(part)} layers x {KERNELS_PER_LAYER} eager ops per layer and "
            f"micro-batch = {step_s * 1e3:.2f} ms (the tiny model is op-bound); the link counted as free and the AMD "
            "stages at NVIDIA speed, as in the device check's slice",
            "memory per rank: the tiny model with AdamW and its micro-batches' activations",
            f"the paper's LLaMA-3-8B training (~{layer_8b:.3g} FLOP per token) is not in the full profile: it is "
            "projected (notebook 05), and trained only by the torchrun command on a mixed cluster",
            "the two-node torchrun line is the paper's setting (8 NVIDIA + 8 AMD GPUs, vendors detected on GPUs; "
            "one node per vendor), the four-process line the README's local form (vendors set by hand)",
            "one run = seed 0; --seeds 0 1 2 costs 3x"],
        extra={"rank_steps": rank_steps, "pipeline_step_s_estimate": round3(step_s),
               "host_memory_gb_estimate": round3(cfg.processes * rank_gb),
               "gpuslice_projection_gpu_hours": round3(hours)})


def _tiny_params(mcfg) -> int:
    from papers.hetero.model import layer_params

    return mcfg.n_layers * layer_params(mcfg) + 2 * mcfg.vocab * mcfg.d_model
