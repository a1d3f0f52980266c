"""Nonequilibrium physics of generative diffusion models, annotated and reproduced.

Z. Yu and H. Huang, "Nonequilibrium physics of generative diffusion models",
Phys. Rev. E 111, 014111 (2025), https://arxiv.org/abs/2405.11932

Modules, each small and named for what it holds:

* `mixture`       Gaussian mixtures in d dimensions and their exact Ornstein-Uhlenbeck marginals
* `processes`     forward OU and backward (reverse-time) SDE paths with trajectory entropies
* `thermo`        ensemble entropy rates, fluctuation-theorem and second-law statistics, KL
* `landscape`     the potential U(x, t), speciation and unstable-symmetry-breaking times, phases
* `franz_parisi`  the Franz-Parisi potential V(q), V'(q), V''(q) and its secondary minimum
* `highdim`       Biroli-Mezard cloning probability and the collapse of the empirical score
* `learned`       a small time-conditioned score network trained by denoising score matching
* `studies`       one module per notebook: `measure(cfg, ...)` returns the metrics it logs and the arrays it plots
* `figures`       the figures the notebooks save
* `config`        the smoke / quick / full profiles (`get_config`, `preflight`, `TUNED`)
* `devtune`       development-seed runs behind the settings in `config.TUNED`
"""
