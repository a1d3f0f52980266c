"""Neural Langevin Machine, annotated and reproduced.

Z. Yu, W. Huang and H. Huang, "Neural Langevin Machine: a local asymmetric learning rule can be
creative", https://arxiv.org/abs/2506.23546

Modules, each small and named for what it holds:

* `model`        the rate network, its energy E(x) = ½‖−x + Jφ(x) + b‖², force −∇E, the local rule
* `sampler`      Euler-Maruyama Langevin chains and the noiseless flow, stacked over models; guards
* `encoding`     pixels ↔ model state (clip, atanh) and the datasets used at each scale
* `metrics`      nearest-neighbour adversarial accuracy, covariance error, memorization, distances
* `train`        PCD-k / Rdm-k training of a stack of models (released gradient step, SGD or Adam), checkpoints, `generate`
* `exact`        a 2-neuron network integrated on a grid: the likelihood and its exact gradient
* `thermo`       entropy production of the Langevin sampler vs the raw rate dynamics
* `denoise`      the positive-phase fit on a few patterns and denoising by the noiseless flow
* `mainmodel`    the main model of notebooks 01, 04, 06 (snapshots over training age, cached in the run)
* `generation`   chains from N(0, I) of a trained stack, and their time averages
* `sweep`, `windows`, `visits`  the P-sweep's measures; generation-time windows; class visits of long chains
* `studies/`     one module per notebook, `measure(cfg, *, seed, ...)` -> the metrics it logs; `figures` draws them
* `config`       profiles, `get_config`, `preflight`, `TUNED`; `devtune` tunes, `investigations` asks (dev seeds)
"""
