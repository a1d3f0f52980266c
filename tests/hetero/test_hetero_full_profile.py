"""The full profile end to end at tiny sizes: every function hetero's five notebooks call, with the full
profile's configuration (links, controls, schedule, model, p2p sizes from 16 MiB) and its counts cut down,
on the CPU emulation (hetero needs no dataset: its corpora are the standard library's sources and a Markov
chain). Every claim that lists `full` gets a finite metric and, unless it is a projection, a finite control.
The full profile's preflight refuses in one line on a machine without GPUs."""
import math

import pytest
import torch

from common.claims import evaluate, load_claims
from common.errors import UserError
from common.paths import REPO
from papers.hetero.config import get_config, preflight
from papers.hetero.launch import emulation_device
from papers.hetero.studies import audit, cluster, correctness, projection, throughput

MiB = 1 << 20
TINY = dict(  # the full profile's counts cut to seconds; links, controls, model and schedule stay full's
    processes=2, vendors="nv,amd", correctness_steps=2, stability_steps=21, stability_control_steps=2,
    corpus_tokens=20_000, tput_processes=2, tput_vendors="nv,amd", tput_windows=1, tput_window_steps=1, tput_warmup=0,
    p2p_sizes=[64 * 1024, 16 * MiB], p2p_iters=1,
    cluster_p2p_size=256 * 1024, cluster_staging_size=256 * 1024, cluster_p2p_windows=2, cluster_layer_ms=2.0,
    cluster_windows=2, cluster_window_steps=1, cluster_warmup=0,
)


def test_the_full_profile_refuses_in_one_line_without_gpus(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(UserError) as err:
        preflight(get_config("full"))
    assert "\n" not in str(err.value) and "torchrun -m papers.hetero.train" in str(err.value)


def _finite(x) -> bool:
    vals = x if isinstance(x, (list, tuple)) else [x]
    return bool(vals) and all(isinstance(v, (int, float)) and math.isfinite(v) for v in vals)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
def test_full_profile_runs_every_notebooks_code_at_tiny_sizes(device, tmp_path):
    cfg = get_config("full", **TINY)
    assert (cfg.model, cfg.schedule, cfg.partition) == ("tiny", "1f1b", [4, 2]) and len(cfg.control_links) == 4
    if device == "cuda":
        preflight(cfg)  # passes where torch sees a GPU
    assert emulation_device(device) == "cpu"  # the manifest's device: the emulation computes on the CPU
    torch.set_num_threads(1)  # the parent's reference runs: one thread, as the notebooks' kernels on 2 cores
    seed, metrics = 0, {}
    metrics.update(correctness.measure(cfg, seed, workdir=tmp_path / "c")["metrics"])         # notebook 01
    metrics.update(throughput.measure(cfg, seed, workdir=tmp_path / "t", repeats=1)["metrics"])  # notebook 02
    metrics.update(audit.measure(cfg)["metrics"])                                                # notebook 03
    metrics.update(cluster.measure(cfg, seed, workdir=tmp_path / "k")["metrics"])             # notebook 04
    metrics.update(projection.measure(cfg)["metrics"])                                          # notebook 05
    claims = [c for c in load_claims(REPO / "papers" / "hetero" / "claims.yaml") if "full" in c.profiles]
    assert {c.id for c in claims} >= {"cpu-forward-multichannel-not-slower", "audit-plan-no-violation"}
    table = evaluate(claims, metrics, "full").set_index("id")
    for c in claims:
        assert _finite(metrics.get(c.metric)), c.id
        if c.kind != "projection":
            assert _finite(metrics.get(c.control)), c.id
        assert table.loc[c.id, "verdict"] != "not run at this scale", c.id
