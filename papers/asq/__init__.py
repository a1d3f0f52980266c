"""ASQ and POST: adaptive step-size activation quantization and power-of-sqrt(2) weight grids.

Paper: W. Zhou, Z. Yu, et al., "Precision Neural Network Quantization via Learnable Adaptive
Modules", arXiv:2504.17263, https://arxiv.org/abs/2504.17263

Modules, from the bottom up:

* `levels`      -- normalised weight level sets (uniform, POT, POST in two variants, APoT) and the
                   nearest-level projection.
* `quantizers`  -- LSQ / ASQ fake-quant autograd functions, the adapter that predicts beta, and the
                   weight quantizers.
* `layers`      -- quantized Conv2d and Linear.
* `convert`     -- turn a float model into a QAT model (`quantize_model`).
* `models`      -- ResNet-18/34/50, ResNet-20, a small ResNet for 28x28 and a tiny CNN for 8x8 digits.
* `data`, `train` -- data preparation, float pre-training and QAT fine-tuning (checkpoints, DDP).
* `integer`     -- integer codes, the POST look-up table, integer conv/linear, integer model forward,
                   storage and operation accounting.
* `weight_error` -- best-clip weight error of the grids (synthetic and trained weights).
* `qat_grid`    -- the QAT grid of a run: float and QAT models trained once per training replicate, cached.
* `betas`       -- the adapter's beta read out of a model, and the model with beta frozen (a control).
* `analysis`    -- paired statistics over training seeds.
* `studies`     -- one module per notebook (`measure(cfg, ...)`: the metrics it logs); `figures` their plots.
* `config`      -- the profiles and the runner's contract (`get_config`, `preflight`, `TUNED`); `cli` the
                   QAT grid under torchrun.
"""
