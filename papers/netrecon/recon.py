"""Reconstruction of the couplings from observed trajectories, and how to score it.

Z. Yu and H. Huang, "Network reconstruction may not mean dynamics prediction",
https://arxiv.org/abs/2409.04240

The student is the teacher's map with free couplings W. The paper fits W by teacher forcing: each
next state is predicted from the *observed* previous state, and Adam minimises the mean squared
error. Because the map is linear in W this is ordinary least squares:

    y_t = (x_{t+1} - (1 - dt) x_t) / dt  =  W tanh(x_t),

so W has the closed form (Y^T X)(X^T X + ridge I)^{-1} with X = tanh(x_t), Y = y_t. Both are
here: `fit_least_squares` (seconds at N = 1000) and `fit_adam` (the paper's protocol: windows of 4
steps, batch 250, lr 0.1, W initialised U[0, 1)).
"""
from __future__ import annotations

import math

import numpy as np

from common.errors import UserError

from .rnn import check_params


# ---------------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------------
def transitions(traj: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Regressors X = tanh(x_t) and targets Y = (x_{t+1} - (1-dt) x_t)/dt, as (P, N) matrices.

    `traj` has shape (T+1, ..., N): time first, any batch axes, units last.

    Paper: the reconstruction section's teacher-forced loss, linear in W (README maths (M3)).
    """
    check_params(dt=dt)
    if traj.ndim < 2 or traj.shape[0] < 2:
        raise UserError("need trajectories of at least two time points to reconstruct J")
    N = traj.shape[-1]
    X = np.tanh(traj[:-1]).reshape(-1, N)
    # y_t = (x_{t+1} - (1-dt) x_t)/dt in one buffer: the same operations in the same order, one large
    # temporary instead of three (at 128 trajectories of 500 steps each is 150 MB of fresh pages)
    Y = traj[:-1] * (1.0 - dt)
    np.subtract(traj[1:], Y, out=Y)
    Y /= dt
    return X, Y.reshape(-1, N)


def shuffle_time(traj: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The same states in a random time order, drawn independently for each trajectory.

    The null of the reconstruction: every state and its statistics are kept, but x_{t+1} is no
    longer the successor of x_t, so a teacher-forced fit has no dynamics to learn. `traj` has shape
    (T+1, ..., N) like `transitions`.
    """
    if traj.ndim < 2 or traj.shape[0] < 2:
        raise UserError("need trajectories of at least two time points to shuffle their time order")
    flat = traj.reshape(traj.shape[0], -1, traj.shape[-1])
    order = np.argsort(rng.random((flat.shape[0], flat.shape[1])), axis=0)   # one permutation per trajectory
    return np.take_along_axis(flat, order[:, :, None], axis=0).reshape(traj.shape)


def add_observation_noise(traj: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """Observed trajectories: the true states plus independent N(0, sigma^2) noise."""
    if sigma < 0:
        raise UserError(f"observation noise sigma={sigma} is negative; use sigma >= 0")
    if sigma == 0:
        return traj
    noisy = rng.standard_normal(traj.shape)   # traj + sigma * noise, in the noise's buffer (the same sums)
    noisy *= sigma
    noisy += traj
    return noisy


# ---------------------------------------------------------------------------------------------
# closed form
# ---------------------------------------------------------------------------------------------
def fit_least_squares(traj: np.ndarray, dt: float, ridge: float = 0.0, chunk: int = 200_000) -> np.ndarray:
    """Ridge least squares W = (Y^T X)(X^T X + ridge P I)^{-1}; ridge=0 is the plain teacher-forced fit.

    The normal equations are accumulated over chunks of samples, so memory is O(N^2) whatever
    the data size. `ridge` is relative to the number of samples P.

    Paper: the reconstruction section, solved in closed form (README maths (M3)).
    """
    if ridge < 0:
        raise UserError(f"ridge={ridge} is negative; use ridge >= 0")
    X, Y = transitions(traj, dt)
    P, N = X.shape
    A = np.zeros((N, N))
    B = np.zeros((N, N))
    for s in range(0, P, chunk):
        Xc, Yc = X[s:s + chunk], Y[s:s + chunk]
        A += Xc.T @ Xc  # X^T X
        B += Yc.T @ Xc  # Y^T X
    return _solve_normal(A, B, ridge * P)


def _solve_normal(A: np.ndarray, B: np.ndarray, shift: float) -> np.ndarray:
    """W = B (A + shift I)^{-1} for the normal equations A = X^T X, B = Y^T X (A is left unchanged)."""
    import warnings

    import scipy.linalg as sla

    A = A + shift * np.eye(A.shape[0])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", sla.LinAlgWarning)
            return sla.solve(A, B.T, assume_a="pos").T  # W = (Y^T X)(X^T X + ridge I)^{-1}
    except (np.linalg.LinAlgError, sla.LinAlgWarning):
        return np.linalg.lstsq(A, B.T, rcond=None)[0].T  # rank-deficient data: minimum-norm solution


def fit_least_squares_nested(traj: np.ndarray, dt: float, n_trajs: list, ridge: float = 0.0) -> list[np.ndarray]:
    """`fit_least_squares(traj[:, :k], dt, ridge)` for every k of `n_trajs` (increasing), in one pass over
    the data: the normal equations of the first k trajectories are those of the first k' < k plus the
    rest's, so each trajectory's products are computed once (the same W up to summation order).

    `traj` has shape (T+1, n, N) with n >= max(n_trajs). The data-size sweep (README maths (M3))."""
    ks = [int(k) for k in n_trajs]
    if ks != sorted(ks) or len(set(ks)) != len(ks) or ks[0] < 1 or ks[-1] > traj.shape[1]:
        raise UserError(f"n_trajs={n_trajs} must increase, start at >= 1 and end at most at {traj.shape[1]}")
    N = traj.shape[-1]
    A, B, out, prev = np.zeros((N, N)), np.zeros((N, N)), [], 0
    for k in ks:
        X, Y = transitions(traj[:, prev:k], dt)
        A += X.T @ X
        B += Y.T @ X
        out.append(_solve_normal(A, B, ridge * (traj.shape[0] - 1) * k))
        prev = k
    return out


# ---------------------------------------------------------------------------------------------
# the paper's optimiser
# ---------------------------------------------------------------------------------------------
def windows(traj: np.ndarray, length: int, n_windows: int) -> np.ndarray:
    """Cut the first `length * n_windows` steps of each trajectory into windows: (M, length, N).

    Official training scripts: windows ("chunks") of 4 steps (README maths (M3))."""
    T1 = traj.shape[0]
    if length * n_windows > T1:
        raise UserError(f"{n_windows} windows of {length} steps need {length * n_windows} time points; "
                        f"the data has {T1}")
    N = traj.shape[-1]
    x = traj[: length * n_windows].reshape(n_windows, length, -1, N)  # (windows, length, traj, N)
    return np.ascontiguousarray(np.moveaxis(x, 2, 1).reshape(-1, length, N))


def adam_init(N: int, generator=None, init: str = "uniform") -> np.ndarray:
    """The student before training: the paper's W ~ U[0, 1) (torch.rand) or zeros.

    `fit_adam` starts from exactly this draw of `generator`, so it is also the untrained student
    of the Adam protocol (the control of the reconstruction claims).

    Official training scripts: W = torch.rand(N, N) (README maths (M3)).
    """
    import torch

    if init == "uniform":
        return torch.rand(N, N, generator=generator, dtype=torch.float64).numpy()  # the paper: torch.rand, U[0, 1)
    if init == "zeros":
        return np.zeros((N, N))
    raise UserError(f"unknown init {init!r}; choose 'uniform' or 'zeros'")


def fit_adam(traj: np.ndarray, dt: float, epochs: int, lr: float = 0.1, batch_size: int = 250,
             window: int = 4, n_windows: int | None = None, J_true: np.ndarray | None = None,
             generator=None, device=None, init: str = "uniform", patience: int = 0) -> tuple[np.ndarray, dict]:
    """The paper's teacher-forced fit of W by Adam.

    Each window's first state is copied (zero loss), every later state is predicted one step
    ahead from the observed previous one, and the loss is the MSE over the window. Returns W and
    a history with the loss per epoch (and d_W per epoch when `J_true` is given).

    `patience` > 0 stops early, as the official P-sweep does: once d_W (which needs `J_true`: the
    official monitor is an oracle) has not improved for `patience` epochs, and W is the best epoch's;
    `hist["epochs"]` says how many epochs ran. The loss is summed on the device and read once per
    epoch (no host sync per minibatch).

    Paper: the reconstruction section and its training-curve and W-J scatter figures; official training
    scripts and `Effective prediction time/` (README maths (M3)).
    """
    import torch

    check_params(dt=dt)
    if epochs < 1 or lr <= 0 or batch_size < 1 or window < 2 or patience < 0:
        raise UserError("fit_adam needs epochs >= 1, lr > 0, batch_size >= 1, window >= 2 and patience >= 0")
    if patience and J_true is None:
        raise UserError("early stopping monitors d_W, as the official P-sweep does: pass J_true with patience > 0")
    N = traj.shape[-1]
    if n_windows is None:
        n_windows = traj.shape[0] // window
    data = torch.as_tensor(windows(traj, window, n_windows), dtype=torch.float64, device=device)
    M = data.shape[0]
    W = torch.nn.Parameter(torch.as_tensor(adam_init(N, generator, init)).to(device))
    opt = torch.optim.Adam([W], lr=lr)
    Jt = None if J_true is None else torch.as_tensor(J_true, dtype=torch.float64, device=device)
    hist = {"loss": [], "d_W": []}
    best, best_W, since = math.inf, None, 0
    for _ in range(epochs):
        perm = torch.randperm(M, generator=generator).to(data.device)
        total = torch.zeros((), dtype=torch.float64, device=data.device)
        for s in range(0, M, batch_size):
            xb = data[perm[s:s + batch_size]]  # (b, window, N)
            prev = xb[:, :-1]
            pred = (1 - dt) * prev + dt * torch.tanh(prev) @ W.T  # teacher forcing: x_{t+1} from observed x_t
            loss = ((pred - xb[:, 1:]) ** 2).sum() / xb.numel()  # first state copied: zero loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.detach() * xb.shape[0]   # on the device: one host read per epoch
        hist["loss"].append(float(total) / M)
        if Jt is not None:
            with torch.no_grad():
                hist["d_W"].append(float(((W - Jt) ** 2).mean()))
            if patience:
                if hist["d_W"][-1] < best:
                    best, best_W, since = hist["d_W"][-1], W.detach().clone(), 0
                else:
                    since += 1
                    if since >= patience:
                        break
    hist["epochs"] = len(hist["loss"])
    out = W.detach() if best_W is None else best_W
    return out.cpu().numpy(), hist


# ---------------------------------------------------------------------------------------------
# metrics
# ---------------------------------------------------------------------------------------------
def d_W(W: np.ndarray, J: np.ndarray) -> float:
    """The paper's weight distance d_W = mean_ij (W_ij - J_ij)^2 (diagonal included).

    Paper: the reconstruction section's weight distance (README maths (M3))."""
    return float(np.mean((W - J) ** 2))  # d_W = (1/N^2) sum_ij (W_ij - J_ij)^2


def rel_frobenius(W: np.ndarray, J: np.ndarray) -> float:
    """||W - J||_F / ||J||_F."""
    return float(np.linalg.norm(W - J) / np.linalg.norm(J))


def pearson_r(W: np.ndarray, J: np.ndarray, off_diagonal: bool = True) -> float:
    """Pearson correlation of the entries of W and J (off-diagonal entries by default).

    Scores the W-J scatter figure (claims `adam-reconstruction-*`)."""
    if off_diagonal:
        mask = ~np.eye(J.shape[-1], dtype=bool)
        W, J = W[mask], J[mask]
    return float(np.corrcoef(W.ravel(), J.ravel())[0, 1])


def _var_entries(N: int, g: float, zero_diag: bool) -> float:
    """Mean over all N^2 entries of J_ij^2: g^2 (N-1)/N^2 with a zero diagonal, else g^2/N."""
    return g**2 * (N - 1) / N**2 if zero_diag else g**2 / N


def dW_from_eta(eta, g: float, N: int, zero_diag: bool = True):
    """Expected d_W of the student sqrt(1-eta^2) J + eta J': 2 (1 - sqrt(1 - eta^2)) <J_ij^2>.

    Paper: the map between d_W and eta (README maths (M2)); official `eta and dw.py`."""
    eta = np.asarray(eta, dtype=np.float64)
    if np.any((eta < 0) | (eta > 1)):
        raise UserError("eta must lie in [0, 1]")
    return 2.0 * (1.0 - np.sqrt(1.0 - eta**2)) * _var_entries(N, g, zero_diag)  # d_W = 2 g^2 (1-rho)/N


def eta_from_dW(dW, g: float, N: int, zero_diag: bool = True):
    """The paper's map from a weight distance to a perturbation strength.

    rho = 1 - d_W / (2 <J_ij^2>), eta = sqrt(1 - rho^2). It assumes W has J's variance and an
    isotropic Gaussian error; d_W beyond 2 <J_ij^2> (rho < 0) has no eta and gives NaN.

    Paper: the map between d_W and eta (README maths (M2)); official `eta and dw.py`, `3pT.py`.
    """
    check_params(N=N, g=g)
    dW = np.asarray(dW, dtype=np.float64)
    if np.any(dW < 0):
        raise UserError("d_W must be >= 0")
    rho = 1.0 - dW / (2.0 * _var_entries(N, g, zero_diag))  # rho = 1 - N d_W / (2 g^2)
    with np.errstate(invalid="ignore"):
        eta = np.where(rho >= 0, np.sqrt(np.clip(1.0 - rho**2, 0.0, 1.0)), np.nan)  # eta = sqrt(1 - rho^2)
    return float(eta) if eta.ndim == 0 else eta


def summary(W: np.ndarray, J: np.ndarray, g: float) -> dict:
    """All reconstruction metrics as plain floats."""
    N = J.shape[-1]
    dw = d_W(W, J)
    return {"d_W": dw, "rel_fro": rel_frobenius(W, J), "r": pearson_r(W, J),
            "eta": float(eta_from_dW(dw, g, N)) if math.isfinite(dw) else float("nan")}
