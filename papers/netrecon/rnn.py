"""The random rate network of Sompolinsky, Crisanti and Sommers, as used by the paper.

Z. Yu and H. Huang, "Network reconstruction may not mean dynamics prediction",
https://arxiv.org/abs/2409.04240

The continuous model is

    dx/dt = -x + J tanh(x),      J_ij ~ N(0, g^2 / N),  J_ii = 0,

and the paper simulates (and learns) its Euler discretisation with dt = 0.01,

    x_{t+1} = (1 - dt) x_t + dt J tanh(x_t).

States are rows: `x` has shape (..., N), so a batch of trajectories is one matrix product
`tanh(x) @ J.T`. A stack of networks `J` of shape (B, N, N) goes with states (B, K, N).
Everything is float64.
"""
from __future__ import annotations

import math
import os

import numpy as np

from common.errors import UserError

#: the paper's time step
DT = 0.01
#: refuse to record trajectories larger than this many bytes (override: REPRO_NETRECON_MAX_BYTES)
MAX_RECORD_BYTES = int(os.environ.get("REPRO_NETRECON_MAX_BYTES", 4 * 2**30))


# ---------------------------------------------------------------------------------------------
# checks a user can trip
# ---------------------------------------------------------------------------------------------
def check_params(N: int | None = None, g: float | None = None, dt: float | None = None,
                 eta: float | None = None) -> None:
    """Raise a one-line `UserError` for parameters outside the model's range."""
    if N is not None and (int(N) != N or N < 2):
        raise UserError(f"network size N={N} is invalid; use an integer N >= 2")
    if g is not None and not (np.isfinite(g) and g >= 0):
        raise UserError(f"coupling gain g={g} is invalid; use g >= 0")
    if dt is not None and not (0 < dt < 1):
        raise UserError(f"time step dt={dt} is outside (0, 1); the paper uses dt=0.01")
    if eta is not None and not (0 <= eta <= 1):
        raise UserError(f"perturbation strength eta={eta} is outside [0, 1]")


def check_memory(n_bytes: float, what: str = "trajectory") -> None:
    """Refuse allocations beyond `MAX_RECORD_BYTES` with a one-line hint."""
    if n_bytes > MAX_RECORD_BYTES:
        raise UserError(f"the {what} would need {n_bytes / 2**30:.1f} GiB (limit "
                        f"{MAX_RECORD_BYTES / 2**30:.1f} GiB); use fewer steps or a larger record_every")


# ---------------------------------------------------------------------------------------------
# couplings
# ---------------------------------------------------------------------------------------------
def make_J(N: int, g: float, rng: np.random.Generator, zero_diag: bool = True, batch: int | None = None) -> np.ndarray:
    """Random couplings J_ij ~ N(0, g^2/N) with J_ii = 0 (shape (N, N), or (batch, N, N)).

    Paper: the model (abstract; README maths (M1)); official `lledian.py` and the data generators."""
    check_params(N=N, g=g)
    shape = (N, N) if batch is None else (int(batch), N, N)
    J = rng.standard_normal(shape) * (g / math.sqrt(N))  # J_ij ~ N(0, g^2/N)
    if zero_diag:
        idx = np.arange(N)
        J[..., idx, idx] = 0.0  # J_ii = 0
    return J


def perturb(J: np.ndarray, eta: float, g: float, rng: np.random.Generator, zero_diag: bool = True) -> np.ndarray:
    """The theory's student: J_S = sqrt(1 - eta^2) J + eta J' with J' an independent copy of J.

    `eta` may be a 1-d array; the result then has a leading axis over eta (shape (len(eta), N, N)).

    Paper: the two-replica DMFT section's student (README maths (M2)); official `total.py`.
    """
    eta_arr = np.atleast_1d(np.asarray(eta, dtype=np.float64))
    for e in eta_arr:
        check_params(eta=float(e))
    N = J.shape[-1]
    Jp = make_J(N, g, rng, zero_diag=zero_diag, batch=len(eta_arr))
    JS = np.sqrt(1 - eta_arr**2)[:, None, None] * J + eta_arr[:, None, None] * Jp  # sqrt(1-eta^2) J + eta J'
    return JS if np.ndim(eta) else JS[0]


def spectral_radius(J: np.ndarray) -> float:
    """Largest |eigenvalue| of J (circular law: close to g for large N).

    Circular law behind the g < 1 exponent g - 1 (README maths (M7))."""
    return float(np.max(np.abs(np.linalg.eigvals(J))))


# ---------------------------------------------------------------------------------------------
# dynamics
# ---------------------------------------------------------------------------------------------
def transposed(J: np.ndarray) -> np.ndarray:
    """J transposed, contiguous, so that `phi @ JT` computes (J phi) for row states."""
    return np.ascontiguousarray(np.swapaxes(J, -1, -2))


def vector_field(x: np.ndarray, JT: np.ndarray) -> np.ndarray:
    """dx/dt = -x + J tanh(x) for row states; `JT` is J transposed.

    The continuous model of README maths (M1); official `Runge-Kutta dynamics/2train.py` (RK4 variant)."""
    return -x + np.tanh(x) @ JT  # -x + J phi(x)


def euler_step(x: np.ndarray, JT: np.ndarray, dt: float) -> np.ndarray:
    """The paper's map x_{t+1} = (1 - dt) x_t + dt J tanh(x_t).

    Paper: the model (README maths (M1)); official `lledian.py`, the data generators and training scripts."""
    return (1.0 - dt) * x + dt * (np.tanh(x) @ JT)  # x_{t+1} = (1-dt) x_t + dt J phi(x_t)


def rk4_step(x: np.ndarray, JT: np.ndarray, dt: float) -> np.ndarray:
    """One classical Runge-Kutta step of dx/dt = f(x) (each stage scaled by dt exactly once).

    The RK4 variant of the official code (`Runge-Kutta dynamics/`), without its erratum 1 (README)."""
    k1 = vector_field(x, JT)
    k2 = vector_field(x + 0.5 * dt * k1, JT)
    k3 = vector_field(x + 0.5 * dt * k2, JT)
    k4 = vector_field(x + dt * k3, JT)
    return x + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)  # x + dt (k1 + 2k2 + 2k3 + k4)/6


STEPPERS = {"euler": euler_step, "rk4": rk4_step}


def simulate(J: np.ndarray, x0: np.ndarray, n_steps: int, dt: float = DT, method: str = "euler",
             record_every: int = 1, record: bool = True) -> np.ndarray:
    """Integrate from `x0` (shape (..., N)) for `n_steps`; returns the recorded states.

    The result has shape (n_steps // record_every + 1, *x0.shape) and starts with x0; with
    `record=False` only the final state is returned.

    Iterates README maths (M1) (the paper's Euler map, or `rk4_step` for the ODE).
    """
    N = J.shape[-1]
    check_params(N=N, dt=dt)
    if method not in STEPPERS:
        raise UserError(f"unknown integrator {method!r}; choose one of {', '.join(STEPPERS)}")
    if n_steps < 0 or record_every < 1:
        raise UserError("n_steps must be >= 0 and record_every >= 1")
    x = np.array(x0, dtype=np.float64, copy=True)
    if x.shape[-1] != N:
        raise UserError(f"initial state has {x.shape[-1]} units but J is {N} x {N}")
    step, JT = STEPPERS[method], transposed(J)
    if not record:
        for _ in range(n_steps):
            x = step(x, JT, dt)
        return x
    n_rec = n_steps // record_every + 1
    check_memory(n_rec * x.size * 8)
    out = np.empty((n_rec,) + x.shape)
    out[0] = x
    for t in range(1, n_rec * record_every - record_every + 1):
        x = step(x, JT, dt)
        if t % record_every == 0:
            out[t // record_every] = x
    return out


def relax(J: np.ndarray, x0: np.ndarray, t_burn: float, dt: float = DT, method: str = "euler") -> np.ndarray:
    """Run for a time `t_burn` and return the final state (the transient is discarded)."""
    return simulate(J, x0, int(round(t_burn / dt)), dt=dt, method=method, record=False)
