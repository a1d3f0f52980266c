"""workers.spread: pmap's results in task order, from worker processes kept between calls (the runner's shared
kernel runs notebooks 01, 03 and 04 of a seed one after the other: the second and third calls start no process)."""
import math

import pytest

from papers.nlm import workers
from papers.nlm.sweep import binomial_se


def test_spread_returns_the_tasks_results_in_order_and_keeps_its_workers(monkeypatch):
    """The task function is `dict` (dict(**task) is the task back): the workers import no torch, so the two
    start-ups cost a fraction of a second each, and every result tells which task it came from."""
    monkeypatch.setenv("REPRO_THREADS", "2")
    monkeypatch.delenv("REPRO_CLUSTER", raising=False)
    tasks = [dict(fraction=f, n=n) for f, n in ((0.5, 100), (0.1, 9), (0.25, 48), (0.0, 5))]
    assert workers.spread(dict, tasks) == tasks
    ex = workers.pool(2)
    pids = set(ex._processes)
    assert len(pids) == 2
    assert workers.spread(dict, tasks[::-1]) == tasks[::-1]
    assert set(ex._processes) == pids                      # the same two processes: no new start-up
    procs = list(ex._processes.values())
    assert workers.spread(dict, tasks, keep=False) == tasks   # the last call joins its workers (their CPU counted)
    assert all(p.exitcode is not None for p in procs)    # joined, not left to die with the kernel
    fresh = workers.pool(2)                              # and forgotten: the next call gets a new pool,
    assert fresh is not ex and not fresh._processes      # whose workers start at its first task


def test_one_worker_runs_in_process(monkeypatch):
    """One worker: the package's own function, called here (pmap), its value."""
    monkeypatch.setenv("REPRO_THREADS", "1")
    assert workers.spread(binomial_se, [dict(fraction=0.5, n=4), dict(fraction=0.1, n=9)]) == [0.25, pytest.approx(math.sqrt(0.09 / 9))]
