"""Baselines that sample an autoencoder's decoder without ACL, on the same trained decoder.

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539 -- ACL claims to turn a non-generative AE into a generator; these
are the cheap alternatives it has to beat:
  * `normal`: z ~ N(0, I) fed straight to the decoder (an AE "has no generative samples");
  * `gauss`: a full-covariance Gaussian fitted to the codes E(x);
  * `gmm`: a Gaussian mixture (10 components, full covariance) fitted to the codes -- the ex-post
    density of RAE (Ghosh et al., ICLR 2020).
"""
from __future__ import annotations

import warnings

import numpy as np


BASELINES = ("normal", "gauss", "gmm")  # the keys of code_samplers(): N(0, I), fitted Gaussian, GMM


def fit_gaussian(codes: np.ndarray):
    """(mean, covariance) of the codes (maximum likelihood, divide by n)."""
    mu = codes.mean(0)
    cov = np.cov(codes, rowvar=False, bias=True).reshape(codes.shape[1], codes.shape[1])
    return mu, cov


def code_samplers(codes: np.ndarray, gmm_components: int = 10, seed: int = 0, gmm_iters: int = 100) -> dict:
    """{name: sample(n, rng) -> (n, code_dim)} for the three baselines fitted on `codes` (RAE's ex-post density,
    Ghosh et al. 2020, official code `estimate_density_and_sample.py`, "GMM_10"; `gmm_iters`: EM
    iterations at most, sklearn's max_iter)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.mixture import GaussianMixture

    codes = np.asarray(codes, dtype=np.float64)
    d = codes.shape[1]
    mu, cov = fit_gaussian(codes)
    with warnings.catch_warnings():  # an EM run stopped by gmm_iters is deliberate (quick profile)
        warnings.simplefilter("ignore", ConvergenceWarning)
        gmm = GaussianMixture(gmm_components, covariance_type="full", random_state=seed, reg_covar=1e-5,
                              max_iter=gmm_iters).fit(codes)

    def gmm_sample(n, rng):  # sklearn's own sample() has no rng argument: draw components, then Gaussians
        k = rng.choice(gmm_components, size=n, p=gmm.weights_)
        chol = np.linalg.cholesky(gmm.covariances_)
        e = rng.standard_normal((n, d))
        return gmm.means_[k] + np.einsum("nij,nj->ni", chol[k], e)

    return {
        "normal": lambda n, rng: rng.standard_normal((n, d)),
        "gauss": lambda n, rng: rng.multivariate_normal(mu, cov, size=n, method="eigh"),
        "gmm": gmm_sample,
    }
