"""Joint LLM training across GPU vendors on torch.distributed, annotated and reproduced on CPU.

J. Hu, T. Jia, J. Zhu and Z. Yu, "Joint Training on AMD and NVIDIA GPUs", arXiv:2602.18007 (2026),
https://arxiv.org/abs/2602.18007

Only the abstract and the opening of the paper are readable and no code is public: the design
here is a reconstruction (see README.md, "What is reconstructed").

Modules, each small and named for what it holds:

* `model`       LLaMA/Qwen2-style decoder (RMSNorm, RoPE, SwiGLU, GQA, untied head), stages, 8B configs
* `data`        byte-level corpora (stdlib sources; a Markov chain with known entropy rate), batches
* `topology`    vendor per rank, stages on the vendor boundary, uneven partition, validation
* `groups`      backend per group (nccl/RCCL inside a vendor, gloo across), all groups, the audit
* `links`       direct, CPU-forwarding (k channels) and device-direct (proxy thread) links
* `schedule`    GPipe and 1F1B with explicit isend/irecv and deterministic tags
* `job`         what a multi-process run does, and its validation (one-line user errors)
* `rank`        one rank's context: topology, groups, device, stage module, links, the optimizer step, checkpoints
* `modes`       the run modes train (one model per link), throughput (timed windows), selftest
* `p2p`         ping-pong timing of the links between two ranks (the p2p mode, the cluster's phases)
* `agreement`   the ranks' start-up check that they run the same job on the same vendor map
* `train`       the torchrun entry point: one rank's worker and its command line
* `launch`      spawns the ranks locally like torchrun, with timeouts; no process left behind
* `reference`   the single-process run over the same micro-batch order
* `perfmodel`   1F1B step-time model (event simulation), the alpha-beta link cost and its fit; the projection
* `clusterbench` the emulated cluster: the rank side (p2p phases, paced vendor-speed windows) and the
                 calibration of the performance model on it
* `studies`     one module per notebook (`NN-topic.ipynb` -> `studies/topic.py`, `measure(cfg, ...)`)
* `figures`     one function per figure
* `config`      the smoke / quick / full profiles, `get_config`, the preflight check, the tuned settings
* `devtune`     the development-seed run that set the performance model's tolerance
"""
