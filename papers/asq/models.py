"""Float models: ResNet-18/34/50 (ImageNet shape), ResNet-20 (CIFAR shape), a small ResNet for
28x28 images and a tiny CNN for 8x8 digits.

Paper: "Precision Neural Network Quantization via Learnable Adaptive Modules",
arXiv:2504.17263, https://arxiv.org/abs/2504.17263 (ResNets as in He et al., arXiv:1512.03385).

Every shortcut that changes shape is a 1x1 convolution + BN (quantized by `convert`).
"""
from __future__ import annotations

import torch
from torch import nn

from common.errors import UserError


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, c_in: int, c_out: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.relu = nn.ReLU(inplace=False)
        self.downsample = None
        if stride != 1 or c_in != c_out:
            self.downsample = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)          # residual add stays in float


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, c_in: int, width: int, stride: int = 1):
        super().__init__()
        c_out = width * self.expansion
        self.conv1 = nn.Conv2d(c_in, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, c_out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(c_out)
        self.relu = nn.ReLU(inplace=False)
        self.downsample = None
        if stride != 1 or c_in != c_out:
            self.downsample = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)


class ResNet(nn.Module):
    """Generic ResNet: stem, stages of blocks, global average pool, FC.

    stem="imagenet": 7x7/2 conv + 3x3/2 max-pool; "cifar": 3x3/1 conv; "small": 3x3/1 conv +
    2x2 max-pool (28x28 -> 14x14).
    """

    def __init__(self, block, layers, widths, num_classes=1000, in_channels=3, stem="imagenet"):
        super().__init__()
        c0 = widths[0]
        if stem == "imagenet":
            self.conv1 = nn.Conv2d(in_channels, c0, 7, 2, 3, bias=False)
            self.pool = nn.MaxPool2d(3, 2, 1)
        else:
            self.conv1 = nn.Conv2d(in_channels, c0, 3, 1, 1, bias=False)
            self.pool = nn.MaxPool2d(2) if stem == "small" else nn.Identity()
        self.bn1 = nn.BatchNorm2d(c0)
        self.relu = nn.ReLU(inplace=False)
        stages, c_in = [], c0
        for i, (n, w) in enumerate(zip(layers, widths)):
            blocks = []
            for j in range(n):
                stride = 2 if (i > 0 and j == 0) else 1
                blocks.append(block(c_in, w, stride))
                c_in = w * block.expansion
            stages.append(nn.Sequential(*blocks))
        self.layers = nn.Sequential(*stages)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(c_in, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        x = self.pool(self.relu(self.bn1(self.conv1(x))))
        x = self.layers(x)
        return self.fc(torch.flatten(self.avgpool(x), 1))


class DigitsCNN(nn.Module):
    """Tiny CNN for 8x8 digits: conv 1->16, conv 16->32, conv 32->32 /2, GAP, FC (~0.1M MACs)."""

    def __init__(self, num_classes=10, in_channels=1, width=16):
        super().__init__()
        w = width
        self.conv1 = nn.Conv2d(in_channels, w, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(w)
        self.conv2 = nn.Conv2d(w, 2 * w, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(2 * w)
        self.conv3 = nn.Conv2d(2 * w, 2 * w, 3, 2, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(2 * w)
        self.relu = nn.ReLU(inplace=False)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2 * w, num_classes)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.relu(self.bn2(self.conv2(x)))
        x = self.relu(self.bn3(self.conv3(x)))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet18(num_classes=1000, in_channels=3):
    """ResNet-18, ImageNet shape (the release's `q_resnet.py: Q_ResNet18_PA` / `Q_ResNet18_Asq` backbone)."""
    return ResNet(BasicBlock, [2, 2, 2, 2], [64, 128, 256, 512], num_classes, in_channels)


def resnet34(num_classes=1000, in_channels=3):
    """ResNet-34, ImageNet shape (`q_resnet.py: Q_ResNet34_Asq`; the abstract's 4-bit ImageNet result)."""
    return ResNet(BasicBlock, [3, 4, 6, 3], [64, 128, 256, 512], num_classes, in_channels)


def resnet50(num_classes=1000, in_channels=3):
    """ResNet-50, ImageNet shape (`q_resnet.py: Q_ResNet50_Asq`)."""
    return ResNet(Bottleneck, [3, 4, 6, 3], [64, 128, 256, 512], num_classes, in_channels)


def resnet20(num_classes=10, in_channels=3):
    """ResNet-20, CIFAR shape (He et al. Sec. 4.2; the release's `q_resnet.py: Q_ResNet20_Asq`, erratum 4)."""
    return ResNet(BasicBlock, [3, 3, 3], [16, 32, 64], num_classes, in_channels, stem="cifar")


def small_resnet(num_classes=10, in_channels=1, width=16):
    """ResNet-8 for 28x28: 3x3 stem, 2x2 max-pool, one BasicBlock per stage (w, 2w, 4w), GAP, FC."""
    return ResNet(BasicBlock, [1, 1, 1], [width, 2 * width, 4 * width], num_classes, in_channels, stem="small")


def digits_cnn(num_classes=10, in_channels=1, width=16):
    """A tiny CNN for the 8x8 digits of the smoke profile (not in the paper)."""
    return DigitsCNN(num_classes, in_channels, width)


ARCHS = {"resnet18": resnet18, "resnet34": resnet34, "resnet50": resnet50, "resnet20": resnet20,
         "small_resnet": small_resnet, "digits_cnn": digits_cnn}


def build_model(arch: str, num_classes: int, in_channels: int, streams=None, **kw) -> nn.Module:
    """A float model whose initial weights are drawn from `streams` (a `common.seed.Streams`: the stream "init",
    torch's global generator forked and restored afterwards); without streams, from torch's global generator as
    it stands (shapes only: the accounting, a benchmark)."""
    from contextlib import nullcontext

    if arch not in ARCHS:
        raise UserError(f"unknown architecture {arch!r}; choose one of {', '.join(ARCHS)}")
    with (streams.torch_global("init") if streams is not None else nullcontext()):
        return ARCHS[arch](num_classes=num_classes, in_channels=in_channels, **kw)


def load_torchvision_state(model: nn.Module, path) -> None:
    """Load a torchvision-format ResNet state dict (e.g. `torchvision.models.resnet34(weights=...)
    .state_dict()` saved with `torch.save`) into one of these ResNets: torchvision's `layer<k>.` is `layers.<k-1>.`
    here, every other name is the same; a `state_dict` / `model` wrapper and DDP's `module.` prefix are unwrapped.
    A missing file, or one whose names or shapes do not fit the model, is a one-line `UserError`."""
    import re
    from pathlib import Path

    from common.errors import UserError

    path = Path(path)
    if not path.is_file():
        raise UserError(f"fp_checkpoint {str(path)!r} is not a file; save torchvision's weights there "
                        f"(README 'Full profile on ImageNet') or drop -p fp_checkpoint")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 -- any unreadable file is the user's to fix
        raise UserError(f"fp_checkpoint {str(path)!r} is not a torch state dict ({type(err).__name__}); "
                        f"save one with torch.save(model.state_dict(), PATH)") from None
    for wrapper in ("state_dict", "model"):
        if isinstance(state, dict) and isinstance(state.get(wrapper), dict):
            state = state[wrapper]
    if not isinstance(state, dict):
        raise UserError(f"fp_checkpoint {str(path)!r} holds no state dict; save one with torch.save(model.state_dict(), PATH)")
    renamed = {re.sub(r"^layer(\d+)\.", lambda m: f"layers.{int(m.group(1)) - 1}.", k.removeprefix("module.")): v
               for k, v in state.items()}
    own = model.state_dict()
    missing = sorted(set(own) - set(renamed))
    extra = sorted(set(renamed) - set(own))
    bad = sorted(k for k in set(own) & set(renamed) if tuple(own[k].shape) != tuple(renamed[k].shape))
    if missing or extra or bad:
        first = (missing or extra or bad)[0]
        raise UserError(f"fp_checkpoint {str(path)!r} does not fit this model ({len(missing)} names missing, "
                        f"{len(extra)} unexpected, {len(bad)} of another shape, e.g. {first!r}); "
                        f"use torchvision's weights of the same -p arch")
    model.load_state_dict(renamed)
