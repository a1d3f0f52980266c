"""The full profile end to end at tiny sizes: every function hetero's notebooks 01, 02, 03 and 05 call, with the
full profile's configuration (its processes and vendors, links, controls, schedule, model, p2p sizes from 16 MiB)
and its step counts cut down, on the CPU emulation (hetero needs no dataset: its corpora are the standard
library's sources and a Markov chain). Full's 8 processes (data parallel 4) keep the `direct/nodp` control
real (with 2 processes each stage has one replica and the control cannot differ). Every claim that lists
`full` gets a finite metric and, unless it is a projection, a finite control; full judges every claim quick
judges. Notebook 04's study (the emulated cluster: always 2 ranks, the same code at every profile) runs at
full's settings in `test_hetero_cluster.py` (`test_cluster_measurements_end_to_end_at_full`), which checks its
claims the same way; it ran twice in `make test` before. The full profile needs no GPU (the notebooks are the
CPU emulation at every profile), and this file has no `cuda` test (see the test's docstring)."""
import math

import pytest
import torch

from common.claims import evaluate, load_claims
from common.errors import UserError
from common.paths import REPO
from common.study import run_all
from papers.hetero.config import get_config, preflight
from papers.hetero.launch import emulation_device
from papers.hetero.studies.cluster import CLUSTER_CLAIMS

MiB = 1 << 20
TINY = dict(  # the full profile's counts cut to seconds; processes, links, controls, model and schedule stay full's
    # the stability metrics average the first 5 and the last 20 steps: 20 is the fewest; the counting controls
    # (staging proxy, reassembly copy, no dp mean) need one step (bytes per payload; replicas apart after one update)
    correctness_steps=2, control_steps=1, stability_steps=20, stability_control_steps=2,
    corpus_tokens=20_000, tput_windows=1, tput_window_steps=1, tput_warmup=0,
    p2p_sizes=[64 * 1024, 16 * MiB], p2p_iters=1,
)
STUDIES = ["correctness", "throughput", "audit", "projection"]  # the cluster's: test_hetero_cluster.py, at full


def test_the_full_profile_needs_no_gpu_and_judges_what_quick_judges(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    cfg = get_config("full")
    preflight(cfg)  # the CPU emulation: no GPU demanded
    assert cfg.processes == 8 and cfg.processes // cfg.stages > 1  # data parallel inside each vendor
    claims = load_claims(REPO / "papers" / "hetero" / "claims.yaml")
    quick = {c.id for c in claims if "quick" in c.profiles}
    full = {c.id for c in claims if "full" in c.profiles}
    assert quick <= full and len(full) > len(quick)
    with pytest.raises(UserError):
        preflight(get_config("full", vendors="nv:5,amd:3"))  # a stage that mixes vendors: one line


def _finite(x) -> bool:
    vals = x if isinstance(x, (list, tuple)) else [x]
    return bool(vals) and all(isinstance(v, (int, float)) and math.isfinite(v) for v in vals)


def test_full_profile_runs_every_notebooks_code_at_tiny_sizes(tmp_path):
    """On the CPU only: full is the CPU emulation by design (the launcher hides the GPUs from the ranks), so a
    `cuda` variant of this test would run the same code to the same numbers (issue 42: it was dropped). What a
    GPU machine shows is checked by test_hetero_device.py's `cuda` tests (the smoke notebooks there record the CPU
    and give the CPU's verdicts; the real-device path, one rank per GPU, equals the CPU; the GPU slice)."""
    cfg = get_config("full", **TINY)
    assert (cfg.model, cfg.schedule, cfg.partition) == ("tiny", "1f1b", [4, 2]) and len(cfg.control_links) == 4
    assert (cfg.processes, cfg.vendors) == (8, "nv:4,amd:4")  # full's own
    preflight(cfg)
    assert emulation_device("cuda") == "cpu"  # the manifest's device: the emulation computes on the CPU, GPU asked or not
    torch.set_num_threads(1)  # the parent's reference runs: one thread, as the notebooks' kernels on 2 cores
    outs = run_all("hetero", "full", tmp_path, seed=0, device="cpu", overrides=TINY, studies=STUDIES)
    assert list(outs) == STUDIES
    metrics = {k: v for out in outs.values() for k, v in out["metrics"].items()}
    claims = [c for c in load_claims(REPO / "papers" / "hetero" / "claims.yaml") if "full" in c.profiles]
    assert {c.id for c in claims} >= {"cpu-forward-multichannel-not-slower", "audit-plan-no-violation"}
    assert set(CLUSTER_CLAIMS) < {c.id for c in claims}  # full lists them too; judged by test_hetero_cluster.py
    table = evaluate(claims, metrics, "full").set_index("id")
    for c in claims:
        if c.id in CLUSTER_CLAIMS:  # notebook 04's, checked at full by test_hetero_cluster.py
            continue
        assert _finite(metrics.get(c.metric)), c.id
        if c.kind != "projection":
            assert _finite(metrics.get(c.control)), c.id
        assert table.loc[c.id, "verdict"] != "not run at this scale", c.id
    assert metrics["dp_replica_mismatches_control"] > 0  # dp 4: replicas without the mean really differ
