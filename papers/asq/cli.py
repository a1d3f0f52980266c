"""Train the QAT grid outside the notebooks, e.g. under torchrun with DistributedDataParallel.

Paper: "Precision Neural Network Quantization via Learnable Adaptive Modules",
arXiv:2504.17263, https://arxiv.org/abs/2504.17263

    torchrun --nproc_per_node 8 -m papers.asq.cli --profile full --ckpt-dir results/asq/ckpt-full
    torchrun --nproc_per_node 8 -m papers.asq.cli --profile full --ckpt-dir DIR -p dataset=imagenet -p arch=resnet34 \
        -p fp_checkpoint=resnet34-float.pth
    python -m common.reproduce asq --profile full -p ckpt_dir=results/asq/ckpt-full

The notebooks then load the finished checkpoints from the same directory instead of training.
Each rank takes 1/world_size of every global batch (batch_size is the global batch).
"""
from __future__ import annotations

import argparse

from common.errors import user_errors_exit


def main(argv=None) -> int:
    from common.distributed import init_distributed
    from common.seed import Streams

    from .config import get_config, preflight
    from .qat_grid import QATGrid

    ap = argparse.ArgumentParser(description="ASQ/POST QAT grid (DDP under torchrun)")
    ap.add_argument("--profile", default="full", choices=["smoke", "quick", "full"])
    ap.add_argument("--ckpt-dir", required=True, help="where checkpoints and results.json go")
    ap.add_argument("--device", default=None)
    ap.add_argument("--seed", type=int, default=0, help="the run seed whose keyed streams train the replicates "
                    "(as `--seeds` of the runner: the runner's run of that seed then loads these checkpoints)")
    ap.add_argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args(argv)
    with user_errors_exit():
        overrides = dict(kv.split("=", 1) for kv in args.param)
        cfg = get_config(args.profile, ckpt_dir=args.ckpt_dir, **overrides)
        preflight(cfg)                     # missing data or fp_checkpoint: one line before any process group
        ctx = init_distributed(args.device)
        grid = QATGrid(cfg, args.ckpt_dir, Streams(args.seed), device=ctx.device, dist=ctx)
        df = grid.run_grid()
        ctx.log(df.pivot_table(index="config", columns="seed", values="acc").round(2).to_string())
        ctx.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
