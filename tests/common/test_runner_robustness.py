"""Runs that fail cleanly: bad values caught before anything runs, interruptions, stale staging,
a lock per paper and profile, an unwritable results folder, readable result files, provenance."""
import json
import os
import signal
import stat
import time

import pytest

from common import io, paths, profiles, report, reproduce
from common.errors import UserError
from common.runner import cli, execute, lock, params, registry
from common.io import read_json

CMD = ["toy", "--profile", "smoke", "--quiet"]


def run_cli(*args):
    """Exit status of the runner's command line, as the shell sees it."""
    with pytest.raises(SystemExit) as exit_info:
        raise SystemExit(reproduce.main(list(args)))
    return exit_info.value.code


@pytest.mark.parametrize("param,needle", [
    ("seed=abc", "parameter 'seed' must be an integer >= 0, got 'abc'"),
    ("seed=-1", "parameter 'seed' must be an integer >= 0, got -1"),
    ("x=abc", "parameter 'x' must be of type float, got 'abc'"),
    ("fail=maybe", "parameter 'fail' must be of type bool, got 'maybe'"),
    ("run_dir=/tmp/elsewhere", "parameter 'run_dir' is set by the runner; use --results DIR instead"),
    ("profile=quick", "use --profile instead"),
    ("device=quantum", "unknown device"),
])
def test_bad_values_stop_before_anything_runs(toy_repo, in_process, capsys, param, needle):
    assert run_cli(*CMD, "-p", param) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and needle in err[0], err
    assert in_process == []  # no notebook started
    assert not (toy_repo / "results").exists()  # nothing written


@pytest.mark.parametrize("args,needle", [
    (["--seeds", "0", "100"], "seed 100 is a development seed (>= 100), kept for tuning"),
    (["--seeds", "101", "102"], "seeds 101, 102 are development seeds (>= 100)"),
    (["-p", "seed=100"], "seed 100 is a development seed (>= 100)"),
])
def test_development_seeds_are_refused_for_a_reported_run(toy_repo, in_process, capsys, args, needle):
    assert run_cli(*CMD, *args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and needle in err[0], err
    assert in_process == [] and not (toy_repo / "results").exists()
    assert reproduce.main([*CMD, "-p", "seed=99"]) == 0   # the last reported seed runs


def test_preflight_gets_the_resolved_configuration_and_stops_before_anything_runs(toy_repo, in_process, capsys):
    """The paper's `preflight(cfg)` sees `get_config(profile, **its profile's keys among -p)`."""
    assert run_cli(*CMD, "-p", "x=1000") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: x = 1000 needs the toy's large data; run `make data DATASETS=toy`"]
    assert in_process == [] and not (toy_repo / "results").exists()


def test_the_runner_reads_every_notebook_as_nbformat_and_papermill_do():
    """`params.code_cells` reads a notebook as the JSON it is (so that checking or refusing parameters imports no
    notebook stack): every notebook's code cells as nbformat reads them, its parameters (names and inferred types)
    as papermill infers them, its literal defaults among them."""
    import nbformat
    import papermill as pm

    books = sorted(paths.NOTEBOOKS.glob("*/[0-9]*.ipynb")) + sorted((paths.REPO / "templates").rglob("[0-9]*.ipynb"))
    assert len(books) >= 7
    for nb in books:
        cells = nbformat.read(str(nb), as_version=4).cells
        assert params.code_cells(nb) == [(c.source, c.metadata.get("tags", [])) for c in cells if c.cell_type == "code"], nb
        assert params.notebook_parameters(nb) == {k: p["inferred_type_name"] for k, p in pm.inspect_notebook(str(nb)).items()}, nb
        assert set(params.notebook_defaults(nb)) <= set(params.notebook_parameters(nb)), nb


def test_count_parameters_of_every_paper_are_checked_by_name(capsys):
    """A count set negative is refused naming that parameter, before any notebook runs (every built paper)."""
    checked = 0
    for paper in registry.papers():
        profs = registry.config(paper).PROFILES
        declared = {nb: params.notebook_parameters(nb) for nb in registry.notebooks(paper)}
        names = params.accepted_names(paper, declared)
        counts = [k for k in sorted(names) if all(isinstance(p.get(k), int) and not isinstance(p.get(k), bool) and p[k] >= 1
                                                  for p in profs.values())]
        if not counts:
            continue
        with pytest.raises(UserError, match=rf"parameter '{counts[0]}' counts something and must be >= 1.*got -5"):
            params.check_values(paper, "smoke", {counts[0]: -5}, declared)
        params.check_values(paper, "smoke", {counts[0]: 3}, declared)  # a valid count passes
        checked += 1
    assert checked >= 1


def test_check_overrides_types_and_counts():
    profs = {"smoke": {"n": 10, "dt": 0.1, "dims": [1, 2], "k": 0}, "quick": {"n": 100, "dt": 0.01, "dims": [4], "k": 3}}
    profiles.check_overrides(profs, "smoke", {"n": 1, "dt": -1.0, "dims": [3], "k": 0, "other": "anything"})
    with pytest.raises(profiles.UserError, match=r"'n' counts something and must be >= 1 \(the profiles use 10..100\), got 0"):
        profiles.check_overrides(profs, "smoke", {"n": 0})
    with pytest.raises(profiles.UserError, match="'n' must be of type int, got 2.5"):
        profiles.check_overrides(profs, "smoke", {"n": 2.5})
    with pytest.raises(profiles.UserError, match="'dims' must be of type list"):
        profiles.check_overrides(profs, "smoke", {"dims": "x"})


def test_unwritable_results_folder_is_one_line(toy_repo, in_process, capsys, monkeypatch):
    blocker = toy_repo / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("REPRO_RESULTS", str(blocker / "results"))
    assert run_cli(*CMD) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: cannot write results to {blocker / 'results'}") and "--results DIR" in err[0]
    assert in_process == []


def test_results_option_chooses_the_folder(toy_repo, in_process, monkeypatch):
    monkeypatch.delenv("REPRO_RESULTS")
    assert reproduce.main([*CMD, "--results", str(toy_repo / "elsewhere")]) == 0
    assert read_json(toy_repo / "elsewhere" / "toy" / "smoke" / "metrics.json") == {"x": 2.0, "s": 0}


def test_interrupted_run_is_kept_as_failed_and_leaves_no_staging(toy_repo, in_process, monkeypatch, capsys):
    assert reproduce.main(CMD) == 0
    good = paths.run_dir("toy", "smoke")
    before = (good / "metrics.json").read_text()

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(execute, "run_notebook", interrupted)
    assert run_cli(*CMD, "-p", "x=5") == 130
    assert "interrupted" in capsys.readouterr().err
    assert (good / "metrics.json").read_text() == before  # the last complete run is untouched
    failed = good.with_name("smoke-failed")
    assert read_json(failed / "manifest.json")["status"] == "interrupted"
    assert read_json(failed / "manifest.json")["run_dir"] == str(failed)
    assert not list(good.parent.glob(".smoke.staging-*")) and not list(good.parent.glob(".smoke.old-*"))
    report.build()  # the report shows the complete run and flags the later failed attempt
    assert "a later attempt failed" in (paths.results_root() / "report.html").read_text()


def test_sigterm_unwinds_like_ctrl_c():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt):
        with cli.sigterm_as_interrupt():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # interrupted long before
    assert signal.getsignal(signal.SIGTERM) == before


def test_lock_refuses_a_second_run_and_stale_staging_is_swept(toy_repo, in_process, capsys):
    parent = paths.run_dir("toy", "smoke").parent
    stale = [parent / ".smoke.staging-424242", parent / ".smoke.old-424242"]
    for d in stale:
        (d / "notebooks").mkdir(parents=True)
    with lock.run_lock("toy", "smoke"):  # another run of toy at smoke is in progress
        assert run_cli(*CMD) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"another run of toy at profile smoke is in progress (pid {os.getpid()})" in err[0]
        assert all(d.exists() for d in stale)  # never swept from under a live run
        assert not paths.run_dir("toy", "smoke").exists()
    assert reproduce.main(CMD) == 0  # the lock is released; this run sweeps what a killed run left
    assert not any(d.exists() for d in stale)
    assert sorted(p.name for p in parent.iterdir() if p.name != ".smoke.lock") == ["smoke"]


def test_manifest_records_the_final_folder_and_the_rerun_command(toy_repo, in_process):
    assert reproduce.main([*CMD, "-p", "x=0.5"]) == 0
    final = paths.run_dir("toy", "smoke")
    man = read_json(final / "manifest.json")
    assert "staging" not in json.dumps(man)
    assert man["run_dir"] == str(final) and man["notebooks"][0]["parameters"]["run_dir"] == str(final)
    assert man["runner"]["command"] == "python -m common.reproduce toy --profile smoke -p x=0.5"
    assert in_process[0][1]["run_dir"] != str(final)  # the notebook itself wrote into the staging folder


def test_result_files_are_readable_like_any_file(toy_repo, in_process):
    umask = os.umask(0o022)
    os.umask(umask)
    assert io.FILE_MODE == 0o666 & ~umask
    assert reproduce.main(CMD) == 0
    _, page, _ = report.build()
    run = paths.run_dir("toy", "smoke")
    for f in (run / "metrics.json", run / "manifest.json", run / "claims.csv", run / "figures" / "line.png", page):
        assert stat.S_IMODE(f.stat().st_mode) == io.FILE_MODE, f


@pytest.mark.parametrize("error,calls,failed", [
    (RuntimeError("Kernel didn't respond in 60 seconds"), 2, None),          # never came up: one more kernel
    (RuntimeError("Kernel died before replying to kernel_info"), 2, None),
    (RuntimeError("Kernel died"), 1, "RuntimeError: Kernel died"),           # died while running: not retried
    (TimeoutError("Cell execution timed out"), 1, "TimeoutError: Cell execution timed out"),
])
def test_a_kernel_that_never_started_is_started_again_once(tmp_path, monkeypatch, capsys, error, calls, failed):
    import papermill

    seen = []

    def fake(*args, **kwargs):
        seen.append(args)
        if len(seen) == 1:
            raise error

    monkeypatch.setattr(papermill, "execute_notebook", fake)
    nb = tmp_path / "01-x.ipynb"
    if failed is None:
        execute.run_notebook(nb, tmp_path / "out.ipynb", {}, 10, quiet=True)
        assert "01-x.ipynb: the kernel did not start" in capsys.readouterr().err
    else:
        with pytest.raises(execute.NotebookFailed) as info:
            execute.run_notebook(nb, tmp_path / "out.ipynb", {}, 10, quiet=True)
        assert str(info.value) == f"01-x.ipynb: {failed}"
    assert len(seen) == calls


def test_a_kernel_that_never_starts_twice_fails_the_run(tmp_path, monkeypatch):
    import papermill

    def fake(*args, **kwargs):
        raise RuntimeError("Kernel didn't respond in 60 seconds")

    monkeypatch.setattr(papermill, "execute_notebook", fake)
    with pytest.raises(execute.NotebookFailed, match="Kernel didn't respond"):
        execute.run_notebook(tmp_path / "01-x.ipynb", tmp_path / "out.ipynb", {}, 10, quiet=True)


def test_the_retried_messages_are_those_jupyter_client_raises_before_a_kernel_is_ready():
    """The prefixes match what the installed jupyter_client raises while waiting for a new kernel (and only
    there): an upstream rewording would silently turn the retry off."""
    import inspect

    from jupyter_client import client

    ready = inspect.getsource(client.KernelClient._async_wait_for_ready)
    whole = inspect.getsource(client)
    for prefix in execute.KERNEL_START_FAILURES:
        assert prefix in ready and whole.count(prefix) == ready.count(prefix), prefix


def test_a_papers_notebooks_share_one_kernel_with_a_clean_namespace(tmp_path):
    """run_notebooks: one kernel for the sequence (imports paid once), but no notebook sees another's names;
    __main__ keeps its __spec__ (spawn pools read it); each notebook's time is recorded in cost/."""
    from tests.common.conftest import make_notebook

    probe = tmp_path / "probe.txt"
    make_notebook(tmp_path / "01-a.ipynb", params="run_dir = None",
                  body=f"import os, torch, warnings\nleft_behind = 1\nopen({str(probe)!r}, 'a').write(f'{{os.getpid()}} {{torch.get_num_threads()}}\\n')\n"
                       "torch.set_num_threads(torch.get_num_threads() + 1)\nos.environ['LEFT_BEHIND'] = '1'\nwarnings.simplefilter('ignore')")
    make_notebook(tmp_path / "02-b.ipynb", params="run_dir = None",
                  body=f"import os, sys, torch, warnings\nassert 'left_behind' not in dir()\nassert sys.modules['__main__'].__spec__ is None\n"
                       "assert 'LEFT_BEHIND' not in os.environ\nassert not any(f[0] == 'ignore' and f[1] is None and f[2] is Warning for f in warnings.filters)\n"
                       f"open({str(probe)!r}, 'a').write(f'{{os.getpid()}} {{torch.get_num_threads()}}\\n')")
    declared = {tmp_path / "01-a.ipynb": {"run_dir": None}, tmp_path / "02-b.ipynb": {"run_dir": None}}
    executed, failure = execute.run_notebooks("toy", "smoke", {}, declared, None, 120, True, tmp_path / "out")
    assert failure is None, failure
    (pid_a, threads_a), (pid_b, threads_b) = (line.split() for line in probe.read_text().splitlines())
    assert pid_a == pid_b                                             # one kernel
    assert threads_b == threads_a                                     # 01's change of the thread count undone
                                                                      # (a change whatever the count: OMP_NUM_THREADS=1 in make test)
    assert sorted(p.name for p in (tmp_path / "out" / "cost").iterdir()) == ["01-a.json", "02-b.json"]
    assert read_json(tmp_path / "out" / "cost" / "02-b.json")["kernel_start_s"] == 0.0
