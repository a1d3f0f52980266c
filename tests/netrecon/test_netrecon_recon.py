"""Reconstruction of J and its metrics (arXiv:2409.04240)."""
import numpy as np
import pytest

from common.errors import UserError
from papers.netrecon import recon, rnn


def _data(N=30, g=2.0, n_traj=5, steps=200, seed=0):
    rng = np.random.default_rng(seed)
    J = rnn.make_J(N, g, rng)
    return J, rnn.simulate(J, rng.standard_normal((n_traj, N)), steps)


def test_noise_free_least_squares_recovers_J():
    J, traj = _data()
    W = recon.fit_least_squares(traj, 0.01)
    assert np.max(np.abs(W - J)) < 1e-8
    assert recon.rel_frobenius(W, J) < 1e-8


def test_transitions_are_the_regression_of_the_map():
    J, traj = _data(N=6, n_traj=2, steps=5)
    X, Y = recon.transitions(traj, 0.01)
    assert X.shape == (10, 6)
    assert np.allclose(Y, X @ J.T, atol=1e-10)


def test_transitions_and_noise_equal_the_plain_formulas_bit_for_bit():
    """`transitions` and `add_observation_noise` fill one buffer in place (issue 43): the same numbers, bit for bit,
    as X = tanh(x_t), Y = (x_{t+1} - (1 - dt) x_t) / dt and x + sigma * noise of the same draws."""
    _, traj = _data(N=7, n_traj=3, steps=20)
    for sub in (traj, traj[:, 1:]):               # contiguous, and a slice of trajectories as the sweeps pass
        X, Y = recon.transitions(sub, 0.01)
        assert np.array_equal(X, np.tanh(sub[:-1]).reshape(-1, 7))
        assert np.array_equal(Y, ((sub[1:] - (1.0 - 0.01) * sub[:-1]) / 0.01).reshape(-1, 7))
        noisy = recon.add_observation_noise(sub, 1e-3, np.random.default_rng(4))
        assert np.array_equal(noisy, sub + 1e-3 * np.random.default_rng(4).standard_normal(sub.shape))
    assert recon.add_observation_noise(traj, 0.0, np.random.default_rng(4)) is traj


def test_ridge_shrinks_towards_zero():
    J, traj = _data()
    W0 = recon.fit_least_squares(traj, 0.01)
    W1 = recon.fit_least_squares(traj, 0.01, ridge=1.0)
    assert np.linalg.norm(W1) < np.linalg.norm(W0)


def test_eta_dW_round_trip():
    eta = np.array([1e-4, 0.01, 0.3, 0.9, 1.0])
    dw = recon.dW_from_eta(eta, 2.0, 200)
    assert np.allclose(recon.eta_from_dW(dw, 2.0, 200), eta, rtol=1e-6)
    assert np.isnan(recon.eta_from_dW(3 * dw[-1], 2.0, 200))


def test_eta_from_dW_of_perturbed_student():
    rng = np.random.default_rng(1)
    J = rnn.make_J(300, 2.0, rng)
    for eta in (0.05, 0.2):
        W = rnn.perturb(J, eta, 2.0, rng)
        assert abs(recon.eta_from_dW(recon.d_W(W, J), 2.0, 300) / eta - 1) < 0.02


def test_metrics_on_hand_cases():
    J = np.array([[0.0, 1.0], [2.0, 0.0]])
    W = J + 0.5
    assert recon.d_W(W, J) == pytest.approx(0.25)
    assert recon.rel_frobenius(W, J) == pytest.approx(1.0 / np.sqrt(5))
    assert recon.pearson_r(2 * J + 1, J, off_diagonal=False) == pytest.approx(1.0)


def test_adam_fit_improves_and_is_deterministic():
    import torch

    J, traj = _data(N=20, n_traj=10, steps=100)
    W1, h1 = recon.fit_adam(traj, 0.01, epochs=30, lr=0.02, batch_size=25, J_true=J, generator=torch.Generator().manual_seed(0))
    W2, _ = recon.fit_adam(traj, 0.01, epochs=30, lr=0.02, batch_size=25, J_true=J, generator=torch.Generator().manual_seed(0))
    assert np.array_equal(W1, W2)
    assert h1["d_W"][-1] < 0.3 * h1["d_W"][0]
    assert h1["loss"][-1] < h1["loss"][0]


def test_adam_early_stopping_keeps_the_best_epoch_and_stops_after_patience():
    """The official P-sweep's rule: stop once d_W has not improved for `patience` epochs, keep the best W.
    With the monitor's target set to the untrained draw itself, d_W is smallest after the first epoch and
    grows as W learns J, so the fit stops after 1 + patience epochs and returns the first epoch's W."""
    import torch

    J, traj = _data(N=20, n_traj=10, steps=100)
    W0 = recon.adam_init(20, torch.Generator().manual_seed(0))          # the draw fit_adam starts from
    W, h = recon.fit_adam(traj, 0.01, epochs=50, lr=0.02, batch_size=25, J_true=W0, patience=3,
                          generator=torch.Generator().manual_seed(0))
    W1, _ = recon.fit_adam(traj, 0.01, epochs=1, lr=0.02, batch_size=25, generator=torch.Generator().manual_seed(0))
    assert h["epochs"] == 4 and len(h["d_W"]) == 4 and np.argmin(h["d_W"]) == 0
    assert np.array_equal(W, W1)
    _, h_all = recon.fit_adam(traj, 0.01, epochs=6, lr=0.02, batch_size=25, generator=torch.Generator().manual_seed(0))
    assert h_all["epochs"] == 6                                          # patience 0: every epoch runs
    with pytest.raises(UserError):                                       # the monitor needs the true J
        recon.fit_adam(traj, 0.01, epochs=5, patience=2)


def test_adam_loss_history_is_the_per_sample_mean_of_the_minibatch_losses():
    """The loss is summed on the device and read once per epoch; it equals the Python sum of the
    minibatch losses weighted by their sizes (one batch here: the whole data)."""
    import torch

    J, traj = _data(N=10, n_traj=2, steps=40)
    W, h = recon.fit_adam(traj, 0.01, epochs=1, lr=0.02, batch_size=10_000, generator=torch.Generator().manual_seed(0))
    W0 = recon.adam_init(10, torch.Generator().manual_seed(0))
    x = recon.windows(traj, 4, traj.shape[0] // 4)
    pred = 0.99 * x[:, :-1] + 0.01 * np.tanh(x[:, :-1]) @ W0.T
    assert h["loss"][0] == pytest.approx(np.sum((pred - x[:, 1:]) ** 2) / x.size, rel=1e-12)


def test_bad_reconstruction_input():
    J, traj = _data(N=5, n_traj=1, steps=5)
    with pytest.raises(UserError):
        recon.fit_least_squares(traj, 0.01, ridge=-1)
    with pytest.raises(UserError):
        recon.eta_from_dW(-1.0, 2.0, 10)
    with pytest.raises(UserError):
        recon.windows(traj, 4, 100)
