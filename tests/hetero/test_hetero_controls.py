"""Issue 36: the controls of the emulated-cluster claims on hand-computable cases (the perfmodel's competitor,
M x the slowest stage, calibrated the same way; the inputs' expected NIC and staging ratios), the claims'
natures, and the GPU slice's dry run with its projection arithmetic."""
import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from common.claims import load_claims
from papers.hetero import clusterbench as cb
from papers.hetero import gpuslice, perfmodel

CLAIMS_FILE = Path(__file__).resolve().parents[2] / "papers" / "hetero" / "claims.yaml"
CLAIMS = load_claims(CLAIMS_FILE)


def _paced(variants, layer_s=0.010, head=0.5):
    """Pass times of an exactly paced device, per variant and stage."""
    out = {}
    for v in variants:
        pace = [cb.stage_pace(layer_s * 1e3, n, s == 1, head, sp) for s, (n, sp) in enumerate(zip(v["partition"], v["speeds"]))]
        out[v["label"]] = {s: {"F": p[0], "B": p[1]} for s, p in enumerate(pace)}
    return out


def test_the_bottleneck_competitor_by_hand():
    variants = cb.speed_variants(0.5)
    cal = cb.calibrate(_paced(variants), variants, 0.5)
    mixed = variants[0]  # 4/2, speeds 1 and 0.5: stage 0 = 4 x 30 ms, stage 1 = 2.5 x 30 / 0.5 = 150 ms per micro-batch
    assert cb.predict_bottleneck(mixed, cal, 4) == pytest.approx(4 * 0.150)
    assert cb.predict_bottleneck(mixed, cal, 4, overhead=0.01) == pytest.approx(0.61)
    # the simulation adds the fill and drain the bottleneck model leaves out
    assert cb.predict(mixed, cal, 0.0, 4) == pytest.approx(perfmodel.pipeline_time([0.04, 0.05], [0.08, 0.10], 0.0, 4))
    assert cb.predict(mixed, cal, 0.0, 4) > cb.predict_bottleneck(mixed, cal, 4)


def test_both_models_are_calibrated_by_the_same_procedure():
    variants = cb.speed_variants(0.5)
    cal = cb.calibrate(_paced(variants), variants, 0.5)
    # measured = the simulation + 7 ms per step: the simulation's overhead is recovered, every error is 0
    measured = {v["label"]: cb.predict(v, cal, 0.0, 4) + 0.007 for v in variants}
    err = cb.calibrated_errors(lambda v, o: cb.predict(v, cal, 0.0, 4, overhead=o), variants, measured)
    assert max(abs(e) for e in err.values()) < 1e-12
    # the bottleneck model gets its own overhead, the mean gap on the two homogeneous windows
    ctl = cb.calibrated_errors(lambda v, o: cb.predict_bottleneck(v, cal, 4, overhead=o), variants, measured)
    homog = [v for v in variants if v["label"] in cb.HOMOGENEOUS]
    o = sum(measured[v["label"]] - cb.predict_bottleneck(v, cal, 4) for v in homog) / 2
    for v in variants:
        assert ctl[v["label"]] == pytest.approx((cb.predict_bottleneck(v, cal, 4) + o) / measured[v["label"]] - 1)
    assert abs(ctl["amd_homog"] + ctl[cb.NV] * measured[cb.NV] / measured["amd_homog"]) < 1e-12  # residuals cancel


def test_the_inputs_set_the_nic_and_staging_ratios():
    assert cb.expected_nic_ratio(2, 2) == 2.0 and cb.expected_nic_ratio(4, 2) == 2.0 and cb.expected_nic_ratio(1, 2) == 1.0
    # copy in at 0.8 R + wire at R + copy out at 0.8 R, against the wire alone: 1 + 2 / 0.8
    assert cb.expected_staging_ratio(0.8) == pytest.approx(3.5) and cb.expected_staging_ratio(2.0) == pytest.approx(2.0)


def test_every_claim_declares_its_nature_and_the_set_by_input_claims_are_agreements():
    raw = {c["id"]: c for c in yaml.safe_load(CLAIMS_FILE.read_text())["claims"]}
    for cid, c in raw.items():
        assert (c.get("nature") in ("agreement", "phenomenon")) == (c["kind"] != "projection"), cid
    for cid in ("cluster-multi-nic-scales", "cluster-device-direct-beats-staging", "cluster-perfmodel-calibrated"):
        assert raw[cid]["nature"] == "agreement"
    by_id = {c.id: c for c in CLAIMS}
    assert by_id["cluster-perfmodel-calibrated"].control == "cluster_model_max_abs_err_control"
    assert by_id["cluster-mixed-beats-amd"].control == "cluster_mixed_even_vs_amd"


def _slice_module():
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_slice_hetero.py"
    spec = importlib.util.spec_from_file_location("gpu_slice_hetero", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_step_counts_and_the_projection_arithmetic():
    cfg = SimpleNamespace(correctness_links=["a", "b"], control_links=["c", "cpu_forward_bf16:2"], correctness_steps=10, control_steps=3, processes=4,
                          stability_steps=7, throughput_links=["a", "b"], tput_windows=3, tput_window_steps=5, tput_warmup=1,
                          tput_processes=2, cluster_windows=2, cluster_window_steps=1, cluster_warmup=1, cluster_rho=0.7)
    counts = gpuslice.full_step_counts(cfg)  # 7 speed variants (the staging link's included) x 3 steps
    # the counting control "c" stops after control_steps, the bf16 one runs every step
    assert counts == {"correctness": (33, 4), "stability": (7, 4), "throughput": (32, 2), "cluster": (21, 2)}
    assert gpuslice.projected_gpu_hours(counts, 0.5) == pytest.approx((132 + 28 + 64 + 42) * 0.5 / 3600)
    times = {"forward": [1.0, 2.0], "backward": [2.0, 4.0], "optimizer": [0.1, 0.3]}
    assert gpuslice.pipeline_step_s(times, 4) == pytest.approx(perfmodel.pipeline_time([1.0, 2.0], [2.0, 4.0], 0.0, 4) + 0.3)


def test_the_gpu_slice_dry_run_on_the_cpu():
    res = _slice_module().full_slice("cpu", dry_run=True)
    assert res["ok"] and res["seconds"] > 0 and res["peak_mem_gb"] is None
    assert set(res) >= {"ok", "seconds", "projected_gpu_hours", "basis", "peak_mem_gb", "notes"}
    # the projection is the profile's counts x the timed pipeline step
    assert tuple(res["counts"]["correctness"]) == (315, 8)  # full: 6 variants x 50 steps + 3 counting controls x 5, 8 ranks
    total = sum(s * r for s, r in res["counts"].values())
    assert res["real_device_gpu_hours"] == pytest.approx(total * res["step_s"] / 3600)
    # full is the CPU emulation (issue 42): the device check bills it no GPU-hours; its real-device path's are apart
    assert res["projected_gpu_hours"] == 0.0 and "no GPU" in res["notes"]
    assert res["step_s"] >= max(f + b for f, b in zip(res["stage_times"]["forward"], res["stage_times"]["backward"]))
    assert "cross-vendor links" in res["notes"] and "\n" not in res["basis"]


def test_the_tolerance_rule_of_the_development_seeds():
    from papers.hetero.devtune import tolerance_from_dev

    assert tolerance_from_dev([0.0215, -0.0196, 0.0514]) == 0.11  # twice 5.14 % = 10.28 %, rounded up
    assert tolerance_from_dev([0.0314]) == 0.07 and tolerance_from_dev([0.03]) == 0.06  # a whole percent stays


def test_devtune_refuses_a_reported_seed_in_one_line_before_running(capsys, tmp_path, monkeypatch):
    from papers.hetero import devtune

    monkeypatch.setenv("REPRO_RESULTS", str(tmp_path))
    monkeypatch.setattr(devtune, "tune_perfmodel", lambda seed: pytest.fail("a reported seed must not run"))
    with pytest.raises(SystemExit) as ex:
        devtune.main(["perfmodel", "--seeds", "0", "100"])
    err = capsys.readouterr().err.strip().splitlines()
    assert ex.value.code == 2 and len(err) == 1 and "reported seed" in err[0] and not any(tmp_path.iterdir())


def test_tuned_points_at_the_development_run_that_set_the_perfmodel_tolerance():
    from papers.hetero import config

    claims = {c.id: c for c in load_claims(Path(__file__).resolve().parents[2] / "papers" / "hetero" / "claims.yaml")}
    spec = config.TUNED["cluster-perfmodel-calibrated"]
    assert spec["result"] == "perfmodel" and "results.tolerance" in spec["show"]
    from common.devseeds import read_result

    rec = read_result("hetero", "perfmodel")   # the development run's record, where it is here
    if rec is not None:
        assert claims["cluster-perfmodel-calibrated"].value == rec["results"]["tolerance"]
