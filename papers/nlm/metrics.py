"""Sample-quality metrics, all vectorized, on images s = φ(x) (arXiv:2506.23546, Sec. on evaluation).

* Nearest-neighbour adversarial accuracy (Yale et al. 2020, as used by Decelle et al. 2021):
  Acc_T = fraction of true images whose nearest neighbour in (true ∪ synthetic) is true,
  Acc_S = fraction of synthetic images whose nearest neighbour is synthetic,
  E_AAI = ½[(Acc_S − ½)² + (Acc_T − ½)²]. Copies of the true set give 0 and 0, a good generator ½ and ½.
* E_2: mean squared difference of the true and synthetic covariance matrices.
* Memorized fraction (Gu et al. 2025): a sample is a copy when d(nearest train) < ⅓ d(second nearest).
"""
from __future__ import annotations

import numpy as np
import torch


def _t(a):
    return torch.as_tensor(np.asarray(a) if not isinstance(a, torch.Tensor) else a, dtype=torch.float64)


def pairwise(a, b):
    """Euclidean distances (len(a), len(b)) (clamped at 0 before the square root)."""
    a, b = _t(a), _t(b)
    d2 = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * a @ b.T
    return d2.clamp_min(0.0).sqrt()


def _nn_excluding_self(d):
    d = d.clone()
    d.fill_diagonal_(float("inf"))
    return d.min(1).values


def adversarial_accuracy(true, synth) -> dict:
    """Acc_T, Acc_S and E_AAI = ½[(Acc_S − ½)² + (Acc_T − ½)²], the nearest-neighbour adversarial accuracy
    (Yale et al. 2020, as Decelle, Furtlehner & Seoane 2021 use it; the paper's memorization-generalization and
    E_AAI vs generation time figures). Ties count as 'other kind', so exact copies give 0."""
    d_tt = _nn_excluding_self(pairwise(true, true))
    d_ss = _nn_excluding_self(pairwise(synth, synth))
    d_ts = pairwise(true, synth)
    acc_t = float((d_tt < d_ts.min(1).values).double().mean())
    acc_s = float((d_ss < d_ts.min(0).values).double().mean())
    return {"acc_t": acc_t, "acc_s": acc_s, "e_aai": 0.5 * ((acc_s - 0.5) ** 2 + (acc_t - 0.5) ** 2)}


def covariance_error(true, synth) -> float:
    """E_2 = mean_ij (C_true − C_synth)², the covariance error of the E_AAI vs generation time figure."""
    ct, cs = np.cov(np.asarray(true, dtype=np.float64).T), np.cov(np.asarray(synth, dtype=np.float64).T)
    return float(np.mean((ct - cs) ** 2))


def nearest_two(samples, reference):
    """Distances to the nearest and second-nearest reference image, and the nearest index."""
    d = pairwise(samples, reference)
    v, i = torch.topk(d, 2, dim=1, largest=False)
    return v[:, 0].numpy(), v[:, 1].numpy(), i[:, 0].numpy()


def memorized_fraction(samples, train, ratio: float = 1.0 / 3.0) -> float:
    """Fraction of samples whose nearest training image is closer than `ratio` of the second nearest (Gu et al.,
    "On Memorization in Diffusion Models"; a secondary diagnostic, not the paper's measure)."""
    d1, d2, _ = nearest_two(samples, train)
    return float(np.mean(d1 < ratio * d2))


def data_radius(train, test, q: float = 0.95) -> float:
    """The q-quantile of the held-out images' distance to their nearest training image."""
    return float(np.quantile(nearest_distance(test, train), q))


def generalized_fraction(samples, train, test, q: float = 0.95, ratio: float = 1.0 / 3.0) -> float:
    """Fraction of samples that are new data: not copies (d1 >= ratio * d2, Gu et al.) and as close to
    the training set as held-out images are (d1 <= the q-quantile of the held-out images' d1).

    Held-out images themselves score about q (they are not copies); noise, or a model that learned
    nothing, scores 0 (far from every image); a model that copies scores 0 too.
    """
    d1, d2, _ = nearest_two(samples, train)
    return float(np.mean((d1 >= ratio * d2) & (d1 <= data_radius(train, test, q))))


def nearest_distance(samples, reference) -> np.ndarray:
    return pairwise(samples, reference).min(1).values.numpy()


def nearest_centroid_labels(samples, images, labels):
    """Class of the nearest class mean (used to label frames of a chain)."""
    classes = np.unique(labels)
    cents = np.stack([np.asarray(images)[labels == c].mean(0) for c in classes])
    return classes[pairwise(samples, cents).argmin(1).numpy()]


def distance_ratio(d_gen: float, d_test: float) -> float:
    """d_gen / d_test, the median sample-to-training distance over the median test-to-training distance; NaN
    (not measured) when held-out images sit on training images (d_test = 0): the ratio has no scale then."""
    return d_gen / d_test if d_test > 0 else float("nan")


def quality(samples, train, test) -> dict:
    """All metrics of one set of samples against the training and the held-out test images.

    AAI uses as many samples as reference images (the first ones) so both classes weigh equally.
    """
    samples = np.asarray(samples, dtype=np.float64)
    n_tr, n_te = min(len(train), len(samples)), min(len(test), len(samples))
    tr = adversarial_accuracy(train[:n_tr], samples[:n_tr])
    te = adversarial_accuracy(test[:n_te], samples[:n_te])
    d_gen = nearest_distance(samples, train)
    d_test = nearest_distance(test, train)
    return {
        "acc_t_train": tr["acc_t"], "acc_s_train": tr["acc_s"], "e_aai_train": tr["e_aai"],
        "acc_t_test": te["acc_t"], "acc_s_test": te["acc_s"], "e_aai_test": te["e_aai"],
        "e2_test": covariance_error(test, samples) if len(samples) > 2 else float("nan"),
        "memorized": memorized_fraction(samples, train),
        "d_gen_median": float(np.median(d_gen)), "d_test_median": float(np.median(d_test)),
        "d_gen_test_median": float(np.median(nearest_distance(samples, test))),
    }
