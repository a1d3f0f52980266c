import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest

from common.io import atomic_write_json, atomic_write_text, read_json, sha256_file
from common.runs import Run


def test_atomic_write_leaves_old_file_when_interrupted(tmp_path, monkeypatch):
    path = tmp_path / "m.json"
    atomic_write_json(path, {"a": 1})

    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_json(path, {"a": 2})
    assert read_json(path) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]  # no temp file left behind


def test_json_handles_numpy_and_nonfinite(tmp_path):
    atomic_write_json(tmp_path / "x.json", {"a": np.float64(0.5), "b": np.arange(3), "c": float("nan"), "d": float("inf")})
    assert read_json(tmp_path / "x.json") == {"a": 0.5, "b": [0, 1, 2], "c": None, "d": "inf"}


def test_sha256(tmp_path):
    atomic_write_text(tmp_path / "t", "abc")
    assert sha256_file(tmp_path / "t") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_run_records_metrics_figures_manifest(tmp_path):
    run = Run.open("toy", "smoke", run_dir=tmp_path / "r", params={"n": 3}, seed=7, device="cpu")
    run.log_metrics({"a": 1.0})
    merged = run.log_metrics({"b": np.float32(2.0)})
    assert merged == {"a": 1.0, "b": 2.0}
    fig, ax = plt.subplots()
    ax.plot([1, 2])
    png = run.save_figure(fig, "fig1")
    full = Run.open("toy", "full", run_dir=tmp_path / "f", seed=7, device="cpu")
    print_copy = full.save_figure(fig, "fig1")
    plt.close(fig)
    assert png.exists() and not png.with_suffix(".svg").exists()          # smoke and quick: the PNG only
    assert print_copy.exists() and print_copy.with_suffix(".svg").exists()  # full: a vector copy for print
    run.log_inputs([{"path": "/x", "sha256": "00", "bytes": 1}])
    man = read_json(tmp_path / "r" / "manifest.json")
    assert man["parameters"] == {"n": 3} and man["seed"] == 7
    assert man["device"]["backend"] == "cpu" and man["inputs"][0]["path"] == "/x"
    assert {"python", "torch", "numpy"} <= set(man["versions"])
    assert "sha" in man["git"] and "dirty" in man["git"]


def test_interactive_run_dir_is_separate(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_RESULTS", str(tmp_path))
    run = Run.open("toy", "quick", device="cpu")
    assert run.dir == tmp_path / "toy" / "quick-interactive"
