"""Issue 19: the emulated-cluster measurements (multi-NIC, costed staging, vendor speed, the
calibrated model) on hand cases, the claims' gating without privileges, and a hetero launch on the
cluster that leaves no namespace, veth or qdisc behind when it is interrupted (SIGINT) or fails.
The namespace tests skip with the reason where the privileges are missing."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from types import SimpleNamespace

import pytest
import torch

from common import netcluster, paths
from common.claims import NOT_RUN, judge, load_claims
from common.errors import UserError
from papers.hetero import clusterbench as cb
from papers.hetero.studies import cluster as cluster_study
from papers.hetero import perfmodel
from papers.hetero.job import Job, validate
from papers.hetero.launch import RunFailed, launch
from papers.hetero.links import CopyEngine, channels_needed

OK, WHY = netcluster.available()
needs_netns = pytest.mark.skipif(not OK, reason=f"no emulated cluster here: {WHY}")


def test_pipeline_simulation_by_hand():
    # S = 2, F = 1, B = 2, c = 0.5, M = 4: the last backward of stage 0 ends at 17 (worked by hand)
    assert perfmodel.pipeline_time([1.0, 1.0], [2.0, 2.0], 0.5, 4) == pytest.approx(17.0)
    # no transfer cost: equal to the closed form, (M - 1) x the slow stage + both stages
    assert perfmodel.pipeline_time([1.0, 2.0], [2.0, 4.0], 0.0, 4) == pytest.approx(perfmodel.step_time([3.0, 6.0], 0.0, 4))
    assert perfmodel.pipeline_time([1.0, 1.0], [2.0, 2.0], 0.5, 4) <= perfmodel.step_time([3.0, 3.0], 0.5, 4)


def test_stage_pace_and_calibration_recover_the_speeds():
    assert cb.stage_pace(0.0, 3, False, 0.5, 1.0) is None
    assert cb.stage_pace(6.0, 2, True, 0.5, 0.5) == pytest.approx((0.030, 0.060))  # (2 + 0.5) x 6 ms / 0.5
    variants = cb.speed_variants(0.5)
    assert [v["speeds"] for v in variants if v["label"].endswith("rho1")] == [[1.0, 1.0], [1.0, 1.0]]
    # pass times of an exactly paced device: calibration recovers layer and head, prediction equals the simulation
    pass_s = {}
    for v in variants:
        pace = [cb.stage_pace(10.0, n, s == 1, 0.5, sp) for s, (n, sp) in enumerate(zip(v["partition"], v["speeds"]))]
        pass_s[v["label"]] = {s: {"F": p[0], "B": p[1]} for s, p in enumerate(pace)}
    cal = cb.calibrate(pass_s, variants, 0.5)
    assert cal[1.0]["F"] == pytest.approx((0.010, 0.005)) and cal[0.5]["B"] == pytest.approx((0.040, 0.020))
    mixed = variants[0]  # 4/2, speeds 1 and 0.5
    assert cb.predict(mixed, cal, 0.0, 4) == pytest.approx(perfmodel.pipeline_time([0.04, 0.05], [0.08, 0.10], 0.0, 4))
    assert cb.predict(mixed, cal, 0.0, 4, ignore_speed=True) < cb.predict(mixed, cal, 0.0, 4)
    assert cb.per_window([2.0, 3.0], [1.0, 1.5]) == [2.0, 2.0]


def test_copy_engine_counts_and_channels_on_one_nic():
    e = CopyEngine()
    dst, src = torch.empty(10), torch.arange(10.0)
    e.copy(dst, src)
    assert torch.equal(dst, src) and e.bytes == 40
    assert channels_needed("cpu_forward_samenic:2", nics=2) == 3 and channels_needed("cpu_forward:2", nics=2) == 2
    job = Job(mode="cluster", vendors="nv,amd", nics=2, p2p_phases=[{"name": "n", "links": ["cpu_forward_samenic:2"], "sizes": [64]}])
    assert job.k_max == 3 and "cpu_forward_samenic:2" in job.link_specs()


@pytest.mark.parametrize("kw, match", [
    ({"speed_variants": [{"label": "x", "partition": [5, 2], "speeds": [1, 1]}]}, "summing to 6"),
    ({"speed_variants": [{"label": "x", "partition": [3, 3], "speeds": [1, 0]}]}, "2 positive numbers"),
    ({"p2p_phases": [{"name": "p", "links": ["cpu_forward:2"]}]}, "name, links and sizes"),
    ({"layer_ms": -1.0}, "must be >= 0"),
])
def test_cluster_job_errors_are_one_line(kw, match):
    with pytest.raises(UserError, match=match) as err:
        validate(Job(mode="cluster", vendors="nv,amd", **kw), 2)
    assert "\n" not in str(err.value)


def test_without_privileges_one_line_names_the_claims_and_they_are_not_run(monkeypatch, capsys):
    monkeypatch.setattr(netcluster, "available", lambda refresh=False: (False, "no CAP_NET_ADMIN"))
    res = cluster_study.measure(SimpleNamespace(), SimpleNamespace())  # refused before the run is touched
    out = capsys.readouterr().out.strip().splitlines()
    assert out == [f"notice: cluster claims {', '.join(cluster_study.CLUSTER_CLAIMS)} cannot be tested here: no CAP_NET_ADMIN"]
    claims = {c.id: c for c in load_claims(paths.REPO / "papers" / "hetero" / "claims.yaml")}
    assert set(cluster_study.CLUSTER_CLAIMS) <= set(claims)
    for cid in cluster_study.CLUSTER_CLAIMS:
        assert judge(claims[cid], res["metrics"], "quick").verdict == NOT_RUN, cid


# full's cluster settings (its M = 8 micro-batches, rho, rates, copy engine) with the counts cut to seconds (the
# smoke profile's counts); the smoke profile's own cluster run is in the repository's smoke test and nbval
CLUSTER_TINY = dict(cluster_p2p_size=256 * 1024, cluster_staging_size=256 * 1024, cluster_p2p_windows=2,
                    cluster_layer_ms=2.0, cluster_windows=2, cluster_window_steps=1, cluster_warmup=0)


@needs_netns
def test_cluster_measurements_end_to_end_at_full(tmp_path):
    """Notebook 04's study at the full profile's settings (tiny counts): every full claim it measures gets a finite
    metric and control and a verdict (the other studies at full: test_hetero_full_profile.py)."""
    import math

    from common.claims import evaluate
    from common.study import measure, open_run

    cfg, run = open_run("hetero", "full", seed=0, device="cpu", run_dir=tmp_path, overrides=CLUSTER_TINY)
    assert cfg.cluster_n_micro == 8 and cfg.cluster_rho == 0.7  # full's own
    res = measure("hetero", "cluster", cfg, run)
    assert (tmp_path / "work" / "cluster" / "netcluster.json").exists()  # the work files under the run's folder
    m = res["metrics"]
    claims = [c for c in load_claims(paths.REPO / "papers" / "hetero" / "claims.yaml") if c.id in cluster_study.CLUSTER_CLAIMS]
    assert len(claims) == len(cluster_study.CLUSTER_CLAIMS) and all("full" in c.profiles for c in claims)
    table = evaluate(claims, m, "full").set_index("id")
    for c in claims:
        for key in (c.metric, c.control):
            vals = m[key] if isinstance(m[key], list) else [m[key]]
            assert vals and all(isinstance(v, (int, float)) and math.isfinite(v) for v in vals), (c.id, key)
        assert table.loc[c.id, "verdict"] != NOT_RUN, c.id
    assert m["netcluster_available"] == 1 and m["cluster_dd_staged_bytes"] == 0
    # the staged control posts host buffers both ways on both ranks: 2 payloads posted + 2 copied per payload
    assert m["cluster_dd_staged_bytes_control"] > 0 and m["cluster_dd_own_memory_bytes_per_payload"] == 2.0
    assert m["cluster_cf1_engine_bytes_per_payload"] == 2.0
    assert len(m["cluster_cf2_vs_cf1"]) == 2 and len(m["cluster_uneven_vs_even"]) == 2
    assert all(x > 0 for x in m["cluster_nic_tx_share"]) and m["cluster_delay_applied"] in (0, 1)
    assert _owned_by(os.getpid()) == []  # none of this process's (other test processes may hold theirs now)


def _owned_by(pid: int) -> list[str]:
    return [n for n in netcluster.network_namespaces() if n.startswith(f"{netcluster.PREFIX}-{pid}-")]


def _host():
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    qdiscs = subprocess.run(["tc", "qdisc", "show"], capture_output=True, text=True).stdout
    return sorted(ln.split(":")[1].strip() for ln in links.splitlines()), qdiscs


_CHILD = textwrap.dedent("""
    import sys
    from papers.hetero.job import Job
    from papers.hetero.launch import launch
    job = Job(vendors="nv,amd", links=["cpu_forward:2"], steps=100000, corpus_tokens=20_000, timeout_s=20.0)
    launch(job, 2, workdir=sys.argv[1], deadline_s=300, cluster={"rate": "1gbit", "delay": "0"})
""")


@needs_netns
def test_sigint_during_a_cluster_launch_leaves_nothing_behind(tmp_path):
    host = _host()
    env = dict(os.environ, PYTHONPATH=str(paths.REPO))
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(tmp_path)], env=env, cwd=str(paths.REPO),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        ranks, t_end = [], time.monotonic() + 60
        while time.monotonic() < t_end:  # both ranks running inside their nodes, training
            ranks = [int(p) for ns in _owned_by(child.pid) for p in
                     subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()]
            if len(ranks) >= 2 and (tmp_path / "rank1.log").exists():
                break
            time.sleep(0.2)
        assert len(ranks) >= 2, "the ranks never started in the cluster"
        time.sleep(1.0)
        child.send_signal(signal.SIGINT)
        out = child.communicate(timeout=180)[0].decode(errors="replace")
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode != 0 and "KeyboardInterrupt" in out
    assert _owned_by(child.pid) == []  # namespaces, and with them their veths, bridges and qdiscs
    assert _host() == host  # nothing was created in, or left in, the caller's namespace
    for pid in ranks:
        assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"


@needs_netns
def test_failing_cluster_launch_leaves_nothing_behind(tmp_path):
    host = _host()
    job = Job(vendors="nv,amd", links=["cpu_forward:2"], steps=5, corpus_tokens=20_000, timeout_s=10.0,
              fail_rank=1, fail_step=1)
    with pytest.raises(RunFailed, match="rank 1: killed by signal 9") as err:
        launch(job, 2, workdir=tmp_path, deadline_s=60, cluster={"rate": "1gbit", "delay": "0"})
    assert _owned_by(os.getpid()) == [] and _host() == host
    for pid in err.value.pids:
        assert not os.path.exists(f"/proc/{pid}")
    assert json.loads((tmp_path / "netcluster.json").read_text())["nodes"] == [0, 1]
