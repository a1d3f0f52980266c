"""Single-process behaviour of papers.hetero: backend rules, validation, schedules, model, data, perf model."""
import itertools
import math

import numpy as np
import pytest
import torch

from common.errors import UserError
from papers.hetero import config, data, perfmodel
from papers.hetero.groups import KINDS, Groups, audit_violations, select_backend
from papers.hetero.job import Job, validate
from papers.hetero.links import parse_link
from papers.hetero.model import CONFIGS, TINY, TINY_QWEN2, Block, Decoder, apply_rope, layer_params, rope_tables
from papers.hetero.schedule import order
from papers.hetero.topology import build_topology, parse_vendors

MIXES = [("nv",), ("amd",), ("cpu",), ("nv", "nv"), ("amd", "amd"), ("nv", "amd"), ("amd", "nv"), ("nv", "amd", "amd"), ("cpu", "nv")]


@pytest.mark.parametrize("vendors,kind,device", list(itertools.product(MIXES, KINDS, ("cpu", "cuda"))))
def test_backend_rules_for_every_vendor_mix(vendors, kind, device):
    mixed = len(set(vendors)) > 1
    if mixed and kind == "dp" and device == "cuda":
        with pytest.raises(ValueError):
            select_backend(kind, vendors, device)
        return
    b = select_backend(kind, vendors, device)
    if mixed:
        assert b != "nccl"
    if device == "cpu" or kind in ("world", "scalar", "channel"):
        assert b == "gloo"  # channels carry host buffers: gloo even inside one vendor
    elif not mixed and set(vendors) <= {"nv", "amd"}:
        assert b == "nccl"  # NCCL on CUDA builds, RCCL on ROCm builds
    elif mixed:
        assert b == ("ucc" if kind == "proxy" else "gloo")


def test_audit_flags_planted_violations():
    good = {"name": "pp", "kind": "pp", "ranks": [0, 1], "vendors": ["nv", "amd"], "backend": "gloo", "cluster_backend": "gloo"}
    assert audit_violations([good]) == []
    assert len(audit_violations([dict(good, cluster_backend="nccl")])) == 1
    assert len(audit_violations([dict(good, kind="scalar", vendors=["nv", "nv"], cluster_backend="nccl")])) == 1


def test_groups_plan_counts_and_invariant():
    topo = build_topology(parse_vendors("nv:2,amd:2", 4), 2, [4, 2], 6)
    recs = Groups(topo, 0, "cpu", 3, 10.0, create=False).audit()
    # world + 2 dp + 2 scalar + per replica (pp + 3 channels + proxy)
    assert len(recs) == 1 + 2 + 2 + 2 * 5
    assert audit_violations(recs) == []
    assert {r["name"]: r["cluster_backend"] for r in recs}["dp.stage1"] == "nccl"
    assert all(r["backend"] == "gloo" for r in recs)


@pytest.mark.parametrize("kw,world,match", [
    (dict(partition=[3, 2]), 2, "sums to 5"),
    (dict(stages=3, vendors="nv,amd"), 2, "at least 3 processes"),
    (dict(links=["carrier_pigeon"]), 2, "unknown link"),
    (dict(vendors="nv,amd,amd"), 2, "names 3 ranks"),
    (dict(vendors="nv,amd,nv,amd"), 4, "mixes vendors"),
    (dict(links=["device_direct:2"]), 2, "only cpu_forward"),
    (dict(vendors="nv,intel"), 2, "unknown vendor"),
    (dict(variant_steps={"direct": 2}), 2, "variants of the job's links"),
    (dict(links=["direct"], variant_steps={"direct": 0}), 2, "steps >= 1"),
])
def test_bad_input_is_one_line_user_error(kw, world, match):
    job = Job(**dict(dict(vendors="nv,amd" if world == 2 else "nv:2,amd:2"), **kw))
    with pytest.raises(UserError, match=match) as err:
        validate(job, world)
    assert "\n" not in str(err.value)


def test_counting_controls_stop_early_and_the_lossy_one_runs_every_step():
    short = config.variant_steps(config.get_config("quick"))
    assert short == {"device_direct_staged": 5, "cpu_forward_reassemble:2": 5, "direct/nodp": 5}
    assert config.variant_steps(config.get_config("quick", correctness_steps=3))["direct/nodp"] == 3


@pytest.mark.parametrize("params,match", [
    ({"partition": [4, 3]}, "sums to 7"), ({"stages": 5}, "5 processes"),
    ({"correctness_links": ["warp"]}, "unknown link"), ({"vendors": "nv,amd"}, "names 2 ranks"),
])
def test_preflight_rejects_bad_parameters(params, match):
    with pytest.raises(UserError, match=match):
        config.preflight(config.get_config("quick", **params))


def test_cli_bad_partition_exits_2_and_writes_nothing(tmp_path, capsys, monkeypatch):
    from papers.hetero import train

    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    out = tmp_path / "out"
    assert train.main(["--vendors", "nv,amd", "--partition", "3,2", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "partition" in err[0]
    assert not out.exists()


def test_parse_link():
    assert parse_link("cpu_forward:3") == ("cpu_forward", 3)
    assert parse_link("device_direct") == ("device_direct", 1)
    for bad in ("cpu_forward:0", "cpu_forward:x", "nvlink", "direct:2"):
        with pytest.raises(UserError):
            parse_link(bad)


def test_expand_vendors():
    from papers.hetero.topology import expand_vendors

    assert expand_vendors("nv:2, amd") == ["nv", "nv", "amd"]
    assert expand_vendors(["amd", "nv:1"]) == ["amd", "nv"]
    for bad in ("nv:0", "nv:-1", "nv:two", "intel:2", ""):
        with pytest.raises(UserError):
            expand_vendors(bad)


@pytest.mark.parametrize("sched,S,M", [("1f1b", 2, 4), ("1f1b", 3, 2), ("gpipe", 2, 3), ("1f1b", 4, 8)])
def test_schedule_orders(sched, S, M):
    for s in range(S):
        ops = order(sched, s, S, M)
        assert sorted(ops) == sorted([("F", m) for m in range(M)] + [("B", m) for m in range(M)])
        assert [m for op, m in ops if op == "B"] == list(range(M))  # same accumulation order as the reference
        inflight = peak = 0
        for op, m in ops:
            assert op == "B" or ("B", m) not in ops[:ops.index((op, m))]
            inflight += 1 if op == "F" else -1
            peak = max(peak, inflight)
        assert peak == (M if sched == "gpipe" else min(S - s, M))


def test_rope_rotation_is_relative():
    cfg = TINY
    cos, sin = rope_tables(cfg)
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(cfg.head_dim, generator=g), torch.randn(cfg.head_dim, generator=g)
    rot = lambda x, m: apply_rope(x.expand(cfg.seq_len, -1), cos, sin)[m]
    assert torch.allclose(rot(q, 5).norm(), q.norm(), atol=1e-5)  # a rotation keeps the norm
    assert torch.allclose(rot(q, 7) @ rot(k, 3), rot(q, 14) @ rot(k, 10), atol=1e-4)  # depends on m - n only


def test_layer_param_count_and_qwen2_bias():
    for cfg in (TINY, TINY_QWEN2):
        blk = Block(cfg)
        assert sum(p.numel() for p in blk.parameters()) == layer_params(cfg)
        assert (blk.attn.q.bias is not None) == cfg.qwen2
        assert blk.attn.k.out_features == cfg.n_kv_heads * cfg.head_dim
    assert CONFIGS["llama3-8b"].n_kv_heads == 8 and CONFIGS["qwen2-7b"].rope_theta == 1e6
    # LLaMA-3-8B: 32 layers of 218,112,000 parameters
    assert layer_params(CONFIGS["llama3-8b"]) == 218_112_000


def test_stages_compose_to_the_whole_model():
    model = Decoder(TINY, seed=3)
    x = torch.randint(0, TINY.vocab, (2, TINY.seq_len))
    parts = [model.stage(range(0, 4), True, False), model.stage(range(4, 5), False, False), model.stage(range(5, 6), False, True)]
    h = x
    for p in parts:
        h = p(h)
    assert torch.equal(h, model(x))
    assert Decoder(TINY, seed=3).head.weight.data_ptr() != Decoder(TINY, seed=3).embed.weight.data_ptr()


def test_entropy_rate_two_state_chain():
    a, b = 0.3, 0.1
    P = np.array([[1 - a, a], [b, 1 - b]])
    h = lambda p: -(p * math.log(p) + (1 - p) * math.log(1 - p))
    pi0, pi1 = b / (a + b), a / (a + b)
    assert data.entropy_rate(P) == pytest.approx(pi0 * h(a) + pi1 * h(b), rel=1e-12)


def test_markov_corpus_and_batches_are_pure():
    t1, h1 = data.markov_corpus(5000, seed=2)
    t2, h2 = data.markov_corpus(5000, seed=2)
    assert torch.equal(t1, t2) and h1 == h2 and 0 < h1 < math.log(3)  # 3 successors per state
    assert torch.equal(data.batch_indices(0, 7, 8, 5000, 64), data.batch_indices(0, 7, 8, 5000, 64))
    assert not torch.equal(data.batch_indices(0, 7, 8, 5000, 64), data.batch_indices(0, 8, 8, 5000, 64))
    x, y = data.micro_batch(t1, torch.tensor([0, 10]), 16)
    assert torch.equal(x[:, 1:], y[:, :-1]) and torch.equal(x[1], t1[10:26])


def test_perf_model_hand_cases():
    assert perfmodel.step_time([1.0, 2.0], 0.5, 3) == pytest.approx(3 + 2 * 2 + 2 * (1 + 2) * 0.5)
    a = perfmodel.ASSUMPTIONS
    nbytes = 8e6
    want = a.tcp_alpha + 2 * (nbytes / a.tp) / a.pcie_beta + (nbytes / a.tp) / (2 * a.tcp_beta)
    assert perfmodel.transfer_time("cpu_forward", nbytes, a, k=2) == pytest.approx(want)
    r = perfmodel.project("llama3-8b")
    assert r["ratios"]["nv_homogeneous"]["vs_nv"] == 1.0
    # the uneven split gives the faster vendor more work (FLOPs = time x speed, head included)
    dd = r["plans"]["device_direct"]
    work = {v: t * (a.amd_over_nv if v == "amd" else 1.0) for v, t in zip(dd["order"], dd["stage_s"])}
    assert work["nv"] > work["amd"]
    # equal vendors: a mixed cluster is a homogeneous one
    same = perfmodel.project("qwen2-7b", perfmodel.Assumptions(amd_over_nv=1.0, proxy_alpha=a.rdma_alpha, proxy_efficiency=1.0))
    assert same["ratios"]["device_direct"]["vs_nv"] == pytest.approx(1.0)


# -- controls --------------------------------------------------------------------------------------

def test_live_audit_reads_the_live_backend_not_the_plan():
    from papers.hetero.groups import live_violations

    g = {"name": "pp", "kind": "pp", "ranks": [0, 1], "vendors": ["nv", "amd"], "backend": "gloo",
         "cluster_backend": "gloo", "live_backend": "gloo"}
    assert live_violations([g, dict(g, live_backend=None)]) == []
    # the plan is right, the group is not: only the live check can see it
    assert audit_violations([dict(g, live_backend="vendorccl")]) == []
    assert live_violations([dict(g, live_backend="vendorccl")]) == ["pp: live backend 'vendorccl', planned 'gloo'"]
    assert "live on nccl" in live_violations([dict(g, live_backend="nccl", backend="nccl")])[0]


def test_naive_rule_is_caught_by_the_plan_audit():
    from papers.hetero.groups import naive_backend

    topo = build_topology(parse_vendors("nv:2,amd:2", 4), 2, [4, 2], 6)
    good = Groups(topo, 0, "cpu", 2, 10.0, create=False).audit()
    naive = Groups(topo, 0, "cpu", 2, 10.0, create=False, rule=naive_backend).audit()
    assert audit_violations(good) == []
    bad = audit_violations(naive)
    mixed = [r for r in naive if r["mixed"]]
    assert mixed and all(any(b.startswith(r["name"] + ":") for b in bad) for r in mixed)
    assert all(r["backend"] == "gloo" for r in naive)  # the CPU plan is the same: only the cluster plan differs


class _Work:
    def wait(self):
        pass


def _fake_transport(monkeypatch, posted):
    import papers.hetero.links as L

    def post(buf, peer, group=None, tag=0):
        posted.append(L.storage_of(buf))
        return _Work()

    monkeypatch.setattr(L.dist, "isend", post)
    monkeypatch.setattr(L.dist, "irecv", post)
    return L


def test_staging_is_measured_from_the_posted_buffers_and_copies(monkeypatch):
    posted = []
    L = _fake_transport(monkeypatch, posted)
    t = torch.randn(1000)
    nbytes = t.numel() * 4
    links = {"direct": L.DirectLink(None, 1), "device_direct": L.DeviceDirectLink(None, 1, 5.0),
             "staged": L.DeviceDirectStagedLink(None, 1, 5.0), "cf2": L.CpuForwardLink([None, None], 1),
             "reassemble": L.CpuForwardLink([None, None], 1, name="cpu_forward_reassemble")}
    for name, link in links.items():
        posted.clear()
        out = torch.empty_like(t)
        link.send(t, 0).wait()
        link.recv(out, 1).wait()
        c = link.counters()
        link.close()
        assert c["wire_bytes"] == 2 * nbytes, name
        if name in ("direct", "device_direct"):  # the transport got the caller's own tensors, nothing was copied
            assert set(posted) == {L.storage_of(t), L.storage_of(out)}
            assert (c["staged_bytes"], c["copies"], c["copied_bytes"], c["engine_bytes"]) == (0, 0, 0, 0), name
        else:  # every posted buffer is a host buffer: one copy in on send, one (or two) out on receive
            assert L.storage_of(t) not in posted and L.storage_of(out) not in posted
            assert c["staged_bytes"] == 2 * nbytes, name
            assert c["copied_bytes"] == (3 if name == "reassemble" else 2) * nbytes, name
            assert c["engine_bytes"] == 2 * nbytes, name  # the two staging copies go through the copy engine


def test_lossy_control_link_really_changes_the_data(monkeypatch):
    L = _fake_transport(monkeypatch, [])
    link = L.CpuForwardLink([None, None], 1, name="cpu_forward_bf16")
    t = torch.randn(64)
    link.send(t, 0).wait()
    sent = link.buffers[("send", 0), 64, torch.bfloat16]
    assert sent.dtype == torch.bfloat16 and not torch.equal(sent.float(), t)
    assert torch.equal(sent.float(), t.bfloat16().float())


def test_parse_variant():
    from papers.hetero.links import parse_variant

    assert parse_variant("direct/nodp") == ("direct", True)
    assert parse_variant("cpu_forward_reassemble:2") == ("cpu_forward_reassemble:2", False)
    for bad in ("direct/fast", "device_direct_staged:2"):
        with pytest.raises(UserError):
            parse_variant(bad)


def test_unstable_steps_counts_nonfinite_and_divergence():
    from papers.hetero.studies.correctness import unstable_steps

    assert unstable_steps([5.0, 4.0, 3.0, 2.5]) == 0
    assert unstable_steps([5.0, 4.0, float("nan"), 6.0, float("inf")]) == 3


def test_untrained_null_is_the_initial_model():
    from papers.hetero.reference import reference_run, untrained_losses

    job = Job(steps=1, corpus_tokens=20_000, n_micro=2, micro_size=2)
    null = untrained_losses(job, dp=2, steps=[0, 7])
    # step 0 of training is evaluated before any update: the same loss as the untrained model
    assert null[0] == pytest.approx(reference_run(job, dp=2)["losses"][0], rel=1e-6)
    # an untrained model predicts nearly uniform logits: about ln(vocab) at any step
    assert abs(null[7] - math.log(TINY.vocab)) < 0.2


def test_bench_checks_its_arguments():
    import importlib.util

    from common import paths

    spec = importlib.util.spec_from_file_location("bench_hetero", paths.REPO / "benchmarks" / "bench_hetero.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.parse_args([]).repeats == 8
    assert bench.parse_args(["--repeats", "3"]).repeats == 3
    for bad in (["--repeats", "0"], ["--repeats", "x"], ["--windows", "3"], ["extra"]):
        with pytest.raises(SystemExit) as err:
            bench.parse_args(bad)
        assert err.value.code == 2
