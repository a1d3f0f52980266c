"""Networks: MLPs for codes and 2-D data, a conv encoder/decoder pair, the image discriminator.

Paper: J. Yuan, B. Wu, W. Ding, Q. Ping, Z. Yu, "Adversarial Code Learning for Image Generation",
arXiv:2001.11539, https://arxiv.org/abs/2001.11539

Conv nets take (N, C, S, S) images with S divisible by 4 (8x8 digits, 28x28 Fashion-MNIST/MNIST,
32x32 CIFAR-10): two stride-2 convolutions down, two stride-2 transposed convolutions up.
"""
from __future__ import annotations


import torch
from torch import nn

from .flatadam import FlatAdam
from .pooling import MaxPool2x2


def mlp(sizes: list[int], act: str = "relu", norm: bool = False) -> nn.Sequential:
    """Linear layers with `act` between them (none after the last); optional LayerNorm."""
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            if norm:
                layers.append(nn.LayerNorm(b))
            layers.append(nn.ReLU() if act == "relu" else nn.LeakyReLU(0.2))
    return nn.Sequential(*layers)


class ConvEncoder(nn.Module):
    """x -> code: conv(4, s2) -> conv(4, s2) -> linear. Also the image discriminator (out_dim=1)."""

    def __init__(self, channels: int, size: int, out_dim: int, width: int = 32):
        super().__init__()
        if size % 4:
            raise ValueError(f"image size {size} is not divisible by 4")
        self.out_dim = out_dim
        self.body = nn.Sequential(
            nn.Conv2d(channels, width, 4, 2, 1), nn.LeakyReLU(0.2),
            nn.Conv2d(width, 2 * width, 4, 2, 1), nn.LeakyReLU(0.2), nn.Flatten())
        self.head = nn.Linear(2 * width * (size // 4) ** 2, out_dim)

    def forward(self, x):
        return self.head(self.body(x))


class ConvDecoder(nn.Module):
    """code -> x in [0, 1]: linear -> convT(4, s2) -> convT(4, s2) -> sigmoid (also the GAN generator)."""

    def __init__(self, code_dim: int, channels: int, size: int, width: int = 32, batchnorm: bool = False):
        super().__init__()
        self.code_dim, self.width, self.s = code_dim, width, size // 4
        bn = (lambda c: nn.BatchNorm2d(c)) if batchnorm else (lambda c: nn.Identity())
        self.fc = nn.Linear(code_dim, 2 * width * self.s ** 2)
        self.body = nn.Sequential(
            bn(2 * width), nn.ReLU(),
            nn.ConvTranspose2d(2 * width, width, 4, 2, 1), bn(width), nn.ReLU(),
            nn.ConvTranspose2d(width, channels, 4, 2, 1), nn.Sigmoid())

    def forward(self, c):
        return self.body(self.fc(c).view(-1, 2 * self.width, self.s, self.s))


class Classifier(nn.Module):
    """A standard CNN classifier; `features(x)` is its penultimate layer (post-ReLU)."""

    def __init__(self, channels: int, size: int, n_classes: int = 10, width: int = 16, feat_dim: int = 64):
        super().__init__()
        self.num_features = feat_dim  # read by torchmetrics' FID/KID for a custom feature network
        self.trunk = nn.Sequential(
            nn.Conv2d(channels, width, 3, 1, 1), nn.ReLU(), MaxPool2x2(),   # nn.MaxPool2d(2), faster in evaluation
            nn.Conv2d(width, 2 * width, 3, 1, 1), nn.ReLU(), MaxPool2x2(), nn.Flatten(),
            nn.Linear(2 * width * (size // 4) ** 2, feat_dim), nn.ReLU())
        self.head = nn.Linear(feat_dim, n_classes)

    def features(self, x):
        return self.trunk(x)

    def forward(self, x):
        return self.head(self.trunk(x))


def adam(params, lr: float, **kw) -> torch.optim.Adam:
    """torch's Adam, its update run on one flat buffer per parameter group on the CPU (`flatadam.FlatAdam`: the
    per-tensor update's numbers bit for bit in about eight tensor operations per step instead of eight per
    parameter tensor, which counts for the small MLPs of the code phases); off the CPU torch's multi-tensor
    (`foreach`) update, the same numbers as the per-tensor one."""
    return FlatAdam(params, lr, **kw)


def n_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


@torch.no_grad()
def batched(fn, x: torch.Tensor, batch: int = 2000) -> torch.Tensor:
    """fn applied to x in chunks (inference, no grad)."""
    return torch.cat([fn(x[i:i + batch]) for i in range(0, len(x), batch)]) if len(x) else fn(x)
