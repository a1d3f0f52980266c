"""`make data`: obtain Fashion-MNIST.

Order: already present (any search folder) > Debian package `dataset-fashion-mnist` via apt-get
(as root, or with password-less sudo) > a download from the dataset's official source into
`data/fashion-mnist/` (`common.data.folder`, the folder the loader searches first), checked
against the known checksums.
"""
from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import subprocess
import sys
import urllib.request

from . import paths
from .data import FASHION_MNIST_SHA256, available, folder
from .errors import UserError, user_errors_exit
from .io import atomic_write_bytes

OFFICIAL = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"


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


def _download() -> None:
    target = paths.DATA / folder("fashion_mnist")
    for stem, digest in FASHION_MNIST_SHA256.items():
        url = f"{OFFICIAL}{stem}.gz"
        try:
            with urllib.request.urlopen(url, timeout=60) as resp:
                raw = resp.read()
        except OSError as err:
            raise UserError(f"could not download {url} ({err}); install the Debian package dataset-fashion-mnist "
                            f"or copy the four IDX files into {target}") from None
        if hashlib.sha256(gzip.decompress(raw)).hexdigest() != digest:
            raise UserError(f"{url} does not match the official checksum; try again later or install dataset-fashion-mnist")
        atomic_write_bytes(target / f"{stem}.gz", raw)


def main() -> int:
    with user_errors_exit():
        if available("fashion_mnist"):
            print("fashion_mnist: present")
        elif _apt():
            print("fashion_mnist: installed the Debian package dataset-fashion-mnist")
        else:
            _download()
            print(f"fashion_mnist: downloaded into {paths.DATA / folder('fashion_mnist')}")
        print("digits: bundled with scikit-learn; mnist, cifar10, imagenet: see data/README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
