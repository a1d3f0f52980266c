"""paperid: the estimators by hand, the metric mapping, the smoke run's verdicts, a tiny full-profile run on the
CPU and (marked `cuda`) on a GPU, and the device check's slice in its dry mode. TEMPLATE: keep each kind of test,
cheap (the whole suite must stay under 10 minutes): unit tests of what the study computes, an end-to-end run of
every profile's code at a size a test affords, the device path."""
import math

import pytest
import torch

from common.bench import load_benchmark
from common.claims import REPRODUCED, evaluate, load_claims
from common.paths import PAPERS
from common.study import run_all
from papers.paperid import mc
from papers.paperid.studies import estimate

CLAIMS = load_claims(PAPERS / "paperid" / "claims.yaml")


def test_closed_form_and_log_variance_by_hand():
    assert mc.closed_form(1.0) == pytest.approx(math.e - 1, rel=1e-15)
    assert mc.closed_form(2.0) == pytest.approx((math.exp(2) - 1) / 2, rel=1e-15)
    # y = (-2, 0, 0, 2): variance 2, fourth moment 8, so m4 / s^4 - 1 = 1 and the SE is sqrt(1 / 4)
    log_var, se = mc.log_variance_and_se(torch.tensor([-2.0, 0.0, 0.0, 2.0], dtype=torch.float64))
    assert (log_var, se) == (pytest.approx(math.log(2)), pytest.approx(0.5))


def test_the_variance_ratio_of_a_halved_sample_is_ln_4():
    y = torch.tensor([1.0, 3.0, 2.0, 7.0, 5.0], dtype=torch.float64)
    ratio, se = estimate.log_variance_ratio(y, y / 2)
    assert ratio == pytest.approx(math.log(4)) and se == pytest.approx(math.sqrt(2) * mc.log_variance_and_se(y)[1])


def test_smoke_run_reproduces_both_claims_and_both_controls_fail(tmp_path):
    """The study as its notebook runs it (`common.study.run_all`); every claim judged with its control."""
    metrics = run_all("paperid", "smoke", tmp_path)["estimate"]["metrics"]
    table = evaluate(CLAIMS, metrics, "smoke")
    assert list(table["verdict"]) == [REPRODUCED] * len(CLAIMS), table[["id", "verdict", "note"]].to_string()
    # the agreement's near miss lies at least 2 of its SEs outside the tolerance (its resolution, checked at smoke)
    near = abs(metrics["near_miss_integral"] - metrics["closed_form"]) - 0.01
    assert near > 2 * metrics["near_miss_integral_se"]


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
def test_full_profile_code_at_a_tiny_size_gives_every_claim_a_finite_metric_and_control(tmp_path, device, request):
    peak = request.getfixturevalue("gpu_peak") if device == "cuda" else None
    if peak is not None:
        peak.reset()
    metrics = run_all("paperid", "full", tmp_path, device=device, overrides={"n_draws": 2000})["estimate"]["metrics"]
    assert metrics["n_draws"] == 2000
    for c in CLAIMS:
        assert "full" in c.profiles and math.isfinite(metrics[c.metric]) and math.isfinite(metrics[c.control]), c.id
    if peak is not None:
        assert peak.grew(), "the study took no GPU memory: it did not run on the GPU"


def test_the_gpu_slice_runs_dry_on_the_cpu():
    r = load_benchmark("gpu_slice_paperid").full_slice("cpu", dry_run=True)
    assert r["ok"] is True and r["projected_gpu_hours"] > 0 and "dry run" in r["basis"]
