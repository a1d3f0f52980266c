"""The device check's slice of acl's full profile, in its CPU dry run: every unit timed, and the projection
is the full profile's step counts (from config.PROFILES["full"]) times the unit times."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import gpu_slice_acl as slice_acl  # noqa: E402

from papers.acl.config import PROFILES  # noqa: E402


def test_counts_are_the_full_profiles_steps():
    from common.profiles import resolve

    cfg = resolve(PROFILES, "full")
    c = slice_acl.full_counts(cfg)
    # 12 autoencoder (issue 42: at least the n of config.FULL_ONLY_N, ae-code-c2st-vs-gmm's 12), 4 classifier, 5 GAN /
    # ACL-GAN replicates (and 5 ACL-GAN without the adversary, gan_null); 30k AE / code steps (the nulls run ACL's at
    # full), 10k classifier, 50k GAN
    assert c == {"ae_step": 12 * 30000, "code_step": (12 + 4 + 5) * 30000, "mmd_step": (12 + 4 + 5) * 30000,
                 "cls_step": 4 * 10000, "cls_dec_step": 4 * 30000, "gan_step": 5 * 50000, "aclgan_step": 2 * 5 * 50000}
    no_refit = slice_acl.full_counts(resolve(PROFILES, "full", code_refit=False))
    assert no_refit["code_step"] == (12 + 4) * 30000 and no_refit["mmd_step"] == (12 + 4) * 30000
    q = resolve(PROFILES, "quick")
    quick = slice_acl.full_counts(q)   # the null's own schedule (null_steps 1000, not ACL's 4000); no classifier, no GAN
    assert q.null_steps == 1000 and q.code_steps == 4000 and q.ae_steps == 500
    assert quick["mmd_step"] == q.replicates * 1000 and quick["ae_step"] == q.replicates * 500
    assert quick["cls_step"] == quick["gan_step"] == quick["aclgan_step"] == 0
    assert slice_acl.projected_hours({"a": 3600, "b": 7200}, {"a": 0.5, "b": 0.25}) == pytest.approx(1.0)


def test_dry_run_times_every_unit_and_projects_from_them():
    out = slice_acl.full_slice("cpu", dry_run=True)
    assert out["ok"] and out["peak_mem_gb"] is None and out["seconds"] > 0
    assert set(out["unit_s"]) == set(slice_acl.UNITS) == set(out["counts"])
    assert all(v > 0 for v in out["unit_s"].values())
    want = sum(out["counts"][k] * out["unit_s"][k] for k in out["counts"]) / 3600
    assert out["projected_gpu_hours"] == pytest.approx(want, rel=1e-12)
    assert f"ae_step {12 * 30000}" in out["basis"] and "dry run" in out["basis"]   # full: 12 autoencoders x 30k steps
