"""The runner and the report, end to end on a toy paper (one tiny notebook)."""
import subprocess
import sys

import pytest

from common import paths, report, reproduce
from common.claims import NOT_REPRODUCED, NOT_RUN, REPRODUCED
from common.io import read_json


def run_cli(*args):
    with pytest.raises(SystemExit) as exit_info:
        reproduce.main(list(args)) and None
        raise SystemExit(0)
    return exit_info.value.code


def test_toy_paper_runs_and_is_judged(toy_repo, capsys):
    assert reproduce.main(["toy", "--profile", "smoke", "--quiet"]) == 0
    out = paths.run_dir("toy", "smoke")
    assert read_json(out / "metrics.json") == {"x": 2.0}
    verdicts = dict(line.split(",")[0:1] + [line.split(",")[-2]] for line in (out / "claims.csv").read_text().splitlines()[1:])
    assert verdicts == {"c-pass": REPRODUCED, "c-fail": NOT_REPRODUCED, "c-missing": NOT_RUN, "c-scale": NOT_RUN}
    man = read_json(out / "manifest.json")
    assert man["status"] == "ok" and man["notebooks"][0]["notebook"] == "01-toy.ipynb"
    assert man["notebooks"][0]["parameters"]["profile"] == "smoke"
    assert (out / "notebooks" / "01-toy.ipynb").exists() and (out / "figures" / "line.png").exists()
    assert "1/4 claims reproduced" in capsys.readouterr().out

    # a parameter reaches the notebook
    assert reproduce.main(["toy", "--profile", "smoke", "--quiet", "-p", "x=0.5"]) == 0
    assert read_json(out / "metrics.json") == {"x": 0.5}

    # the report lists the paper with its figure
    md, html, _ = report.build("smoke")
    text = md.read_text()
    assert "toy: 0/4 claims reproduced" in text and "figures/line.png" in text
    assert "<img src='toy/smoke/figures/line.png'" in html.read_text()


def test_failed_run_keeps_previous_complete_run(toy_repo):
    assert reproduce.main(["toy", "--profile", "smoke", "--quiet"]) == 0
    good = paths.run_dir("toy", "smoke")
    before = (good / "metrics.json").read_text()
    assert reproduce.main(["toy", "--profile", "smoke", "--quiet", "-p", "fail=true", "-p", "x=9"]) == 1
    assert (good / "metrics.json").read_text() == before
    failed = good.with_name("smoke-failed")
    assert read_json(failed / "manifest.json")["status"] == "failed"
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
    assert [reproduce.parse_value(v) for v in ("3", "0.5", "1e-3", "true", "None", "[1, 2]", "abc")] == [3, 0.5, 1e-3, True, None, [1, 2], "abc"]


def test_cli_entry_point_exit_code():
    proc = subprocess.run([sys.executable, "-m", "common.reproduce", "nosuch"], capture_output=True, text=True, cwd=paths.REPO)
    assert proc.returncode == 2 and proc.stderr.startswith("error: unknown paper") and proc.stderr.count("\n") == 1
