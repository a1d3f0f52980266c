"""The nlm notebooks take the dataset as a parameter: a smoke run on the thresholded digits."""
import json

import numpy as np


def test_a_run_on_the_thresholded_digits_trains_and_measures_on_them(tmp_path, monkeypatch, in_process, capsys):
    from common.reproduce import main
    from papers.nlm import encoding

    monkeypatch.setenv("REPRO_RESULTS", str(tmp_path))
    assert main(["nlm", "--profile", "smoke", "--quiet", "-p", "dataset=digits_binary"]) == 0, capsys.readouterr().err[-3000:]
    given = {name: (p.get("overrides") or {}).get("dataset", p.get("dataset")) for name, p in in_process}
    # every notebook that trains on the dataset got it (denoising's patterns are fixed: it reads no dataset)
    trains = ["01-training-samples.ipynb", "02-memorization-sweep.ipynb", "03-out-of-equilibrium.ipynb", "04-exploration.ipynb",
              "06-rule-and-spectrum.ipynb"]
    assert {name: given.get(name) for name in trains} == dict.fromkeys(trains, "digits_binary")
    run = tmp_path / "nlm" / "smoke"
    ckpts = sorted(p.name for p in (run / "checkpoints").glob("main-*.pt"))
    assert ckpts and all(n.startswith("main-digits_binary-") for n in ckpts)   # notebook 01 trained on it, 04 and 06 reuse it
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["parameters"]["dataset"] == "digits_binary"          # the profile resolved with it (notebook 06 last)
    metrics = json.loads((run / "metrics.json").read_text())
    assert np.isfinite(metrics["mem_acc_small_p_pcd"]) and np.isfinite(metrics["gen_acc_dev_large_p_pcd"])
    assert encoding.base_name("digits_binary") == "digits"
