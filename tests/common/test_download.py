"""`make data` (`common.download`) against a local HTTP server on 127.0.0.1 serving fake files in the real
formats (common.fakedata), and the ImageNet loader's worker processes on a tiny class folder of JPEGs."""
import gzip
import hashlib
import io
import json
import os
import pickle
import shutil
import socket
import subprocess
import tarfile
import threading
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from common import data, download, fakedata, paths

MNIST_FILES = [f"{p}-{k}-ubyte.gz" for p in ("train", "t10k") for k in ("images-idx3", "labels-idx1")]


class Handler(BaseHTTPRequestHandler):
    """GET with HTTP Range (206 / 416; a plain 200 when `server.ranges` is false); `server.cut[path] = n` sends the full Content-Length but only n bytes, once."""

    def do_GET(self):
        srv = self.server
        srv.log.append((self.path, self.headers.get("Range")))
        body = srv.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        start, rng = 0, self.headers.get("Range")
        if rng and srv.ranges:
            start = int(rng.removeprefix("bytes=").split("-")[0])
            if start >= len(body):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(body)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(body) - start))
        self.end_headers()
        cut = srv.cut.pop(self.path, None)
        self.wfile.write(body[start:cut] if cut is not None else body[start:])
        if cut is not None:
            self.close_connection = True

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.files, srv.log, srv.cut, srv.ranges = {}, [], {}, True
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    srv.base = f"http://127.0.0.1:{srv.server_address[1]}"
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """The loader and `make data` see only tmp_path/data ($REPRO_DATA); the repository's data/ and the system
    folder are out of the search."""
    monkeypatch.setattr(data.paths, "DATA", tmp_path / "repo-data")
    monkeypatch.setattr(data, "SYSTEM_DIR", tmp_path / "nowhere")
    monkeypatch.setenv("REPRO_DATA", str(tmp_path / "data"))
    return tmp_path / "data"


def md5(raw: bytes) -> str:
    return hashlib.md5(raw).hexdigest()


def serve_mnist(srv, monkeypatch, tmp_path, prefix="/mnist/"):
    """Fake MNIST (.gz as the mirrors serve it) on `srv`, the checksum table patched to its md5s; returns the raw files."""
    src = fakedata.write_mnist(tmp_path / "src", n_train=30, n_test=12, seed=3)
    raws = {f"{p.name}.gz": p.read_bytes() for p in src.iterdir()}
    gz = {name: gzip.compress(raw, mtime=0) for name, raw in raws.items()}
    srv.files.update({prefix + name: body for name, body in gz.items()})
    monkeypatch.setitem(download.SOURCES, "mnist", replace(download.SOURCES["mnist"], files={n: md5(gz[n]) for n in MNIST_FILES}))
    monkeypatch.setenv("REPRO_DATA_MIRROR", srv.base + "/")
    return raws, gz


def serve_cifar10(srv, monkeypatch, tmp_path, n_train, n_test, wrong_md5=()):
    """Fake CIFAR-10 as its python archive on `srv`, the table patched to its md5s (`wrong_md5`: members given a
    wrong one); returns the unpacked source folder."""
    src = fakedata.write_cifar10(tmp_path / "src", n_train=n_train, n_test=n_test, seed=2)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(src, arcname="cifar-10-batches-py")
    srv.files["/cifar10/cifar-10-python.tar.gz"] = buf.getvalue()
    members = {p.name: ("0" * 32 if p.name in wrong_md5 else md5(p.read_bytes())) for p in src.iterdir()}
    monkeypatch.setitem(download.SOURCES, "cifar10", replace(download.SOURCES["cifar10"], members=members,
                                                             files={"cifar-10-python.tar.gz": md5(buf.getvalue())}))
    monkeypatch.setenv("REPRO_DATA_MIRROR", srv.base)
    return src


def test_official_table_matches_the_loader():
    """Every file the loader reads comes from a table entry with a published md5 (32 hex digits)."""
    mnist, cifar = download.SOURCES["mnist"], download.SOURCES["cifar10"]
    assert sorted(mnist.files) == sorted(MNIST_FILES) and mnist.urls[0].startswith("https://")
    assert mnist.files["train-images-idx3-ubyte.gz"] == "f68b3c2dcbeaaa9fbdd348bbdeb94873"
    assert cifar.unpack == "cifar-10-batches-py" and list(cifar.files) == ["cifar-10-python.tar.gz"]
    assert set(cifar.members) >= {f"data_batch_{i}" for i in range(1, 6)} | {"test_batch"}
    for digest in [*mnist.files.values(), *cifar.files.values(), *cifar.members.values()]:
        assert len(digest) == 32 and int(digest, 16) >= 0


def test_mirror_override_layout(monkeypatch):
    monkeypatch.delenv("REPRO_DATA_MIRROR", raising=False)
    assert download.mirrors("mnist", ("https://a/", "http://b/")) == ["https://a/", "http://b/"]
    monkeypatch.setenv("REPRO_DATA_MIRROR", "http://m1/x, http://m2/")
    assert download.mirrors("fashion_mnist", ("https://a/",)) == ["http://m1/x/fashion-mnist/", "http://m2/fashion-mnist/"]


def test_mnist_downloads_checks_and_loads(server, sandbox, monkeypatch, tmp_path, capsys):
    raws, _ = serve_mnist(server, monkeypatch, tmp_path)
    assert not data.available("mnist")
    assert download.main(["mnist"]) == 0
    assert sorted(p.name for p in (sandbox / "mnist").iterdir()) == sorted(MNIST_FILES)  # no .part left
    assert sorted(path for path, _ in server.log) == sorted(f"/mnist/{n}" for n in MNIST_FILES)
    for split, prefix in (("train", "train"), ("test", "t10k")):
        ds = data.load_dataset("mnist", split)
        images = data.parse_idx(raws[f"{prefix}-images-idx3-ubyte.gz"])
        assert ds.x.shape == (len(images), 1, 28, 28) and np.array_equal(np.rint(ds.x[:, 0] * 255), images)
        assert np.array_equal(ds.y, data.parse_idx(raws[f"{prefix}-labels-idx1-ubyte.gz"]))
        assert str(sandbox / "mnist") in ds.provenance[0]["path"]
    capsys.readouterr()
    assert download.main(["mnist"]) == 0 and capsys.readouterr().out.strip() == "mnist: already present"
    assert len(server.log) == 4  # nothing fetched again


def test_cifar10_archive_unpacks_checked(server, sandbox, monkeypatch, tmp_path):
    src = serve_cifar10(server, monkeypatch, tmp_path, n_train=15, n_test=6)
    assert download.main(["cifar10"]) == 0
    assert sorted(p.name for p in (sandbox / "cifar10").iterdir()) == ["cifar-10-batches-py"]  # archive removed, no temporary
    test = data.load_dataset("cifar10", "test")
    assert test.x.shape == (6, 3, 32, 32) and len(data.load_dataset("cifar10", "train")) == 15
    batch = pickle.loads((src / "test_batch").read_bytes(), encoding="bytes")
    assert np.array_equal(test.y, batch[b"labels"]) and np.array_equal(np.rint(test.x * 255).reshape(6, -1), batch[b"data"])


def test_cifar10_member_mismatch_installs_nothing(server, sandbox, monkeypatch, tmp_path, capsys):
    serve_cifar10(server, monkeypatch, tmp_path, n_train=5, n_test=2, wrong_md5=("test_batch",))
    assert download.main(["cifar10"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "test_batch does not match its published md5" in err[0]
    assert list((sandbox / "cifar10").iterdir()) == []


def test_corrupted_file_is_refused_and_removed(server, sandbox, monkeypatch, tmp_path, capsys):
    _, gz = serve_mnist(server, monkeypatch, tmp_path)
    bad = bytearray(gz["train-images-idx3-ubyte.gz"])
    bad[-9] ^= 0xFF
    server.files["/mnist/train-images-idx3-ubyte.gz"] = bytes(bad)
    assert download.main(["mnist"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "does not match its published checksum" in err[0], err
    assert list((sandbox / "mnist").iterdir()) == []  # the first file failed: nothing in place, no .part
    assert not data.available("mnist")


def test_next_mirror_after_a_missing_or_corrupted_file(server, sandbox, monkeypatch, tmp_path):
    _, gz = serve_mnist(server, monkeypatch, tmp_path, prefix="/good/mnist/")
    server.files["/bad/mnist/t10k-labels-idx1-ubyte.gz"] = b"not the file"
    monkeypatch.setenv("REPRO_DATA_MIRROR", f"{server.base}/bad {server.base}/good")
    assert download.main(["mnist"]) == 0 and data.available("mnist")
    asked = [path for path, _ in server.log]
    assert asked.count("/bad/mnist/t10k-labels-idx1-ubyte.gz") == 1 and len(asked) == 8  # 3 x 404, 1 corrupted, 4 good


def test_interrupted_download_resumes_with_range(server, sandbox, monkeypatch, tmp_path, capsys):
    _, gz = serve_mnist(server, monkeypatch, tmp_path)
    name = "train-images-idx3-ubyte.gz"
    half = len(gz[name]) // 2
    server.cut[f"/mnist/{name}"] = half
    assert download.main(["mnist"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "resumes from" in err[0], err
    part = sandbox / "mnist" / f"{name}.part"
    assert [p.name for p in (sandbox / "mnist").iterdir()] == [part.name] and part.stat().st_size == half
    assert download.main(["mnist"]) == 0
    assert (f"/mnist/{name}", f"bytes={half}-") in server.log
    assert (sandbox / "mnist" / name).read_bytes() == gz[name] and not part.exists()
    assert len(data.load_dataset("mnist", "train")) == 30


def test_a_server_without_range_support_restarts_the_file(server, sandbox, monkeypatch, tmp_path):
    _, gz = serve_mnist(server, monkeypatch, tmp_path)
    server.ranges = False
    part = sandbox / "mnist" / "train-images-idx3-ubyte.gz.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(b"stale bytes from another try")
    assert download.main(["mnist"]) == 0
    assert ("/mnist/train-images-idx3-ubyte.gz", f"bytes={len(b'stale bytes from another try')}-") in server.log
    assert (sandbox / "mnist" / "train-images-idx3-ubyte.gz").read_bytes() == gz["train-images-idx3-ubyte.gz"]


def test_a_whole_part_file_is_checked_not_fetched_again(server, sandbox, monkeypatch, tmp_path):
    _, gz = serve_mnist(server, monkeypatch, tmp_path)
    (sandbox / "mnist").mkdir(parents=True)
    (sandbox / "mnist" / "t10k-labels-idx1-ubyte.gz.part").write_bytes(gz["t10k-labels-idx1-ubyte.gz"])
    assert download.main(["mnist"]) == 0
    assert ("/mnist/t10k-labels-idx1-ubyte.gz", f"bytes={len(gz['t10k-labels-idx1-ubyte.gz'])}-") in server.log  # a 416
    assert data.available("mnist")


def test_offline_is_one_line_and_leaves_nothing(sandbox, monkeypatch, capsys):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("REPRO_DATA_MIRROR", f"http://127.0.0.1:{port}/")
    assert download.main(["mnist", "cifar10"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(e.startswith("error: could not download") and "REPRO_DATA_MIRROR" in e for e in err), err
    assert [p for p in sandbox.rglob("*") if p.is_file()] == []


def test_imagenet_says_where_to_get_it_and_unknown_names(sandbox, capsys):
    assert download.main(["imagenet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "image-net.org" in err[0] and "imagenet/{train,val}/<wnid>/*.JPEG" in err[0], err
    fakedata.write_imagefolder(sandbox, n_classes=2, n_per_class=1, n_val_per_class=1, size=16)
    assert download.main(["imagenet", "digits"]) == 0
    assert capsys.readouterr().out.splitlines() == ["imagenet: already present", "digits: bundled with scikit-learn"]
    assert download.main(["svhn"]) == 2 and "unknown dataset 'svhn'" in capsys.readouterr().err


SITECUSTOMIZE = """
import json, os
from dataclasses import replace
from common import download
download.SOURCES["mnist"] = replace(download.SOURCES["mnist"], files=json.loads(os.environ["FAKE_MNIST_MD5"]))
"""


@pytest.mark.skipif(shutil.which("make") is None or not (paths.REPO / ".venv" / "bin" / "python").exists(),
                    reason="needs GNU make and the project's .venv (make setup)")
def test_make_data_mnist_through_the_makefile(server, tmp_path):
    """`make data DATASETS=mnist` against the local server: with the real checksum table the fake files are
    refused in one line (exit 2, nothing in place); with the table patched to the fake files' md5s (a
    sitecustomize on PYTHONPATH) they land in $REPRO_DATA/mnist/ and load."""
    src = fakedata.write_mnist(tmp_path / "src", n_train=4, n_test=2)
    gz = {f"{p.name}.gz": gzip.compress(p.read_bytes(), mtime=0) for p in src.iterdir()}
    server.files.update({f"/mnist/{n}": body for n, body in gz.items()})
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    env |= {"REPRO_DATA": str(tmp_path / "data"), "REPRO_DATA_MIRROR": server.base}

    def make_data():
        return subprocess.run(["make", "--no-print-directory", "-o", ".venv/.installed", "data", "DATASETS=mnist"],
                              cwd=paths.REPO, env=env, capture_output=True, text=True, timeout=120)

    if (paths.DATA / "mnist").exists() or (data.SYSTEM_DIR / "mnist").exists():
        pytest.skip("MNIST is installed in this checkout or system: make data has nothing to fetch")
    out = make_data()
    assert out.returncode == 2, out.stdout + out.stderr
    err = [line for line in out.stderr.splitlines() if line.startswith("error: ")]
    assert len(err) == 1 and "does not match its published checksum" in err[0], out.stderr
    assert [p for p in (tmp_path / "data").rglob("*") if p.is_file()] == []

    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env |= {"PYTHONPATH": os.pathsep.join([str(site), str(paths.REPO)]), "FAKE_MNIST_MD5": json.dumps({n: md5(b) for n, b in gz.items()})}
    out = make_data()
    assert out.returncode == 0 and "mnist: downloaded into" in out.stdout, out.stdout + out.stderr
    assert sorted(p.name for p in (tmp_path / "data" / "mnist").iterdir()) == sorted(MNIST_FILES)
    for name, body in gz.items():
        assert (tmp_path / "data" / "mnist" / name).read_bytes() == body


def test_imagenet_batches_decode_in_worker_processes(sandbox):
    """`load_dataset("imagenet")` on a tiny class folder: labels from the folders, `x[indices]` decoded in two
    DataLoader workers equals the one-at-a-time decode, `x.loader()` covers each image once per epoch, and a
    subset stays lazy."""
    fakedata.write_imagefolder(sandbox, n_classes=3, n_per_class=6, n_val_per_class=2, size=48, seed=4)
    tr = data.load_dataset("imagenet", "train")
    assert tr.classes == ("n00000000", "n00000001", "n00000002") and tr.y.tolist() == [0] * 6 + [1] * 6 + [2] * 6
    assert len(data.load_dataset("imagenet", "test")) == 6 and data.available("imagenet")
    x = tr.x
    x.workers = 2
    idx = np.array([17, 0, 5, 9, 3, 12, 1, 16, 2, 4, 6, 7, 8, 10, 11, 13])  # 16 images: two worker processes
    batch = x[idx]
    one_by_one = np.stack([x[int(i)] for i in idx])
    assert batch.shape == (16, 3, 224, 224) and batch.dtype == np.float32
    assert np.array_equal(batch, one_by_one) and 0.0 <= batch.min() and batch.max() <= 1.0
    # the bright bar fakedata draws for class c sits in channel c % 3: the decode keeps the channels in order
    means = batch.mean(axis=(2, 3))
    assert all(int(np.argmax(m)) == tr.y[i] % 3 for m, i in zip(means, idx))
    dl = x.loader(batch_size=5, shuffle=True, seed=1, workers=2)
    assert dl.num_workers == 2
    seen = [(xb.shape, yb.tolist()) for xb, yb in dl]
    assert [s for s, _ in seen] == [(5, 3, 224, 224)] * 3 + [(3, 3, 224, 224)]
    assert sorted(sum((y for _, y in seen), [])) == sorted(tr.y.tolist())
    sub = tr.subset(4, seed=0)
    assert isinstance(sub.x, data.ImageFiles) and len(sub.x) == 4  # lazy: nothing decoded
    at = [x.files.index(f) for f in sub.x.files]
    assert sub.y.tolist() == tr.y[at].tolist() and np.array_equal(sub.x[3], x[at[3]])
