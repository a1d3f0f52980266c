"""nlm's full profile on one H100: PCD-k training and Langevin sampling of N = 784 networks (fp32 GEMMs on the GPU).

The paper's cost model (common/README.md, the contract: `estimate(cfg) -> common.costmodel.Estimate`),
read by `benchmarks/full_cost.py`. Every number is an estimate from assumed inputs, listed in the record.
"""
from __future__ import annotations

from common.costmodel import (CPU, DATA, UTIL, CpuPart, Estimate, GpuPart, linear_flops, make_data, reproduce_command, train_memory_gb)


GEMM_ROWS = 1000   # chains per product from which an N = 784 fp32 product counts as a large GEMM (assumed)


def estimate(cfg) -> Estimate:
    """The cost of one run of the full profile `cfg` (`config.get_config("full")`), from its counts."""
    N = 784                                  # MNIST pixels
    m, B, k = cfg.n_chains, cfg.batch, cfg.k
    K_sweep = len(cfg.sweep_sizes) * cfg.sweep_replicates
    R = cfg.ooe_replicates
    u_rdm = cfg.ooe_rdm_updates or max(1, cfg.ooe_updates * k // cfg.ooe_rdm_k)
    N2 = 196                                 # the second data set: Fashion-MNIST pooled to 14 x 14
    step = lambda chains, n=N: linear_flops(chains, n, n)  # noqa: E731  one Langevin step of `chains` chains
    update = lambda models, kk=k, n=N: models * (kk * step(m, n) + 2 * linear_flops(n, B, n))  # noqa: E731  + data and model correlations
    noise_bytes = lambda models, chains, n=N: models * chains * n * 4 * 4  # noqa: E731  state and noise read/written
    parts = {  # name: (count, FLOPs per unit, bytes per unit, eager ops per unit); utilisation from the rows per product
        "main training (notebooks 01, 04, 06)": (cfg.main_updates, update(1), k * noise_bytes(1, m), k * 8 + 20),
        "second data set (notebook 01)": (cfg.second_updates, update(1, n=N2), k * noise_bytes(1, m, N2), k * 8 + 20),
        "P-sweep training (notebook 02)": (cfg.sweep_updates, update(K_sweep), k * noise_bytes(K_sweep, m), k * 8 + 20),
        "PCD replicates (notebook 03)": (cfg.ooe_updates, update(R), k * noise_bytes(R, m), k * 8 + 20),
        "Rdm replicates (notebook 03)": (u_rdm, update(R, cfg.ooe_rdm_k), cfg.ooe_rdm_k * noise_bytes(R, m), cfg.ooe_rdm_k * 8 + 20),
        "ages (notebook 01)": (2 * cfg.gen_steps, cfg.n_ages * step(cfg.n_gen), noise_bytes(cfg.n_ages, cfg.n_gen), 8),
        "sweep generation (notebook 02)": (3 * cfg.sweep_gen_steps + 2 * cfg.avg_steps, K_sweep * step(cfg.sweep_gen),
                                           noise_bytes(K_sweep, cfg.sweep_gen), 8),
        "out-of-equilibrium generation (notebook 03)": (2 * cfg.ooe_gen_steps, 2 * R * step(cfg.ooe_gen), noise_bytes(2 * R, cfg.ooe_gen), 8),
        "exploration (notebook 04)": (cfg.explore_steps, 4 * step(cfg.explore_chains), noise_bytes(4, cfg.explore_chains), 8),
        "entropy production chains (notebook 06)": (cfg.ep_steps + cfg.ep_burn, step(cfg.ep_chains), noise_bytes(1, cfg.ep_chains), 8),
        "Euler-stability checks (every 100 updates, float64 spectral norm)": (
            (cfg.main_updates + cfg.second_updates + cfg.ooe_updates * R + u_rdm * R + cfg.sweep_updates * K_sweep) // 100,
            30 * 2 * N ** 3 / 4, N * N * 8 * 30, 30),
    }
    rows = {"ages (notebook 01)": cfg.n_gen, "out-of-equilibrium generation (notebook 03)": cfg.ooe_gen,
            "sweep generation (notebook 02)": cfg.sweep_gen, "exploration (notebook 04)": cfg.explore_chains,
            "entropy production chains (notebook 06)": cfg.ep_chains}
    util = lambda name: UTIL["gemm"] if rows.get(name, m) >= GEMM_ROWS else UTIL["small"]  # noqa: E731
    gpu = [GpuPart(name, cnt * fl, cnt * by, cnt * op, util=util(name), peak="fp64_tflops" if "float64" in name else "fp32_tflops")
           for name, (cnt, fl, by, op) in parts.items()]
    # CPU measurements: nearest neighbours of generated images against the training set, adversarial accuracy
    nn_flops = (2 * cfg.n_ages * linear_flops(cfg.n_gen, N, cfg.main_p + cfg.n_test)
                + 2 * sum(cfg.sweep_replicates * linear_flops(cfg.sweep_gen, N, p + cfg.sweep_gen) for p in cfg.sweep_sizes)
                + 2 * cfg.ooe_times * R * linear_flops(cfg.ooe_gen, N, cfg.ooe_p + cfg.ooe_n_test + cfg.ooe_gen))
    cpu = [CpuPart("nearest neighbours and adversarial accuracies (numpy)", nn_flops),
           CpuPart("bootstraps, denoising (N = 64) and the rule checks", (cfg.sweep_boot * len(cfg.sweep_sizes) + cfg.ooe_boot * cfg.ooe_times) * 1e7,
                   "elementwise_gflops_per_core")]
    state = 4 * (K_sweep * (N * N * 2 + m * N * 3) + cfg.sweep_gen * K_sweep * N * 2)
    mem = train_memory_gb(0, 0, resident_bytes=state + cfg.main_p * N * 4 + cfg.ep_chains * N * 8)
    datasets = ["mnist"] + (["fashion_mnist"] if cfg.second_updates else [])
    return Estimate(
        data=" and ".join(DATA[d] for d in datasets) + f" ({cfg.second_dataset} is Fashion-MNIST pooled to 14x14)",
        make_data=make_data(datasets),
        commands=[reproduce_command("nlm"), "REPRO_GIT_SHA=$(git rev-parse HEAD) bash benchmarks/device_nlm.sh"],
        gpu=gpu, cpu=cpu, memory_gb=mem,
        assumptions=[
            f"N = {N} (the second data set N = {N2}), {m} chains, batch {B}, PCD-{k}: one update = {k} Langevin steps (2 N^2 FLOP per chain each) + the "
            "data and model correlations; counts as in benchmarks/bench_nlm_cuda.full_profile",
            f"P-sweep: {K_sweep} models stacked; PCD and Rdm-{cfg.ooe_rdm_k} replicates: {R} each; Rdm updates {u_rdm}",
            f"products of >= {GEMM_ROWS} chains x 784 x 784 (fp32) at utilisation {UTIL['gemm']:g}, fewer at {UTIL['small']:g}; "
            "sampling of few chains is bound by "
            "eager ops (~8 per Langevin step) or by reading the state and noise from HBM",
            "Euler-stability check: a float64 spectral norm of J, ~30 power iterations",
            f"CPU: nearest neighbours / adversarial accuracies at {CPU['blas_gflops_per_core']:g} GFLOP/s per core (assumed)",
            "GPU memory: the sweep's 50 stacked J (and their gradients), their chains and noise, the training set, a CUDA context",
            "one run = seed 0; --seeds 0 1 2 costs 3x"])
