"""Langevin sampling of exp(−E/T) and the noiseless flow, batched over chains and models.

Paper: arXiv:2506.23546. Euler-Maruyama x ← x + dt·F(x) + √(2T·dt)·ξ with F = −∇E (no Metropolis
correction, as in the released code). Works on one model (x: (M, N)) or a stack (x: (K, M, N)), on
the device x lives on (J and b follow it; a CPU generator seeds that device's own, `device_generator`).
"""
from __future__ import annotations

import math

import numpy as np
import torch

from common import fastops
from common.seed import Streams
from common.errors import UserError

from .model import check_temperature, energy, phi

X_MAX = 50.0  # mean |x| beyond this is a runaway chain (data sit at |x| <= atanh(0.97) = 2.1)


class Divergence(UserError):
    """Chains left the data region (NaN or runaway |x|)."""


def guard(x, where: str, x_max: float = X_MAX) -> None:
    """Stop with one line if any chain is not finite or the mean |x| of a model runs away."""
    if not torch.isfinite(x).all():
        raise Divergence(f"{where}: chains became NaN/inf; lower the learning rate or dt")
    m = x.abs().mean(dim=(-1, -2)) if x.dim() >= 2 else x.abs().mean()
    worst = float(m.max())
    if worst > x_max:
        raise Divergence(f"{where}: mean |x| = {worst:.3g} > {x_max:g} (runaway chains); lower the learning rate or dt")


def spectral_norm(J) -> float:
    return float(torch.linalg.matrix_norm(J.double(), ord=2).max())


def check_step(dt: float, J=None) -> None:
    """dt must keep Euler steps stable: dt·L < 2 with L = (1 + ‖J‖₂)² bounding the curvature of E."""
    if not (isinstance(dt, (int, float)) and math.isfinite(dt) and dt > 0):
        raise UserError(f"dt must be a positive number, got {dt!r}; use dt=0.01 (the paper's value)")
    lip = 1.0 if J is None else (1.0 + spectral_norm(J)) ** 2
    if dt * lip >= 2.0 or dt > 0.5:
        raise UserError(f"dt={dt:g} is too large for a stable Euler step (needs dt < {min(2.0 / lip, 0.5):.3g} for this J); use dt=0.01")


NOISE_BLOCK = 1 << 23   # Gaussian increments drawn per call: as many steps as fit in 2^23 numbers (32 MB)


def fill_normal(buf, generator=None, threads: int = 1) -> None:
    """buf ~ N(0, 1) in place. On CPU: the Philox stream (`fastops.normal_`) of a key drawn from
    `generator` (one draw per call), filled on `threads` threads with the same numbers for any thread
    count. Elsewhere: torch's normal_ with `generator`."""
    if buf.device.type != "cpu":
        buf.normal_(generator=generator)
        return
    key = int(torch.randint(0, 2 ** 63 - 1, (1,), generator=generator))
    fastops.normal_(buf, key, threads)


def noise_draws(steps: int, numel: int, generator) -> None:
    """Advance `generator` as `langevin` does for `steps` steps of chains of `numel` values on the CPU (`fill_normal`'s
    one key per noise block), drawing nothing else (to start a later run from where the generator will be)."""
    block = max(1, min(steps, NOISE_BLOCK // max(1, numel)))
    for _ in range(-(-int(steps) // block)):
        torch.randint(0, 2 ** 63 - 1, (1,), generator=generator)


def device_generator(generator, device):
    """`generator` itself where it lives on `device` (or is None); else a generator on `device` seeded
    by one draw from it. So a run on a GPU is fixed by the same CPU generator as on the CPU (its
    numbers differ from the CPU's: the streams are the devices' own), and resuming it is exact."""
    device = torch.device(device)
    if generator is None or (generator.device.type == device.type
                             and (device.index is None or generator.device.index in (None, device.index))):
        return generator
    key = int(torch.randint(0, 2 ** 63 - 1, (1,), generator=generator))
    return Streams(key).torch_generator("device noise", device=device)


def langevin(x, J, b, steps: int, dt: float, T: float = 1.0, generator=None, snap_at=(), check_every: int = 100,
             where: str = "langevin", show_progress: bool = False, gemm_dtype=None, stepper=None, noise_threads: int = 1,
             final_check: bool = True):
    """Run `steps` Euler-Maruyama steps of the neural Langevin dynamics dx = −∇E dt + √(2T) dW (Sec. 2) from x
    (not modified): x ← x + dt·F(x) + √(2T·dt)·ξ, F = −∇E (`model.force`). Returns (x, {step: φ(x) copy}).

    `snap_at`: step counts (0..steps) at which to keep a copy of the image φ(x). The Gaussian
    increments are drawn for a block of steps at once (one generator call per block, not per step).
    `gemm_dtype=torch.bfloat16`: the two matrix products of each step take bf16 operands (fp32
    accumulation, bf16 result); x, the force and the noise stay in x's dtype (tested: the stationary
    moments agree with fp32 within their error). `stepper`: a `Stepper` subclass in place of the
    sampler's own step (only the deliberately broken steppers of `thermo` use it, as controls).
    `noise_threads`: the increments of a block drawn on that many threads (`fill_normal`; the same
    numbers for any count). `final_check=False` skips the guard at the end (a host sync on a GPU): for callers
    that guard on their own cadence (`train.Trainer`); with check_every=0 the call then never syncs.
    """
    check_temperature(T)
    if x.dim() == 3 and x.shape[0] == 1:                 # a stack of one model: the 2-D path (fastops.linear)
        x1, snaps = langevin(x[0], J[0] if J.dim() == 3 else J, b[0] if b.dim() == 2 else b, steps, dt, T, generator,
                             snap_at, check_every, where, show_progress, gemm_dtype, stepper, noise_threads, final_check)
        return x1.unsqueeze(0), {k: v.unsqueeze(0) for k, v in snaps.items()}
    x = x.clone()
    J, b = J.to(x.device), b.to(x.device)
    generator = device_generator(generator, x.device)
    noise = math.sqrt(2.0 * T * dt)
    snaps, want = {}, set(int(s) for s in snap_at)
    if 0 in want:
        snaps[0] = phi(x).clone()
    block = max(1, min(steps, NOISE_BLOCK // max(1, x.numel())))
    buf = torch.empty((block, *x.shape), dtype=x.dtype, device=x.device) if steps else None
    prog = None
    if show_progress:
        from common.progress import progress
        prog = iter(progress(range(steps), total=steps, desc=where))
    step = (stepper or Stepper)(J, b, x, gemm_dtype)
    lean = buf is not None and step.lean(x, buf)                   # the same step with its per-step checks made once
    bufn = buf.view(buf.shape[0], -1).numpy() if lean else None
    s = 0
    while s < steps:
        n = min(block, steps - s)
        fill_normal(buf[:n], generator, noise_threads)
        for i in range(n):
            s += 1
            if lean:
                step.euler_lean(x, dt, bufn[i], noise)
            else:
                step.euler(x, dt, buf[i], noise)                   # x += dt·F(x) + √(2T dt)·ξ
            if s in want:
                snaps[s] = phi(x).clone()
            if check_every and s % check_every == 0:
                guard(x, f"{where} step {s}")
            if prog is not None:
                next(prog, None)
    if prog is not None:
        next(prog, None)
    if final_check:
        guard(x, f"{where} step {steps}")
    return x, snaps


class Stepper:
    """x += dt·F(x) (+ noise) in place, F = −∇E of Sec. 2: two matrix products, one tanh, six elementwise passes.

    One model (x: (M, N)): the products go through `fastops.linear` (oneDNN on CPU for N ≥ 128); a
    stack (x: (K, M, N)): batched products. `self.J`, `self.Jt`, `self.b` (broadcastable to x) stay
    available to subclasses."""

    def __init__(self, J, b, x, gemm_dtype=None):
        self.J = J.expand(*x.shape[:-2], *J.shape[-2:]) if J.dim() < x.dim() else J
        self.lowp = gemm_dtype is not None and gemm_dtype != x.dtype
        dt_ = gemm_dtype if self.lowp else self.J.dtype
        self.Jt = self.J.transpose(-1, -2).to(dt_).contiguous()
        self.J = self.J.to(dt_).contiguous()
        self.b1 = b                                                  # (N,) for one model
        self.b = b.unsqueeze(-2).expand(*x.shape[:-2], 1, b.shape[-1]) if b.dim() < x.dim() else b
        self.gemm_dtype = dt_
        self.batched = x.dim() == 3
        self._out = self._t = None

    def _products(self, t, x):
        """(e, g): e = Jφ(x) + b − x, g_i = (Jᵀe)_i, for the rows of x."""
        if self.batched:
            if self.lowp:
                e = torch.bmm(t.to(self.gemm_dtype), self.Jt).float().add_(self.b).sub_(x)
                return e, torch.bmm(e.to(self.gemm_dtype), self.J).float()
            if self._out is None or self._out[0].shape != x.shape or self._out[0].dtype != x.dtype:
                self._out = (torch.empty_like(x), torch.empty_like(x))   # reused every step: no allocation
            e, g = self._out
            torch.baddbmm(self.b, t, self.Jt, out=e).sub_(x)
            return e, torch.bmm(e, self.J, out=g)
        if self.lowp:                                                # W = J gives φJᵀ; W = Jᵀ gives eJ
            e = fastops.linear(t.to(self.gemm_dtype), self.J).float().add_(self.b1).sub_(x)
            return e, fastops.linear(e.to(self.gemm_dtype), self.Jt).float()
        e = fastops.linear(t, self.J, self.b1).sub_(x)
        return e, fastops.linear(e, self.Jt)

    def lean(self, x, buf=None) -> bool:
        """Whether `euler_lean` may step x with noise rows of `buf` (None: the noiseless flow): the sampler's own step (not a subclass's), on
        contiguous CPU float32/float64 tensors of one dtype, fp32/fp64 products, with the fused tail `euler` would
        take. It makes the same calls as `euler` (the same numbers, bit for bit), its checks and conversions
        made once per run instead of once per step (small chains spend most of a step on them)."""
        if type(self).euler is not Stepper.euler or _euler_tail is None or self.lowp:
            return False
        if x.device.type != "cpu" or x.dtype not in (torch.float32, torch.float64) or self.J.dtype != x.dtype:
            return False
        if not x.is_contiguous() or x.requires_grad:
            return False
        if buf is not None and not (buf.is_contiguous() and buf.dtype == x.dtype and buf.shape[1:] == x.shape):
            return False
        if x.numel() > FUSED_MAX and torch.get_num_threads() > 1:
            return False
        self._xl = x
        self._t = torch.empty_like(x)
        self._out = (torch.empty_like(x), torch.empty_like(x))
        # one model: the products `fastops.linear` makes for a small W (torch's linear = addmm), into fixed buffers
        self._addmm = not self.batched and self.J.numel() < fastops.ONEDNN_MIN_WEIGHT
        self._np = tuple(a.view(-1).numpy() for a in (x, self._t, *self._out))
        return True

    def euler_lean(self, x, dt, xi=None, noise: float = 0.0):
        """`euler` with noise row `xi` (a flat numpy view; None: no noise) after `lean(x, ...)`: the same operations."""
        if x is not self._xl:
            raise ValueError("euler_lean steps the tensor given to lean()")
        xn, tn, en, gn = self._np
        np.tanh(xn, out=tn)                                           # fastops.tanh: numpy's loop on the same memory
        t = self._t
        if self.batched:
            e, g = self._out
            torch.baddbmm(self.b, t, self.Jt, out=e).sub_(x)
            torch.bmm(e, self.J, out=g)
        elif self._addmm:
            e, g = self._out
            torch.addmm(self.b1, t, self.J.t(), out=e).sub_(x)
            torch.mm(e, self.Jt.t(), out=g)
        else:
            e, g = self._products(t, x)
            en, gn = e.view(-1).numpy(), g.view(-1).numpy()
        if xi is None:                                                # the flow: `euler`'s torch passes
            e.sub_(g).addcmul_(t.mul_(t), g)
            x.add_(e, alpha=dt)
            return
        _euler_tail(xn, en, gn, tn, xi, float(dt), float(noise))

    def euler(self, x, dt, xi=None, noise: float = 0.0):
        if self._t is None or self._t.shape != x.shape or self._t.dtype != x.dtype:
            self._t = torch.empty_like(x)
        t = fastops.tanh(x, out=self._t)                              # φ(x), into a buffer reused every step
        e, g = self._products(t, x)
        # F = e − φ'(x)·Jᵀe = e − g + φ²·g
        if xi is not None and _fused_tail(x, e, g, t, xi, dt, noise):
            return
        e.sub_(g).addcmul_(t.mul_(t), g)
        if xi is None:
            x.add_(e, alpha=dt)
        else:
            x.add_(xi.mul_(noise).add_(e, alpha=dt))


FUSED_MAX = 1 << 18   # the fused tail (one thread) for at most this many values per step, or on one torch thread


def _fused_tail(x, e, g, t, xi, dt, noise) -> bool:
    """x += dt·(e − g + t²·g) + noise·ξ in one pass (numba), where it pays: contiguous CPU float tensors
    of one dtype, small (below FUSED_MAX values) or torch on one thread; else False (the caller's five
    torch passes, multi-threaded)."""
    if _euler_tail is None or x.device.type != "cpu" or x.dtype not in (torch.float32, torch.float64):
        return False
    if x.numel() > FUSED_MAX and torch.get_num_threads() > 1:
        return False
    arrs = (x, e, g, t, xi)
    if any(a.dtype != x.dtype or not a.is_contiguous() or a.shape != x.shape for a in arrs):
        return False
    _euler_tail(*(a.detach().view(-1).numpy() for a in arrs), float(dt), float(noise))
    return True


try:
    from numba import njit

    @njit(cache=True, nogil=True)
    def _euler_tail(x, e, g, t, xi, dt, noise):  # pragma: no cover - compiled
        d = x.dtype.type(dt)
        s = x.dtype.type(noise)
        for i in range(x.shape[0]):
            gi = g[i]
            ti = t[i]
            x[i] += s * xi[i] + d * ((e[i] - gi) + ti * ti * gi)
except ImportError:  # pragma: no cover - numba absent: the torch passes
    _euler_tail = None


def flow(x, J, b, steps: int, dt: float, record_energy: bool = False, record_every: int = 1):
    """Noiseless gradient flow x ← x + dt·F (T = 0; F = −∇E, Sec. 2): the quench that relaxes chains to fixed
    points, and the denoising figure's flow (released demo `10 types/hopfield`).

    Returns (x, energies) where energies is (n_records, ...) of E per state if requested.
    """
    x = x.clone()
    J, b = J.to(x.device), b.to(x.device)
    energies = [energy(x, J, b)] if record_energy else []
    step = Stepper(J, b, x)
    lean = step.lean(x)
    for s in range(1, steps + 1):
        if lean:
            step.euler_lean(x, dt)
        else:
            step.euler(x, dt)
        if record_energy and s % record_every == 0:
            energies.append(energy(x, J, b))
    guard(x, "flow")
    return x, (torch.stack(energies) if record_energy else None)


def log_times(t_max: int, n: int, t_min: int = 1) -> list[int]:
    """About n log-spaced integer step counts in [t_min, t_max] (unique, sorted)."""
    import numpy as np

    return sorted(set(int(round(v)) for v in np.geomspace(t_min, t_max, n)))
