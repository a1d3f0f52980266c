"""Real multi-process runs (gloo on CPU, vendors set per rank): links, reference equality, faults, resume (ranks that
disagree on k: test_hetero_bugs, in one launch with a vendor map that disagrees)."""
import os
from dataclasses import replace

import pytest
import torch

from papers.hetero.job import Job
from papers.hetero.launch import RunFailed, launch
from papers.hetero.reference import reference_run, stage_state
from papers.hetero.topology import build_topology, parse_vendors
from papers.hetero.agreement import disagreement

LINKS = ["direct", "cpu_forward:1", "cpu_forward:3", "cpu_forward:4", "device_direct"]
EXACT_CONTROLS = ["device_direct_staged", "cpu_forward_reassemble:2"]  # broken in where the bytes go, not in the numbers
JOB = Job(vendors="nv,amd", links=LINKS + EXACT_CONTROLS, steps=5, schedule="1f1b", corpus_tokens=20_000, timeout_s=20.0,
          clip=0.1, partition=[4, 2], save_params=True, selftest=True, audit_control=True)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    work = tmp_path_factory.mktemp("uninterrupted")
    return work, launch(JOB, 2, workdir=work, deadline_s=180)


def test_awkward_tensors_cross_every_link_intact(run):
    _, ranks = run
    for r in ranks:
        assert set(r["selftest"]) == set(LINKS + EXACT_CONTROLS)
        for spec, v in r["selftest"].items():
            assert len(v["intact"]) == 4 and all(v["intact"]), (r["rank"], spec)  # 4 tensors received per rank
            c = v["counters"]
            payload = c["payload_sent"] + c["payload_received"]
            assert c["wire_bytes"] == payload
            if spec.startswith("cpu_forward") or spec == "device_direct_staged":
                assert c["staged_bytes"] == payload  # every posted buffer is a host buffer
                extra = payload // 2 if spec.startswith("cpu_forward_reassemble") else 0  # the receive side's cat
                assert abs(c["copied_bytes"] - payload - extra) <= 8 * 4  # one copy each side (+ a chunk boundary)
            else:
                assert c["staged_bytes"] == 0 and c["packed_bytes"] > 0  # non-contiguous input is packed, not staged
                assert c["copied_bytes"] == c["packed_bytes"]  # the only copies are the layout packs


def test_live_audit_asks_the_groups_and_catches_the_wrong_backend(run):
    _, ranks = run
    for r in ranks:
        assert r["audit_live_violations"] == []
        assert {g["live_backend"] for g in r["audit"] if r["rank"] in g["ranks"]} == {"gloo"}
        assert r["audit_control_violations"] == ["control.wrong-backend: live backend 'vendorccl', planned 'gloo'"]


def test_links_agree_bitwise_and_equal_single_process(run):
    work, ranks = run
    variants = ranks[-1]["variants"]
    assert len({tuple(v["losses"]) for v in variants.values()}) == 1
    for r in ranks:
        assert len({v["digest"] for v in r["variants"].values()}) == 1
        assert all(v["clipped"] == JOB.steps for v in r["variants"].values())
    assert not ranks[0]["audit_violations"]
    ref = reference_run(JOB, dp=1)
    assert max(abs(a - b) for a, b in zip(ref["losses"], variants["device_direct"]["losses"])) <= 1e-5
    topo = build_topology(parse_vendors(JOB.vendors, 2), 2, JOB.partition, 6)
    for s in range(2):
        got = torch.load(work / f"params-device_direct-stage{s}.pt")
        want = stage_state(ref["model"], topo.layers(s), s == 0, s == 1)
        assert got.keys() == want.keys()
        assert max(float((got[k] - want[k]).abs().max()) for k in want) <= 1e-5


def test_killed_stage_fails_cleanly_and_resume_equals_uninterrupted(run, tmp_path):
    _, full = run
    ckpt = tmp_path / "ckpt"
    job = replace(JOB, links=["device_direct"], selftest=False, save_params=False, checkpoint_dir=str(ckpt), checkpoint_every=2)
    with pytest.raises(RunFailed) as err:
        launch(replace(job, fail_rank=1, fail_step=3, timeout_s=5.0), 2, workdir=tmp_path / "crash", deadline_s=120)
    msg = str(err.value)
    assert "run failed" in msg and "rank 1: killed by signal 9" in msg
    assert "rank 0 (stage 0, nv): a peer failed or timed out" in msg
    assert not any(_alive(p) for p in err.value.pids)  # no process left behind
    assert sorted(p.name for p in ckpt.iterdir()) == ["device_direct-stage0-step2.pt", "device_direct-stage1-step2.pt"]
    resumed = launch(replace(job, resume=True), 2, workdir=tmp_path / "resume", deadline_s=120)
    for a, b in zip(full, resumed):
        va, vb = a["variants"]["device_direct"], b["variants"]["device_direct"]
        assert vb["start_step"] == 2
        assert va["losses"] == vb["losses"] and va["digest"] == vb["digest"]


def test_disagreement_on_link_type_is_named():
    a = Job(links=["direct"]).fingerprint()
    b = Job(links=["device_direct"]).fingerprint()
    assert disagreement([a, a]) is None
    assert disagreement([a, b, a]).startswith("ranks disagree on the job (links: rank0=['direct'], rank1=['device_direct'], rank2=['direct'])")
    c = Job(links=["direct"], schedule="gpipe").fingerprint()
    assert "schedule: rank0=1f1b, rank1=gpipe" in disagreement([a, c])
