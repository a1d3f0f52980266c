"""One study module per notebook: `notebooks/netrecon/NN-topic.ipynb` calls `studies/topic.py`'s `measure`.

Z. Yu and H. Huang, "Network reconstruction may not mean dynamics prediction",
https://arxiv.org/abs/2409.04240

Each `measure(cfg, run)` fans its (g, network) tasks (`papers.netrecon.tasks`, each with its own keyed stream
`run.streams.child("net", s)`) out through `cache.cached_pmap` (the cache under `run.dir / "cache"`) and returns
{"metrics": what the notebook logs, ...data for its figures}. The
mapping from measurements to claim metrics lives in small named functions of each module (unit tested
in `tests/netrecon/test_netrecon_studies.py`). Metric values are plain floats for metrics.json.

| notebook | module | paper (claims.yaml `source`) |
|---|---|---|
| 01-regimes | `regimes` | teacher-trajectory figure; largest Lyapunov exponent against g figure |
| 02-reconstruction | `reconstruction` | reconstruction section: training curves, W-J scatter, d_W against data size |
| 03-prediction | `prediction` | teacher-student trajectory, one-step error and T_pd against eta figures; T_pd against data size |
| 04-dmft | `dmft` | DMFT section: Delta(tau); two-replica DMFT against simulation (D(t)) |
| 05-lyapunov | `lyapunov` | DMFT section (lambda from the mean-field theory); the official OS rate (`dp.py`) |
"""
from __future__ import annotations


def gain_key(g: float) -> str:
    """Metric suffix for a gain: 0.8 -> 'g0p8', 2.0 -> 'g2'."""
    return "g" + (f"{g:g}".replace(".", "p"))


def pool_workers(cfg) -> int | None:
    """Worker processes for `pmap`: the profile's `workers`, 0 meaning one per core (None)."""
    return cfg.workers or None
