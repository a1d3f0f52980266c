"""The smoke notebooks' code on a CUDA GPU (run with REPRO_TEST_DEVICE=cuda; skipped elsewhere): it runs, the
GPU is really used (training and the long Langevin runs), and the verdicts of the smoke claims, which are
computed on the CPU on any machine (the rule checks, denoising), are the CPU run's."""
import csv

import pytest


def _verdicts(run_dir):
    with open(run_dir / "claims.csv") as f:
        return {r["id"]: r["verdict"] for r in csv.DictReader(f)}


@pytest.mark.cuda
def test_smoke_on_cuda_uses_the_gpu_and_gives_the_cpu_verdicts(tmp_path, monkeypatch, in_process, capsys, gpu_peak):
    from common.reproduce import main

    verdicts = {}
    for device in ("cpu", "cuda"):
        monkeypatch.setenv("REPRO_RESULTS", str(tmp_path / device))
        if device == "cuda":
            gpu_peak.reset()
        assert main(["nlm", "--profile", "smoke", "--quiet", "--device", device]) == 0, capsys.readouterr().err[-3000:]
        verdicts[device] = _verdicts(tmp_path / device / "nlm" / "smoke")
    assert gpu_peak.grew()                  # no silent fallback to the CPU
    assert verdicts["cuda"] == verdicts["cpu"] and verdicts["cpu"]
