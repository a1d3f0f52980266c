"""Byte-level token streams and deterministic pipeline batches.

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007
(the paper trains on an unnamed corpus; these two are ours).

* `stdlib_text()`: the Python standard library's own sources, a text every machine has.
* `markov_corpus()`: a first-order Markov chain over a few byte values whose entropy rate
  H = -sum_i pi_i sum_j P_ij ln P_ij is known, so the loss has a floor to approach.
* `batch_indices()`: the window starts of step t, a pure function of (seed, step), so every rank,
  the single-process reference and a resumed run draw the same micro-batches in the same order.
"""
from __future__ import annotations

import bisect
import hashlib
import sysconfig
from pathlib import Path

import numpy as np
import torch

from common.seed import Streams


def bytes_to_tokens(raw: bytes) -> torch.Tensor:
    return torch.frombuffer(bytearray(raw), dtype=torch.uint8).to(torch.long)


def stdlib_text(max_bytes: int = 2_000_000) -> tuple[torch.Tensor, dict]:
    """Tokens of the first `max_bytes` of the stdlib's .py files (sorted by path), with provenance."""
    root = Path(sysconfig.get_paths()["stdlib"])
    chunks, total = [], 0
    for path in sorted(root.glob("*.py")):
        raw = path.read_bytes()
        chunks.append(raw)
        total += len(raw)
        if total >= max_bytes:
            break
    raw = b"".join(chunks)[:max_bytes]
    return bytes_to_tokens(raw), {"path": str(root), "sha256": hashlib.sha256(raw).hexdigest(), "bytes": len(raw)}


def markov_chain(n_states: int, branching: int, seed: int, concentration: float = 1.0) -> np.ndarray:
    """A transition matrix where each state has `branching` successors with Dirichlet weights."""
    rng = Streams(seed).rng("markov", "chain")
    P = np.zeros((n_states, n_states))
    for i in range(n_states):
        succ = rng.choice(n_states, size=branching, replace=False)
        P[i, succ] = rng.dirichlet(np.full(branching, concentration))
    return P


def stationary(P: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eig(P.T)
    pi = np.real(v[:, np.argmin(np.abs(w - 1))])
    return pi / pi.sum()  # pi P = pi


def entropy_rate(P: np.ndarray) -> float:
    """H = -sum_i pi_i sum_j P_ij ln P_ij (nats per token)."""
    pi = stationary(P)
    with np.errstate(divide="ignore", invalid="ignore"):
        h_rows = -np.where(P > 0, P * np.log(P), 0.0).sum(1)
    return float(pi @ h_rows)


def markov_corpus(n_tokens: int, n_states: int = 24, branching: int = 3, seed: int = 0,
                  first_byte: int = ord("a")) -> tuple[torch.Tensor, float]:
    """(tokens, entropy rate in nats). States are written as the bytes first_byte .. first_byte+n-1."""
    P = markov_chain(n_states, branching, seed)
    rng = Streams(seed).rng("markov", "walk")
    cdf = P.cumsum(1).tolist()
    u = rng.random(n_tokens).tolist()
    out = [0] * n_tokens
    s = int(rng.integers(n_states))
    last = n_states - 1
    for t in range(n_tokens):  # s_{t+1} ~ P[s_t, :] by inverse CDF
        s = min(bisect.bisect_right(cdf[s], u[t]), last)
        out[t] = s
    return torch.tensor(out, dtype=torch.long) + first_byte, entropy_rate(P)


def load_corpus(name: str, n_tokens: int, seed: int = 0) -> tuple[torch.Tensor, dict]:
    if name == "markov":
        tokens, h = markov_corpus(n_tokens, seed=seed)
        return tokens, {"name": "markov", "entropy_rate": h, "tokens": n_tokens}
    if name == "stdlib":
        tokens, prov = stdlib_text(n_tokens)
        return tokens, dict(prov, name="stdlib", entropy_rate=None, tokens=len(tokens))
    raise ValueError(f"unknown corpus {name!r}")


def batch_indices(seed: int, step: int, n_windows: int, corpus_len: int, seq_len: int) -> torch.Tensor:
    """Window starts of one global step: a pure function of (seed, step)."""
    g = Streams(seed).torch_generator("batches", int(step))
    return torch.randint(0, corpus_len - seq_len - 1, (n_windows,), generator=g)


def micro_batch(corpus: torch.Tensor, starts: torch.Tensor, seq_len: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs, next-token targets), each (len(starts), seq_len)."""
    idx = starts[:, None] + torch.arange(seq_len + 1)[None]
    win = corpus[idx]
    return win[:, :-1], win[:, 1:]


def global_batch_layout(dp: int, n_micro: int, micro_size: int) -> list[list[slice]]:
    """slot[replica][micro-batch] -> slice of the step's window list (replica-major, fixed order)."""
    return [[slice((r * n_micro + m) * micro_size, (r * n_micro + m + 1) * micro_size) for m in range(n_micro)]
            for r in range(dp)]
