"""Dynamical mean-field theory of the rate network: one replica (stationary) and two replicas.

Z. Yu and H. Huang, "Network reconstruction may not mean dynamics prediction",
https://arxiv.org/abs/2409.04240  (theory after Sompolinsky, Crisanti & Sommers, PRL 61, 259, 1988)

For N -> infinity each unit obeys dx/dt = -x + gamma(t), with gamma Gaussian and
<gamma(t) gamma(s)> = g^2 <phi(x(t)) phi(x(s))>, phi = tanh.

Stationary (one replica). With Delta(tau) = <x(t) x(t+tau)>, Delta_0 = Delta(0), Phi = ln cosh:
    Delta'' = Delta - g^2 C_phi(Delta; Delta_0),
    C_phi(Delta; Delta_0) = int Dz [int Dx phi(sqrt(Delta_0 - Delta) x + sqrt(Delta) z)]^2,
    Delta_0^2 / 2 = g^2 (<Phi(sqrt(Delta_0) z)^2> - <Phi(sqrt(Delta_0) z)>^2)      (energy conservation).
The largest Lyapunov exponent is lambda = -1 + sqrt(1 - E_0), E_0 the ground-state energy of
    H = -d^2/dtau^2 + 1 - g^2 C_phi'(tau),  C_phi'(tau) = int Dz [int Dx phi'(...)]^2,
whose first excited state is the exact zero mode psi = Delta'(tau) (a built-in check).

Two replicas (teacher T and student S = sqrt(1-eta^2) J + eta J'):
    <gamma_a(t) gamma_b(s)> = g^2 rho_ab <phi(x_a(t)) phi(x_b(s))>,  rho_TT = rho_SS = 1, rho_TS = sqrt(1-eta^2),
with a shared Gaussian initial state. Since x is linear in gamma and x(0), the joint process is
Gaussian, and its covariance can be propagated forward in time exactly (each new row needs only
earlier rows): no sampling and no fixed-point iteration, memory O(n_t^2). The paper's solver instead
samples 20,000 paths and iterates 30 times (about 10 GB); `benchmarks/bench_netrecon.py` compares
the two. The discretisation is the Euler map of the simulations, so at equal dt theory and
simulation differ only by finite-N effects.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import integrate, interpolate, linalg, optimize

from common.errors import UserError

from .kernels import logistic_quadrature, symmetric_tanh_quadrature
from .rnn import check_params


# ---------------------------------------------------------------------------------------------
# Gaussian quadrature
# ---------------------------------------------------------------------------------------------
def gauss_grid(n: int = 161, half_width: float = 9.0) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights for int Dz f(z): the trapezoid rule on a uniform grid.

    For analytic integrands like tanh and ln cosh the trapezoid rule converges exponentially, and
    unlike Gauss-Hermite it does not lose accuracy when the integrand varies on a large scale.
    """
    z = np.linspace(-half_width, half_width, n)
    w = np.exp(-0.5 * z**2)
    return z, w / w.sum()


def log_cosh(x):
    """Phi(x) = ln cosh x, computed without overflow."""
    ax = np.abs(x)
    return ax + np.log1p(np.exp(-2.0 * ax)) - np.log(2.0)


def sech2(x):
    return 1.0 / np.cosh(np.clip(x, -350, 350)) ** 2


def _nested(f, Delta, Delta0, grid):
    """int Dz [int Dx f(sqrt(Delta0 - Delta) x + sqrt(Delta) z)]^2 for an array of Delta."""
    z, w = grid
    D = np.clip(np.atleast_1d(np.asarray(Delta, dtype=np.float64)), 0.0, Delta0)
    a = np.sqrt(Delta0 - D)[:, None, None]
    b = np.sqrt(D)[:, None, None]
    inner = (f(a * z[None, None, :] + b * z[None, :, None]) * w).sum(-1)  # int Dx f(...) for each z
    return (inner**2 * w).sum(-1)


# ---------------------------------------------------------------------------------------------
# stationary theory
# ---------------------------------------------------------------------------------------------
def delta0(g: float, grid=None) -> float:
    """The stationary variance Delta_0: Delta_0^2/2 = g^2 Var[Phi(sqrt(Delta_0) z)]; 0 for g <= 1.

    Paper: the DMFT section (README maths (M4))."""
    check_params(g=g)
    if g <= 1.0:
        return 0.0
    z, w = grid if grid is not None else gauss_grid()

    def energy(D):
        Phi = log_cosh(np.sqrt(D) * z)
        m = (w * Phi).sum()
        return D**2 / 2 - g**2 * (w * (Phi - m) ** 2).sum()  # Delta0^2/2 - g^2 (<Phi^2> - <Phi>^2)

    hi = 1.0
    while energy(hi) < 0:
        hi *= 2.0
    lo = hi
    while energy(lo) > 0 and lo > 1e-12:
        lo /= 2.0
    if energy(lo) > 0:
        raise UserError(f"no chaotic solution found at g={g}; DMFT needs g > 1")
    return float(optimize.brentq(energy, lo, hi, xtol=1e-14, rtol=1e-14))


def static_delta0(g: float, grid=None) -> float:
    """The competing static mean-field variance: Delta = g^2 <tanh(sqrt(Delta) z)^2> (a frozen Gaussian field).

    What a physicist gets without the dynamical theory: the field's variance closed on itself as if the
    input were static. It lies above the DMFT Delta_0 (by 10 % at g = 2, 16 % at g = 3); 0 for g <= 1.

    Not the paper's: the competitor of claims `dmft-delta0-*`, `two-replica-saturates*` (README, controls).
    """
    check_params(g=g)
    if g <= 1.0:
        return 0.0
    z, w = grid if grid is not None else gauss_grid()
    return float(optimize.brentq(lambda D: D - g**2 * (w * np.tanh(np.sqrt(D) * z) ** 2).sum(),  # D = g^2 <phi^2>_D
                                 1e-9, g**2 + 1.0, xtol=1e-14, rtol=1e-14))


def annealed_lyapunov(g: float, Delta0: float | None = None, grid=None) -> float:
    """The competing "frozen-Jacobian" exponent g sqrt(<phi'(x)^2>) - 1, x ~ N(0, Delta0).

    The leading real part of -1 + J diag(phi'(x)) by the circular law, as if the Jacobian's slopes were
    independent of J (the annealed answer, exact for discrete-time maps, not for the flow); it ignores
    the temporal correlations that the Schrodinger problem of `lyapunov` keeps. Below onset it is g - 1.

    Not the paper's: the competitor of claims `sim-lambda-vs-dmft-*`, `chaos-horizon-slope-*` (README, controls).
    """
    check_params(g=g)
    D = delta0(g, grid) if Delta0 is None else float(Delta0)
    z, w = grid if grid is not None else gauss_grid()
    return float(g * np.sqrt((w * sech2(np.sqrt(D) * z) ** 2).sum()) - 1.0)  # g sqrt(<phi'^2>) - 1


@dataclass
class Stationary:
    g: float
    Delta0: float
    tau: np.ndarray           # 0 ... tau_max
    Delta: np.ndarray         # Delta(tau)
    phi2: float               # <phi^2> = C_phi(Delta_0)
    kappa: float              # decay rate of Delta(tau) at large tau
    C_phi_prime: np.ndarray   # C_phi'(tau) on the same grid

    def half_time(self) -> float:
        """tau at which Delta falls to Delta_0 / 2."""
        if self.Delta0 == 0:
            return float("nan")
        i = int(np.argmax(self.Delta < self.Delta0 / 2))
        t0, t1, d0, d1 = self.tau[i - 1], self.tau[i], self.Delta[i - 1], self.Delta[i]
        return float(t0 + (self.Delta0 / 2 - d0) * (t1 - t0) / (d1 - d0))


def stationary(g: float, tau_max: float = 40.0, dtau: float = 0.02, grid=None, n_table: int = 400) -> Stationary:
    """Delta(tau) from Delta'' = Delta - g^2 C_phi(Delta; Delta_0), Delta(0)=Delta_0, Delta'(0)=0.

    C_phi and C_phi' are tabulated on a Chebyshev grid in Delta and splined. The decaying solution
    is a separatrix; integration stops at Delta = 1e-6 Delta_0 and continues with the analytic tail
    exp(-kappa tau), kappa^2 = 1 - g^2 <phi'(sqrt(Delta_0) z)>^2.

    Paper: the DMFT section, Delta(tau) against simulation (README maths (M4)).
    """
    check_params(g=g)
    grid = grid if grid is not None else gauss_grid()
    tau = np.arange(0.0, tau_max + dtau / 2, dtau)
    D0 = delta0(g, grid)
    if D0 == 0.0:
        zeros = np.zeros_like(tau)
        return Stationary(g, 0.0, tau, zeros, 0.0, float(np.sqrt(max(1 - g**2, 0))), np.ones_like(tau))
    nodes = 0.5 * D0 * (1 - np.cos(np.linspace(0, np.pi, n_table)))  # Chebyshev points on [0, Delta0]
    Cphi = interpolate.CubicSpline(nodes, _nested(np.tanh, nodes, D0, grid))
    Cphip = interpolate.CubicSpline(nodes, _nested(sech2, nodes, D0, grid))
    z, w = grid
    kappa = float(np.sqrt(1 - g**2 * ((w * sech2(np.sqrt(D0) * z)).sum()) ** 2))  # kappa^2 = 1 - g^2 <phi'>^2

    def rhs(t, y):
        return [y[1], y[0] - g**2 * Cphi(np.clip(y[0], 0, D0))]  # Delta'' = Delta - g^2 C_phi(Delta)

    floor = 1e-6 * D0

    def low(t, y):
        return y[0] - floor
    low.terminal = True

    def turn(t, y):
        return y[1] if t > 1e-3 else -1.0
    turn.terminal = True

    sol = integrate.solve_ivp(rhs, (0, tau_max), [D0, 0.0], method="DOP853", rtol=1e-11, atol=1e-13 * D0,
                              dense_output=True, events=(low, turn))
    t_end = sol.t[-1]
    inside = tau <= t_end
    Delta = np.empty_like(tau)
    Delta[inside] = sol.sol(tau[inside])[0]
    d_end = max(sol.y[0, -1], 0.0)
    Delta[~inside] = d_end * np.exp(-kappa * (tau[~inside] - t_end))  # analytic tail
    Delta = np.clip(Delta, 0.0, D0)
    phi2 = float(Cphi(D0))
    return Stationary(g, D0, tau, Delta, phi2, kappa, Cphip(Delta))


def lyapunov(g: float, tau_max: float = 40.0, dtau: float = 0.02, stat: Stationary | None = None,
             n_states: int = 2) -> dict:
    """lambda_DMFT = -1 + sqrt(1 - E_0) from H = -d^2/dtau^2 + 1 - g^2 C_phi'(tau) on [-tau_max, tau_max].

    Returns lambda, the lowest `n_states` energies (E_1 should be ~0: the zero mode Delta'(tau))
    and the overlap of the first excited state with Delta'(tau).

    Paper: the DMFT section, lambda from the mean-field theory (README maths (M5)).
    """
    check_params(g=g)
    if g <= 1.0:
        return {"lam": float(g - 1.0), "E": np.array([1 - g**2]), "zero_mode_overlap": float("nan")}
    s = stat if stat is not None else stationary(g, tau_max=tau_max, dtau=dtau)
    t = np.concatenate([-s.tau[:0:-1], s.tau])
    V = 1.0 - g**2 * np.concatenate([s.C_phi_prime[:0:-1], s.C_phi_prime])  # 1 - g^2 C_phi'(tau)
    h = s.tau[1] - s.tau[0]
    diag = 2.0 / h**2 + V  # -psi'' by central differences, Dirichlet ends
    off = -np.ones(len(t) - 1) / h**2
    E, psi = linalg.eigh_tridiagonal(diag, off, select="i", select_range=(0, n_states - 1))
    lam = -1.0 + np.sqrt(1.0 - E[0])  # lambda = -1 + sqrt(1 - E0)
    dD = np.gradient(np.concatenate([s.Delta[:0:-1], s.Delta]), t)
    overlap = float("nan")
    if n_states > 1:
        overlap = float(abs(psi[:, 1] @ dD) / (np.linalg.norm(psi[:, 1]) * np.linalg.norm(dD)))
    return {"lam": float(lam), "E": E, "zero_mode_overlap": overlap}


# ---------------------------------------------------------------------------------------------
# two replicas
# ---------------------------------------------------------------------------------------------
def bivariate_phi(s1: float, s2: np.ndarray, c12: np.ndarray, nodes=None) -> np.ndarray:
    """E[tanh(u) tanh(v)] for zero-mean Gaussians with Var u = s1, Var v = s2, Cov(u, v) = c12.

    u = sqrt(s1) z1, v = sqrt(s2) (r z1 + sqrt(1 - r^2) z2) with r the correlation; a tensor
    product rule over (z1, z2). Vectorised over s2 and c12 (leading axes).

    tanh(v) = 2 / (1 + exp(-2 v)) - 1, and exp(-2 v) = exp(-2 alpha z1) exp(-2 beta z2) with
    alpha = sqrt(s2) r, beta = sqrt(s2 (1 - r^2)): 2 n exponentials per entry instead of n^2 on the
    n x n node grid (the exponentials were 60 % of the two-replica solver's time); the sum over z2
    is fused (`kernels.logistic_quadrature`). Each factor's
    exponent is clipped at 300, so no product is inf * 0; the factorisation is exact (to rounding)
    while |2 alpha z| and |2 beta z| stay below 300, i.e. s2 < (150 / max z)^2 (about 460 on the
    default 7-wide grid; the network's variances stay below 30 up to g = 5).

    On a symmetric uniform grid with a node at 0 (`gauss_grid` with odd n, every profile's) the rule is
    folded by the symmetry (`kernels.symmetric_tanh_quadrature`: a quarter of the divisions and two
    exponentials per entry); other grids take the unfolded rule. The two agree to rounding (~1e-15).

    The kernel <phi(x_a(n)) phi(x_b(m))> of the two-replica DMFT (README maths (M6)).
    """
    z, w = nodes if nodes is not None else gauss_grid(61, 8.0)
    s2 = np.asarray(s2, dtype=np.float64)
    c12 = np.asarray(c12, dtype=np.float64)
    if symmetric_grid(z):
        mid = len(z) // 2
        shape = np.broadcast(s2, c12).shape
        s2b, c12b = np.broadcast_to(s2, shape), np.broadcast_to(c12, shape)
        return symmetric_tanh_quadrature(s1, s2b, c12b, (z[-1] - z[0]) / (len(z) - 1), w[mid + 1:],
                                         w[mid]).reshape(shape)
    return unfolded_bivariate_phi(s1, s2, c12, (z, w))


def symmetric_grid(z: np.ndarray) -> bool:
    """Whether the nodes are uniform, symmetric about 0 and odd in number (0 a node), to rounding."""
    z = np.asarray(z, dtype=np.float64)
    n = len(z)
    if n < 3 or n % 2 == 0:
        return False
    dz = (z[-1] - z[0]) / (n - 1)
    return bool(dz > 0 and np.allclose(z, (np.arange(n) - n // 2) * dz, rtol=0.0, atol=1e-12 * dz * n))


def unfolded_bivariate_phi(s1: float, s2: np.ndarray, c12: np.ndarray, nodes) -> np.ndarray:
    """`bivariate_phi` by the full n x n tensor-product rule on any node grid (`kernels.logistic_quadrature`)."""
    z, w = nodes
    s2 = np.asarray(s2, dtype=np.float64)
    c12 = np.asarray(c12, dtype=np.float64)
    r = np.clip(c12 / np.sqrt(np.maximum(s1 * s2, 1e-300)), -1.0, 1.0)
    a = np.tanh(np.sqrt(s1) * z)                                  # tanh(u) at z1 nodes
    sd = np.sqrt(s2)[..., None]
    e1 = np.exp(np.clip(-2.0 * (sd * r[..., None]) * z, -300.0, 300.0))                 # exp(-2 alpha z1)
    e2 = np.exp(np.clip(-2.0 * (sd * np.sqrt(1 - r**2)[..., None]) * z, -300.0, 300.0))  # exp(-2 beta z2)
    lead = e1.shape[:-1]
    # sum_j w_j / (1 + exp(-2 v_ij)) per z1 node i; tanh = 2 / (1 + exp(-2 v)) - 1 and sum_j w_j = 1
    half = logistic_quadrature(e1.reshape(-1, len(z)), e2.reshape(-1, len(z)), w).reshape(lead + (len(z),))
    inner = 2.0 * half - w.sum()                                  # E[tanh(v) | z1]
    return inner @ (a * w)


@dataclass
class TwoReplica:
    g: float
    eta: float
    t: np.ndarray        # times 0 ... T
    C_TT: np.ndarray     # <x_T(t)^2> (= <x_S(t)^2>)
    C_TS: np.ndarray     # <x_T(t) x_S(t)>

    @property
    def D(self) -> np.ndarray:
        """D(t) = C_TT + C_SS - 2 C_TS = <(x_T - x_S)^2>."""
        return 2.0 * (self.C_TT - self.C_TS)  # D = C_TT(t,t) + C_SS(t,t) - 2 C_TS(t,t)


def two_replica(g: float, eta: float, T: float = 10.0, dt: float = 0.02, s0: float = 1.0,
                n_nodes: int = 41, half_width: float = 7.0) -> TwoReplica:
    """Two-replica DMFT for the Euler map x_{n+1} = (1-dt) x_n + dt gamma_n, propagated row by row.

    Covariances C_ab(n, m) = <x_a(n) x_b(m)> and noise kernels G_ab(n, m) = g^2 rho_ab
    <phi(x_a(n)) phi(x_b(m))>. By replica symmetry C_SS = C_TT and C_TS is symmetric, so two
    (n_t+1)^2 matrices suffice. With R(n, m) = <gamma(n) x(m)>:
        R(n, m+1) = (1-dt) R(n, m) + dt G(n, m),     C(n+1, m) = (1-dt) C(n, m) + dt R(n, m).
    Memory: 4 (T/dt)^2 doubles (10 MB at T=10, dt=0.01).

    Paper: the two-replica DMFT section and its D(t) figure (README maths (M6)); official `total.py`,
    solved exactly instead of by its Monte-Carlo fixed point.
    """
    return two_replica_batch(g, [eta], [T], dt=dt, s0=s0, n_nodes=n_nodes, half_width=half_width)[0]


def two_replica_batch(g: float, etas, Ts, dt: float = 0.02, s0: float = 1.0, n_nodes: int = 41,
                      half_width: float = 7.0) -> list[TwoReplica]:
    """`two_replica(g, eta, T)` for every (eta, T) of `etas` and `Ts` at one gain, time step and grid.

    The teacher's kernels C_TT, G_TT do not depend on eta, and every row of the propagation depends
    only on earlier rows: the teacher is propagated once, to max(Ts), and each student's C_TS, G_TS
    only to its own T. Each result equals its own `two_replica` call (the same operations on the same
    rows). Memory: 2 (1 + distinct etas) (max T / dt)^2 doubles.

    Paper: the two-replica DMFT section (README maths (M6)).
    """
    etas, Ts = [float(e) for e in etas], [float(x) for x in Ts]
    if len(etas) != len(Ts) or not etas:
        raise UserError("two_replica_batch needs one T per eta (and at least one eta)")
    for e in etas:
        check_params(g=g, dt=dt, eta=e)
    if min(Ts) <= 0 or s0 < 0:
        raise UserError("two_replica needs T > 0 and an initial variance s0 >= 0")
    steps = [int(round(x / dt)) for x in Ts]
    uniq = sorted(set(etas))                              # one student per distinct eta, to its longest T
    n_stu = {e: max(n for ee, n in zip(etas, steps) if ee == e) for e in uniq}
    nt = max(steps)
    from scipy import signal   # here, not at the top: a third of a second that every worker of a pool paid at start

    from .rnn import check_memory

    check_memory(2 * (1 + len(uniq)) * (nt + 1) ** 2 * 8, "two-replica DMFT kernel")
    a = 1.0 - dt
    nodes = gauss_grid(n_nodes, half_width)
    keys = ["TT"] + uniq
    n_of = {"TT": nt} | n_stu
    C = {k: np.zeros((n_of[k] + 1, n_of[k] + 1)) for k in keys}
    G = {k: np.zeros((n_of[k] + 1, n_of[k] + 1)) for k in keys}
    gain = {"TT": g**2} | {e: g**2 * np.sqrt(1.0 - e**2) for e in uniq}   # g^2 rho_ab, rho_TS = sqrt(1 - eta^2)
    for k in keys:
        C[k][0, 0] = s0  # shared initial state x_T(0) = x_S(0)
        G[k][0, 0] = gain[k] * bivariate_phi(s0, np.array([s0]), np.array([C[k][0, 0]]), nodes)[0]
    for n in range(nt):
        live = [k for k in keys if n < n_of[k]]
        for k in live:
            Rn = signal.lfilter([dt], [1.0, -a], G[k][n, : n + 1])    # R(n, m) for m = 1 ... n+1
            Rrow = np.concatenate([[0.0], Rn])                         # R(n, 0) = 0
            row = a * C[k][n, : n + 1] + dt * Rrow[: n + 1]             # C(n+1, m), m <= n
            C[k][n + 1, : n + 1] = row
            C[k][: n + 1, n + 1] = row
            C[k][n + 1, n + 1] = a * row[n] + dt * Rrow[n + 1]          # C(n+1, n+1) = a C(n, n+1) + dt R(n, n+1)
        s_new = C["TT"][n + 1, n + 1]
        s_all = np.diag(C["TT"])[: n + 2]
        for k in live:
            Grow = gain[k] * bivariate_phi(s_new, s_all, C[k][n + 1, : n + 2], nodes)
            G[k][n + 1, : n + 2] = Grow
            G[k][: n + 2, n + 1] = Grow
    c_tt = np.diag(C["TT"])
    return [TwoReplica(g, e, np.arange(m + 1) * dt, c_tt[: m + 1].copy(), np.diag(C[e])[: m + 1].copy())
            for e, m in zip(etas, steps)]
