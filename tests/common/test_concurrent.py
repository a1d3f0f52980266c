"""`reproduce all --jobs N` (common/runner/concurrent.py): each paper in its own runner process, up to N at a
time, the longest first, the papers whose numbers are timings alone after the others."""
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from common.runner import concurrent


def test_a_childs_arguments_are_the_commands_for_one_paper_without_jobs():
    argv = ["all", "--profile", "quick", "--jobs", "2", "-p", "seed=1", "--jobs=3", "--quiet"]
    assert concurrent.child_argv(argv, "nlm") == ["nlm", "--profile", "quick", "-p", "seed=1", "--quiet"]


def test_the_schedule_puts_the_longest_first_and_the_timing_papers_last(monkeypatch):
    walls = {"a": 10.0, "b": 300.0, "c": 0.0, "t": 200.0}
    monkeypatch.setattr(concurrent, "last_wall", lambda p, profile: walls[p])
    monkeypatch.setattr(concurrent, "runs_alone", lambda p: "it times things" if p == "t" else None)
    assert concurrent.schedule(["a", "b", "c", "t"], "quick") == (["b", "a", "c"], ["t"])


class FakeProc:
    """A child that ends after `ticks` polls with `code`, recording how many ran beside it."""
    live: list = []
    peak = 0

    def __init__(self, cmd, code, ticks):
        self.cmd, self.code, self.ticks, self.returncode = cmd, code, ticks, None
        FakeProc.live.append(self)
        FakeProc.peak = max(FakeProc.peak, len(FakeProc.live))

    def poll(self):
        self.ticks -= 1
        if self.ticks <= 0 and self.returncode is None:
            self.returncode = self.code
            FakeProc.live.remove(self)
        return self.returncode


@pytest.fixture
def fake_children(monkeypatch):
    started = []
    codes = {"a": 0, "b": 0, "c": 1, "t": 0}

    def popen(cmd, **kwargs):
        paper = cmd[3]
        started.append((paper, list(FakeProc.live)))
        return FakeProc(cmd, codes[paper], ticks=3 if paper == "b" else 1)

    FakeProc.live, FakeProc.peak = [], 0
    monkeypatch.setattr(concurrent.subprocess, "Popen", popen)
    monkeypatch.setattr(concurrent.time, "sleep", lambda s: None)
    monkeypatch.setattr(concurrent, "schedule", lambda papers, profile: (["b", "a", "c"], ["t"]))
    monkeypatch.setattr(concurrent, "runs_alone", lambda p: "timings" if p == "t" else None)
    return started


def test_at_most_n_children_run_at_once_and_the_alone_paper_starts_when_all_ended(fake_children):
    code = concurrent.run_concurrent(["a", "b", "c", "t"], "quick", ["all", "--jobs", "2"], jobs=2)
    assert code == 1                                  # c failed: reported, the others still ran
    assert [p for p, _ in fake_children] == ["b", "a", "c", "t"]
    assert FakeProc.peak == 2
    assert dict(fake_children)["t"] == []             # nothing else was running when t started


def test_jobs_below_one_is_a_user_error():
    from common import reproduce

    with pytest.raises(SystemExit) as err:
        reproduce.main(["all", "--profile", "smoke", "--jobs", "0"])
    assert err.value.code == 2


def test_a_child_gets_only_the_parameters_its_paper_takes():
    argv = ["all", "-p", "n_paths=5", "--param", "seed=1", "-pg=2", "--param=n_paths=7", "--quiet"]
    assert concurrent.child_argv(argv, "acl", {"seed"}) == ["acl", "--param", "seed=1", "--quiet"]
    assert concurrent.child_argv(argv, "diffusion", {"seed", "n_paths", "g"}) == \
        ["diffusion", "-p", "n_paths=5", "--param", "seed=1", "-pg=2", "--param=n_paths=7", "--quiet"]



def _alive(pid: int) -> bool:
    """A process that exists and is not a zombie (a killed orphan waits for init to reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_stopping_children_ends_their_whole_process_group(tmp_path):
    """A child that ignores SIGTERM and has a grandchild (a kernel's pool worker, say) leaves nothing behind."""
    pids = tmp_path / "pids"
    script = ("import os, signal, subprocess, sys, time\n"
              "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
              "g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
              f"open({str(pids)!r} + '.tmp', 'w').write(f'{{os.getpid()}} {{g.pid}}')\n"
              f"os.replace({str(pids)!r} + '.tmp', {str(pids)!r})\n"
              "time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    deadline = time.monotonic() + 20
    while not pids.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    child, grandchild = map(int, pids.read_text().split())
    assert child == proc.pid and _alive(grandchild)
    concurrent.stop_children([proc], grace=0.5)
    assert proc.returncode == -signal.SIGKILL          # SIGTERM was ignored, so the group was killed
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild), "the grandchild outlived its stopped parent"


def test_a_child_that_obeys_sigterm_ends_without_waiting_for_the_grace():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    started = time.monotonic()
    concurrent.stop_children([proc], grace=30)
    assert proc.returncode == -signal.SIGTERM and time.monotonic() - started < 10
