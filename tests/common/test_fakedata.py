"""The stand-in datasets load through `common.data` exactly as the official files do."""
import numpy as np

from common import data, fakedata


def test_idx_header_is_magic_dims_then_bytes():
    raw = fakedata.idx_bytes(np.array([[1, 2, 3], [4, 5, 6]], dtype=np.uint8))
    assert raw[:4] == bytes([0, 0, 8, 2]) and raw[4:12] == bytes([0, 0, 0, 2, 0, 0, 0, 3])
    assert list(raw[12:]) == [1, 2, 3, 4, 5, 6]
    assert data.parse_idx(raw).tolist() == [[1, 2, 3], [4, 5, 6]]


def test_fake_mnist_and_cifar10_load_with_their_shapes(tmp_path, monkeypatch):
    fakedata.write_mnist(tmp_path, n_train=12, n_test=7)
    fakedata.write_cifar10(tmp_path, n_train=11, n_test=5)
    monkeypatch.setenv("REPRO_DATA", str(tmp_path))
    tr, te = data.load_dataset("mnist", "train"), data.load_dataset("mnist", "test")
    assert tr.x.shape == (12, 1, 28, 28) and te.x.shape == (7, 1, 28, 28) and tr.x.max() == 1.0
    c = data.load_dataset("cifar10", "train")
    assert c.x.shape == (11, 3, 32, 32) and c.y.shape == (11,) and data.available("cifar10")
    assert data.load_dataset("cifar10", "test").x.shape == (5, 3, 32, 32)
    # the bar's row encodes the label: the brightest row of every image is the class's row
    rows = tr.x[:, 0].mean(axis=2).argmax(axis=1)
    assert np.array_equal(rows, (1 + tr.y) * 28 // 12)


def test_fake_imagefolder_loads_as_imagenet(tmp_path, monkeypatch):
    fakedata.write_imagefolder(tmp_path, n_classes=2, n_per_class=3, n_val_per_class=1, size=32)
    monkeypatch.setenv("REPRO_DATA", str(tmp_path))
    val = data.load_dataset("imagenet", "test")
    assert len(val) == 2 and val.classes == ("n00000000", "n00000001") and val.y.tolist() == [0, 1]
    assert len(data.load_dataset("imagenet", "train")) == 6
