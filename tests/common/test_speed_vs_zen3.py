"""benchmarks/speed_vs_zen3.py: the ratio of the reference Zen 3 wall times to this machine's, on the same code."""
import importlib.util
import json

from common import paths

spec = importlib.util.spec_from_file_location("speed_vs_zen3", paths.REPO / "benchmarks" / "speed_vs_zen3.py")
speed = importlib.util.module_from_spec(spec)
spec.loader.exec_module(speed)


def test_ratios_are_zen3_seconds_over_seconds_here(tmp_path):
    for paper, wall, status in (("diffusion", 104.9, "ok"), ("hetero", 160.8, "failed")):
        d = tmp_path / paper / "quick"
        d.mkdir(parents=True)
        (d / "manifest.json").write_text(json.dumps({"wall_s": wall, "status": status}))
    here = {p: speed.wall_of(tmp_path, p) for p in ("diffusion", "hetero", "acl")}
    assert here == {"diffusion": 104.9, "hetero": None, "acl": None}     # a failed or absent run times nothing
    res = speed.ratios(here)
    assert res["papers"]["diffusion"] == {"zen3_s": 209.8, "here_s": 104.9, "ratio": 2.0}
    assert res["ratio_min"] == res["ratio_max"] == 2.0


def test_from_runs_names_a_missing_folder_in_one_line(tmp_path, capsys):
    assert speed.main(["--from-runs", str(tmp_path / "absent")]) == 2
    assert "absent" in capsys.readouterr().err
