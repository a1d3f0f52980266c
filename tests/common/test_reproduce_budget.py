"""`make budget` (benchmarks/reproduce_budget.py): the figures it writes from a timed `make reproduce`."""
import importlib.util
import json

import pytest

from common import paths
from common.runner import registry

spec = importlib.util.spec_from_file_location("reproduce_budget", paths.REPO / "benchmarks" / "reproduce_budget.py")
budget = importlib.util.module_from_spec(spec)
spec.loader.exec_module(budget)

CSV = ("id,verdict,control_verdict\n"
       "a,reproduced,not reproduced\n"
       "b,inconclusive at this scale,not reproduced\n"
       "c,not reproduced,not reproduced\n")


def _run(root, paper, wall, status="ok"):
    d = root / paper / "quick"
    d.mkdir(parents=True)
    (d / "manifest.json").write_text(json.dumps({"paper": paper, "wall_s": wall, "status": status}))
    (d / "claims.csv").write_text(CSV)


def test_every_paper_complete_sums_their_walls_and_judges_the_total_against_the_budget(tmp_path):
    papers = registry.papers()
    for i, p in enumerate(papers):
        _run(tmp_path, p, 100.0 + i)
    steps = {"data": 3.0, "papers": sum(100.0 + i for i in range(len(papers))) + 12.0, "report": 5.0}
    res = budget.summarize(tmp_path, steps, budget_s=1800)
    assert res["all_papers_complete"] and res["within_budget"]
    assert res["papers_s"] == pytest.approx(sum(100.0 + i for i in range(len(papers))))
    assert res["total_s"] == pytest.approx(res["papers_s"] + 20.0)
    assert res["outside_papers_s"] == pytest.approx(20.0)
    v = res["papers"][papers[0]]["verdicts"]
    assert (v["total"], v["reproduced"], v["inconclusive at this scale"], v["not reproduced"]) == (3, 1, 1, 1)
    # the same runs over a budget one second short of their total
    assert not budget.summarize(tmp_path, steps, budget_s=res["total_s"] - 1)["within_budget"]


def test_a_missing_or_failed_paper_is_never_within_budget(tmp_path):
    first, second, *_ = registry.papers()
    _run(tmp_path, first, 50.0)
    _run(tmp_path, second, 60.0, status="failed")
    res = budget.summarize(tmp_path, {"papers": 120.0}, budget_s=1800)
    assert res["papers"][first]["wall_s"] == 50.0 and res["papers"][second] == {"wall_s": None, "verdicts": None}
    assert not res["all_papers_complete"] and not res["within_budget"]
    assert res["papers_s"] == 50.0 and res["outside_papers_s"] == 70.0


def test_keep_refuses_an_existing_folder_and_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("REPRO_RESULTS", str(tmp_path / "results"))
    assert budget.main(["--keep", str(tmp_path)]) == 2
    assert "exists" in capsys.readouterr().err
    assert not (tmp_path / "results").exists()


ZEN3 = {"model": "AMD EPYC 7B13", "simd": ["avx2"]}
AVX512 = {"model": "Intel(R) Xeon(R) Processor", "simd": ["avx2", "avx512f"]}


def test_the_front_door_goal_is_judged_directly_on_zen3_and_through_the_measured_ratio_elsewhere():
    assert budget.goal(1100.0, ZEN3, None) == {"goal_zen3_s": 1200.0, "budget_zen3_s": 1800.0, "machine_class": "zen3",
                                               "zen3_equivalent_s": [1100.0, 1100.0], "within_goal": True,
                                               "within_budget_zen3": True}
    assert not budget.goal(1201.0, ZEN3, None)["within_goal"]
    assert budget.goal(1201.0, ZEN3, None)["within_budget_zen3"] and not budget.goal(1801.0, ZEN3, None)["within_budget_zen3"]
    speed = {"machine": {"model": AVX512["model"]}, "results": {"ratio_min": 2.0, "ratio_max": 2.5}}
    got = budget.goal(400.0, AVX512, speed)
    assert got["zen3_equivalent_s"] == [800.0, 1000.0] and got["within_goal"]       # judged at the larger ratio
    assert not budget.goal(500.0, AVX512, speed)["within_goal"]                     # 500 x 2.5 = 1250 > 1200
    # the 30-minute budget holds on the slowest class: 1349 s within it here is 3372 s there, over it
    assert not budget.goal(1349.0, AVX512, speed)["within_budget_zen3"] and budget.goal(720.0, AVX512, speed)["within_budget_zen3"]
    assert not budget.goal(1000.0, AVX512, speed, budget_s=2400.0)["within_budget_zen3"]   # 2500 > 2400
    assert budget.goal(900.0, AVX512, speed, budget_s=2400.0)["within_budget_zen3"]        # 2250 <= 2400
    # each paper scaled by its own ratio, the rest (set-up, report, a paper without a ratio) by the range
    per = {"machine": {"model": AVX512["model"]}, "results": {"ratio_min": 1.5, "ratio_max": 2.0,
           "papers": {"a": {"ratio": 2.0}, "b": {"ratio": 1.5}, "c": {"ratio": None}}}}
    got = budget.goal(400.0, AVX512, per, papers={"a": 200.0, "b": 100.0, "c": 60.0})
    assert got["zen3_equivalent_s"] == [550.0 + 1.5 * 100, 550.0 + 2.0 * 100]   # 200 x 2 + 100 x 1.5; 100 s of rest
    assert got["scaled_by_own_ratio"] == ["a", "b"]
    assert budget.goal(640.0, AVX512, per, papers={"a": 440.0, "b": 100.0})["within_goal"] is False   # 880+150+200
    assert budget.goal(600.0, AVX512, per, papers={"a": 440.0, "b": 160.0})["within_goal"] is True    # 880+240
    assert got["within_goal"] is None and "for c:" in got["why"]      # c has no ratio of its own: not judged
    assert budget.goal(600.0, AVX512, per, papers={"a": 440.0, "b": None})["within_goal"] is None   # b did not complete
    # papers that overlapped (JOBS=2: 700 s of walls in 400 s): the whole total at the range, judged at the upper end
    over = budget.goal(400.0, AVX512, per, papers={"a": 400.0, "b": 300.0})
    assert over["zen3_equivalent_s"] == [600.0, 800.0] and over["scaled_by_own_ratio"] == [] and over["within_goal"]
    # a generic model name is not enough: another family/model or core count is another CPU
    other = dict(per, machine={"model": AVX512["model"], "family_model": "6/143", "cpus": 2})
    assert budget.goal(400.0, dict(AVX512, family_model="6/207", cpus=2), other)["within_goal"] is None
    other_cpu = {"machine": {"model": "AMD EPYC 9B14"}, "results": {"ratio_min": 2.0, "ratio_max": 2.5}}
    for s in (None, other_cpu):   # a ratio measured on another CPU model judges nothing here
        got = budget.goal(400.0, AVX512, s)
        assert got["within_goal"] is None and got["within_budget_zen3"] is None and "speed_vs_zen3.py" in got["why"]
