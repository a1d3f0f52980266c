"""workers.spread: pmap's results in task order, from worker processes kept between calls (the runner's shared
kernel runs notebooks 01, 03 and 04 of a seed one after the other: the second and third calls start no process)."""
import math

import pytest

from papers.nlm import workers
from papers.nlm.sweep import binomial_se


def test_spread_returns_the_tasks_results_in_order_and_keeps_its_workers(monkeypatch):
    monkeypatch.setenv("REPRO_THREADS", "2")
    monkeypatch.delenv("REPRO_CLUSTER", raising=False)
    tasks = [dict(fraction=f, n=n) for f, n in ((0.5, 100), (0.1, 9), (0.25, 48), (0.0, 5))]
    first = workers.spread(binomial_se, tasks)
    assert first == [binomial_se(**t) for t in tasks] and first[1] == pytest.approx(math.sqrt(0.09 / 9))
    ex = workers.pool(2)
    pids = set(ex._processes)
    assert len(pids) == 2
    assert workers.spread(binomial_se, tasks[::-1]) == first[::-1]
    assert set(ex._processes) == pids                      # the same two processes: no new start-up
    procs = list(ex._processes.values())
    assert workers.spread(binomial_se, tasks, keep=False) == first   # the last call joins its workers (their CPU counted)
    assert all(p.exitcode is not None for p in procs)    # joined, not left to die with the kernel
    fresh = workers.pool(2)                              # and forgotten: the next call starts a new pool
    assert fresh is not ex
    assert workers.spread(binomial_se, tasks, keep=False) == first


def test_one_worker_runs_in_process(monkeypatch):
    monkeypatch.setenv("REPRO_THREADS", "1")
    assert workers.spread(binomial_se, [dict(fraction=0.5, n=4)]) == [0.25]
