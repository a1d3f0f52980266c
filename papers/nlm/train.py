"""Training a stack of NLMs with the local contrastive rule, checkpoints and `generate`.

Paper: arXiv:2506.23546. Each update: a minibatch (data phase) and M chains advanced k Langevin
steps (model phase), persistent across updates (PCD-k) or redrawn from N(0, I) every update
(Rdm-k); ΔJ_ij ∝ ⟨(x_i−h_i)φ(x_j)⟩_data − ⟨(x_i−h_i)φ(x_j)⟩_model. Optimizers: "adam", the revised
paper's scripts (`3 types/*/1train_*_multi.py`: Adam, L2 weight decay on J alone, a bias; it rescales each
synapse's step, so it is not the pure local rule); "gd", the v1 folder's rule, plain gradient ascent with
multiplicative decay J ← (1 − λ)J + η(data − model) (η = 5e-4, λ = 2e-6 there, no bias); "sgd", the same step
with L2 decay folded into the gradient. Minibatches: "epochs", as the revised scripts' DataLoader (each model's
set reshuffled every epoch, batches of min(P, batch) without replacement, the last one of an epoch smaller);
"replace", every row drawn uniformly with replacement (the short CPU profiles). K models with their own
training sets of sizes P_k live in one stacked tensor (J: (K, N, N)), so a sweep over P and
seeds costs one batched matrix product per Langevin step. `device`: where J, b, the chains and the data
live (a GPU for the full profile); the run is fixed by one CPU generator on any device (the minibatch
draws come from it; the Langevin noise from a device generator it seeds every update), so a GPU run
resumes exactly, and a CPU run is the same with device="cpu" as without.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch

from common.errors import UserError
from common.io import atomic_write_bytes

from .model import check_temperature, init_couplings, likelihood_gradient, phi
from .sampler import Divergence, check_step, device_generator, guard, langevin, spectral_norm


@dataclass
class TrainConfig:
    n_chains: int = 200        # M persistent (or re-initialised) chains per model
    k: int = 10                # Langevin steps per update
    mode: str = "pcd"          # "pcd" (persistent) or "rdm" (chains redrawn from N(0, I))
    optimizer: str = "adam"    # "adam" (the revised scripts), "gd" (the v1 folder's rule) or "sgd"
    minibatch: str = "replace" # "epochs" (the revised scripts' DataLoader: reshuffled each epoch) or "replace"
    lr: float = 5e-4
    weight_decay: float = 5e-7 # adam/sgd: L2 on J in the gradient; gd: λ in J ← (1 − λ)J per update
    bias: bool = True          # train b (the paper's v2 model); the released training script has none
    gemm_dtype: str = "float32"  # "bfloat16": bf16 operands in the Langevin matrix products (fp32 accumulation)
    noise_threads: int = 1     # > 1: the Langevin increments drawn on that many threads (sampler.fill_normal; the same numbers)
    freeze_at: float = 0.0     # > 0: a model whose dt(1+||J||_2)^2 reaches this (< 2) stops learning (logged); 0: stop the run
    batch: int = 200
    dt: float = 0.01
    T: float = 1.0
    gain: float = 2.0

    def validate(self) -> None:
        check_temperature(self.T)
        check_step(self.dt)
        if self.mode not in ("pcd", "rdm"):
            raise UserError(f"mode must be 'pcd' or 'rdm', got {self.mode!r}")
        if self.optimizer not in ("adam", "sgd", "gd"):
            raise UserError(f"optimizer must be 'gd' (released), 'sgd' or 'adam', got {self.optimizer!r}")
        if self.minibatch not in ("replace", "epochs"):
            raise UserError(f"minibatch must be 'epochs' (the released DataLoader) or 'replace', got {self.minibatch!r}")
        if self.gemm_dtype not in ("float32", "bfloat16"):
            raise UserError(f"gemm_dtype must be 'float32' or 'bfloat16', got {self.gemm_dtype!r}")
        if not (isinstance(self.noise_threads, int) and self.noise_threads >= 1):
            raise UserError(f"noise_threads must be an integer >= 1, got {self.noise_threads!r}")
        if not 0.0 <= self.freeze_at < 2.0:
            raise UserError(f"freeze_at must be in [0, 2) (a fraction of the Euler limit 2), got {self.freeze_at!r}")
        if self.k < 1 or self.n_chains < 1 or self.batch < 1 or not self.lr > 0:
            raise UserError("k, n_chains and batch must be >= 1 and lr > 0")


# On the CPU the chains (NaN or runaway) and the Euler stability (and a model's freeze at freeze_at) are checked every
# STABILITY_EVERY updates (no update reads the chains back on its own: a NaN is caught at most 9 updates late): at
# every 100, one model (seed 0's NLM on the 10 denoising patterns) grew ||J||_2 from below the freeze point (12.4 at
# dt = 0.01) past the Euler limit (13.1) between two checks and stopped the run; a check costs one spectral norm.
STABILITY_EVERY = 10
GUARD_EVERY = 100   # on a GPU, the chains are checked (a host sync) every this many updates, as the Euler stability


class Trainer:
    """K models trained side by side on their own first P_k rows of a shared data tensor."""

    def __init__(self, data_x, sizes, cfg: TrainConfig, generator=None, init=None, dtype=torch.float32, device=None):
        cfg.validate()
        self.device = torch.device(device or "cpu")
        data_x = torch.as_tensor(data_x, dtype=dtype)
        if data_x.dim() == 2:                                  # one data list shared by all models
            data_x = data_x.unsqueeze(0).expand(len(sizes), *data_x.shape)
        self.sizes = torch.as_tensor([int(p) for p in sizes])
        if int(self.sizes.max()) > data_x.shape[1] or int(self.sizes.min()) < 1:
            raise UserError(f"training-set sizes {self.sizes.tolist()} do not fit the {data_x.shape[1]} images given; lower P")
        self.cfg, self.dtype = cfg, dtype
        self.K, self.N = len(self.sizes), data_x.shape[-1]
        self.data = data_x[:, : int(self.sizes.max())].contiguous().to(self.device)
        self._row0 = torch.arange(self.K)[:, None] * self.data.shape[1]
        # one CPU generator fixes the run (initial J unless `init`, chains, minibatches, each Langevin call's noise):
        # the caller's keyed stream (`run.streams.torch_generator(...)`); None: torch's default-seeded generator
        self.gen = generator if generator is not None else torch.Generator()
        if init is None:
            J, b = init_couplings(self.N, cfg.gain, n_models=self.K, generator=self.gen, dtype=dtype)
        else:
            J, b = (torch.as_tensor(t, dtype=dtype).cpu() for t in init)
            J, b = J.expand(self.K, self.N, self.N).clone(), b.expand(self.K, self.N).clone()
        self.J, self.b = torch.nn.Parameter(J.to(self.device)), torch.nn.Parameter(b.to(self.device))
        check_step(cfg.dt, self.J.detach())
        params = [self.J, self.b]
        self.opt = torch.optim.Adam(params, lr=cfg.lr) if cfg.optimizer == "adam" else torch.optim.SGD(params, lr=cfg.lr)
        if not cfg.bias:
            with torch.no_grad():
                self.b.zero_()
        self.chains = torch.randn((self.K, cfg.n_chains, self.N), generator=self.gen, dtype=dtype).to(self.device)
        self.step_count = 0
        self.frozen = torch.zeros(self.K, dtype=torch.bool)
        self.frozen_at = [-1] * self.K                        # update at which each model was frozen (-1: never)
        self._offdiag = 1.0 - torch.eye(self.N, dtype=dtype, device=self.device)
        b_eff = torch.minimum(self.sizes, torch.tensor(cfg.batch))
        self._full = self.sizes <= cfg.batch                  # small sets: the whole set every update
        self._B = int(b_eff.max())
        ar = torch.arange(self._B)
        self._full_idx = torch.minimum(ar[None, :], self.sizes[:, None] - 1)
        self._full_w = (ar[None, :] < self.sizes[:, None]).to(dtype) / self.sizes[:, None].to(dtype)
        # minibatch="epochs": each model's current epoch (a permutation of its P rows, None before the first) and the
        # rows of it already used
        self._perm, self._pos = [None] * self.K, [0] * self.K
        self._keep = None                                     # the frozen mask on the device, made when it changes

    # -- one update ------------------------------------------------------------------------------
    def _batch(self):
        if self.cfg.minibatch == "epochs":
            idx, w = self._epoch_batch()
        else:
            r = torch.rand((self.K, self._B), generator=self.gen, dtype=torch.float64)
            rnd = (r * self.sizes[:, None]).long().clamp_max(self.sizes[:, None] - 1)
            idx = torch.where(self._full[:, None], self._full_idx, rnd)
            w = torch.where(self._full[:, None], self._full_w, torch.full_like(self._full_w, 1.0 / self._B))
        rows = (idx + self._row0).reshape(-1)                  # rows of the flattened (K·P_max, N) data
        if self.device.type != "cpu":                          # pinned, asynchronous: no host sync per update
            rows, w = (t.pin_memory().to(self.device, non_blocking=True) for t in (rows, w))
        x = self.data.view(-1, self.N).index_select(0, rows).view(self.K, self._B, self.N)   # one copy, no expanded index
        return x, w

    def _epoch_batch(self):
        """(idx, w) of minibatch="epochs": a model with P <= batch takes its whole set (`_full_idx`, `_full_w`); a
        larger one the next `batch` rows of its epoch's permutation (a new one drawn from `gen` once the last is
        used up), the last batch of an epoch the P mod batch rows left, padded with weight 0: torch's
        DataLoader(shuffle=True, drop_last=False) over the model's P images, as the revised scripts train."""
        idx, w = self._full_idx.clone(), self._full_w.clone()
        for k in torch.nonzero(~self._full).reshape(-1).tolist():
            p = int(self.sizes[k])
            if self._perm[k] is None or self._pos[k] >= p:
                self._perm[k], self._pos[k] = torch.randperm(p, generator=self.gen), 0
            take = self._perm[k][self._pos[k]: self._pos[k] + self._B]
            n = len(take)
            idx[k, :n], idx[k, n:] = take, take[0]
            w[k, :n], w[k, n:] = 1.0 / n, 0.0
            self._pos[k] += n
        return idx, w

    @torch.no_grad()
    def update(self) -> None:
        """One update of every model: Sec. 2's rule, a minibatch (data phase) against the chains advanced k
        Langevin steps (model phase; PCD-k persistent, Rdm-k redrawn from N(0, I)), then the optimizer's step
        (`gd`: the released `3 types/PCD_10` script's J ← (1 − λ)J + η(data − model))."""
        cfg = self.cfg
        J, b = self.J.detach(), self.b.detach()
        x_data, w = self._batch()
        if cfg.mode == "rdm":
            self.chains = torch.randn(self.chains.shape, generator=device_generator(self.gen, self.device),
                                      dtype=self.dtype, device=self.device)
        self.chains, _ = langevin(self.chains, J, b, cfg.k, cfg.dt, cfg.T, self.gen, check_every=0,
                                  gemm_dtype=torch.bfloat16 if cfg.gemm_dtype == "bfloat16" else None,
                                  noise_threads=cfg.noise_threads, final_check=False)
        if self.device.type != "cpu" and self.step_count % GUARD_EVERY == 0:   # a host sync: every GUARD_EVERY updates
            guard(self.chains, f"training update {self.step_count}")   # (the CPU's: `check_stability`'s, every STABILITY_EVERY)
        gJ, gb = likelihood_gradient(x_data, self.chains, J, b, cfg.T, w)
        if not cfg.bias:
            gb = torch.zeros_like(gb)
        frozen = self._keep is not None                       # a CPU flag: no sync
        if frozen:                                            # models at the Euler limit keep their J, b
            keep = self._keep                                 # on the device since the freeze (a copy per update would sync)
            J_old, b_old = J.clone(), b.clone()               # before any decay: J aliases self.J
        if cfg.optimizer == "gd":                               # released: J ← (1 − λ)J + η(data − model)
            self.J.mul_(1.0 - cfg.weight_decay)
        else:
            gJ = gJ - cfg.weight_decay * J * self._offdiag
        self.J.grad, self.b.grad = -gJ, -gb                   # optimizers minimise: ascend L
        self.opt.step()
        if frozen:                                            # masked copies (boolean indexing would sync)
            self.J.copy_(torch.where(keep[:, None, None], J_old, self.J)); self.b.copy_(torch.where(keep[:, None], b_old, self.b))
        self.step_count += 1

    def train(self, n_updates: int, snap_at=(), desc: str = "train", show_progress: bool = True) -> dict:
        """Run n updates; returns {update count: (J, b) copies} at the requested counts."""
        snaps = {}
        want = set(int(s) for s in snap_at)
        if self.step_count in want:
            snaps[self.step_count] = self.params()
        rng = range(n_updates)
        if show_progress:
            from common.progress import progress
            rng = progress(rng, total=n_updates, desc=desc)
        for _ in rng:
            self.update()
            if self.step_count in want:
                snaps[self.step_count] = self.params()
            if self.step_count % (STABILITY_EVERY if self.device.type == "cpu" else GUARD_EVERY) == 0:
                self.check_stability()
        guard(self.chains, f"training update {self.step_count}")
        return snaps

    def check_stability(self) -> None:
        """Learning sharpens the wells by growing J; stop before dt·(1+‖J‖₂)² reaches 2, where the
        Euler step turns unstable and the chains (hence the negative phase) run away. The chains are checked first
        (NaN chains make J NaN through the rule, where the norm would fail on its own)."""
        guard(self.chains, f"training update {self.step_count}")
        norms = torch.linalg.matrix_norm(self.J.detach().double(), ord=2).reshape(-1).cpu()
        before = self.frozen.clone()
        if self.cfg.freeze_at > 0:
            hit = (self.cfg.dt * (1.0 + norms) ** 2 >= self.cfg.freeze_at) & ~self.frozen
            for k in torch.nonzero(hit).reshape(-1).tolist():
                self.frozen[k] = True
                self.frozen_at[k] = self.step_count
            if bool(hit.any()):
                self._set_keep()
        lip = (1.0 + float(norms[~before].max() if (~before).any() else 0.0)) ** 2   # frozen in time, or stop
        if self.cfg.dt * lip >= 2.0:
            raise Divergence(f"training update {self.step_count}: ||J||_2 grew to {math.sqrt(lip) - 1:.3g}, "
                             f"so dt={self.cfg.dt:g} no longer gives a stable Euler step (dt*(1+||J||)^2 >= 2); lower the learning rate or dt")

    def _set_keep(self) -> None:
        """The frozen mask on the device (None while no model is frozen), copied once when it changes."""
        self._keep = self.frozen.to(self.device) if bool(self.frozen.any()) else None

    def params(self):
        return self.J.detach().clone(), self.b.detach().clone()

    # -- checkpoints -----------------------------------------------------------------------------
    def state(self) -> dict:
        """Everything a resume needs, on the CPU (a checkpoint written on a GPU loads anywhere)."""
        return {"J": _on_cpu(self.J), "b": _on_cpu(self.b), "chains": _on_cpu(self.chains),
                "optimizer": _on_cpu(self.opt.state_dict()), "generator": self.gen.get_state(), "step": self.step_count,
                "sizes": self.sizes.tolist(), "config": asdict(self.cfg),
                "frozen_at": list(self.frozen_at),
                "epochs": {"perm": [None if q is None else q.clone() for q in self._perm], "pos": list(self._pos)}}

    def save(self, path) -> None:
        import io
        buf = io.BytesIO()
        torch.save(self.state(), buf)
        atomic_write_bytes(path, buf.getvalue())

    def resume(self, path) -> "Trainer":
        st = load_state(path)
        if tuple(st["J"].shape) != tuple(self.J.shape) or st["sizes"] != self.sizes.tolist():
            raise UserError(f"checkpoint {path} holds models of shape {tuple(st['J'].shape)} (P={st['sizes']}), "
                            f"this run needs {tuple(self.J.shape)} (P={self.sizes.tolist()}); start fresh or pick the matching checkpoint")
        with torch.no_grad():
            self.J.copy_(st["J"]); self.b.copy_(st["b"])
        self.opt.load_state_dict(st["optimizer"])
        self.chains = st["chains"].to(device=self.device, dtype=self.dtype).clone()
        self.gen.set_state(st["generator"])
        self.step_count = int(st["step"])
        self.frozen_at = list(st.get("frozen_at", [-1] * self.K))
        self.frozen = torch.tensor([f >= 0 for f in self.frozen_at], dtype=torch.bool)
        self._set_keep()
        ep = st.get("epochs", {"perm": [None] * self.K, "pos": [0] * self.K})
        self._perm, self._pos = [None if q is None else q.clone() for q in ep["perm"]], list(ep["pos"])
        return self


def _on_cpu(obj):
    """A copy of a (nested) state dict with every tensor on the CPU (the optimizer moves its state back
    to the parameters' device when it loads): one copy per tensor, from any device."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().to("cpu", copy=True)
    if isinstance(obj, dict):
        return {k: _on_cpu(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_on_cpu(v) for v in obj)
    return obj


def load_state(path) -> dict:
    try:
        st = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as err:  # noqa: BLE001 (any unreadable file is the same user error)
        raise UserError(f"cannot read checkpoint {path}: {err}; pass a file written by Trainer.save") from None
    if not isinstance(st, dict) or "J" not in st or "b" not in st:
        raise UserError(f"{path} is not an NLM checkpoint (no J, b); pass a file written by Trainer.save")
    return st


def generate(checkpoint, n: int, steps: int, generator=None, model: int = 0, dt=None, T=None, snap_at=(), device=None):
    """Images φ(x) of n chains from N(0, I) after `steps` Langevin steps of one stored model (on `device`).

    Returns (images (n, N) numpy, {step: images}) with the checkpoint's dt and T unless given. `generator`: a CPU
    torch.Generator (a run's keyed stream) for the initial states and the noise; None: a default-seeded one.
    """
    st = checkpoint if isinstance(checkpoint, dict) else load_state(checkpoint)
    J, b = st["J"], st["b"]
    if J.dim() == 3:
        if not 0 <= model < J.shape[0]:
            raise UserError(f"model {model} not in this checkpoint (it holds {J.shape[0]}); pick 0..{J.shape[0] - 1}")
        J, b = J[model], b[model]
    dt = st["config"]["dt"] if dt is None else dt
    T = st["config"]["T"] if T is None else T
    check_temperature(T)
    check_step(dt, J)
    g = generator if generator is not None else torch.Generator()
    x0 = torch.randn((n, J.shape[-1]), generator=g, dtype=J.dtype).to(device or "cpu")
    x, snaps = langevin(x0, J, b, steps, dt, T, g, snap_at=snap_at, where="generate")
    return phi(x).cpu().numpy(), {k: v.cpu().numpy() for k, v in snaps.items()}


def compute_device(device) -> torch.device:
    """A CUDA (or ROCm) device as given; anything else (None, the CPU, Apple MPS, Intel XPU) is the CPU:
    MPS has no float64 for the Euler-stability check, and nlm has not been tried on XPU."""
    d = torch.device(device or "cpu")
    return d if d.type == "cuda" else torch.device("cpu")


def train_config(cfg, **over) -> TrainConfig:
    """The `TrainConfig` of a resolved profile `cfg` (PCD-k unless `over` says otherwise); `over` replaces fields."""
    base = dict(n_chains=cfg.n_chains, k=cfg.k, mode="pcd", optimizer=cfg.optimizer, minibatch=cfg.minibatch, lr=cfg.lr,
                weight_decay=cfg.weight_decay, bias=cfg.bias, batch=cfg.batch, dt=cfg.dt, T=cfg.T, gain=cfg.gain,
                gemm_dtype=cfg.gemm_dtype, noise_threads=cfg.noise_threads)
    base.update(over)
    return TrainConfig(**base)

