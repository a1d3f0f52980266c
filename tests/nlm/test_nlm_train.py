"""Training: determinism, resume = uninterrupted, likelihood ascent, generate, bad input."""
import numpy as np
import pytest
import torch

from common.errors import UserError
from papers.nlm import denoise, encoding
from papers.nlm.train import STABILITY_EVERY, Trainer, TrainConfig, generate


def _data():
    g = torch.Generator().manual_seed(0)
    return torch.randn(30, 6, generator=g) * 0.8


def _cfg(**kw):
    base = dict(n_chains=8, k=3, lr=1e-2, batch=10)
    base.update(kw)
    return TrainConfig(**base)


def test_deterministic_and_resume_equals_uninterrupted(tmp_path):
    x = _data()
    for opt, mb in (("adam", "replace"), ("sgd", "replace"), ("gd", "replace"), ("adam", "epochs")):
        # epochs: 7 updates end inside the third epoch of the P = 30 model (batches of 10): the resume keeps its order
        a = Trainer(x, [5, 30], _cfg(optimizer=opt, minibatch=mb), generator=torch.Generator().manual_seed(4)); a.train(12, show_progress=False)
        b = Trainer(x, [5, 30], _cfg(optimizer=opt, minibatch=mb), generator=torch.Generator().manual_seed(4)); b.train(7, show_progress=False)
        b.save(tmp_path / "ck.pt")
        c = Trainer(x, [5, 30], _cfg(optimizer=opt, minibatch=mb), generator=torch.Generator().manual_seed(99)).resume(tmp_path / "ck.pt")
        c.train(5, show_progress=False)
        assert torch.equal(a.J, c.J) and torch.equal(a.b, c.b) and torch.equal(a.chains, c.chains)
        assert float(a.J.detach().diagonal(dim1=-2, dim2=-1).abs().max()) == 0.0
    with pytest.raises(UserError):
        Trainer(x, [5, 20, 30], _cfg(), generator=torch.Generator().manual_seed(4)).resume(tmp_path / "ck.pt")   # another shape
    with pytest.raises(UserError):
        Trainer(torch.randn(30, 7), [5, 30], _cfg(), generator=torch.Generator().manual_seed(4)).resume(tmp_path / "ck.pt")


def test_rdm_mode_and_generate(tmp_path):
    x = _data()
    t = Trainer(x, [10], _cfg(mode="rdm", k=5), generator=torch.Generator().manual_seed(1)); t.train(3, show_progress=False)
    t.save(tmp_path / "m.pt")
    img, snaps = generate(tmp_path / "m.pt", n=4, steps=20, generator=torch.Generator().manual_seed(2), snap_at=[10])
    img2, _ = generate(tmp_path / "m.pt", n=4, steps=20, generator=torch.Generator().manual_seed(2))
    assert img.shape == (4, 6) and np.array_equal(img, img2) and np.abs(img).max() < 1 and 10 in snaps
    with pytest.raises(UserError):
        generate(tmp_path / "m.pt", n=2, steps=2, model=3)
    with pytest.raises(UserError):
        generate(tmp_path / "m.pt", n=2, steps=2, T=-1.0)
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(UserError):
        generate(tmp_path / "junk.pt", n=2, steps=2)


def test_sgd_learns_the_data_mean():
    """The pure local rule moves b so that model and data phases agree (here: a shifted data set)."""
    x = torch.full((50, 3), 1.0) + 0.1 * torch.randn(50, 3, generator=torch.Generator().manual_seed(0))
    t = Trainer(x, [50], _cfg(optimizer="sgd", lr=0.05, n_chains=200, k=20, batch=50, gain=0.0), generator=torch.Generator().manual_seed(0))
    t.train(150, show_progress=False)
    assert abs(float(t.chains.mean()) - 1.0) < 0.25


def test_bad_input():
    x = _data()
    with pytest.raises(UserError):
        Trainer(x, [31], _cfg())                                          # P larger than the data
    for bad in (dict(T=0.0), dict(dt=0.9), dict(mode="x"), dict(optimizer="lbfgs"), dict(k=0)):
        with pytest.raises(UserError):
            Trainer(x, [5], _cfg(**bad))
    d = encoding.load("digits")
    with pytest.raises(UserError):
        encoding.check_sizes(d, [5, 1000])


def test_denoise_fit_makes_patterns_fixed_points():
    g = np.random.default_rng(0)
    pats = encoding.encode(g.uniform(0, 1, size=(4, 16)))
    J, b = denoise.fit_patterns(pats)
    from papers.nlm.model import energy
    assert float(energy(torch.as_tensor(pats), J, b).max()) < 1e-18 and float(J.diagonal().abs().max()) == 0.0
    with pytest.raises(UserError):
        denoise.corrupt(pats, 1.5)
    bad = denoise.corrupt(pats, 0.25, torch.Generator().manual_seed(1))
    assert int((np.abs(bad.numpy() - pats) > 0).sum(1).max()) <= 4


def test_stability_guard_stops_when_j_outgrows_the_euler_step():
    from papers.nlm.sampler import Divergence

    x = _data()
    t = Trainer(x, [5], _cfg(), generator=torch.Generator().manual_seed(0))
    t.check_stability()                                      # g = 2 init, dt = 0.01: stable
    with torch.no_grad():
        t.J.mul_(14.0 / float(torch.linalg.matrix_norm(t.J.detach().double(), ord=2).max()))
    with pytest.raises(Divergence, match="stable Euler step"):   # dt (1 + 14)^2 = 2.25 >= 2
        t.check_stability()
    with torch.no_grad():
        t.J.mul_(12.0 / 14.0)                                # dt (1 + 12)^2 = 1.69 < 2
    t.check_stability()


def test_released_rule_is_plain_decayed_gradient_step():
    """optimizer="gd": J <- (1 - lambda) J + eta (data - model) exactly, no bias (the released script)."""
    from papers.nlm.config import PROFILES
    from papers.nlm.model import likelihood_gradient

    x = _data()
    cfg = _cfg(optimizer="gd", lr=5e-4, weight_decay=2e-6, bias=False, n_chains=12, batch=30)
    t = Trainer(x, [30], cfg, generator=torch.Generator().manual_seed(3))
    t.train(2, show_progress=False)
    J0, chains0, gen = t.J.detach().clone(), t.chains.clone(), t.gen.get_state()
    # replay the next update by hand from the same generator state
    t2 = Trainer(x, [30], cfg, generator=torch.Generator().manual_seed(3)); t2.J.data.copy_(J0); t2.chains = chains0.clone(); t2.gen.set_state(gen)
    xd, w = t2._batch()
    from papers.nlm.sampler import langevin
    ch, _ = langevin(chains0, J0, t2.b.detach(), cfg.k, cfg.dt, cfg.T, t2.gen, check_every=0)
    gJ, _ = likelihood_gradient(xd, ch, J0, t2.b.detach(), cfg.T, w)
    t.update()
    expect = (1 - 2e-6) * J0 + 5e-4 * gJ
    assert torch.allclose(t.J.detach(), expect, atol=1e-7, rtol=0)
    assert float(t.b.detach().abs().max()) == 0.0                         # no bias


def test_full_profile_follows_the_revised_scripts_adam_with_decay_on_j_only():
    """full: Adam at 5e-5 with weight decay 5e-7 on J only and a bias (`1train_PCD_multi.py`: eta, lambda1), and
    one update equals torch's Adam with a parameter group that decays J alone (b undecayed)."""
    from papers.nlm.config import PROFILES
    from papers.nlm.model import likelihood_gradient
    from papers.nlm.sampler import langevin

    full = PROFILES["full"]
    assert (full["optimizer"], full["lr"], full["sweep_lr"], full["weight_decay"], full["bias"]) == ("adam", 5e-5, 5e-5, 5e-7, True)
    assert full["ooe_rdm_updates"] == 24_000 and (full["explore_p"], full["explore_updates"]) == (288, full["sweep_updates"])
    x = _data()
    cfg = _cfg(optimizer="adam", lr=5e-5, weight_decay=5e-7, bias=True, n_chains=12, batch=30)
    t = Trainer(x, [30], cfg, generator=torch.Generator().manual_seed(3))
    J0, b0, chains0, gen = t.J.detach().clone(), t.b.detach().clone(), t.chains.clone(), t.gen.get_state()
    t2 = Trainer(x, [30], cfg, generator=torch.Generator().manual_seed(3)); t2.gen.set_state(gen)
    xd, w = t2._batch()
    ch, _ = langevin(chains0, J0, b0, cfg.k, cfg.dt, cfg.T, t2.gen, check_every=0)
    gJ, gb = likelihood_gradient(xd, ch, J0, b0, cfg.T, w)
    J, b = torch.nn.Parameter(J0.clone()), torch.nn.Parameter(b0.clone())
    opt = torch.optim.Adam([{"params": [J], "weight_decay": 5e-7}, {"params": [b], "weight_decay": 0.0}], lr=5e-5)
    J.grad, b.grad = -gJ, -gb
    opt.step()
    t.update()
    assert torch.allclose(t.J.detach(), J.detach(), atol=1e-9, rtol=0) and torch.allclose(t.b.detach(), b.detach(), atol=1e-9, rtol=0)
    assert float(t.b.detach().abs().max()) > 0.0                          # the bias learns


def test_models_at_the_euler_limit_freeze_and_the_rest_learn():
    """freeze_at: a model whose dt(1+||J||)^2 reaches the level keeps its J from then on; others go on."""
    x = _data()
    t = Trainer(x, [5, 30], _cfg(optimizer="sgd", lr=1e-2, freeze_at=0.3, dt=0.01, gain=0.0), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        t.J[0] = 4.0 * (1 - torch.eye(6))                     # dt (1 + 20)^2 = 4.4 > 2 would stop the run ...
        t.J[0] *= 0.22                                         # ... dt (1 + 4.4)^2 = 0.29: just under the level
    t.train(100, show_progress=False)                          # the checks (every STABILITY_EVERY updates) leave it
    assert t.frozen_at == [-1, -1]
    t.J.data[0] *= 1.03                                        # push it over the level
    t.train(100, show_progress=False)
    assert t.frozen_at[0] == 100 + STABILITY_EVERY and t.frozen_at[1] == -1   # the first check after the push
    J0 = t.J.detach()[0].clone(); J1 = t.J.detach()[1].clone()
    t.train(20, show_progress=False)
    assert torch.equal(t.J.detach()[0], J0) and not torch.equal(t.J.detach()[1], J1)
    with pytest.raises(UserError):
        TrainConfig(freeze_at=2.5).validate()


@pytest.mark.parametrize("opt", ["adam", "sgd", "gd"])
def test_a_frozen_model_keeps_its_j_and_b_under_every_optimizer(opt):
    """With weight decay on, a model frozen at freeze_at keeps J and b exactly; the other model learns."""
    t = Trainer(_data(), [5, 30], _cfg(optimizer=opt, weight_decay=1e-2, freeze_at=0.3, dt=0.01, gain=0.0),
                generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        t.J[0] = 0.23 * 4.0 * (1 - torch.eye(6))               # ||J||_2 = 4.6: dt (1 + 4.6)^2 = 0.31 >= 0.3, under 2
    t.update()
    t.check_stability()
    assert t.frozen_at == [1, -1]
    J, b = t.J.detach().clone(), t.b.detach().clone()
    t.train(5, show_progress=False)
    assert not torch.equal(t.J.detach()[1], J[1])
    assert torch.equal(t.J.detach()[0], J[0]) and torch.equal(t.b.detach()[0], b[0])


def test_minibatches_draw_each_model_from_its_own_first_p_rows():
    """Models with P <= batch see their whole set each update (rows 0..P-1, padded with weight 0 and
    weights 1/P); larger sets draw `batch` rows of their own first P, weight 1/batch each. Checked
    against the per-model data tensor row by row (per-model data, so a row tells which model it is from)."""
    K, P_max, N = 3, 12, 4
    data = torch.arange(K * P_max * N, dtype=torch.float32).reshape(K, P_max, N)
    tr = Trainer(data, [3, 12, 7], TrainConfig(n_chains=2, k=1, batch=5), generator=torch.Generator().manual_seed(0))
    for _ in range(5):
        x, w = tr._batch()
        assert x.shape == (K, 5, N) and w.shape == (K, 5)
        rows = (x[..., 0] - torch.arange(K)[:, None] * P_max * N) / N     # each row's index in its model's data
        assert torch.equal(x, data[torch.arange(K)[:, None], rows.long()])
        assert rows[0].tolist() == [0, 1, 2, 2, 2] and torch.allclose(w[0], torch.tensor([1 / 3] * 3 + [0.0, 0.0]))
        assert rows[1].max() < 12 and rows[2].max() < 7 and torch.allclose(w[1:], torch.full((2, 5), 0.2))


def test_epoch_minibatches_are_the_released_dataloader():
    """minibatch="epochs" (full, as the revised scripts' DataLoader(shuffle=True, drop_last=False)): a model with
    P > batch sees each of its P rows once per epoch, in batches of `batch` and a last one of P mod batch rows (the
    padding at weight 0), every row weighted 1 / (its batch's size), a new order every epoch; a model with P <= batch
    its whole set every update. The old draw with replacement repeats rows within an epoch's worth of updates."""
    K, P_max, N = 3, 12, 4
    data = torch.arange(K * P_max * N, dtype=torch.float32).reshape(K, P_max, N)
    tr = Trainer(data, [3, 12, 7], TrainConfig(n_chains=2, k=1, batch=5, minibatch="epochs"), generator=torch.Generator().manual_seed(0))
    seen = {1: [], 2: []}
    sizes = {1: [], 2: []}
    for _ in range(6):                                                   # P = 12: 5 + 5 + 2, twice; P = 7: 5 + 2, three times
        x, w = tr._batch()
        rows = ((x[..., 0] - torch.arange(K)[:, None] * P_max * N) / N).long()
        assert torch.equal(x, data[torch.arange(K)[:, None], rows])
        assert rows[0].tolist() == [0, 1, 2, 2, 2] and torch.allclose(w[0], torch.tensor([1 / 3] * 3 + [0.0, 0.0]))
        for k in (1, 2):
            n = int((w[k] > 0).sum())
            assert torch.allclose(w[k, :n], torch.full((n,), 1.0 / n)) and float(w[k, n:].abs().sum()) == 0.0
            seen[k] += rows[k, :n].tolist(); sizes[k].append(n)
    assert sizes == {1: [5, 5, 2, 5, 5, 2], 2: [5, 2, 5, 2, 5, 2]}
    for k, p in ((1, 12), (2, 7)):
        epochs = [seen[k][i: i + p] for i in range(0, len(seen[k]), p)]
        assert all(sorted(e) == list(range(p)) for e in epochs)            # each epoch: every row once
        assert len({tuple(e) for e in epochs}) == len(epochs)              # reshuffled every epoch
    old = Trainer(data, [12], TrainConfig(n_chains=2, k=1, batch=5), generator=torch.Generator().manual_seed(0))
    drawn = [int(r) for _ in range(3) for r in ((old._batch()[0][0, :, 0] / N).long())]
    assert len(set(drawn)) < 12                                          # with replacement: rows repeat, some missed


def test_released_ages_are_the_scripts_checkpoints():
    """age_schedule="released" (full): t_age = round(201 * 1.7^i), i < n_ages, within the run: the 13 checkpoints of
    `3 types/PCD_10` for 1.2e5 updates; a run shorter than the first checkpoint keeps its last update."""
    from papers.nlm.config import PROFILES
    from papers.nlm.mainmodel import ages

    full = PROFILES["full"]
    assert (full["age_schedule"], full["minibatch"]) == ("released", "epochs")
    assert ages(full["main_updates"], full["n_ages"], "released") == [201, 342, 581, 988, 1679, 2854, 4852, 8248, 14021,
                                                                       23836, 40521, 68887, 117107]
    assert ages(5000, 13, "released") == [201, 342, 581, 988, 1679, 2854, 4852] and ages(4, 13, "released") == [4]
    assert ages(2000, 6) == ages(2000, 6, "log") and ages(2000, 6)[0] == 20 and ages(2000, 6)[-1] == 2000
