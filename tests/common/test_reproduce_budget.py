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
