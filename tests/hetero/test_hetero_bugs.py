"""Regression tests of issue 19's bugs: UCC only for links that use it, the vendor map in the
start-up agreement (with k's: one fail-fast launch), link-labelled checkpoints; the cluster option without
privileges; issue 35's CPU pinning of the ranks under a visible GPU. The last three share one loopback launch with
the comparison across network namespaces."""
import os
from dataclasses import replace

import pytest
import torch.distributed as dist

from common.errors import UserError
from papers.hetero.groups import Groups
from papers.hetero.job import Job
from papers.hetero.launch import launch
from papers.hetero.topology import build_topology, parse_vendors
from papers.hetero.rank import uses_proxy


@pytest.fixture
def no_ucc_gpu_node(monkeypatch):
    """A GPU node whose torch has no UCC, simulated on CPU: group creation is recorded, not done."""
    created = []

    def new_group(ranks, timeout=None, backend=None):
        if backend == "ucc":
            raise AssertionError("Unknown c10d backend type UCC")  # what torch raises there
        created.append(backend)
        return ("group", backend)

    monkeypatch.setattr(dist, "is_ucc_available", lambda: False)
    monkeypatch.setattr(dist, "new_group", new_group)
    monkeypatch.setattr(dist, "get_backend", lambda g: g[1] if isinstance(g, tuple) else "gloo")
    return created


def _gpu_groups(job):
    topo = build_topology(parse_vendors("nv,amd", 2), 2, [4, 2], 6)
    return Groups(topo, 0, "cuda", job.k_max, 10.0, proxy=uses_proxy(job))


@pytest.mark.parametrize("links", [["cpu_forward:2"], ["direct", "cpu_forward:1"]])
def test_links_without_the_proxy_never_create_a_ucc_group(no_ucc_gpu_node, links):
    g = _gpu_groups(Job(vendors="nv,amd", links=links))
    assert g.proxy == {} and "ucc" not in no_ucc_gpu_node
    assert not [r for r in g.records if r.kind == "proxy"]


@pytest.mark.parametrize("links", [["device_direct"], ["cpu_forward:2", "device_direct_staged"]])
def test_device_direct_without_ucc_fails_in_one_line_naming_the_fix(no_ucc_gpu_node, links):
    with pytest.raises(UserError) as err:
        _gpu_groups(Job(vendors="nv,amd", links=links))
    msg = str(err.value)
    assert "\n" not in msg and "needs the UCC backend" in msg and "cpu_forward:k" in msg
    assert no_ucc_gpu_node == []  # failed before creating any group


def test_planned_audit_still_lists_the_proxy_groups():
    topo = build_topology(parse_vendors("nv,amd", 2), 2, [4, 2], 6)
    recs = Groups(topo, 0, "cpu", 1, 10.0, create=False).audit()
    assert [r["cluster_backend"] for r in recs if r["kind"] == "proxy"] == ["ucc"]


def test_ranks_that_disagree_on_the_vendor_map_and_on_k_fail_fast_naming_both(tmp_path):
    """Issue 19: the vendor map is in the start-up agreement beside the job (here k of the CPU-forwarding link): ranks
    that disagree on both fail fast in one line naming both (one launch for the two checks)."""
    job = Job(vendors="nv,amd", links=["cpu_forward:2"], steps=2, corpus_tokens=20_000, timeout_s=20.0)
    both = (r"^ranks disagree on the job \(links: rank0=\['cpu_forward:2'\], rank1=\['cpu_forward:3'\]; "
            r"vendors: rank0=nv,amd, rank1=amd,nv\); launch every rank")
    with pytest.raises(UserError, match=both):
        launch(job, 2, workdir=tmp_path, per_rank={1: {"vendors": "amd,nv", "links": ["cpu_forward:3"]}}, deadline_s=60)
    assert not list(tmp_path.glob("rank*.json"))


def test_two_links_keep_separate_checkpoints_and_each_resumes_its_own(tmp_path):
    # the bf16-staged control is lossy, so its numbers differ from direct: an overwritten series would show
    links = ["direct", "cpu_forward_bf16:2"]
    ckpt = tmp_path / "ckpt"
    job = Job(vendors="nv,amd", links=links, steps=4, corpus_tokens=20_000, timeout_s=20.0,
              checkpoint_dir=str(ckpt), checkpoint_every=2)
    full = launch(job, 2, workdir=tmp_path / "full", deadline_s=120)
    names = sorted(p.name for p in ckpt.iterdir())
    assert names == sorted(f"{lab}-stage{s}-step{t}.pt" for lab in ("direct", "cpu_forward_bf16_2") for s in (0, 1) for t in (2, 4))
    v = full[-1]["variants"]
    assert v["direct"]["losses"] != v["cpu_forward_bf16:2"]["losses"]
    for p in ckpt.glob("*-step4.pt"):  # resume from step 2 of each series
        p.unlink()
    resumed = launch(replace(job, resume=True), 2, workdir=tmp_path / "resume", deadline_s=120)
    for a, b in zip(full, resumed):
        for lab in ("direct", "cpu_forward_bf16:2"):
            va, vb = a["variants"][lab], b["variants"][lab]
            assert vb["start_step"] == 2
            assert va["losses"] == vb["losses"] and va["digest"] == vb["digest"], lab


# One 2-rank launch of one step on loopback, shared by the two tests below (2 processes, ~3 s of CPU each on the Xeon,
# mostly torch's imports): rank 1's vendor map is written with counts; `cluster=True` where network namespaces are not
# allowed; a GPU made visible by the environment.
JOB = Job(vendors="nv,amd", links=["cpu_forward:2"], steps=1, corpus_tokens=20_000, timeout_s=20.0)
PER_RANK = {1: {"vendors": "nv:1,amd:1"}}


@pytest.fixture(scope="module")
def loopback(tmp_path_factory):
    """(ranks, stderr lines) of `JOB` launched with `cluster=True` where no emulated cluster is allowed."""
    import contextlib
    import io

    from common import netcluster

    err = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stderr(err):
        mp.setattr(netcluster, "available", lambda refresh=False: (False, "no CAP_NET_ADMIN"))
        mp.setenv("CUDA_VISIBLE_DEVICES", "0")  # a GPU machine's environment: the ranks must not inherit it
        ranks = launch(JOB, 2, workdir=tmp_path_factory.mktemp("loopback"), per_rank=PER_RANK, deadline_s=120, cluster=True)
    return ranks, err.getvalue().strip().splitlines()


def test_pipeline_step_across_two_namespaces_equals_loopback_bitwise(tmp_path, loopback, monkeypatch):
    from common import netcluster

    ok, why = netcluster.available()
    if not ok:
        pytest.skip(f"no emulated cluster here: {why}")
    loop, _ = loopback
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")  # as the loopback launch had it
    ns = launch(JOB, 2, workdir=tmp_path / "ns", per_rank=PER_RANK, deadline_s=60, cluster={"rate": "1gbit", "delay": "0"})
    assert [r["netcluster_node"] for r in ns] == ["0", "1"] and [r["netcluster_node"] for r in loop] == [None, None]
    for a, b in zip(loop, ns):
        va, vb = a["variants"]["cpu_forward:2"], b["variants"]["cpu_forward:2"]
        assert va["losses"] == vb["losses"] and va["digest"] == vb["digest"]
    import json

    nics = json.loads((tmp_path / "ns" / "netcluster.json").read_text())["nic_counters"]
    act = 2 * 64 * 64 * 4 * 4  # micro_size x seq x d_model x fp32 x 4 micro-batches: the activations
    assert all(nics[0][j]["tx_bytes"] > act / 2 for j in (0, 1))  # both channels' NICs carried their halves
    # nothing of this process's left behind (other test processes may hold their own namespaces now)
    assert [n for n in netcluster.network_namespaces() if n.startswith(f"{netcluster.PREFIX}-{os.getpid()}-")] == []


def test_one_launch_compares_vendor_maps_after_expansion_runs_on_loopback_without_privileges_on_the_cpu(loopback):
    """Three checks on the shared loopback launch: (1) issue 19: rank 1's vendor map written with counts
    (`nv:1,amd:1`) agrees with rank 0's written out (`nv,amd`): the maps are compared after expansion; (2)
    `cluster=True` where network namespaces are not allowed says so in one line and runs the ranks on loopback;
    (3) issue 35: the CPU emulation's ranks compute on the CPU and see no GPU even when the environment makes one
    visible."""
    ranks, err = loopback
    assert [r["vendor"] for r in ranks] == ["nv", "amd"]                                  # (1) the ranks agreed
    assert [r["netcluster_node"] for r in ranks] == [None, None]                          # (2)
    assert err == ["notice: no emulated cluster (no CAP_NET_ADMIN); the ranks run on loopback"]
    assert [r["device"] for r in ranks] == ["cpu", "cpu"]                                  # (3)
    assert [r["cuda_visible_devices"] for r in ranks] == ["", ""]
    losses = ranks[-1]["variants"]["cpu_forward:2"]["losses"]
    assert len(losses) == 1 and all(x == x for x in losses)
