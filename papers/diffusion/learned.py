"""A learned score on real data: speciation of a small network trained by denoising score matching.

Paper extended: Yu & Huang, https://arxiv.org/abs/2405.11932 (same OU forward process, no
schedule), compared with Biroli et al., https://arxiv.org/abs/2402.18491: t_s = ½ ln Λ, with Λ
the largest eigenvalue of the data covariance.

* Data: two classes of a dataset (digits 8x8 or Fashion-MNIST downsampled), pixels mapped to
  [−1, 1] and flattened; the two-cluster analogue of the paper's ½N(±μ, σ²).
* Model: ε_θ(x, t), an MLP with sinusoidal features of ln t. Denoising score matching on the
  same process, X_t = e^{−t}X_0 + √Δ_t ε: loss |ε_θ(X_t, t) − ε|², score s_θ = −ε_θ/√Δ_t.
* Speciation measured by cloning: noise a held-out image to time t, run two reverse SDEs
  dX = [X + 2 s_θ(X, t)] d(−t) + √2 dW from the same X_t with independent noise, classify both
  end points by the nearest class mean, and record how often they agree.
"""
from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from common.errors import UserError
from common.seed import Streams

from .highdim import grid_crossing, grid_crossing_se


@dataclass
class TwoClassData:
    x_train: np.ndarray   # (n, D) in [−1, 1]
    y_train: np.ndarray   # 0/1
    x_test: np.ndarray
    y_test: np.ndarray
    classes: tuple
    provenance: list

    @property
    def dim(self) -> int:
        return self.x_train.shape[1]

    def top_eigenvalue(self) -> float:
        """Λ, the largest eigenvalue of the training covariance."""
        return float(np.linalg.eigvalsh(np.cov(self.x_train.T))[-1])

    def speciation_time(self) -> float:
        """t_s = ½ ln Λ (Biroli et al., arXiv:2402.18491, speciation on real data); nan when Λ ≤ 1."""
        lam = self.top_eigenvalue()
        return 0.5 * math.log(lam) if lam > 1 else float("nan")   # t_s = ½ ln Λ

    def independent_agreement(self) -> float:
        """Σ_c w_c² of the training labels: how often two independent draws from the data land in the
        same class, the value the cloning probability relaxes to long after speciation (Biroli et al.)."""
        w = np.bincount(np.asarray(self.y_train, dtype=int), minlength=2) / len(self.y_train)
        return float((w * w).sum())


def load_two_classes(name: str, classes=(0, 1), downsample: int = 1) -> TwoClassData:
    """Two classes of `name` through common.data, pixels in [−1, 1], optional k×k average pooling."""
    from common.data import load_dataset

    if len(classes) != 2 or classes[0] == classes[1]:
        raise UserError(f"classes must be two different labels; got {classes}")
    out = []
    prov = []
    for split in ("train", "test"):
        ds = load_dataset(name, split=split)
        prov += list(ds.provenance or [])
        x = np.asarray(ds.x, dtype=np.float64)
        if downsample > 1:
            n, c, h, w = x.shape
            k = int(downsample)
            if h % k or w % k:
                raise UserError(f"downsample={k} must divide the image size {h}x{w}")
            x = x.reshape(n, c, h // k, k, w // k, k).mean((3, 5))
        keep = np.isin(ds.y, classes)
        if not keep.any():
            raise UserError(f"no images of classes {classes} in {name}; pick labels that exist")
        out.append((2.0 * x[keep].reshape(keep.sum(), -1) - 1.0, (ds.y[keep] == classes[1]).astype(np.int64)))
    return TwoClassData(out[0][0], out[0][1], out[1][0], out[1][1], tuple(classes), prov)


@contextmanager
def single_thread():
    """Tiny networks run fastest on one thread (several threads only add synchronisation)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class ScoreNet(nn.Module):
    """ε_θ(x, t): an MLP on [x, sin/cos(ω_k ln t)] with SiLU activations."""

    def __init__(self, dim: int, hidden: int = 256, depth: int = 3, n_freq: int = 16):
        super().__init__()
        self.register_buffer("freqs", torch.exp(torch.linspace(math.log(0.25), math.log(8.0), n_freq)))
        layers, width = [], dim + 2 * n_freq
        for _ in range(depth):
            layers += [nn.Linear(width, hidden), nn.SiLU()]
            width = hidden
        layers.append(nn.Linear(width, dim))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        ang = torch.log(t)[:, None] * self.freqs[None, :]
        return self.net(torch.cat([x, torch.sin(ang), torch.cos(ang)], dim=-1))

    def score(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return -self(x, t) / torch.sqrt(-torch.expm1(-2.0 * t))[:, None]   # s_θ = −ε_θ/√Δ_t


def untrained_score(data: TwoClassData, streams: Streams, hidden: int = 256, device="cpu") -> ScoreNet:
    """The same network at its initialisation (the weights `train_score` starts from): a model that
    learned nothing, the null of the learned-score measurement. Initialised from the stream "score-init"
    (torch's global generator forked and restored), on the CPU: the same weights on any device."""
    with streams.torch_global("score-init"):
        model = ScoreNet(data.dim, hidden=hidden)
    return model.to(device).eval()


def shuffled_labels(data: TwoClassData, streams: Streams) -> TwoClassData:
    """The same images with their training class labels permuted: data without the class structure."""
    rng = streams.rng("shuffled-labels")
    return TwoClassData(data.x_train, rng.permutation(data.y_train), data.x_test, data.y_test,
                        data.classes, data.provenance)


def train_score(data: TwoClassData, steps: int, streams: Streams, batch: int = 256, lr: float = 2e-3,
                hidden: int = 256, t_min: float = 1e-3, t_max: float = 5.0, show_progress: bool = False,
                device="cpu"):
    """Denoising score matching; returns (model, loss history). Random numbers are drawn on the
    CPU from the stream "dsm" and moved to `device`, so a run is reproducible on any device.

    Denoising score matching (Song et al., ICLR 2021) on the paper's forward OU process: an extension, the paper
    trains no network."""
    if steps < 1 or batch < 1:
        raise UserError(f"steps and batch must be positive; got {steps}, {batch}")
    from common.progress import progress

    model = untrained_score(data, streams, hidden, device).train()   # float32: a network, not the physics
    gen = streams.torch_generator("dsm")
    x_all = torch.as_tensor(data.x_train, dtype=torch.float32).to(device)
    # one fused kernel for the whole update (a loop of small tensor ops otherwise): the same update up to float32 rounding
    opt = torch.optim.Adam(model.parameters(), lr=lr, fused=x_all.device.type in ("cpu", "cuda"))
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    losses = torch.empty(steps, device=x_all.device)   # kept on the device: no host sync per step
    it = range(steps)
    if show_progress:
        it = progress(it, total=steps, desc="score matching")
    lo, hi = math.log(t_min), math.log(t_max)
    with single_thread():
        for i in it:
            losses[i] = _dsm_step(model, opt, sched, x_all, batch, gen, lo, hi, t_min, t_max)
    model.eval()
    return model, losses.cpu().numpy().astype(np.float64)


def _dsm_step(model, opt, sched, x_all, batch, gen, lo, hi, t_min, t_max):
    """One step of denoising score matching; t is half log-uniform, half uniform on [t_min, t_max]."""
    dev = x_all.device
    idx = torch.randint(0, x_all.shape[0], (batch,), generator=gen).to(dev)
    x0 = x_all[idx]
    u = torch.rand(batch, generator=gen).to(dev)
    t = torch.where(torch.arange(batch, device=dev) % 2 == 0, torch.exp(lo + (hi - lo) * u), t_min + (t_max - t_min) * u)
    eps = torch.randn(x0.shape, generator=gen).to(dev)
    xt = torch.exp(-t)[:, None] * x0 + torch.sqrt(-torch.expm1(-2 * t))[:, None] * eps   # X_t = e^{−t}X_0 + √Δ ε
    loss = ((model(xt, t) - eps) ** 2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    sched.step()
    return loss.detach()


@torch.no_grad()
def reverse_sample(model: ScoreNet, x_t: torch.Tensor, t0: float, n_steps: int, gen: torch.Generator,
                   t_end: float = 1e-3) -> torch.Tensor:
    """Euler-Maruyama for the reverse SDE from t0 to t_end on a geometric grid, then Tweedie's
    denoiser E[X_0 | X_t] = (X_t + Δ_t s_θ)/e^{−t} at t_end.

    The backward SDE of Sec. V with the learned score."""
    ts = np.geomspace(t0, t_end, n_steps + 1)
    x = x_t.clone()
    for a, b in zip(ts[:-1], ts[1:]):
        h = a - b
        tt = torch.full((x.shape[0],), a, dtype=x.dtype, device=x.device)
        drift = x + 2.0 * model.score(x, tt)                        # reverse drift X + 2∇ln p_t
        x = x + drift * h + math.sqrt(2.0 * h) * torch.randn(x.shape, generator=gen, dtype=x.dtype).to(x.device)
    tt = torch.full((x.shape[0],), t_end, dtype=x.dtype, device=x.device)
    return (x + (-math.expm1(-2 * t_end)) * model.score(x, tt)) / math.exp(-t_end)


def _starts(data: TwoClassData, n_start: int, streams: Streams) -> np.ndarray:
    pool = np.concatenate([data.x_test, data.x_train])
    rng = streams.rng("clone-starts")
    return pool[rng.choice(pool.shape[0], size=min(int(n_start), pool.shape[0]), replace=False)]


def cloning_curve(model: ScoreNet, data: TwoClassData, ts, n_start: int, n_steps: int, streams: Streams,
                  n_clones: int = 8):
    """P(two clones from the same noised image end in the same class), with its SE.

    Each start X_t gets n_clones reverse runs; the fraction of agreeing pairs among them,
    Σ_c k_c(k_c − 1)/(K(K − 1)), is an unbiased estimate of Σ_c P(c | X_t)².

    Biroli et al. (arXiv:2402.18491), cloning with a learned score.
    """
    if n_clones < 2:
        raise UserError(f"n_clones must be >= 2; got {n_clones}")
    device = next(model.parameters()).device
    x0 = torch.as_tensor(_starts(data, n_start, streams), dtype=torch.float32).to(device)
    centres = np.stack([data.x_train[data.y_train == c].mean(0) for c in (0, 1)])
    probs, ses = [], []
    with single_thread():
        for j, t in enumerate(np.atleast_1d(ts)):
            gen = streams.torch_generator("clones", j)
            eps = torch.randn(x0.shape, generator=gen).to(device)
            xt = math.exp(-t) * x0 + math.sqrt(-math.expm1(-2 * t)) * eps
            ends = reverse_sample(model, xt.repeat(n_clones, 1), float(t), n_steps, gen).cpu().numpy()
            lab = ((ends[:, None, :] - centres[None]) ** 2).sum(-1).argmin(-1).reshape(n_clones, -1)
            k1 = lab.sum(0).astype(np.float64); k0 = n_clones - k1
            agree = (k0 * (k0 - 1) + k1 * (k1 - 1)) / (n_clones * (n_clones - 1))
            probs.append(agree.mean()); ses.append(agree.std(ddof=1) / math.sqrt(agree.size))
    return np.array(probs), np.array(ses)


def empirical_cloning_curve(data: TwoClassData, ts, n_start: int, streams: Streams, n_noise: int = 4,
                            return_se: bool = False):
    """The same curve for the exact *empirical* score of the training set (no network): the reverse
    process from X_t ends on training point i with probability P(i | X_t), so the class-agreement
    probability is Σ_c (Σ_{i∈c} P(i | X_t))², averaged over noised images.

    Biroli et al. (arXiv:2402.18491), cloning with the exact empirical score."""
    a = data.x_train; y = data.y_train
    a2 = (a * a).sum(-1)
    x0 = _starts(data, n_start, streams)
    out, ses = [], []
    for j, t in enumerate(np.atleast_1d(ts)):
        rng = streams.rng("empirical-clones", j)
        e = math.exp(-t); delta = -math.expm1(-2 * t)
        xt = (e * x0[None] + math.sqrt(delta) * rng.standard_normal((n_noise,) + x0.shape)).reshape(-1, a.shape[1])
        logits = (2 * e * xt @ a.T - e * e * a2[None]) / (2 * delta)     # −|x − e a_i|²/(2Δ) + const
        logits -= logits.max(1, keepdims=True)
        w = np.exp(logits); w /= w.sum(1, keepdims=True)
        pc = np.stack([w[:, y == c].sum(1) for c in (0, 1)], 1)
        per_start = (pc * pc).sum(1).reshape(n_noise, -1).mean(0)   # the noise draws of one image together
        out.append(float(per_start.mean()))
        ses.append(float(per_start.std(ddof=1) / math.sqrt(per_start.size)))
    return (np.array(out), np.array(ses)) if return_se else np.array(out)


crossing_time = grid_crossing          # first downward crossing of a level on a grid (highdim)
crossing_time_se = grid_crossing_se    # its delta-method standard error
