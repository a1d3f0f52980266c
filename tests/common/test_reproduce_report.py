"""The runner and the report, end to end on a toy paper (one tiny notebook).

A few runs go through a real papermill kernel (a complete run, a parameter reaching the notebook, a
failing cell, a UserError raised in the kernel); the rest run the notebook in this process (`in_process`).
"""
import re
import subprocess
import sys

import pytest

from common import paths, report, reproduce
from common.runner import execute, params
from common.claims import INCONCLUSIVE, NOT_REPRODUCED, NOT_RUN, REPRODUCED, read_claims_table
from common.io import read_json


def run_cli(*args):
    with pytest.raises(SystemExit) as exit_info:
        reproduce.main(list(args)) and None
        raise SystemExit(0)
    return exit_info.value.code


def test_toy_paper_runs_and_is_judged(toy_repo, capsys):
    assert reproduce.main(["toy", "--profile", "smoke", "--quiet"]) == 0
    out = paths.run_dir("toy", "smoke")
    assert read_json(out / "metrics.json") == {"x": 2.0, "s": 0}
    table = read_claims_table(out / "claims.csv")
    verdicts = dict(zip(table["id"], table["verdict"]))
    # a listed claim whose metric was never measured is not reproduced, never "not run"
    assert verdicts == {"c-pass": REPRODUCED, "c-fail": NOT_REPRODUCED, "c-missing": NOT_REPRODUCED, "c-scale": NOT_RUN,
                        "c-seed": NOT_REPRODUCED}
    assert table.set_index("id").loc["c-missing", "note"].startswith("not measured")
    man = read_json(out / "manifest.json")
    assert man["status"] == "ok" and man["notebooks"][0]["notebook"] == "01-toy.ipynb"
    assert man["notebooks"][0]["parameters"]["profile"] == "smoke"
    assert (out / "notebooks" / "01-toy.ipynb").exists() and (out / "figures" / "line.png").exists()
    assert "1/5 claims reproduced" in capsys.readouterr().out

    # a parameter reaches the notebook
    assert reproduce.main(["toy", "--profile", "smoke", "--quiet", "-p", "x=0.5"]) == 0
    assert read_json(out / "metrics.json") == {"x": 0.5, "s": 0}

    # the report lists the paper with its figure
    md, html, _ = report.build("smoke")
    text = md.read_text()
    assert "toy: 0/5 claims reproduced" in text and "figures/line.png" in text
    assert "<img src='toy/smoke/figures/line.png'" in html.read_text()


def test_failed_run_keeps_previous_complete_run(toy_repo, monkeypatch, in_process_executor):
    kernel = execute.run_notebook
    with monkeypatch.context() as m:   # the complete run in this process; the failing one in a real kernel
        m.setattr(execute, "run_notebook", in_process_executor([]))
        assert reproduce.main(["toy", "--profile", "smoke", "--quiet"]) == 0
    assert execute.run_notebook is kernel
    good = paths.run_dir("toy", "smoke")
    before = (good / "metrics.json").read_text()
    assert reproduce.main(["toy", "--profile", "smoke", "--quiet", "-p", "fail=true", "-p", "x=9"]) == 1
    assert (good / "metrics.json").read_text() == before
    failed = good.with_name("smoke-failed")
    man = read_json(failed / "manifest.json")
    assert man["status"] == "failed"
    # the kernel ran the notebook and its cell failed (not a kernel that never started)
    assert man["notebooks"][0]["error"] == "AssertionError: asked to fail"
    assert not list(good.parent.glob(".smoke.staging-*"))


@pytest.mark.parametrize("args,needle", [
    (["nosuch"], "unknown paper 'nosuch'; choose one of toy, all"),
    (["toy", "--profile", "huge"], "unknown profile 'huge'; choose one of smoke, quick, full"),
    (["toy", "-p", "y=1"], "unknown parameter 'y' for toy; valid: device, fail, seed, x"),
    (["toy", "-p", "run_dir=/tmp"], "set by the runner"),
    (["toy", "-p", "novalue"], "key=value"),
    (["toy", "--device", "quantum"], "unknown device"),
    (["toy", "--profile", "smoke", "--quiet", "-p", "x=-1"], "x must be >= 0; pass -p x=1"),
])
def test_user_errors_are_one_line_exit_2_and_write_nothing(toy_repo, capsys, args, needle):
    assert run_cli(*args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: ") and needle in err[-1]
    assert "Traceback" not in "\n".join(err)
    assert not (toy_repo / "results" / "toy" / "smoke").exists()
    assert not list((toy_repo / "results").glob("toy/.*staging*"))


def test_parse_value_types():
    assert [params.parse_value(v) for v in ("3", "0.5", "1e-3", "true", "None", "[1, 2]", "abc")] == [3, 0.5, 1e-3, True, None, [1, 2], "abc"]


def test_cli_entry_point_exit_code_and_a_refusal_imports_no_notebook_stack():
    """`python -m common.reproduce` with a bad value: exit 2 in one line, and the parameters were read and checked
    without papermill, nbformat or jsonschema (~2 s of imports that only a notebook run needs)."""
    from common.runner.registry import papers

    paper = "diffusion" if "diffusion" in papers() else papers()[0]
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "common.reproduce", paper, "--profile", "smoke",
                           "-p", "seed=abc"], capture_output=True, text=True, cwd=paths.REPO)
    lines = proc.stderr.splitlines()
    err = [line for line in lines if not line.startswith("import time:")]
    assert proc.returncode == 2 and err == ["error: parameter 'seed' must be an integer >= 0, got 'abc'"], err
    imported = {line.rsplit("|", 1)[1].strip().partition(".")[0] for line in lines if line.startswith("import time:")}
    assert "common" in imported and not imported & {"papermill", "nbformat", "nbclient", "jsonschema"}


def test_seeds_run_once_per_seed_with_an_overall_verdict(toy_repo, in_process, capsys):
    assert reproduce.main(["toy", "--profile", "smoke", "--quiet", "--seeds", "0", "1", "2"]) == 0
    out = paths.run_dir("toy", "smoke")
    for k in (0, 1, 2):
        assert read_json(out / f"seed-{k}" / "metrics.json") == {"x": 2.0, "s": k}
        man = read_json(out / f"seed-{k}" / "manifest.json")
        assert man["seed"] == k and man["runner"]["parameters"]["seed"] == k
    table = read_claims_table(out / "claims.csv").set_index("id")
    # c-seed fails at seed 0 and holds at seeds 1 and 2: it flips, so overall it is inconclusive
    assert [table.loc["c-seed", f"verdict_seed_{k}"] for k in (0, 1, 2)] == [NOT_REPRODUCED, REPRODUCED, REPRODUCED]
    assert table.loc["c-seed", "verdict"] == INCONCLUSIVE and "differs between seeds" in table.loc["c-seed", "note"]
    assert table.loc["c-pass", "verdict"] == REPRODUCED and table.loc["c-fail", "verdict"] == NOT_REPRODUCED
    assert read_json(out / "manifest.json")["seeds"] == [0, 1, 2]
    assert (out / "claims.md").read_text().startswith("Seeds 0, 1, 2: 1/5 claims reproduced")
    md, html, _ = report.build("smoke")
    assert "over seeds 0, 1, 2" in md.read_text() and "| seed 2 |" in md.read_text()
    assert "make reproduce-toy PROFILE=smoke SEEDS='0 1 2'" in __import__("html").unescape(html.read_text())
    assert "<img src='toy/smoke/seed-0/figures/line.png'" in html.read_text()


def test_seeds_and_seed_parameter_conflict(toy_repo, capsys):
    assert run_cli("toy", "--profile", "smoke", "--seeds", "0", "1", "-p", "seed=3") == 2
    assert "either as -p seed" in capsys.readouterr().err


def test_report_covers_every_profile_and_reads_on_its_own(toy_repo, in_process, capsys):
    assert reproduce.main(["toy", "--profile", "smoke", "--quiet"]) == 0
    assert reproduce.main(["toy", "--profile", "quick", "--quiet", "-p", "x=0.5"]) == 0
    md, page, entries = report.build()  # no profile given: every profile that has a complete run
    assert [(e["paper"], e["profile"]) for e in entries] == [("toy", "smoke"), ("toy", "quick")]
    text, html = md.read_text(), page.read_text()
    for doc in (text, __import__("html").unescape(html)):
        assert not re.search(r"\bnan\b", doc, re.I)  # a missing value reads "not measured", never nan
        assert "The line from (0, 0) to (1, x)." in doc  # the figure's caption ...
        assert "not measured: 'nope'" in doc and "testable at full" in doc  # ... and why a claim was not measured / not run
        assert "toy/quick/manifest.json" in doc and "toy/smoke/notebooks/01-toy.ipynb" in doc
        assert "make reproduce-toy PROFILE=quick P=x=0.5" in doc  # the command that reruns it
        assert "python -m common.reproduce toy --profile quick -p x=0.5" in doc
    # first screen: one row per paper and profile with the verdict counts, a link to each section
    assert "| [toy](#toy-smoke) | smoke | 1/5 | – | – | 3 | 0 | 1 |" in text and "| [toy](#toy-quick) | quick | 0/5 | – | – | 1 | 0 | 4 |" in text
    assert "<a href='#toy-quick'>toy</a>" in html and "<h2 id='toy-quick'>" in html
    # claim rows: the criterion in numbers, the paper's source, the claims a figure supports as links
    assert "<td>&gt;= 1</td>" in html and "Eq. 1" in html
    assert "Supports: <a href='#toy-smoke-c-pass'>c-pass</a>, <a href='#toy-smoke-c-fail'>c-fail</a>." in html
    # the run's figures, a forest plot per run of its judged claims, and the first screen's verdict chart
    assert html.count("<img ") == 5 and "<img src='toy/quick/figures/line.png'" in html
    assert "<img src='evidence/toy-quick.png'" in html and "<img src='evidence/verdicts.png'" in html
    assert "![evidence: toy (smoke)](evidence/toy-smoke.png)" in text and (md.parent / "evidence" / "toy-smoke.png").exists()

    # a failed quick run keeps the complete one in the report, flagged
    assert reproduce.main(["toy", "--profile", "quick", "--quiet", "-p", "fail=true"]) == 1
    _, page, entries = report.build()
    quick = next(e for e in entries if e["profile"] == "quick")
    assert quick["summary"]["total"] == 5 and quick["manifest"]["parameters"] == {"x": 0.5}
    assert "A later attempt failed or was interrupted" in page.read_text()


def test_report_flags_runs_judged_with_an_older_claims_file(toy_repo, in_process, capsys):
    assert reproduce.main(["toy", "--profile", "smoke", "--quiet"]) == 0
    recorded = read_json(paths.run_dir("toy", "smoke") / "manifest.json")["claims_sha256"]
    assert len(recorded) == 64
    md, page, _ = report.build("smoke")
    assert "has changed since this run" not in md.read_text()
    claims = paths.PAPERS / "toy" / "claims.yaml"
    claims.write_text(claims.read_text().replace("value: 1", "value: 1.5", 1))   # a threshold edited after the run
    md, page, entries = report.build("smoke")
    assert entries[0]["claims_changed"]
    assert "papers/toy/claims.yaml has changed since this run" in md.read_text()
    assert "make reproduce-toy PROFILE=smoke" in md.read_text()
    assert "has changed since this run" in page.read_text()
    assert reproduce.main(["toy", "--profile", "smoke", "--quiet"]) == 0     # rerun: judged with the new file
    md, _, _ = report.build("smoke")
    assert "has changed since this run" not in md.read_text()


def test_report_without_complete_runs_is_one_line(toy_repo, capsys):
    with pytest.raises(SystemExit) as exit_info:
        report.main([])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == 2 and len(err) == 1 and "no complete run under" in err[0] and "make reproduce" in err[0]
    assert not (toy_repo / "results" / "report.html").exists()
