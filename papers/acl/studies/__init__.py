"""One module per notebook of `notebooks/acl/` (`NN-some-topic.ipynb` drives `some_topic.py`): each has
one entry `measure(cfg, ...) -> dict` whose `"metrics"` are exactly what its notebook logs, and the small
named functions that map measurements to the claims' metric names (unit-tested in
`tests/acl/test_acl_studies.py`).

    synthetic_modes        01: ACL-AE, GAN and ACL-GAN on the 2-D ring and grid (claims `syn-*`)
    autoencoder_generator  02: ACL-AE against the same decoder fed N(0, I), a fitted Gaussian, a GMM (`ae-*`)
    classifier_generator   03: ACL on a standard classifier's features (`cls-*`)
    gan_vs_acl_gan         04: GAN against ACL-GAN (`gan-*`)
    prior_regions          05: sample quality by region of the prior (`prior-*`), from 02's and 04's results

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539
"""
