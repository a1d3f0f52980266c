"""`make data`: fetch datasets into `<root>/<folder>/`, the layout `common.data` loads.

`python -m common.download [NAME ...]` (`make data DATASETS="mnist cifar10"`); no name means
`fashion_mnist`, what the quick profiles need. `<root>` is `$REPRO_DATA` when set, else `data/`;
`<folder>` is `common.data.folder(name)`.

| name | source | kept as |
|---|---|---|
| `fashion_mnist` | Debian package `dataset-fashion-mnist` (as root or with password-less sudo), else the official download | the four `.gz` IDX files; sha256 of each uncompressed file checked |
| `mnist` | the mirrors torchvision uses, in order | the four `.gz` IDX files; published md5 checked |
| `cifar10` | the CIFAR-10 page's python archive | `cifar-10-batches-py/`; md5 of the archive and of every batch checked, archive removed |
| `imagenet` | needs an account: refused with where to get it and where to put it | `{train,val}/<wnid>/*.JPEG` |
| `digits` | bundled with scikit-learn | — |

Every file is fetched into `<file>.part`, resumed with an HTTP Range request when a `.part` is left
from an interrupted try, checked against its published checksum, then renamed into place: a file in
place is always whole and checked. An unreachable source ends in one line naming the fix (exit 2),
leaving only the `.part` to resume; a file whose checksum does not match is removed and refused in
one line (exit 2). `REPRO_DATA_MIRROR="URL [URL ...]"` replaces the official sources by mirrors laid
out as `<URL>/<folder>/<file>` (e.g. `<URL>/mnist/train-images-idx3-ubyte.gz`), tried in order.
"""
from __future__ import annotations

import gzip
import hashlib
import http.client
import os
import shutil
import subprocess
import sys
import tarfile
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import paths
from .data import DATASETS, FASHION_MNIST_SHA256, available, folder
from .errors import EXIT_USER_ERROR, UserError

OFFICIAL = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
TIMEOUT_S = 60
CHUNK = 1 << 20
MIRROR_ENV = "REPRO_DATA_MIRROR"
IMAGENET_HELP = ("imagenet (ILSVRC-2012) cannot be downloaded without an account: get ILSVRC2012_img_train.tar and "
                 "ILSVRC2012_img_val.tar from https://image-net.org/download-images and unpack them as "
                 "{root}/imagenet/{{train,val}}/<wnid>/*.JPEG (data/README.md says how)")


@dataclass(frozen=True)
class Source:
    """Where a dataset's files come from and their published md5s."""
    urls: tuple[str, ...]                                # base URLs, tried in order
    files: dict[str, str]                                # file name -> published md5 of the file as served
    unpack: str | None = None                            # an archive unpacks to this folder ...
    members: dict[str, str] = field(default_factory=dict)  # ... whose files have these published md5s


# The URLs and md5s below are those torchvision 0.28's dataset classes carry (torchvision/datasets/mnist.py:
# MNIST.mirrors and .resources; torchvision/datasets/cifar.py: CIFAR10.url, .tgz_md5, .train_list, .test_list,
# .meta); the CIFAR-10 page (https://www.cs.toronto.edu/~kriz/cifar.html) publishes the archive's md5 too.
# torchvision itself is not a dependency: its PyPI build loads only beside a CUDA build of torch.
SOURCES = {
    "mnist": Source(
        urls=("https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/"),
        files={"train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
               "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
               "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
               "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c"}),
    "cifar10": Source(
        urls=("https://www.cs.toronto.edu/~kriz/",),
        files={"cifar-10-python.tar.gz": "c58f30108f718f92721af3b95e74349a"},
        unpack="cifar-10-batches-py",
        members={"data_batch_1": "c99cafc152244af753f735de768cd75f", "data_batch_2": "d4bba439e000b95fd0a9bffe97cbabec",
                 "data_batch_3": "54ebc095f3ab1f0389bbae665268c751", "data_batch_4": "634d18415352ddfa80567beed471001a",
                 "data_batch_5": "482c414d41f54cd18b22e5b47cb7c3cb", "test_batch": "40351d587109b95175f43aff81a1287e",
                 "batches.meta": "5ff9c542aee3614f3951f8cda6e48888"}),
}


def root() -> Path:
    """Where `make data` writes: `$REPRO_DATA` when set (the loader searches it), else `data/`."""
    return Path(os.environ["REPRO_DATA"]) if os.environ.get("REPRO_DATA") else paths.DATA


def mirrors(name: str, official: tuple[str, ...]) -> list[str]:
    """The base URLs for dataset `name`: `$REPRO_DATA_MIRROR`'s (each + `<folder>/`), else the official ones."""
    override = os.environ.get(MIRROR_ENV, "").replace(",", " ").split()
    if override:
        return [f"{u.rstrip('/')}/{folder(name)}/" for u in override]
    return list(official)


def md5_file(path: Path) -> str:
    h = hashlib.md5()
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def md5_check(expected: str) -> Callable[[Path], str | None]:
    """A checker: None when the file's md5 is `expected`, else what was found."""
    def check(path: Path) -> str | None:
        got = md5_file(path)
        return None if got == expected else f"md5 {got}, published {expected}"
    return check


def _transfer(url: str, part: Path) -> None:
    """Append `url`'s bytes to `part`, resuming after the bytes it holds (HTTP Range); a server that
    ignores the Range gets a fresh start."""
    offset = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={offset}-"}) if offset else url
    try:
        resp = urllib.request.urlopen(request, timeout=TIMEOUT_S)
    except urllib.error.HTTPError as err:
        if err.code == 416 and offset:  # nothing after `offset`: the part is whole already
            return
        raise
    with resp:
        headers = getattr(resp, "headers", None) or {}
        if offset and not (getattr(resp, "status", None) == 206
                           and headers.get("Content-Range", "").startswith(f"bytes {offset}-")):
            offset = 0
        length = headers.get("Content-Length")
        got = 0
        with open(part, "ab" if offset else "wb") as fh:
            while chunk := resp.read(CHUNK):
                fh.write(chunk)
                got += len(chunk)
            fh.flush()
            os.fsync(fh.fileno())
        if length is not None and got < int(length):  # read(n) ends quietly on a dropped connection
            raise ConnectionError(f"connection closed after {got} of {length} bytes")


def fetch(urls: list[str], dest: Path, check: Callable[[Path], str | None], retry: str) -> Path:
    """`dest`, downloaded from the first of `urls` (base URLs) that serves it whole and checked: bytes go to
    `dest.part` (resumed when present), `check(part)` must return None, then the part is renamed to `dest`.
    `retry` is the command that resumes, named in the one-line errors."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    tried, corrupt = [], False
    for base in urls:
        url = base + dest.name
        print(f"  {dest.name} <- {url}" + (f" (resuming after {part.stat().st_size} bytes)" if part.exists() else ""),
              flush=True)
        try:
            _transfer(url, part)
        except ValueError as err:
            raise UserError(f"{url} is not a URL ({err}); fix {MIRROR_ENV} or unset it") from None
        except (OSError, http.client.HTTPException) as err:
            tried.append(f"{url} ({getattr(err, 'reason', None) or err})")
            continue
        bad = check(part)
        if bad is None:
            os.replace(part, dest)
            return dest
        part.unlink()
        tried.append(f"{url} ({bad})")
        corrupt = True
    if corrupt:
        raise UserError(f"{dest.name} does not match its published checksum at {', '.join(tried)}; removed it, nothing "
                        f"was installed; run `{retry}` again later or set {MIRROR_ENV} to another mirror")
    raise UserError(f"could not download {dest.name} from {' or '.join(tried) or 'no source'}; check the network (or set "
                    f"{MIRROR_ENV} to a mirror) and run `{retry}` again" + (f": it resumes from {part}" if part.exists() else ""))


def _unpack(archive: Path, source: Source, target: Path, retry: str) -> None:
    """Extract `source.unpack/` from `archive` into `target/`, check every member's md5, then rename it into
    place and remove the archive; a failure leaves nothing in place."""
    if (target / source.unpack).exists():
        raise UserError(f"{target / source.unpack} exists but is incomplete; remove it and run `{retry}` again "
                        f"(the checked {archive.name} stays)")
    tmp = target / f".{source.unpack}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}  # Python >= 3.11.4
    try:
        with tarfile.open(archive) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith(f"{source.unpack}/") and ".." not in m.name
                       and (m.isfile() or m.isdir())]
            tar.extractall(tmp, members=members, **safe)
        for member, expected in source.members.items():
            path = tmp / source.unpack / member
            got = md5_file(path) if path.exists() else "absent"
            if got != expected:
                archive.unlink()
                raise UserError(f"{archive.name}: {source.unpack}/{member} does not match its published md5 ({got}, "
                                f"published {expected}); removed the archive, nothing was installed; run `{retry}` again")
        os.replace(tmp / source.unpack, target / source.unpack)
    except (tarfile.TarError, OSError, EOFError) as err:
        archive.unlink(missing_ok=True)
        raise UserError(f"{archive} could not be unpacked ({err}); removed it, run `{retry}` again") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    archive.unlink()


def get(name: str) -> str:
    """Fetch dataset `name` (a `SOURCES` entry) into `root()/folder(name)/`; returns what was done."""
    source = SOURCES[name]
    target = root() / folder(name)
    retry = f"make data DATASETS={name}"
    urls = mirrors(name, source.urls)
    for fname, md5 in source.files.items():
        dest = target / fname
        if not dest.exists():
            fetch(urls, dest, md5_check(md5), retry)
        if source.unpack:
            _unpack(dest, source, target, retry)
    return f"downloaded into {target}"


def _apt() -> bool:
    if shutil.which("apt-get") is None:
        return False
    prefix = [] if os.geteuid() == 0 else (["sudo", "-n"] if shutil.which("sudo") else None)
    if prefix is None:
        return False
    cmd = prefix + ["apt-get", "install", "-y", "-q", "dataset-fashion-mnist"]
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if subprocess.run(cmd, **quiet).returncode != 0:
        subprocess.run(prefix + ["apt-get", "update", "-q"], **quiet)
        if subprocess.run(cmd, **quiet).returncode != 0:
            return False
    return available("fashion_mnist")


def _uncompressed_sha256(expected: str) -> Callable[[Path], str | None]:
    """Fashion-MNIST's check: the sha256 of the uncompressed file (the .gz bytes differ between mirrors)."""
    def check(path: Path) -> str | None:
        try:
            with gzip.open(path, "rb") as fh:
                got = hashlib.sha256(fh.read()).hexdigest()
        except (OSError, EOFError) as err:
            return f"not a gzip file: {err}"
        return None if got == expected else f"sha256 {got} uncompressed, expected {expected}"
    return check


def _fashion_mnist() -> str:
    if _apt():
        return "installed the Debian package dataset-fashion-mnist"
    target = root() / folder("fashion_mnist")
    urls = mirrors("fashion_mnist", (OFFICIAL,))
    for stem, digest in FASHION_MNIST_SHA256.items():
        dest = target / f"{stem}.gz"
        if not dest.exists():
            fetch(urls, dest, _uncompressed_sha256(digest), "make data")
    return f"downloaded into {target}"


def obtain(name: str) -> str:
    """Make dataset `name` loadable; returns one line of what was done. Raises `UserError`."""
    if name == "digits":
        return "bundled with scikit-learn"
    if available(name):
        return "already present"
    if name == "imagenet":
        raise UserError(IMAGENET_HELP.format(root=root()))
    if name == "fashion_mnist":
        return _fashion_mnist()
    return get(name)


def canonical(name: str) -> str:
    """A dataset name as the loader spells it (`fashion-mnist` is accepted for `fashion_mnist`)."""
    name = name.strip().lower().replace("-", "_")
    if name not in DATASETS:
        raise UserError(f"unknown dataset {name!r}; choose among {' '.join(DATASETS)} (make data DATASETS=\"mnist cifar10\")")
    return name


def main(argv: list[str] | None = None) -> int:
    """Obtain each named dataset (default fashion_mnist): one line each; exit 2 when any failed."""
    argv = list(argv or [])
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__)
        return 0
    status = 0
    try:
        names = [canonical(a) for a in argv] or ["fashion_mnist"]
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USER_ERROR
    for name in names:
        try:
            print(f"{name}: {obtain(name)}", flush=True)
        except UserError as err:
            print(f"error: {err}", file=sys.stderr, flush=True)
            status = EXIT_USER_ERROR
        except KeyboardInterrupt:
            print(f"error: interrupted; run `make data DATASETS={name}` again to resume", file=sys.stderr)
            return 130
    if names == ["fashion_mnist"]:
        print('others: make data DATASETS="mnist cifar10" (imagenet: see data/README.md)')
    return status


if __name__ == "__main__":
    # `python -m` runs this file as __main__, a second copy of the module: run the importable one, whose
    # tables (SOURCES) are the ones a caller or a test may have patched
    from common.download import main as _main

    sys.exit(_main(sys.argv[1:]))
