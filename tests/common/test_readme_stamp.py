"""Generated README blocks, their revision stamp, and re-judging a run with an edited claims file."""
import json
import subprocess

import pytest

from common import paths, readme, reproduce, stamp
from common.runner import execute as runner_execute
from common.claims import NOT_REPRODUCED, REPRODUCED, read_claims_table
from common.io import read_json

README = """# Toy

Prose stays.

<!-- generated: claims smoke -->
typed by hand: x = 3
<!-- /generated -->

<!-- generated: metrics smoke x s -->
<!-- /generated -->

<!-- generated: claims full -->
kept: no full run
<!-- /generated -->
"""


def test_readme_blocks_come_from_the_run(toy_repo, in_process, monkeypatch, capsys):
    from common import runs

    monkeypatch.setattr(stamp, "changed_since", lambda sha, paper, specs=None: [])
    monkeypatch.setattr(runs, "git_state", lambda: {"sha": "a1b2c3d4e5f6a7b8", "dirty": False, "dirty_files": []})
    (paths.PAPERS / "toy" / "README.md").write_text(README)
    assert reproduce.main(["toy", "--profile", "smoke", "--quiet", "-p", "x=2.5"]) == 0
    assert readme.main(["toy", "--check"]) == 1                                   # the blocks would change
    assert readme.main(["toy"]) == 0
    text = (paths.PAPERS / "toy" / "README.md").read_text()
    assert "typed by hand" not in text and "Prose stays." in text
    assert "kept: no full run" in text                                            # no run: the block is kept
    assert read_json(paths.run_dir("toy", "smoke") / "manifest.json")["git"]["sha"] == "a1b2c3d4e5f6a7b8"
    assert "git a1b2c3d4e5f6, claims.yaml sha256 " in text
    assert "| `c-pass`: x is at least 1 | >= 1 | 2.5 | uncontrolled: no control named in claims.yaml | **reproduced** |" in text
    assert "| `x` | 2.5 |" in text and "| `s` | 0 |" in text
    assert "**Stale:**" not in text
    assert readme.main(["toy", "--check"]) == 0                                   # idempotent, and fresh
    # a claims file edited after the run marks the block stale, with the command that re-judges it
    claims = paths.PAPERS / "toy" / "claims.yaml"
    claims.write_text(claims.read_text().replace("value: 1,", "value: 1.5,", 1))
    assert readme.main(["toy"]) == 0
    text = (paths.PAPERS / "toy" / "README.md").read_text()
    assert "**Stale:** papers/toy/claims.yaml has changed since this run" in text and "--rejudge" in text


def test_code_changed_after_the_run_is_stale(toy_repo, monkeypatch):
    monkeypatch.setattr(stamp, "changed_since", lambda sha, paper, specs=None: (["papers/toy/model.py"] if not specs else []) if sha else None)
    why = stamp.staleness({"git": {"sha": "abc", "dirty": False, "dirty_files": []}}, "toy")
    assert why == ["the code changed after the run in 1 file (papers/toy/model.py): rerun it"]
    why = stamp.staleness({"git": {"sha": "abc", "dirty": True, "dirty_files": ["papers/other/x.py", "papers/toy/README.md",
                                                                                "common/runs.py", "common/report.py"]}}, "toy")
    assert why[0] == "the run had uncommitted changes in 1 of its code files (common/runs.py)"
    assert stamp.staleness({}, "toy") == ["the run's revision is unknown here, so its code cannot be compared with this checkout"]


def _repo(tmp_path, files, contents=None):
    """A git repository in tmp_path holding `files` (each "1\n" unless `contents` says) in one commit;
    returns that commit's sha."""
    def git(*args):
        subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    for f in files:
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text((contents or {}).get(f, "1\n"))
    git("add", ".")
    git("commit", "-q", "-m", "one")
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True).stdout.strip(), git


def test_changed_since_reads_git_over_the_papers_code_only(tmp_path, monkeypatch):
    sha, _ = _repo(tmp_path, ("papers/toy/model.py", "papers/toy/README.md", "papers/toy/claims.yaml",
                              "papers/other/model.py", "common/x.py", "common/unused.py"),
                   {"papers/toy/model.py": "from common import x\n"})
    monkeypatch.setattr(paths, "REPO", tmp_path)
    monkeypatch.setattr(paths, "PAPERS", tmp_path / "papers")
    monkeypatch.setattr(paths, "NOTEBOOKS", tmp_path / "notebooks")
    assert stamp.changed_since(sha, "toy") == []
    for f in ("papers/toy/README.md", "papers/toy/claims.yaml", "papers/other/model.py"):
        (tmp_path / f).write_text("2\n")                                            # prose, claims, another paper
    assert stamp.changed_since(sha, "toy") == []
    (tmp_path / "common/unused.py").write_text("2\n")                     # a common module toy never imports
    assert stamp.changed_since(sha, "toy") == []
    (tmp_path / "common/x.py").write_text("2\n")
    (tmp_path / "papers/toy/model.py").write_text("from common import x  # 2\n")
    assert stamp.changed_since(sha, "toy") == ["common/x.py", "papers/toy/model.py"]
    assert stamp.changed_since("0" * 40, "toy") is None and stamp.changed_since(None, "toy") is None


def test_rejudge_applies_the_current_claims_file_without_running(toy_repo, in_process, monkeypatch, capsys):
    assert reproduce.main(["toy", "--profile", "smoke", "--quiet", "--seeds", "1", "2"]) == 0
    final = paths.run_dir("toy", "smoke")
    assert set(read_claims_table(final / "claims.csv").set_index("id")["verdict"].items()) >= {("c-pass", REPRODUCED)}
    claims = paths.PAPERS / "toy" / "claims.yaml"
    # give c-pass a control: first one that was never logged, then the seed (1 and 2: passes x >= 1 too)
    claims.write_text(claims.read_text().replace("value: 1, profiles: [smoke, quick]}",
                                                 "value: 1, profiles: [smoke, quick], control: x_null, control_is: 'nothing'}", 1))
    monkeypatch.setattr(runner_execute, "run_notebooks", lambda *a, **k: (_ for _ in ()).throw(AssertionError("ran a notebook")))
    assert reproduce.main(["toy", "--profile", "smoke", "--rejudge"]) == 0
    assert read_claims_table(final / "claims.csv").set_index("id").loc["c-pass", "verdict"] == NOT_REPRODUCED
    for d in (final / "seed-1", final / "seed-2"):
        row = read_claims_table(d / "claims.csv").set_index("id").loc["c-pass"]
        assert row["verdict"] == NOT_REPRODUCED and row["note"] == "not measured: control 'x_null'"
    assert read_json(final / "manifest.json")["claims_sha256"] == stamp.sha256_file(claims)
    assert read_json(final / "seed-1" / "manifest.json")["rejudged"]["at"]
    claims.write_text(claims.read_text().replace("control: x_null", "control: s"))
    assert reproduce.main(["toy", "--profile", "smoke", "--rejudge"]) == 0
    row = read_claims_table(final / "claims.csv").set_index("id").loc["c-pass"]
    assert row["verdict"] == "inconclusive at this scale" and row["control_verdict"] == REPRODUCED
    # nothing to re-judge: one line, exit 2
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        reproduce.main(["toy", "--profile", "quick", "--rejudge"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no complete quick run of toy" in err[0]


def test_presentation_and_judging_code_do_not_stale_the_numbers(tmp_path, monkeypatch):
    sha, git = _repo(tmp_path, ("common/report.py", "common/claims.py", "common/parallel.py", "papers/toy/devtune.py",
                                "papers/toy/model.py"), {"papers/toy/model.py": "from common.parallel import pmap\n"})
    monkeypatch.setattr(paths, "REPO", tmp_path)
    monkeypatch.setattr(paths, "PAPERS", tmp_path / "papers")
    (tmp_path / "common/report.py").write_text("2\n")
    (tmp_path / "papers/toy/devtune.py").write_text("2\n")            # the development-seed tuner: no notebook runs it
    assert stamp.staleness({"git": {"sha": sha, "dirty": False, "dirty_files": ["papers/toy/devtune.py"]}}, "toy") == []
    (tmp_path / "common/claims.py").write_text("2\n")                   # verdicts, not numbers: re-judge
    why = stamp.staleness({"git": {"sha": sha, "dirty": False, "dirty_files": []}, "profile": "quick"}, "toy")
    assert len(why) == 1 and why[0].startswith("the judging code (common/claims.py) changed") and "--rejudge" in why[0]
    git("commit", "-qam", "two")
    now = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True).stdout.strip()
    assert stamp.staleness({"git": {"sha": sha, "dirty": False, "dirty_files": []}, "rejudged": {"git": now}}, "toy") == []
    (tmp_path / "common/parallel.py").write_text("2\n")                 # numbers: rerun
    why = stamp.staleness({"git": {"sha": sha, "dirty": False, "dirty_files": []}, "rejudged": {"git": now}}, "toy")
    assert why == ["the code changed after the run in 1 file (common/parallel.py): rerun it"]


def test_overview_keeps_a_paper_row_without_a_run_here_and_flags_it_when_its_code_changed(toy_repo, monkeypatch):
    # toy has no run in this results folder: its old row stays, with its stamp; a changed code base since
    # the stamped revision is flagged, and the total names only the papers run here (none here)
    monkeypatch.setattr(readme, "changed_since", lambda sha, paper, specs=None: ["papers/toy/model.py"] if sha == "abc1234" else [])
    row = "| [Toy](https://x) | `toy` | 3/4 reproduced | 0 | 1 | 0 | 0 | 0 | 0, 1, 2 | 10–12 s | git abc1234, claims.yaml sha256 00, finished t |"
    old = f"<!-- generated: overview smoke -->\n| paper | id |\n{row}\n<!-- /generated -->"
    lines = readme.overview_block("smoke", old)
    wide = row.replace("3/4 reproduced | 0 |", "3/4 reproduced | – | – | 0 |")   # a row from before the phenomena column
    assert wide in lines
    assert "- `toy`: **stale:** the code changed after that run in 1 file (papers/toy/model.py): rerun it." in lines
    assert any(line.startswith("- Rows kept from the previous text") and "`toy`" in line for line in lines)
    assert not any(line.startswith("| all ") for line in lines)
    fresh = readme.overview_block("smoke", old.replace("abc1234", "def5678"))
    assert wide.replace("abc1234", "def5678") in fresh and not any("**stale:**" in line for line in fresh)
    # never a row for a paper that had none: "no complete run" rows are not carried as kept rows
    none = readme.overview_block("smoke", old.replace("3/4 reproduced", "no complete run"))
    assert not any("Rows kept" in line for line in none)
    assert any("`toy` | no complete run" in line for line in none)


def test_a_kept_block_says_when_its_code_or_claims_changed_and_the_note_is_not_repeated(toy_repo, monkeypatch):
    from common.io import sha256_file

    monkeypatch.setattr(readme, "changed_since", lambda sha, paper, specs=None: ["papers/toy/model.py"] if sha == "abc1234" else [])
    good = sha256_file(paths.PAPERS / "toy" / "claims.yaml")[:12]
    body = f"*Generated by `make readme` from `results/toy/quick/` (git abc1234, claims.yaml sha256 {good}). Do not edit.*\n\n| x |\n"
    once = readme.kept_body(body, "toy")
    assert once.splitlines()[1] == (f"{readme.KEPT_STALE} no run of this block in this `results/`; the code changed after "
                                    "that run in 1 file (papers/toy/model.py): rerun it.")
    assert readme.kept_body(once, "toy") == once                                  # idempotent
    fresh = body.replace("abc1234", "def5678")
    assert readme.kept_body(fresh, "toy") == fresh                                # nothing changed: no note
    assert readme.kept_body(once.replace("abc1234", "def5678"), "toy") == fresh    # a note that no longer holds goes
    other = fresh.replace(good, "0" * 12)
    assert "claims.yaml is not the one it was judged with" in readme.kept_body(other, "toy")
    assert readme.kept_body("typed by hand\n", "toy") == "typed by hand\n"       # no stamp: kept as it is


def test_a_kept_decidability_block_says_when_the_claims_changed_after_its_check(toy_repo, monkeypatch):
    # its stamp names the development run "run at git <sha>" and records no claims hash: the claims file is compared
    # between that revision and now (a claim added to the profile after the check is not in its table)
    monkeypatch.setattr(readme, "changed_since",
                        lambda sha, paper, specs=None: (["papers/toy/claims.yaml"] if specs else []) if sha == "abc1234" else [])
    body = ("*Generated by `make readme` from `results/toy/dev/decidability-quick.json` (development seeds 100, run at "
            "git abc1234, finished 2026-12-06T20:52:25+00:00; checked at git abc1234, finished 2026-12-06T20:52:26+00:00). "
            "Do not edit by hand.*\n\n12 of 12 claims listed at quick pass every check on development seeds.\n")
    once = readme.kept_body(body, "toy")
    assert once.splitlines()[1] == (f"{readme.KEPT_STALE} no run of this block in this `results/`; papers/toy/claims.yaml "
                                    "is not the one it was judged with: rerun it.")
    assert readme.kept_body(once, "toy") == once
    same = body.replace("abc1234", "def5678")
    assert readme.kept_body(same, "toy") == same                                  # claims and code as then: no note


def test_bench_block_shows_the_benchmark_figures_with_their_stamp_and_is_kept_without_one(toy_repo, monkeypatch):
    from common.io import atomic_write_json

    monkeypatch.setattr(readme, "changed_since", lambda sha, paper, specs=None: [])
    text = "# Toy\n\n<!-- generated: bench toy a.t b.n -->\nkept: no bench\n<!-- /generated -->\n"
    (paths.PAPERS / "toy" / "README.md").write_text(text)
    assert readme.main(["toy"]) == 0                                              # no results/bench/toy.json: kept
    assert "kept: no bench" in (paths.PAPERS / "toy" / "README.md").read_text()
    atomic_write_json(paths.results_root() / "bench" / "toy.json",
                      {"name": "toy", "when": "2026-12-02T04:00:00+00:00", "git": {"sha": "0123456789abcdef", "dirty": False},
                       "results": {"load_average_before": [0.5, 0.25, 0.125], "a": {"t": {"median": 0.25, "min": 0.125, "max": 0.5}},
                                   "b": {"n": 3}}})
    assert readme.main(["toy"]) == 0
    out = (paths.PAPERS / "toy" / "README.md").read_text()
    assert "kept: no bench" not in out
    assert ("(git 0123456789ab, finished 2026-12-02T04:00:00+00:00; machine not recorded; load average before 0.50, 0.25, "
            "0.12, after not recorded)") in out
    assert "| `a.t` | 0.25 (0.125–0.5) |" in out and "| `b.n` | 3 |" in out and "**Stale:**" not in out
    bench = json.loads((paths.results_root() / "bench" / "toy.json").read_text())
    bench["machine"] = {"cpus": 2, "model": "AMD EPYC", "family_model": "25/1", "simd": ["avx2"]}
    atomic_write_json(paths.results_root() / "bench" / "toy.json", bench)
    assert readme.main(["toy"]) == 0                                              # the CPU the timing was taken on
    assert "finished 2026-12-02T04:00:00+00:00; 2 CPUs, AMD EPYC (25/1; avx2); load average" in (paths.PAPERS / "toy" / "README.md").read_text()
    monkeypatch.setattr(readme, "changed_since", lambda sha, paper, specs=None: ["papers/toy/model.py"])
    assert readme.main(["toy"]) == 0
    assert "**Stale:** the code changed after this benchmark in papers/toy/model.py" in (paths.PAPERS / "toy" / "README.md").read_text()


def test_common_files_are_the_modules_a_paper_or_the_runner_reaches(tmp_path, monkeypatch):
    """A common module counts for a paper when its package, its notebooks or the runner import it, directly
    or through other common modules; one that none of them reaches cannot change its numbers."""
    import json

    files = {"common/__init__.py": "", "common/reproduce.py": "from . import runs\n", "common/runs.py": "from .io import w\n",
             "common/io.py": "x = 1\n", "common/fast.py": "import common.deep\n", "common/deep.py": "y = 2\n",
             "common/other.py": "z = 3\n", "papers/toy/model.py": "import numpy\n", "papers/b/model.py": "from common import fast\n"}
    for f, text in files.items():
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text(text)
    (tmp_path / "notebooks/toy").mkdir(parents=True)
    cell = {"cell_type": "code", "metadata": {}, "source": ["%matplotlib inline\n", "from common.other import z\n"]}
    (tmp_path / "notebooks/toy/01.ipynb").write_text(json.dumps({"cells": [cell]}))
    monkeypatch.setattr(paths, "REPO", tmp_path)
    monkeypatch.setattr(paths, "PAPERS", tmp_path / "papers")
    monkeypatch.setattr(paths, "NOTEBOOKS", tmp_path / "notebooks")
    runner = ["common/__init__.py", "common/io.py", "common/reproduce.py", "common/runs.py"]
    assert stamp.common_files("toy") == sorted(runner + ["common/other.py"])                 # notebook import (magic dropped)
    assert stamp.common_files("b") == sorted(runner + ["common/deep.py", "common/fast.py"])  # transitively
    assert "common/fast.py" not in stamp.code_paths("toy") and "common/fast.py" in stamp.code_paths("b")
    assert stamp.numbers_file("common/fast.py", "b") and not stamp.numbers_file("common/fast.py", "toy")
    (tmp_path / "papers/toy/broken.py").write_text("def (:\n")                            # cannot tell: every file counts
    assert stamp.common_files("toy") == sorted(runner + ["common/deep.py", "common/fast.py", "common/other.py"])


def test_common_files_follow_imports_into_and_out_of_subpackages(tmp_path, monkeypatch):
    """Relative imports inside a package of `common` resolve against that package (`from .. import x`,
    `from .y import z`), so a module split into a package keeps its imports counted."""
    files = {"common/__init__.py": "", "common/reproduce.py": "from .runner.cli import main\n",
             "common/runner/__init__.py": "", "common/runner/cli.py": "from . import judge\nfrom .. import runs\n",
             "common/runner/judge.py": "from ..claims import j\n", "common/runs.py": "x = 1\n",
             "common/claims.py": "y = 2\n", "common/other.py": "z = 3\n", "papers/toy/model.py": "import numpy\n"}
    for f, text in files.items():
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text(text)
    (tmp_path / "notebooks/toy").mkdir(parents=True)
    monkeypatch.setattr(paths, "REPO", tmp_path)
    monkeypatch.setattr(paths, "PAPERS", tmp_path / "papers")
    monkeypatch.setattr(paths, "NOTEBOOKS", tmp_path / "notebooks")
    assert stamp.common_files("toy") == sorted(["common/__init__.py", "common/claims.py", "common/reproduce.py",
                                                "common/runner/__init__.py", "common/runner/cli.py",
                                                "common/runner/judge.py", "common/runs.py"])


def test_the_kinds_of_file_are_named_by_folder_or_prefix_so_a_split_keeps_its_kind():
    """A module split into a package (or into several modules of the same prefix) stays what it was."""
    for f in ("common/runner/cli.py", "common/runner/staging/lock.py", "common/report.py", "common/report/html.py",
              "common/readme_blocks.py", "common/stamp.py", "common/reproduce.py"):
        assert not stamp.numbers_file(f, "toy", common=[f]), f
    for f in ("common/claims.py", "common/claims/seeds.py", "papers/toy/devtune.py", "papers/toy/devtune/fold.py",
              "papers/toy/investigations.py", "papers/toy/devtune_runs.py", "common/devseeds.py",
              "papers/toy/claims.yaml", "papers/toy/README.md"):
        assert not stamp.numbers_file(f, "toy", common=[f]), f
    for f in ("common/runs.py", "common/profiles.py", "papers/toy/studies/regimes.py", "notebooks/toy/01-a.ipynb"):
        assert stamp.numbers_file(f, "toy", common=[f]), f


def test_benchrows_block_shows_one_row_per_entry(toy_repo, monkeypatch):
    from common.io import atomic_write_json

    monkeypatch.setattr(readme, "changed_since", lambda sha, paper, specs=None: [])
    text = "# Toy\n\n<!-- generated: benchrows cost papers hours cmd -->\nkept\n<!-- /generated -->\n"
    (paths.PAPERS / "toy" / "README.md").write_text(text)
    atomic_write_json(paths.results_root() / "bench" / "cost.json",
                      {"name": "cost", "when": "t", "git": {"sha": "0123456789abcdef", "dirty": False},
                       "results": {"papers": {"a": {"hours": 1.5, "cmd": "make x | y"}, "b": {"hours": 0.25}}}})
    assert readme.main(["toy"]) == 0
    out = (paths.PAPERS / "toy" / "README.md").read_text()
    assert "| papers | `hours` | `cmd` |\n|---|---|---|\n| `a` | 1.5 | make x \\| y |\n| `b` | 0.25 | – |" in out


def test_tuned_block_shows_each_setting_chosen_on_development_seeds_with_the_figures_that_chose_it(toy_repo, monkeypatch):
    """`config.TUNED` names the development run behind a setting; the block shows the setting in every
    profile, the run's seeds and figures, and flags the run when the code changed after it."""
    import types

    from common import devseeds
    from common.runner import registry

    cfg = types.SimpleNamespace(
        PROFILES={"smoke": {"window": [0.1, 0.2]}, "quick": {"window": [0.2, 0.4]}, "full": {"window": [0.2, 0.4]}},
        TUNED={"window": {"result": "fold", "show": ["results.gap.w24", "results.gap.w12"], "why": "the smallest gap | ties"}})
    monkeypatch.setattr(registry, "config", lambda paper: cfg)
    monkeypatch.setattr(readme, "changed_since", lambda sha, paper, specs=None: [])
    text = "# Toy\n\n<!-- generated: tuned -->\nkept\n<!-- /generated -->\n"
    (paths.PAPERS / "toy" / "README.md").write_text(text)
    assert readme.main(["toy"]) == 0                                              # no development run here: kept
    assert "kept" in (paths.PAPERS / "toy" / "README.md").read_text()
    with pytest.raises(Exception, match="reported seed"):
        devseeds.run_seeds("toy", "fold", [0, 100], lambda seed: {})                # a reported seed never tunes
    monkeypatch.setattr("common.runs.git_state", lambda: {"sha": "0123456789abcdef", "dirty": False})
    devseeds.run_seeds("toy", "fold", [100, 101], lambda seed: {"w24": 0.125 * (seed - 99)},
                       summarise=lambda res: {"gap": {"w24": res["100"]["w24"], "w12": 0.5}})
    assert readme.main(["toy"]) == 0
    out = (paths.PAPERS / "toy" / "README.md").read_text()
    assert ("| `window` | `[0.1, 0.2]` | `[0.2, 0.4]` | `[0.2, 0.4]` | `python -m papers.toy.devtune fold` | 100, 101 | "
            "`results.gap.w24` = 0.125; `results.gap.w12` = 0.5 | the smallest gap \\| ties |") in out
    assert "- `results/toy/dev/fold.json`: git 0123456789ab, finished" in out and "Stale" not in out
    from common.machine import describe_machine, machine
    assert devseeds.read_result("toy", "fold")["machine"] == machine()             # the CPU a tuning ran on, stamped
    assert f"; {describe_machine(machine())}." in out
    cfg.TUNED["c-pass"] = {"result": "fold", "show": ["results.gap.w24"], "why": "a claim's criterion"}
    assert readme.main(["toy"]) == 0                              # keyed by a claim: its criterion where it is judged
    assert "| claim `c-pass` (its criterion) | `1` | `1` | – | `python -m papers.toy.devtune fold` |" in \
        (paths.PAPERS / "toy" / "README.md").read_text()
    del cfg.TUNED["c-pass"]
    monkeypatch.setattr(readme, "changed_since", lambda sha, paper, specs=None: ["papers/toy/model.py"])
    assert readme.main(["toy"]) == 0
    assert ("**Stale:** the code changed after this development run in papers/toy/model.py: rerun "
            "`python -m papers.toy.devtune fold`") in (paths.PAPERS / "toy" / "README.md").read_text()
    cfg.TUNED = {}
    assert readme.main(["toy"]) == 0
    assert "No setting of this paper was chosen on development seeds." in (paths.PAPERS / "toy" / "README.md").read_text()


def test_development_and_reported_seeds_are_kept_apart():
    from common import devseeds
    from common.errors import UserError

    assert devseeds.is_development(100) and not devseeds.is_development(99)
    devseeds.require_reported([0, 1, 2, 99])
    devseeds.require_development([100, 101, 102])
    with pytest.raises(UserError, match="development seed"):
        devseeds.require_reported([2, 100])
    with pytest.raises(UserError, match="reported seeds"):
        devseeds.require_development([1, 2, 100])


def test_documentation_modules_never_make_a_run_stale():
    from common.stamp import numbers_file

    assert numbers_file("papers/acl/acl.py", "acl", common=[])
    assert not numbers_file("papers/acl/cost.py", "acl", common=[])           # the full profile's cost model
    assert not numbers_file("papers/acl/describe.py", "acl", common=[])       # what each profile key means
    assert not numbers_file("papers/acl/devtune.py", "acl", common=[])


def test_a_notebook_whose_code_cells_are_unchanged_does_not_make_a_run_stale(tmp_path, monkeypatch):
    def nb(code: str, cell_id: str = "", markdown: str = "# t") -> str:
        cell = {"cell_type": "code", "metadata": {}, "source": code, "outputs": [], "execution_count": None}
        if cell_id:
            cell["id"] = cell_id
        return json.dumps({"cells": [{"cell_type": "markdown", "metadata": {}, "source": markdown}, cell],
                           "metadata": {}, "nbformat": 4, "nbformat_minor": 5})

    sha, _ = _repo(tmp_path, ("papers/toy/model.py", "notebooks/toy/01-a.ipynb"),
                   {"notebooks/toy/01-a.ipynb": nb("x = 1\n%matplotlib inline")})
    monkeypatch.setattr(paths, "REPO", tmp_path)
    monkeypatch.setattr(paths, "PAPERS", tmp_path / "papers")
    monkeypatch.setattr(paths, "NOTEBOOKS", tmp_path / "notebooks")
    path = tmp_path / "notebooks/toy/01-a.ipynb"
    path.write_text(nb("x = 1\n%matplotlib widget", cell_id="c1", markdown="# other"))   # ids, prose, a magic line
    assert stamp.changed_since(sha, "toy") == []
    path.write_text(nb("x = 2", cell_id="c1"))
    assert stamp.changed_since(sha, "toy") == ["notebooks/toy/01-a.ipynb"]
