"""One module per hetero notebook: `NN-topic.ipynb` calls `studies/topic.py`'s `measure(cfg, ...)`.

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007

Each `measure` launches the notebook's runs (or evaluates its model) and returns a dict whose `"metrics"`
is exactly what the notebook logs; the other keys are what it plots and prints. The mapping from the
measurements to the claims' metric names is in small named functions beside it (unit-tested in
`tests/hetero/test_hetero_studies.py`); the computation they map lives in the modules named for it
(`launch`, `reference`, `groups`, `perfmodel`, `clusterbench`).

* `correctness`   notebook 01: links against each other and one process; the long stability run
* `throughput`    notebook 02: tokens/s per link, p2p bandwidth, the CPU calibration of the model
* `audit`         notebook 03: the backend plan for several vendor maps and its naive control
* `cluster`       notebook 04: the emulated two-node cluster (multi-NIC, staging, vendor speed, model)
* `projection`    notebook 05: LLaMA-8B / Qwen2-7B projected (not measured)
"""
