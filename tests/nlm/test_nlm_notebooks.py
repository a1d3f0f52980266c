"""The nlm notebooks take the dataset as a parameter: a smoke run on the thresholded digits."""
import json

import numpy as np


def test_a_run_on_the_thresholded_digits_trains_and_measures_on_them(tmp_path, monkeypatch, in_process, capsys):
    from common.reproduce import main
    from papers.nlm import encoding

    monkeypatch.setenv("REPRO_RESULTS", str(tmp_path))
    assert main(["nlm", "--profile", "smoke", "--quiet", "-p", "dataset=digits_binary"]) == 0, capsys.readouterr().err[-3000:]
    given = {name: p.get("dataset") for name, p in in_process}
    # every notebook that trains on the dataset declares the parameter and got it; denoising's patterns are fixed
    assert given == {"01-training-samples.ipynb": "digits_binary", "02-memorization-sweep.ipynb": "digits_binary",
                     "03-out-of-equilibrium.ipynb": "digits_binary", "04-exploration.ipynb": "digits_binary",
                     "05-denoising.ipynb": None, "06-rule-and-spectrum.ipynb": "digits_binary"}
    run = tmp_path / "nlm" / "smoke"
    ckpts = sorted(p.name for p in (run / "checkpoints").glob("main-*.pt"))
    assert ckpts and all(n.startswith("main-digits_binary-") for n in ckpts)   # notebook 01 trained on it, 04 and 06 reuse it
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["parameters"]["dataset"] == "digits_binary"          # the profile resolved with it (notebook 06 last)
    metrics = json.loads((run / "metrics.json").read_text())
    assert np.isfinite(metrics["mem_acc_small_p_pcd"]) and np.isfinite(metrics["gen_acc_dev_large_p_pcd"])
    assert encoding.base_name("digits_binary") == "digits"
