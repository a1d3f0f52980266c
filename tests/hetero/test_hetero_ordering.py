"""Issue 42, the real-GPU path: the order in which a stage posts its sends and receives must be one NCCL
accepts; host tensors never go on an nccl group; timers wait for the device's queued work.

NCCL's point-to-point semantics, modelled here (`nccl_run`): the k-th send from rank a to rank b matches
the k-th receive on b from a (order, not tags); every posted operation occupies its communicator's stream
in posting order and completes only when its peer's matching operation is at the head of the peer's
stream (rendezvous); a send also waits for the receives its rank waited on before posting it (the
compute stream's dependency). Every stage's posting trace comes from the real `schedule.run_step` (tiny
model stages, links that record instead of transferring)."""
import itertools
import types

import pytest
import torch

from common.errors import UserError
from papers.hetero import devsync, schedule
from papers.hetero.groups import Groups, select_backend
from papers.hetero.links import make_link
from papers.hetero.model import TINY, Decoder
from papers.hetero.topology import build_topology, parse_vendors


class TraceLink:
    """Records each post (and each wait of a receive) into `trace`, moves nothing (a receive leaves zeros)."""

    def __init__(self, trace, me, peer):
        self.trace, self.me, self.peer = trace, me, peer

    def send(self, t, tag):
        self.trace.append(("send", self.peer, tag, ()))
        return types.SimpleNamespace(wait=lambda: None)

    def recv(self, buf, tag):
        buf.zero_()
        key = (self.me, self.peer, tag)
        self.trace.append(("recv", self.peer, tag, ()))
        return types.SimpleNamespace(wait=lambda: self.trace.append(("wait", self.peer, tag, key)))


def traces(schedule_name: str, n_stages: int, n_micro: int) -> list[list]:
    """The posting trace of every stage of one pipeline step, from the real `run_step`."""
    full = Decoder(TINY, seed=0)
    per = [TINY.n_layers // n_stages + (s < TINY.n_layers % n_stages) for s in range(n_stages)]
    tokens = torch.randint(0, TINY.vocab, (n_micro, 1, TINY.seq_len + 1), generator=torch.Generator().manual_seed(0))
    out, start = [], 0
    for s in range(n_stages):
        first, last = s == 0, s == n_stages - 1
        mod = full.stage(range(start, start + per[s]), first, last)
        start += per[s]
        tr = []
        prev = None if first else TraceLink(tr, s, s - 1)
        nxt = None if last else TraceLink(tr, s, s + 1)
        schedule.run_step(mod, schedule_name, s, n_stages, n_micro, [t[:, :-1] for t in tokens] if first else None,
                          [t[:, 1:] for t in tokens] if last else None, (1, TINY.seq_len, TINY.d_model), prev, nxt)
        out.append(tr)
    return out


def nccl_run(trs: list[list]) -> list[str]:
    """Play the stages' traces under NCCL's matching (module doc); returns the problems: a deadlock
    (operations left that can never complete) or a send matched to a receive of another (direction,
    micro-batch) (NCCL ignores tags, so the data would land in the wrong buffer)."""
    streams, deps, waited = {}, {}, []
    for s, tr in enumerate(trs):
        seen = set()
        for kind, peer, tag, key in tr:
            if kind == "wait":
                seen.add(key)
                continue
            op = (s, kind, peer, tag, len(streams.get((s, peer), [])))
            streams.setdefault((s, peer), []).append(op)
            deps[op] = set(seen) if kind == "send" else set()
    done_recv = set()
    heads = {k: 0 for k in streams}
    n_sent = {k: 0 for k in streams}
    problems, progress = [], True
    while progress:
        progress = False
        for (s, peer), ops in streams.items():
            i = heads[s, peer]
            if i >= len(ops) or ops[i][1] != "send" or not deps[ops[i]] <= done_recv:
                continue
            # the peer's k-th receive from s matches s's k-th send to it: it must be at the head of its stream
            j = heads.get((peer, s), 0)
            other = streams.get((peer, s), [])
            k = n_sent[s, peer]
            recvs = [o for o in other if o[1] == "recv"]
            if k >= len(recvs):
                continue
            want = recvs[k]
            if j < len(other) and other[j] == want:
                if want[3] != ops[i][3]:
                    problems.append(f"stage {s} send tag {ops[i][3]} matched stage {peer} receive tag {want[3]}")
                heads[s, peer] += 1
                heads[peer, s] += 1
                n_sent[s, peer] += 1
                done_recv.add((peer, s, want[3]))
                progress = True
    left = {k: ops[heads[k]:] for k, ops in streams.items() if heads[k] < len(ops)}
    if left:
        problems.append(f"deadlock: {sum(map(len, left.values()))} operations never complete, heads "
                        + ", ".join(f"stage {s}->{p}: {o[0][1]} tag {o[0][3]}" for (s, p), o in left.items()))
    return problems


@pytest.mark.parametrize("sched,n_stages,n_micro", list(itertools.product(("1f1b", "gpipe"), (2, 3, 4), (1, 2, 4, 8))))
def test_run_step_posts_in_an_order_nccl_accepts(sched, n_stages, n_micro):
    trs = traces(sched, n_stages, n_micro)
    n_ops = sum(k != "wait" for tr in trs for k, *_ in tr)
    assert n_ops == 2 * 2 * (n_stages - 1) * n_micro  # every boundary: M activations and M gradients, each sent and received
    assert nccl_run(trs) == []


def test_the_model_catches_the_old_order_every_receive_first():
    # the order before issue 42: each stage posts every receive of the step, then computes and sends
    old = []
    for s, n in ((0, 2), (1, 2)):
        tr = [("recv", 1 - s, 2 * m + (1 if s == 0 else 0), ()) for m in range(n)]
        for m in range(n):
            tr.append(("send", 1 - s, 2 * m + (0 if s == 0 else 1), ()))
        old.append(tr)
    assert nccl_run(old)[0].startswith("deadlock")
    # and a send matched to the wrong micro-batch is caught (NCCL does not match tags)
    swapped = [[("send", 1, 2, ()), ("send", 1, 0, ())], [("recv", 0, 0, ()), ("recv", 0, 2, ())]]
    assert "matched" in nccl_run(swapped)[0]


# ---- host tensors stay off nccl groups ----------------------------------------------------------------

def test_cpu_forward_channels_are_gloo_even_inside_one_vendor():
    # a single-vendor boundary on GPUs: the pipeline's own group is nccl, but the CPU-forwarding channels carry
    # host buffers, which NCCL cannot send: they are gloo
    assert select_backend("channel", ["nv", "nv"], "cuda") == "gloo"
    assert select_backend("channel", ["amd", "amd"], "cuda") == "gloo"
    assert select_backend("pp", ["nv", "nv"], "cuda") == "nccl"
    topo = build_topology(parse_vendors("nv:2", 2), 2, [4, 2], 6)
    recs = Groups(topo, 0, "cuda", 2, 10.0, create=False).audit()
    assert {r["backend"] for r in recs if r["kind"] == "channel"} == {"gloo"}


def test_a_host_tensor_on_an_nccl_group_is_refused_in_one_line():
    topo = build_topology(parse_vendors("nv:2", 2), 2, [4, 2], 6)
    g = Groups(topo, 0, "cuda", 2, 10.0, create=False, proxy=True)
    link = make_link("device_direct_staged", g, 0, 0, 1, "cuda", False)
    try:
        with pytest.raises(UserError) as err:
            link.send(torch.zeros(4), 0).wait()
        assert "\n" not in str(err.value) and "nccl" in str(err.value)
    finally:
        link.close()
    cf = make_link("cpu_forward:2", g, 0, 0, 1, "cuda", False)
    assert cf.backend == "gloo"  # its channels, whatever the vendors


# ---- timers wait for the device ----------------------------------------------------------------------

class FakeGPU:
    """A device whose work is queued: each op adds `cost` seconds that only `synchronize` waits out."""

    def __init__(self):
        self.queued, self.calls = 0.0, 0

    def synchronize(self, device=None):
        import time
        self.calls += 1
        time.sleep(self.queued)
        self.queued = 0.0


def test_now_waits_for_queued_work_on_a_fake_device(monkeypatch):
    import time
    fake = FakeGPU()
    monkeypatch.setattr(torch, "fakegpu", fake, raising=False)
    dev = types.SimpleNamespace(type="fakegpu")
    t0 = devsync.now(dev)
    fake.queued = 0.05  # work queued, returned at once (as a kernel launch)
    assert devsync.now(dev) - t0 >= 0.05
    assert fake.calls == 2
    devsync.synchronize(torch.device("cpu"))  # a no-op on the CPU
    with pytest.raises(RuntimeError, match="cannot synchronize"):
        devsync.synchronize(types.SimpleNamespace(type="nodevice"))


def test_pass_timings_include_queued_work(monkeypatch):
    """`run_step` reads its pass timers after the device's queued work: a fake device whose forward queues
    30 ms shows them in the recorded forward time."""
    fake = FakeGPU()
    monkeypatch.setattr(torch, "fakegpu", fake, raising=False)
    dev = types.SimpleNamespace(type="fakegpu")
    full = Decoder(TINY, seed=0)
    mod = full.stage(range(0, 6), True, True)

    def queued(x):
        fake.queued += 0.03
        return mod(x)

    tokens = torch.randint(0, TINY.vocab, (2, 1, TINY.seq_len + 1), generator=torch.Generator().manual_seed(0))
    timings = {}
    zeros = torch.zeros
    monkeypatch.setattr(torch, "zeros", lambda *a, device=None, **k: zeros(*a, **k))  # the fake device holds no tensor
    schedule.run_step(queued, "1f1b", 0, 1, 2, [t[:, :-1] for t in tokens], [t[:, 1:] for t in tokens],
                      (1, TINY.seq_len, TINY.d_model), None, None, device=dev, timings=timings)
    assert len(timings["F"]) == 2 and min(timings["F"]) >= 0.03
    assert fake.calls >= 2 * 2 * 2  # before and after every pass
