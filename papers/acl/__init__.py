"""ACL: adversarial code learning -- a prior-to-code generator trained against a code discriminator.

Paper: J. Yuan, B. Wu, W. Ding, Q. Ping, Z. Yu, "Adversarial Code Learning for Image Generation",
arXiv:2001.11539, https://arxiv.org/abs/2001.11539

Modules, from the bottom up:

* `nets`       -- MLPs, the conv encoder / decoder (also GAN generator and discriminator), a CNN classifier.
* `losses`     -- non-saturating and WGAN-GP losses, the gradient penalty.
* `acl`        -- the ACL module: code generator G_c and code discriminator D_c.
* `train`      -- ACL-AE / ACL-classifier (`fit_code_model`) and GAN / ACL-GAN (`fit_gan`) loops, resumable.
* `baselines`  -- N(0, I), fitted Gaussian and GMM-10 samplers on an autoencoder's codes.
* `synthetic`  -- 2-D ring / grid mixtures and the mode-coverage metrics.
* `metrics`    -- the local feature network, FID / KID (torchmetrics), PRDC (prdc), class histogram, memorization.
* `mmd`, `twosample` -- the control (a G_c trained by MMD instead of the adversary), the code two-sample test.
* `regions`    -- equal-mass shells and orthants of the prior, sampled exactly.
* `seeds`, `runfiles`, `images` -- per-replicate seeds, the run's checkpoint files, the image split and provenance.
* `samplers`   -- ACL, the baselines and the control as samplers of one trained decoder.
* `evaluation` -- the evaluation network of a run, metrics per sampler, code two-sample test, region metrics.
* `image_replicates`, `synthetic_replicates` -- one replicate of an image / 2-D study (in worker processes, cached).
* `analysis`, `figures` -- per-replicate tables and metric helpers, the figures.
* `studies`    -- one module per notebook: `measure(cfg, ...)` returns the metrics its notebook logs.
* `config`, `devtune`, `investigations` -- profiles and `TUNED`; how the tuned settings were chosen; looks that chose nothing.
"""
