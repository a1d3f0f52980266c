"""The full profile (MNIST, code 32, width 64, G_c / D_c 2 x 256, 12 / 4 / 5 image replicates at full) runs the
code quick runs: every notebook, through the runner, on MNIST files in the official IDX layout
(`common.fakedata`), with every step count and sample size cut to seconds and the architecture, the dataset
and the protocol left as full has them. Every claim judged at full gets a finite metric and a finite
control. Without MNIST, the full profile stops before anything is written, in one line naming the fix."""
import json
import math
from pathlib import Path

import pytest

from common import data as cdata
from common.claims import load_claims
from common.errors import UserError
from common.fakedata import write_mnist
from papers.acl import config

TINY = dict(  # counts and sample sizes only: widths, code sizes, the dataset and the protocol stay full's
    feat_epochs=1, replicates=2, cls_replicates=2, gan_replicates=2, syn_replicates=2,
    ae_steps=3, code_steps=4, cls_steps=3, gan_steps=3, n_eval=60, n_floor=60, n_prdc=50, n_region=30, n_mem=40,
    kid_subsets=2, kid_subset_size=30, n_grid=8, gmm_iters=5, c2st_steps=5, syn_ae_steps=3, syn_code_steps=4, syn_gan_steps=3,
    syn_n=300, syn_eval=150, workers=2,   # full's code path: replicates in worker processes (full: one per core)
)


def _values(metrics, key):
    v = metrics[key]
    return v if isinstance(v, list) else [v]


def run_full_tiny(tmp_path, monkeypatch, device, **over):
    from common.reproduce import main

    write_mnist(tmp_path / "data", n_train=200, n_test=60)
    monkeypatch.setenv("REPRO_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("REPRO_RESULTS", str(tmp_path / "results"))
    monkeypatch.setitem(config.PROFILES, "full", dict(config.PROFILES["full"], **TINY, **over))
    assert main(["acl", "--profile", "full", "--quiet", "--device", device]) == 0
    run = tmp_path / "results" / "acl" / "full"
    return json.loads((run / "metrics.json").read_text()), json.loads((run / "manifest.json").read_text())


def check_every_full_claim_measured(metrics):
    every = load_claims(Path(config.__file__).with_name("claims.yaml"))
    claims = [c for c in every if "full" in c.profiles]
    assert claims and [c.id for c in claims] == [c.id for c in every]      # full lists every claim of claims.yaml
    for c in claims:
        for key in (c.metric, c.baseline, c.control, c.control_baseline, c.value):
            if isinstance(key, str):
                assert key in metrics, (c.id, key)
                vals = _values(metrics, key)
                assert vals and all(isinstance(v, (int, float)) and math.isfinite(v) or _undefined_ratio(metrics, key, i)
                                    for i, v in enumerate(vals)), (c.id, key, vals)


def _undefined_ratio(metrics, key, i) -> bool:
    """A worst / best region ratio is undefined (NaN, saved as null) exactly when every region of replicate i has
    density 0: a 3-step GAN at these sizes can draw nothing near a real image. Its worst region must say so."""
    return key.startswith("region_density_ratio_") and \
        _values(metrics, key.replace("_ratio_", "_worst_"))[i] == 0


def test_full_profile_runs_every_notebook_on_mnist_files(tmp_path, monkeypatch, in_process):
    metrics, manifest = run_full_tiny(tmp_path, monkeypatch, "cpu")
    assert [name for name, _ in in_process] == sorted(p.name for p in Path("notebooks/acl").glob("*.ipynb"))
    assert metrics["n_train"] == 200 and metrics["featnet_test_acc"] is not None
    assert manifest["parameters"]["workers"] == 2 and manifest["parameters"]["gan_null"] is True
    assert manifest["parameters"]["dataset"] == "mnist" and manifest["parameters"]["code_dim"] == 32
    check_every_full_claim_measured(metrics)


@pytest.mark.cuda
def test_full_profile_runs_every_notebook_on_the_gpu(tmp_path, monkeypatch, in_process, gpu_peak):
    gpu_peak.reset()
    metrics, manifest = run_full_tiny(tmp_path, monkeypatch, "cuda", workers=1)  # in this process: its peak memory is read here
    assert str(manifest["device"]).startswith("cuda") or "cuda" in json.dumps(manifest["device"])
    assert gpu_peak.grew()          # the image models trained on the GPU (workers=1: this process), above what was allocated
    check_every_full_claim_measured(metrics)


def test_full_profile_without_mnist_is_one_line_naming_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_DATA", str(tmp_path))
    monkeypatch.setattr(cdata, "SYSTEM_DIR", tmp_path / "none")
    monkeypatch.setattr(cdata.paths, "DATA", tmp_path / "none")
    with pytest.raises(UserError) as err:
        config.preflight(config.get_config("full"))
    msg = str(err.value)
    assert "\n" not in msg and "'mnist'" in msg and "make data DATASETS=mnist" in msg and "REPRO_DATA" in msg
    write_mnist(tmp_path, n_train=20, n_test=10)
    config.preflight(config.get_config("full"))          # with the files, it passes
