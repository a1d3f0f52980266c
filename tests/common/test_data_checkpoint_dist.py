import gzip
import os
import struct

import numpy as np
import pytest
import torch

from common import data
from common.checkpoint import load_checkpoint, save_checkpoint
from common.distributed import init_distributed
from common.errors import UserError


def idx_bytes(arr: np.ndarray) -> bytes:
    return bytes([0, 0, 8, arr.ndim]) + b"".join(struct.pack(">I", d) for d in arr.shape) + arr.astype(np.uint8).tobytes()


def test_parse_idx_roundtrip():
    arr = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    assert np.array_equal(data.parse_idx(idx_bytes(arr)), arr)
    with pytest.raises(ValueError):
        data.parse_idx(b"\x00\x00\x09\x01" + b"\x00" * 8)


def test_digits_split_and_range():
    tr, te = data.load_dataset("digits", "train"), data.load_dataset("digits", "test")
    assert tr.x.shape == (1438, 1, 8, 8) and te.x.shape == (359, 1, 8, 8)
    assert tr.x.dtype == np.float32 and tr.y.dtype == np.int64
    assert tr.x.min() == 0.0 and tr.x.max() == 1.0
    assert set(np.unique(tr.y)) == set(range(10))
    assert len(tr.subset(100, seed=1)) == 100


def test_mnist_from_user_folder(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    imgs, labels = rng.integers(0, 256, (5, 28, 28)), rng.integers(0, 10, 5)
    d = tmp_path / "mnist"
    d.mkdir()
    (d / "t10k-images-idx3-ubyte.gz").write_bytes(gzip.compress(idx_bytes(imgs)))
    (d / "t10k-labels-idx1-ubyte").write_bytes(idx_bytes(labels))
    monkeypatch.setenv("REPRO_DATA", str(tmp_path))
    ds = data.load_dataset("mnist", "test")
    assert ds.x.shape == (5, 1, 28, 28)
    assert np.allclose(ds.x[:, 0] * 255, imgs) and np.array_equal(ds.y, labels)
    assert len(ds.provenance) == 2 and all(len(p["sha256"]) == 64 for p in ds.provenance)


def test_fashion_mnist_checksum_mismatch_is_user_error(tmp_path, monkeypatch):
    fake = tmp_path / "fashion-mnist"
    fake.mkdir()
    for stem in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        (fake / stem).write_bytes(idx_bytes(np.zeros((2, 28, 28) if "images" in stem else (2,))))
    monkeypatch.setattr(data.paths, "DATA", tmp_path)
    monkeypatch.setattr(data, "SYSTEM_DIR", tmp_path / "nowhere")
    with pytest.raises(UserError, match="sha256 mismatch"):
        data.load_dataset("fashion_mnist", "test")


def test_missing_dataset_names_make_data(tmp_path, monkeypatch):
    monkeypatch.setattr(data.paths, "DATA", tmp_path)
    monkeypatch.setattr(data, "SYSTEM_DIR", tmp_path / "nowhere")
    monkeypatch.delenv("REPRO_DATA", raising=False)
    for name in ("fashion_mnist", "cifar10", "imagenet"):
        with pytest.raises(UserError, match="make data") as err:
            data.load_dataset(name, "test")
        assert "\n" not in str(err.value)
        assert not data.available(name)
    with pytest.raises(UserError, match="unknown dataset"):
        data.load_dataset("svhn")


@pytest.mark.skipif(not data.available("fashion_mnist"), reason="Fashion-MNIST not installed (make data)")
def test_fashion_mnist_official_files():
    ds = data.load_dataset("fashion_mnist", "test")
    assert ds.x.shape == (10000, 1, 28, 28) and np.bincount(ds.y).tolist() == [1000] * 10


def test_cifar10_pickle_layout(tmp_path, monkeypatch):
    import pickle

    base = tmp_path / "cifar10" / "cifar-10-batches-py"
    base.mkdir(parents=True)
    arr = np.arange(2 * 3072, dtype=np.uint8).reshape(2, 3072)
    (base / "test_batch").write_bytes(pickle.dumps({b"data": arr, b"labels": [3, 7]}))
    monkeypatch.setattr(data.paths, "DATA", tmp_path)
    ds = data.load_dataset("cifar10", "test")
    assert ds.x.shape == (2, 3, 32, 32) and ds.y.tolist() == [3, 7]
    assert ds.x[0, 0, 0, 1] == pytest.approx(1 / 255)


def _train(model, opt, steps, start=0, ckpt=None, stop_at=None):
    for step in range(start, steps):
        if stop_at is not None and step == stop_at:
            save_checkpoint(ckpt, step, model=model, optimizer=opt)
            return None
        x = torch.randn(8, 4)  # draws from the global RNG: must be restored on resume
        loss = ((model(x) - np.random.rand()) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.weight.detach().clone()


def test_resume_matches_uninterrupted(tmp_path):
    from common.seed import seed_everything

    def fresh():
        seed_everything(0)
        m = torch.nn.Linear(4, 1)
        return m, torch.optim.Adam(m.parameters(), lr=0.1)

    m, o = fresh()
    straight = _train(m, o, 20)
    m, o = fresh()
    assert _train(m, o, 20, ckpt=tmp_path / "c.pt", stop_at=11) is None
    m2, o2 = torch.nn.Linear(4, 1), None
    o2 = torch.optim.Adam(m2.parameters(), lr=0.1)
    torch.rand(100)  # disturb the RNG: the checkpoint must restore it
    step, _ = load_checkpoint(tmp_path / "c.pt", model=m2, optimizer=o2)
    assert step == 11
    assert torch.equal(_train(m2, o2, 20, start=step), straight)


def test_distributed_is_noop_in_one_process(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    ctx = init_distributed("cpu")
    assert (ctx.rank, ctx.world_size, ctx.is_main, ctx.enabled) == (0, 1, True, False)
    t = torch.ones(2)
    assert torch.equal(ctx.all_reduce_mean(t), torch.ones(2))
    ctx.barrier()
    ctx.shutdown()


def _worker(rank, world, port, out):
    # rank 1 is launched as a launcher without LOCAL_RANK does it (LOCAL_WORLD_SIZE only): its local rank is derived
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    if rank == 0:
        os.environ["LOCAL_RANK"] = "0"
    else:
        os.environ.pop("LOCAL_RANK", None)
        os.environ["LOCAL_WORLD_SIZE"] = str(world)
    ctx = init_distributed("cpu")
    t = ctx.all_reduce_mean(torch.tensor([float(rank)]))
    out[rank] = (ctx.backend, float(t), ctx.local_rank)
    ctx.shutdown()


def test_gloo_two_processes():
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = mp.Manager().dict()
    mp.spawn(_worker, args=(2, port, out), nprocs=2, join=True)
    assert dict(out) == {0: ("gloo", 0.5, 0), 1: ("gloo", 0.5, 1)}


def test_make_data_download_lands_where_the_loader_looks(tmp_path, monkeypatch, capsys):
    """`common.download` end to end, the network replaced by local files and the system folder out of the search."""
    import io
    import urllib.request

    from common import download

    rng = np.random.default_rng(1)
    served, digests = {}, {}
    for stem in data.FASHION_MNIST_SHA256:
        n = 3 if stem.startswith("t10k") else 4
        raw = idx_bytes(rng.integers(0, 256, (n, 28, 28)) if "images" in stem else rng.integers(0, 10, n))
        served[f"{download.OFFICIAL}{stem}.gz"] = gzip.compress(raw)
        digests[stem] = __import__("hashlib").sha256(raw).hexdigest()
    for stem, digest in digests.items():  # the same dict object the loader and the downloader check against
        monkeypatch.setitem(data.FASHION_MNIST_SHA256, stem, digest)
    asked = []

    def fake_urlopen(url, timeout=None):
        asked.append(url)
        return io.BytesIO(served[url])

    monkeypatch.setattr(urllib.request, "urlopen", fake_urlopen)
    monkeypatch.setattr(download, "_apt", lambda: False)
    monkeypatch.setattr(data.paths, "DATA", tmp_path / "data")
    monkeypatch.setattr(data, "SYSTEM_DIR", tmp_path / "nowhere")
    monkeypatch.delenv("REPRO_DATA", raising=False)
    assert not data.available("fashion_mnist")
    assert download.main() == 0
    assert sorted(asked) == sorted(served)
    assert sorted(p.name for p in (tmp_path / "data" / "fashion-mnist").iterdir()) == sorted(f"{s}.gz" for s in digests)
    test = data.load_dataset("fashion_mnist", "test")
    assert test.x.shape == (3, 1, 28, 28) and str(tmp_path / "data" / "fashion-mnist") in test.provenance[0]["path"]
    assert len(data.load_dataset("fashion_mnist", "train")) == 4
    assert download.main() == 0 and "present" in capsys.readouterr().out.splitlines()[-2]  # a second call downloads nothing
    assert len(asked) == 4


def test_rng_states_saved_on_more_gpus_restore_on_the_devices_present(monkeypatch):
    """A checkpoint from an 8-GPU run resumes on a 1-GPU machine: the present device gets device 0's state
    (the device path on the CPU: torch.cuda stands in for a one-GPU machine)."""
    import torch

    from common import checkpoint

    state = checkpoint.rng_state()
    state["cuda"] = [torch.full((16,), k, dtype=torch.uint8) for k in range(8)]
    calls = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "set_rng_state", lambda s, device: calls.append((int(s[0]), device)))
    monkeypatch.setattr(torch.cuda, "set_rng_state_all", lambda states: pytest.fail("sets all 8 devices' states"))
    checkpoint.set_rng_state(state)
    assert calls == [(0, 0)]


def test_distributed_refuses_more_ranks_than_gpus_and_follows_repro_device(monkeypatch):
    """A rank whose LOCAL_RANK has no GPU is one line naming the fix, not `cuda:LOCAL_RANK` taken blindly;
    REPRO_DEVICE=cpu keeps every rank on gloo even where CUDA is present."""
    from common import device as device_mod
    from common.errors import UserError

    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("LOCAL_RANK", "3")
    import os
    import types

    monkeypatch.setattr(device_mod, "select_device", lambda requested=None: types.SimpleNamespace(
        backend=(requested or os.environ.get("REPRO_DEVICE") or "cuda"), device=None))   # a machine with CUDA
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.delenv("REPRO_DEVICE", raising=False)
    with pytest.raises(UserError, match=r"LOCAL_RANK 3 but this node has 2 GPUs; launch with `torchrun --nproc-per-node 2`"):
        init_distributed()
    started = []
    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: False)
    monkeypatch.setattr(torch.distributed, "init_process_group", lambda backend, **kw: started.append((backend, kw)))
    monkeypatch.setenv("REPRO_DEVICE", "cpu")
    ctx = init_distributed()
    assert (ctx.backend, str(ctx.device), started) == ("gloo", "cpu", [("gloo", {})])   # no device_id on gloo


@pytest.fixture
def fake_launch(monkeypatch):
    """A torchrun-like environment on a fake GPU node: `launch(n_gpus, **env)` sets the launcher's variables
    (others unset), makes torch see `n_gpus` CUDA GPUs, and records set_device and init_process_group."""
    import types

    from common import device as device_mod

    calls = {"set_device": [], "init": []}

    def select(requested=None):
        kind = (requested or os.environ.get("REPRO_DEVICE") or "auto").partition(":")[0]
        return types.SimpleNamespace(backend="cuda" if kind == "auto" else kind, device=None)

    monkeypatch.setattr(device_mod, "select_device", select)
    monkeypatch.setattr(torch.cuda, "set_device", lambda i: calls["set_device"].append(i))
    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: False)
    monkeypatch.setattr(torch.distributed, "init_process_group",
                        lambda backend, **kw: calls["init"].append((backend, kw)))

    def launch(n_gpus, **env):
        for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "CUDA_VISIBLE_DEVICES", "REPRO_DEVICE"):
            monkeypatch.delenv(k, raising=False)
        for k, v in env.items():
            monkeypatch.setenv(k, str(v))
        monkeypatch.setattr(torch.cuda, "device_count", lambda: n_gpus)
        calls["set_device"].clear()
        calls["init"].clear()
        return calls

    return launch


def _one_line_error(match):
    with pytest.raises(UserError, match=match) as err:
        init_distributed()
    assert "\n" not in str(err.value)
    return str(err.value)


def test_distributed_refuses_a_launch_without_rank_or_local_rank_in_one_line(fake_launch):
    """A missing RANK was a bare KeyError; a missing LOCAL_RANK put every rank on GPU 0."""
    calls = fake_launch(4, WORLD_SIZE=4, LOCAL_RANK=1)
    assert "torchrun" in _one_line_error(r"^RANK is not set but WORLD_SIZE is 4")
    calls = fake_launch(4, WORLD_SIZE=4, RANK=3)
    assert "torchrun --nproc-per-node" in _one_line_error(r"rank 3 has no LOCAL_RANK")
    assert calls == {"set_device": [], "init": []}                       # nothing started
    fake_launch(4, WORLD_SIZE=4, RANK="x", LOCAL_RANK=0)
    _one_line_error(r"RANK='x' is not an integer")
    fake_launch(4, WORLD_SIZE=4, RANK=4, LOCAL_RANK=0)
    _one_line_error(r"RANK 4 is not below WORLD_SIZE 4")


def test_distributed_derives_the_local_rank_from_local_world_size(fake_launch):
    calls = fake_launch(2, WORLD_SIZE=4, RANK=3, LOCAL_WORLD_SIZE=2)       # node 1, its second rank
    ctx = init_distributed()
    assert (ctx.rank, ctx.local_rank, str(ctx.device), ctx.backend) == (3, 1, "cuda:1", "nccl")
    assert calls == {"set_device": [1], "init": [("nccl", {"device_id": torch.device("cuda", 1)})]}


def test_distributed_gpu_check_compares_the_nodes_ranks_and_respects_per_rank_visibility(fake_launch):
    # 4 ranks per node on 2 GPUs: rank 0 refuses too (it used to start and wait for ranks 2 and 3 forever)
    fake_launch(2, WORLD_SIZE=4, RANK=0, LOCAL_RANK=0, LOCAL_WORLD_SIZE=4)
    _one_line_error(r"4 ranks on this node \(LOCAL_WORLD_SIZE\) need one GPU each but this node has 2 GPUs; "
                    r"launch with `torchrun --nproc-per-node 2`")
    # a launcher that gives each rank its own GPU (CUDA_VISIBLE_DEVICES=<one>): the rank sees one, index 0
    calls = fake_launch(1, WORLD_SIZE=4, RANK=3, LOCAL_RANK=3, LOCAL_WORLD_SIZE=4, CUDA_VISIBLE_DEVICES=3)
    ctx = init_distributed()
    assert (str(ctx.device), ctx.local_rank, calls["set_device"]) == ("cuda:0", 3, [0])
    assert calls["init"] == [("nccl", {"device_id": torch.device("cuda", 0)})]
    # two GPUs visible to every rank of a four-rank node is still too few
    fake_launch(2, WORLD_SIZE=4, RANK=3, LOCAL_RANK=3, CUDA_VISIBLE_DEVICES="0,1")
    _one_line_error(r"rank 3 has LOCAL_RANK 3 but this node has 2 GPUs")


def test_distributed_honours_an_explicit_gpu_index(fake_launch):
    calls = fake_launch(4, WORLD_SIZE=2, RANK=0, LOCAL_RANK=0, LOCAL_WORLD_SIZE=2)
    ctx = init_distributed("cuda:2")
    assert (str(ctx.device), calls["set_device"], calls["init"]) == ("cuda:2", [2], [("nccl", {"device_id": torch.device("cuda", 2)})])
    calls = fake_launch(4, WORLD_SIZE=2, RANK=1, LOCAL_RANK=1, REPRO_DEVICE="cuda:3")
    assert str(init_distributed().device) == "cuda:3" and calls["set_device"] == [3]


def test_distributed_never_puts_an_xpu_request_on_the_cpu_in_silence(fake_launch, monkeypatch):
    calls = fake_launch(0, WORLD_SIZE=2, RANK=1, LOCAL_RANK=1)
    monkeypatch.setattr(torch.distributed, "is_xccl_available", lambda: False, raising=False)
    with pytest.raises(UserError, match=r"no XCCL backend.*pass --device cpu") as err:
        init_distributed("xpu")
    assert "\n" not in str(err.value) and calls["init"] == []
    picked = []
    monkeypatch.setattr(torch.distributed, "is_xccl_available", lambda: True, raising=False)
    monkeypatch.setattr(torch, "xpu", __import__("types").SimpleNamespace(device_count=lambda: 2, set_device=picked.append),
                        raising=False)
    ctx = init_distributed("xpu")
    assert (str(ctx.device), ctx.backend, picked, calls["init"]) == ("xpu:1", "xccl", [1], [("xccl", {})])
    fake_launch(0, WORLD_SIZE=2, RANK=1, LOCAL_RANK=1)
    with pytest.raises(UserError, match=r"MPS has no distributed backend; pass --device cpu"):
        init_distributed("mps")
