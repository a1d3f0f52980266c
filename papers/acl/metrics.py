"""Image-sample metrics on the features of a locally trained classifier ("FID-FMNIST").

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539

The Inception network behind published FIDs cannot be downloaded here, so the feature network is a
small CNN trained on the training split only (its weights are hashed and the hash is recorded with
every result). Numbers computed on these features are NOT comparable with published Inception FIDs.
Frechet distance and KID come from torchmetrics (custom feature network), precision / recall /
density / coverage from `prdc` (Naeem et al. 2020); the class histogram, the memorization ratio (in
pixels and in the evaluation features) and the real-vs-real floor are computed here.
"""
from __future__ import annotations

import hashlib
import warnings

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from common.progress import progress
from common.seed import Streams
from common.threads import one_thread

from .nets import Classifier, adam, batched



class Precomputed(nn.Module):
    """Identity 'feature network' for torchmetrics: features are extracted once, outside."""

    def __init__(self, dim: int):
        super().__init__()
        self.num_features = dim

    def forward(self, feats):
        return feats


def frechet_distance(real: np.ndarray | torch.Tensor, fake: np.ndarray | torch.Tensor) -> float:
    """FID (Heusel et al. 2017; pytorch-fid's `calculate_frechet_distance`): ||mu_r - mu_f||^2 + Tr(S_r + S_f -
    2 (S_r S_f)^(1/2)) via torchmetrics, in float64."""
    from torchmetrics.image.fid import FrechetInceptionDistance

    real, fake = torch.as_tensor(real, dtype=torch.float64), torch.as_tensor(fake, dtype=torch.float64)
    fid = FrechetInceptionDistance(feature=Precomputed(real.shape[1]))
    fid.update(real, real=True)
    fid.update(fake, real=False)
    return float(fid.compute())


def kernel_distance(real, fake, streams, subsets: int = 50, subset_size: int = 1000) -> tuple[float, float]:
    """KID (Binkowski et al. 2018: unbiased MMD^2, cubic polynomial kernel) mean and sd over random subsets
    (torchmetrics)."""
    from torchmetrics.image.kid import KernelInceptionDistance

    real, fake = torch.as_tensor(real, dtype=torch.float64), torch.as_tensor(fake, dtype=torch.float64)
    size = int(min(subset_size, len(real), len(fake)))
    with warnings.catch_warnings():  # "will save all extracted features in buffer": intended here
        warnings.simplefilter("ignore", UserWarning)
        kid = KernelInceptionDistance(feature=Precomputed(real.shape[1]), subsets=subsets, subset_size=size)
    kid.update(real, real=True)
    kid.update(fake, real=False)
    with streams.torch_global("kid-subsets"):  # KID's random subsets (torchmetrics draws from the global generator)
        mean, sd = kid.compute()
    return float(mean), float(sd)


def pairwise_euclidean(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Euclidean distances between the rows of x and y, as the `prdc` package computes them
    (`sklearn.metrics.pairwise_distances(..., metric="euclidean")`, float32 in, float32 out), but in this
    thread: the package asks for n_jobs=8 threads (on a 2-core worker that holds one BLAS thread), and
    sklearn's threaded path warns on every call that joblib's `delayed` is not sklearn's."""
    from sklearn.metrics import pairwise_distances

    return pairwise_distances(x, y, metric="euclidean")


def knn_radii(features: np.ndarray, k: int) -> np.ndarray:
    """Distance of each row to its k-th nearest other row (the `prdc` package's
    `compute_nearest_neighbour_distances`: the (k+1)-th smallest distance, the row itself included)."""
    d = pairwise_euclidean(features, features)
    idx = np.argpartition(d, k + 1, axis=-1)[..., :k + 1]
    return np.take_along_axis(d, idx, axis=-1).max(axis=-1)


def prdc(real, fake, k: int = 5, real_radii: np.ndarray | None = None) -> dict:
    """Precision, recall (Kynkaanniemi et al. 2019), density, coverage (Naeem et al. 2020), k-NN balls: the
    formulas of the `prdc` package (Naeem et al.'s official code, `compute_prdc`), its distances computed in
    this thread (`pairwise_euclidean`); `real_radii` (= `knn_radii(real, k)`) may be passed when one
    reference set scores many samplers."""
    real, fake = np.asarray(real, dtype=np.float32), np.asarray(fake, dtype=np.float32)
    r_real = knn_radii(real, k) if real_radii is None else real_radii
    r_fake = knn_radii(fake, k)
    d = pairwise_euclidean(real, fake)
    inside = d < r_real[:, None]
    out = {"precision": inside.any(axis=0).mean(), "recall": (d < r_fake[None, :]).any(axis=1).mean(),
           "density": (1.0 / float(k)) * inside.sum(axis=0).mean(), "coverage": (d.min(axis=1) < r_real).mean()}
    return {key: float(v) for key, v in out.items()}


def class_histogram(labels: np.ndarray, n_classes: int) -> dict:
    """Fractions per class, the smallest fraction, KL(hist || uniform) and total variation to uniform."""
    frac = np.bincount(np.asarray(labels), minlength=n_classes) / max(1, len(labels))
    nz = frac > 0
    return {"class_frac": frac.tolist(), "class_min_frac": float(frac.min()),
            "class_kl": float((frac[nz] * np.log(frac[nz] * n_classes)).sum()),
            "class_tv": float(0.5 * np.abs(frac - 1 / n_classes).sum())}


def nn_distance(queries: torch.Tensor, reference: torch.Tensor, batch: int = 500) -> np.ndarray:
    """Euclidean distance of each query to its nearest reference row (flattened)."""
    q, r = queries.flatten(1).double(), reference.flatten(1).double()
    out = [torch.cdist(q[i:i + batch], r).min(1).values for i in range(0, len(q), batch)]
    return torch.cat(out).numpy()


def median_nn_distance(queries, reference) -> float:
    """The median over the queries of the Euclidean distance to their nearest reference row (flattened; tensors or
    arrays): either side of the memorization ratio."""
    queries, reference = (torch.as_tensor(np.asarray(a) if not torch.is_tensor(a) else a) for a in (queries, reference))
    return float(np.median(nn_distance(queries, reference)))


def memorization_ratio(samples, train, heldout=None, heldout_median: float | None = None) -> float:
    """median NN distance (samples -> train) / median NN distance (held-out -> train), in the space of
    the rows given (pixels, or the evaluation network's features). About 1 for a model that generalises
    like fresh data; well below 1 flags copies of training images. `heldout_median`: the denominator
    (`median_nn_distance(heldout, train)`) when already computed (the same for every sampler of a run)."""
    if heldout_median is None:
        heldout_median = median_nn_distance(heldout, train)
    return float(median_nn_distance(samples, train) / heldout_median)


def heldout_medians(real_x, train_x, real_features, train_features, m: int) -> dict:
    """The denominators of the memorization ratios of m samples (`Evaluator.heldout_medians`): the median distance
    of the first m reference images to their nearest training image, in pixels ("memorization") and in the
    evaluation features ("memorization_feat"); on one torch thread, as `Evaluator.evaluate`."""
    with one_thread():
        return {"memorization": median_nn_distance(real_x[:m], train_x),
                "memorization_feat": median_nn_distance(real_features[:m], train_features)}


def weights_sha256(model: nn.Module) -> str:
    """Hash of a state dict (names, dtypes, shapes and bytes, in order)."""
    h = hashlib.sha256()
    for name, t in model.state_dict().items():
        t = t.detach().cpu().contiguous()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
        h.update(t.numpy().tobytes())
    return h.hexdigest()


def train_feature_net(x: torch.Tensor, y: torch.Tensor, n_classes: int, epochs: int, streams,
                      batch: int = 128, lr: float = 2e-3, width: int = 16, feat_dim: int = 64) -> Classifier:
    """The evaluation network: a CNN classifier trained on the training split; its initial weights ("init") and
    batches ("batches") from `streams` (`Streams(feat_seed)`: the same network for every run). Trained on one torch
    thread whatever the process holds (`one_thread`), so that its weights do not depend on the core count (a second
    thread changes the last bits of the sums)."""
    with one_thread():
        with streams.torch_global("init"):
            net = Classifier(x.shape[1], x.shape[2], n_classes, width, feat_dim).to(x.device)
        opt = adam(net.parameters(), lr)
        gen = streams.torch_generator("batches")
        steps = epochs * ((len(x) + batch - 1) // batch)
        for _ in progress(range(steps), desc="feature net"):
            idx = torch.randint(len(x), (batch,), generator=gen).to(x.device)
            loss = F.cross_entropy(net(x[idx]), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    net.eval()
    return net


@torch.no_grad()
def accuracy(net: Classifier, x: torch.Tensor, y: torch.Tensor) -> float:
    """The share of x the network labels y (on one torch thread, as its features)."""
    with one_thread():
        return float((batched(net, x).argmax(1) == y).double().mean())


class Evaluator:
    """All sample metrics against one reference set (the test split), with the real-vs-real floor.

    `real` are held-out (test) images, `train` the images the models were trained on (memorization
    reference), `floor_x` other real images of the same count (real-vs-real floor).
    """

    def __init__(self, net: Classifier, real: torch.Tensor, train: torch.Tensor, floor_x: torch.Tensor,
                 n_classes: int, n_prdc: int = 2000, n_mem: int = 1000, k: int = 5, kid_subsets: int = 50,
                 kid_subset_size: int = 1000, streams=None, real_features: np.ndarray | None = None,
                 train_features: np.ndarray | None = None, heldout_medians: dict | None = None):
        """`real_features`, `train_features`: `features(real)`, `features(train)` when already computed
        (`evaluation.reference_features`); `heldout_medians`: `heldout_medians(m)`'s values when already computed,
        by m."""
        self.net, self.n_classes, self.n_prdc, self.n_mem, self.k = net.eval(), n_classes, n_prdc, n_mem, k
        self.kid_subsets, self.kid_subset_size = kid_subsets, kid_subset_size
        self.streams = streams if streams is not None else Streams(0).child("evaluation")
        self.real_x, self.train_x = real, train
        self.real = self.features(real) if real_features is None else real_features
        self._train_feats = train_features
        self._heldout = dict(heldout_medians or {})
        self.floor_x = floor_x
        self.hash = weights_sha256(net)

    def floor(self) -> dict:
        """Real-vs-real: a disjoint real set of the same size scored like a generator (one thread, as `evaluate`)."""
        return self.evaluate(self.floor_x, memorization=True)

    def features(self, x: torch.Tensor) -> np.ndarray:
        return self.features_of(self.net, x)

    @staticmethod
    def features_of(net: Classifier, x: torch.Tensor) -> np.ndarray:
        """The evaluation features of images x (float64 rows), on one torch thread whatever the process holds, so
        that they do not depend on the core count (a notebook's process and a worker give the same bits)."""
        with one_thread():
            return batched(net.features, x).double().cpu().numpy()

    def evaluate(self, samples: torch.Tensor, memorization: bool = True, full: bool = True, kid: bool = True) -> dict:
        """FID, KID (not with `kid=False`), class histogram; with `full` also precision/recall/density/coverage (on
        n_prdc); on one thread (`one_thread`: the same numbers in a notebook's process as in a one-thread worker).
        KID's subsets come from a keyed stream of their own, so skipping it changes no other number."""
        with one_thread():
            return self._evaluate(samples.detach().cpu(), memorization, full, kid)

    def _evaluate(self, samples: torch.Tensor, memorization: bool, full: bool, kid: bool = True) -> dict:
        feats = self.features(samples)
        labels = batched(self.net.head, torch.as_tensor(feats, dtype=torch.float32)).argmax(1).numpy()
        out = {"n": int(len(samples)), "fid": frechet_distance(self.real, feats)}
        if kid:
            out["kid"], out["kid_sd"] = kernel_distance(self.real, feats, self.streams, self.kid_subsets, self.kid_subset_size)
        out.update(class_histogram(labels, self.n_classes))
        if full:
            m = min(self.n_prdc, len(feats), len(self.real))
            out.update(prdc(self.real[:m], feats[:m], self.k, self.real_radii(m)))
        if memorization:
            m = min(self.n_mem, len(samples), len(self.real_x))
            held = self.heldout_medians(m)
            out["memorization"] = memorization_ratio(samples[:m], self.train_x, heldout_median=held["memorization"])
            out["memorization_feat"] = memorization_ratio(feats[:m], self.train_features(),
                                                          heldout_median=held["memorization_feat"])
        return out

    def heldout_medians(self, m: int) -> dict:
        """The memorization ratios' denominators for m samples, {"memorization": pixels, "memorization_feat":
        features}: the median distance of the first m reference images (and of their features) to the nearest
        training image, the same for every sampler; computed once per m (on one thread, as `evaluate`) unless
        given (`heldout_medians`, `evaluation.reference_features`: once per run folder)."""
        if m not in self._heldout:
            self._heldout[m] = heldout_medians(self.real_x, self.train_x, self.real, self.train_features(), m)
        return self._heldout[m]

    def real_radii(self, m: int) -> np.ndarray:
        """k-NN radii of the first m reference features (computed once per m): PRDC's real manifold."""
        cache = self.__dict__.setdefault("_radii", {})
        if m not in cache:
            cache[m] = knn_radii(np.asarray(self.real[:m], dtype=np.float32), self.k)
        return cache[m]

    def train_features(self) -> np.ndarray:
        """Features of the training images (computed once): the reference of the feature-space memorization."""
        if getattr(self, "_train_feats", None) is None:
            self._train_feats = self.features(self.train_x)
        return self._train_feats
