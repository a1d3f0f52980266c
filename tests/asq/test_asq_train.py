"""Training loop: determinism for a seed, resume equals uninterrupted, QAT improves on random."""
from common.seed import Streams
import torch

from papers.asq.data import Split, stratified_indices
from papers.asq.models import build_model
from papers.asq.train import accuracy, fit, make_qat


def toy_data(n=256, seed=0):
    gen = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 4
    x = torch.randn(n, 1, 8, 8, generator=gen) * 0.3
    for c in range(4):
        x[y == c, 0, c * 2:(c * 2) + 2, :] += 1.5                        # class-dependent stripe
    return Split(x, y, None, None)


def train_once(tmp_path=None, epochs=2, stop_epoch=None):
    data = toy_data()
    m = build_model("digits_cnn", 4, 1, streams=Streams(0), width=8)
    ckpt = None if tmp_path is None else tmp_path / "m.ckpt"
    fit(m, data, epochs=epochs, lr=0.05, weight_decay=1e-4, batch_size=32, streams=Streams(0), key="t", ckpt=ckpt,
        stop_epoch=stop_epoch)
    return m, data


def test_float_training_deterministic_and_learns():
    a, data = train_once()
    b, _ = train_once()
    for p, q in zip(a.state_dict().values(), b.state_dict().values()):
        assert torch.equal(p, q)
    assert accuracy(a, data) > 60


def test_resume_matches_uninterrupted(tmp_path):
    full, _ = train_once(tmp_path / "a", epochs=2)
    (tmp_path / "b").mkdir()
    train_once(tmp_path / "b", epochs=2, stop_epoch=1)            # interrupted after one epoch ...
    data = toy_data()
    m = build_model("digits_cnn", 4, 1, streams=Streams(0), width=8)
    fit(m, data, epochs=2, lr=0.05, weight_decay=1e-4, batch_size=32, streams=Streams(0), key="t", ckpt=tmp_path / "b" / "m.ckpt")
    for p, q in zip(full.state_dict().values(), m.state_dict().values()):
        assert torch.allclose(p, q, atol=0, rtol=0)


def test_qat_fine_tune_runs_and_is_deterministic():
    fm, data = train_once()
    accs = []
    for _ in range(2):
        q = make_qat(fm, data, method="asq", w_bits=4, a_bits=4, grid="post", first_last="fp", streams=Streams(0))
        fit(q, data, epochs=1, lr=0.01, weight_decay=1e-4, batch_size=32, streams=Streams(0), key="q")
        accs.append(accuracy(q, data))
    assert accs[0] == accs[1] and accs[0] > 50


def test_stratified_subset():
    import numpy as np

    y = np.repeat(np.arange(5), 100)
    idx = stratified_indices(y, 50, Streams(0).rng("subset"))
    assert len(idx) == 50 and (np.bincount(y[idx]) == 10).all()
    assert (stratified_indices(y, 50, Streams(0).rng("subset")) == idx).all()          # the same stream, the same draw
    assert not (stratified_indices(y, 50, Streams(1).rng("subset")) == idx).all()      # another run's stream
