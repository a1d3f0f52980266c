"""Seeding and determinism.

`seed_everything` seeds python, numpy's legacy global state and torch (all devices) in one call,
and can switch on deterministic algorithms. Code should prefer explicit generators:
`numpy_rng(seed, *keys)` and `torch_generator(seed, *keys)` give independent, reproducible
streams keyed by (seed, keys), e.g. `numpy_rng(0, "forward", 3)`.
"""
from __future__ import annotations

import hashlib
from contextlib import contextmanager
import os
import random

import numpy as np


def _derive(seed: int, keys: tuple) -> int:
    if not keys:
        return int(seed)
    digest = hashlib.sha256(repr((int(seed),) + tuple(keys)).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def seed_everything(seed: int, deterministic: bool = False) -> int:
    """Seed python, numpy and torch; optionally force deterministic torch algorithms."""
    import torch

    seed = int(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True
    return seed


def numpy_rng(seed: int, *keys) -> np.random.Generator:
    """An independent numpy Generator for the stream (seed, *keys)."""
    return np.random.default_rng(_derive(seed, keys))


def torch_generator(seed: int, *keys, device="cpu"):
    """An independent torch.Generator for the stream (seed, *keys) on `device`."""
    import torch

    gen = torch.Generator(device=device)
    gen.manual_seed(_derive(seed, keys))
    return gen


def stream_key(keys: tuple) -> tuple:
    """`keys` checked and normalised: strings and integers only (numpy integers become ints), so that a key's
    derivation (`repr`) is the same in every process and on every platform."""
    out = []
    for k in keys:
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (str, int, np.integer)):
            raise TypeError(f"a stream key is a string or an integer, got {k!r} ({type(k).__name__})")
        out.append(int(k) if isinstance(k, np.integer) else k)
    return tuple(out)


class Streams:
    """The keyed random streams of one run: every random draw of a paper comes from `(seed, *keys)`.

    `rng("codes", 3)` is the numpy Generator of the stream named by its keys, `torch_generator(...)` its torch
    twin, `seed_for(...)` the stream's integer seed for an API that takes one (scikit-learn's `random_state`, a
    DataLoader, a launched process). `child("replicate", r)` is the same object rooted at more keys: picklable,
    for a pool worker. `torch_global(...)` forks torch's global generator and seeds it from a stream, for code that
    only draws from the global one (`nn.Module` initialisation, dropout); `seed_torch(...)` seeds it for good (the
    start of a worker's task). Streams of different keys are independent (SHA-256 of the keys), so two names can
    never collide the way `seed * 100 + r` and `seed' * 100 + r'` do. `drawn()` lists the keys used in this
    process (a child's own draws are recorded under its prefix, `prefix/*`), for the run's manifest.
    `Streams(s).rng(*k)` equals `numpy_rng(s, *k)`.
    """

    def __init__(self, seed: int, keys: tuple = (), drawn: set | None = None):
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"a run's seed is an integer, got {seed!r}")
        self.seed, self.keys = int(seed), stream_key(tuple(keys))
        self._drawn = set() if drawn is None else drawn

    def __repr__(self) -> str:
        return f"Streams(seed={self.seed}, keys={self.keys!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Streams) and (self.seed, self.keys) == (other.seed, other.keys)

    def __hash__(self) -> int:
        return hash((self.seed, self.keys))

    def __getstate__(self):
        return {"seed": self.seed, "keys": self.keys}       # a worker records its own draws

    def __setstate__(self, state):
        self.seed, self.keys, self._drawn = state["seed"], state["keys"], set()

    def _full(self, keys: tuple, record: str = "") -> tuple:
        full = self.keys + stream_key(keys)
        if not full:
            raise ValueError("name the stream: rng('what it draws', ...), never the bare seed")
        self._drawn.add("/".join(map(str, full)) + record)
        return full

    def seed_for(self, *keys) -> int:
        """The stream's integer seed (63 bits), for APIs that take an integer."""
        return _derive(self.seed, self._full(keys))

    def rng(self, *keys) -> np.random.Generator:
        return np.random.default_rng(self.seed_for(*keys))

    def torch_generator(self, *keys, device="cpu"):
        import torch

        gen = torch.Generator(device=device if device is not None else "cpu")
        gen.manual_seed(self.seed_for(*keys))
        return gen

    def child(self, *keys) -> "Streams":
        """The streams rooted at `self.keys + keys` (recorded as `.../*`)."""
        full = self._full(keys, record="/*")
        return Streams(self.seed, full, self._drawn)

    def seed_torch(self, *keys) -> None:
        """Seed torch's global generators (CPU and every GPU) from the stream, for good."""
        import torch

        torch.manual_seed(self.seed_for(*keys))

    @contextmanager
    def torch_global(self, *keys):
        """Inside: torch's global generators seeded from the stream; after: restored as they were."""
        import torch

        devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(self.seed_for(*keys))
            yield

    def drawn(self) -> list[str]:
        return sorted(self._drawn)
