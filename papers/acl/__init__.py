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
* `regions`    -- equal-mass shells of the prior.
* `experiments`, `analysis`, `figures` -- the studies the notebooks call.
"""
