"""The full profile's data path: augmentation (CIFAR crop + flip, ImageNet RandomResizedCrop + flip), one
DataLoader per ImageNet epoch or pass, torchvision float weights, the per-epoch accuracies."""
from common.seed import Streams
import numpy as np
import pytest
import torch

from common.errors import UserError
from papers.asq import data as adata
from papers.asq.data import Split, crop_flip, random_resized_box
from papers.asq.models import build_model, load_torchvision_state
from papers.asq.train import fit


def reference_crop_flip(x, off, flip, fill, pad):
    b, c, h, w = x.shape
    padded = fill.expand(b, c, h + 2 * pad, w + 2 * pad).clone()
    padded[:, :, pad:pad + h, pad:pad + w] = x
    out = torch.stack([padded[i, :, off[0, i]:off[0, i] + h, off[1, i]:off[1, i] + w] for i in range(b)])
    return torch.where(flip[:, None, None, None], out.flip(3), out)


def test_crop_flip_is_a_padded_crop_and_a_mirror():
    x = torch.arange(2 * 3 * 4 * 5, dtype=torch.float32).reshape(2, 3, 4, 5)
    fill = torch.tensor([-1.0, -2.0, -3.0]).reshape(1, 3, 1, 1)
    gen = torch.Generator().manual_seed(7)
    out = crop_flip(x, gen, fill, pad=2)
    gen = torch.Generator().manual_seed(7)                                # the same draws, by hand
    off = torch.randint(0, 5, (2, 2), generator=gen)
    flip = torch.rand(2, generator=gen) < 0.5
    assert torch.equal(out, reference_crop_flip(x, off, flip, fill, 2))
    # centre offset and no flip is the identity; a pad value shows where the crop leaves the image
    ident = reference_crop_flip(x, torch.full((2, 2), 2), torch.tensor([False, False]), fill, 2)
    assert torch.equal(ident, x)
    corner = reference_crop_flip(x, torch.zeros(2, 2, dtype=torch.long), torch.tensor([False, True]), fill, 2)
    assert corner[0, 1, 0, 0] == -2.0 and corner[0, 1, 2, 2] == x[0, 1, 0, 0]
    assert corner[1, 0, 2, 2] == x[1, 0, 0, 0]                          # mirrored: column 0 lands at 4 - 2


def test_random_resized_box_fits_the_image_and_the_scale_range():
    rng = np.random.default_rng(0)
    for _ in range(200):
        left, top, w, h = random_resized_box(300, 200, rng)
        assert 0 <= left and left + w <= 300 and 0 <= top and top + h <= 200
        assert 0.08 * 60000 * 0.9 <= w * h <= 60000
    # no draw fits a 1000 x 10 strip at ratio 3/4..4/3 within scale: the central crop at ratio 4/3
    assert random_resized_box(1000, 10, np.random.default_rng(0), scale=(0.99, 1.0)) == ((1000 - 13) // 2, 0, 13, 10)


def test_in_memory_epochs_augment_only_when_asked_and_repeat_for_a_seed():
    x = torch.randn(12, 3, 8, 8)
    split = Split(x, torch.arange(12), torch.zeros(1, 3, 1, 1), torch.ones(1, 3, 1, 1))
    batches = [torch.tensor([3, 1, 4]), torch.tensor([0, 5, 9])]
    plain = list(split.train_batches(batches, streams=Streams(0), epoch=0, augment=False))
    assert torch.equal(plain[0][0], x[[3, 1, 4]]) and plain[1][1].tolist() == [0, 5, 9]
    a = list(split.train_batches(batches, streams=Streams(0), epoch=0, augment=True))
    b = list(split.train_batches(batches, streams=Streams(0), epoch=0, augment=True))
    c = list(split.train_batches(batches, streams=Streams(0), epoch=1, augment=True))
    assert all(torch.equal(p[0], q[0]) for p, q in zip(a, b))
    assert not torch.equal(a[0][0], c[0][0]) and not torch.equal(a[0][0], plain[0][0])


@pytest.fixture
def imagenet(tmp_path, monkeypatch):
    from common import data as cdata
    from common.fakedata import write_imagefolder

    write_imagefolder(tmp_path, n_classes=2, n_per_class=4, size=40, n_val_per_class=2)
    monkeypatch.setenv("REPRO_DATA", str(tmp_path))
    monkeypatch.setenv("REPRO_DATA_WORKERS", "0")
    monkeypatch.setattr(cdata, "SYSTEM_DIR", tmp_path / "none")
    return adata.load("imagenet")


def test_imagenet_epoch_and_pass_use_one_dataloader_each(imagenet, monkeypatch):
    import torch.utils.data as tud

    train, test, info = imagenet
    made = []
    real = tud.DataLoader

    class Counting(real):
        def __init__(self, *a, **k):
            made.append(1)
            super().__init__(*a, **k)

    monkeypatch.setattr(tud, "DataLoader", Counting)
    batches = [torch.tensor([0, 5]), torch.tensor([2, 7]), torch.tensor([1, 3])]
    got = list(train.train_batches(batches, streams=Streams(0), epoch=0, augment=True))
    assert len(made) == 1 and [tuple(xb.shape) for xb, _ in got] == [(2, 3, 224, 224)] * 3
    assert [yb.tolist() for _, yb in got] == [train.y[b].tolist() for b in batches]
    again = list(train.train_batches(batches, streams=Streams(0), epoch=0, augment=True))
    assert all(torch.equal(p[0], q[0]) for p, q in zip(got, again))       # keyed by (seed, epoch, image)
    plain = list(train.train_batches(batches, streams=Streams(0), epoch=0, augment=False))
    assert not torch.equal(plain[0][0], got[0][0])
    made.clear()
    xs = list(test.eval_batches(3))
    assert len(made) == 1 and sum(len(x) for x, _ in xs) == len(test) == 4 and info["classes"] == 2


def tv_names(state):
    import re
    return {re.sub(r"^layers\.(\d+)\.", lambda m: f"layer{int(m.group(1)) + 1}.", k): v for k, v in state.items()}


def test_torchvision_weights_load_under_their_names(tmp_path):
    src = build_model("resnet18", 5, 3, streams=Streams(1))
    path = tmp_path / "r18.pth"
    torch.save(tv_names(src.state_dict()), path)
    assert any(k.startswith("layer4.") for k in torch.load(path))
    dst = build_model("resnet18", 5, 3, streams=Streams(2))
    load_torchvision_state(dst, path)
    assert all(torch.equal(a, b) for a, b in zip(src.state_dict().values(), dst.state_dict().values()))
    torch.save({"state_dict": {f"module.{k}": v for k, v in tv_names(src.state_dict()).items()}}, path)
    load_torchvision_state(build_model("resnet18", 5, 3, streams=Streams(3)), path)   # DDP / wrapper forms
    with pytest.raises(UserError, match="does not fit") as err:
        load_torchvision_state(build_model("resnet34", 5, 3), path)
    assert "\n" not in str(err.value)
    with pytest.raises(UserError, match="not a file"):
        load_torchvision_state(dst, tmp_path / "absent.pth")
    (tmp_path / "junk.pth").write_text("not a checkpoint")
    with pytest.raises(UserError, match="not a torch state dict"):
        load_torchvision_state(dst, tmp_path / "junk.pth")


def test_fit_keeps_the_accuracy_of_every_epoch():
    gen = torch.Generator().manual_seed(0)
    y = torch.arange(64) % 4
    x = torch.randn(64, 1, 8, 8, generator=gen) * 0.3
    for c in range(4):
        x[y == c, 0, c * 2:c * 2 + 2, :] += 1.5
    data = Split(x, y, torch.zeros(1, 1, 1, 1), torch.ones(1, 1, 1, 1))
    m = build_model("digits_cnn", 4, 1, streams=Streams(0), width=8)
    h = fit(m, data, epochs=3, lr=0.05, weight_decay=1e-4, batch_size=16, streams=Streams(0), key="t", eval_data=data,
            eval_batch=32, augment=True)
    assert len(h["val_acc"]) == 3 and all(0 <= a <= 100 for a in h["val_acc"])
    from papers.asq.train import accuracy
    assert h["val_acc"][-1] == accuracy(m, data, 32)                      # the last entry is the final model's


def test_cosine_per_epoch_is_the_releases_cosine_annealing_and_per_step_the_same_curve():
    import math

    from papers.asq.train import cosine_factor

    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    ref = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=5)      # the release: stepped after each epoch
    per_epoch = []
    for _ in range(5):
        per_epoch.append(opt.param_groups[0]["lr"])
        opt.step()
        ref.step()
    steps = 3
    got = [cosine_factor(t, steps, 5, "epoch") for t in range(5 * steps)]
    assert all(math.isclose(g, per_epoch[t // steps], rel_tol=1e-12, abs_tol=1e-15) for t, g in enumerate(got))
    assert len(set(got[:steps])) == 1 and got[steps] < got[0]              # constant within an epoch
    assert [cosine_factor(t, steps, 5, "step") for t in (0, 15, 99)] == [1.0, 0.0, 0.0]
    assert cosine_factor(7, steps, 5, "step") < cosine_factor(7, steps, 5, "epoch")   # mid-epoch: a different curve
    with pytest.raises(UserError, match="cosine_per"):
        fit(build_model("digits_cnn", 2, 1, width=4), Split(torch.zeros(4, 1, 8, 8), torch.zeros(4, dtype=torch.long),
            None, None), epochs=1, lr=0.1, weight_decay=0, batch_size=2, streams=Streams(0), key="t", cosine_per="x")
