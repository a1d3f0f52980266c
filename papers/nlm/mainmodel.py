"""The main model of notebooks 01, 04 and 06: one PCD-k training with (J, b) snapshots at log-spaced
training ages, cached in the run's `checkpoints/` so that the later notebooks reuse it.

Paper: Yu, Huang & Huang, arXiv:2506.23546 (samples over training age t_age: the released `3 types/PCD_10`
script checkpoints at t_age = round(201·1.7^i), full's ages; smoke and quick: log-spaced ages in [updates/100, updates]).
"""
from __future__ import annotations

from pathlib import Path

import torch

from . import encoding
from .sampler import log_times
from .train import Trainer, compute_device, load_state, train_config


def ages(n_updates: int, n: int, schedule: str = "log") -> list[int]:
    """The training ages t_age of the samples-over-age figure: "log", about n log-spaced in [n_updates/100, n_updates];
    "released", the released `3 types/PCD_10` script's checkpoints round(201 * 1.7^i), i < n, those within the run
    (the last update alone where none is: a run shorter than 201 updates)."""
    if schedule == "released":
        return [a for a in (round(201 * 1.7 ** i) for i in range(n)) if a <= n_updates] or [n_updates]
    return log_times(n_updates, n, t_min=max(1, n_updates // 100))


def main_model(cfg, streams, run_dir=None, dataset: str | None = None, p: int | None = None, updates: int | None = None,
               device=None) -> dict:
    """PCD-k training of one model with (J, b) snapshots at log-spaced ages; cached in run_dir. `streams` (a
    `common.seed.Streams`: the run's, or a child for another model) draws its training list ("training list",
    dataset: the data's order, whose first P images it learns) and its training ("train", dataset)."""
    dataset = dataset or cfg.dataset
    p = p or cfg.main_p
    updates = cfg.main_updates if updates is None else updates
    data = encoding.load(dataset, cfg.n_test, streams.rng("training list", dataset))
    encoding.check_sizes(data, [p])
    tcfg = train_config(cfg)
    name = "-".join(["main", dataset, f"P{p}", f"U{updates}", *map(str, streams.keys), f"s{streams.seed}"])
    cache = Path(run_dir) / "checkpoints" / f"{name}.pt" if run_dir else None
    snap_at = [0] + ages(updates, cfg.n_ages, cfg.age_schedule)
    if cache is not None and cache.exists():
        st = load_state(cache)
        if st.get("config") == tcfg.__dict__ and sorted(st["snaps"]) == sorted(set(snap_at)):
            return {"data": data, "state": st, "snaps": st["snaps"], "p": p, "cached": True}
    tr = Trainer(data.x_train, [p], tcfg, generator=streams.torch_generator("train", dataset), device=compute_device(device))
    snaps = tr.train(updates, snap_at=snap_at, desc=f"train {dataset} P={p}")
    snaps = {s: (J.cpu(), b.cpu()) for s, (J, b) in snaps.items()}   # the same as a cached run's
    st = tr.state()
    st["snaps"] = snaps
    if cache is not None:
        import io

        from common.io import atomic_write_bytes
        buf = io.BytesIO(); torch.save(st, buf); atomic_write_bytes(cache, buf.getvalue())
    return {"data": data, "state": st, "snaps": snaps, "p": p, "cached": False}

