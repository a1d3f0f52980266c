"""The kept pool (`papers.netrecon.pool`): one pool of spawned one-thread workers for every fan-out of a block,
nested blocks included, the same numbers as in process, one task in process as `common.parallel.pmap` runs it, the
workers joined when the outermost block ends (arXiv:2409.04240)."""
import os

import numpy as np
import pytest

from common import spawned
from common.parallel import one_thread
from common.seed import Streams
from papers.netrecon import pool, tasks


def probe(i: int) -> dict:
    """Where a task ran and with how many threads (module level: spawn imports it)."""
    import numpy  # noqa: F401  (its BLAS in the thread report)
    from threadpoolctl import threadpool_info

    return {"i": i, "pid": os.getpid(), "omp": os.environ.get("OMP_NUM_THREADS"),
            "blas": max(x["num_threads"] for x in threadpool_info())}


def test_one_kept_pool_serves_every_fan_out_of_its_block_with_the_same_numbers(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")                       # what a 2-core caller may have
    made = []
    real = spawned.executor
    monkeypatch.setattr(spawned, "executor", lambda n: made.append(n) or real(n))
    jobs = [dict(N=30, g=g, streams=Streams(0), n_traj=1, t_transient=1.0, t_average=2.0) for g in (0.5, 2.0)]
    mixed = [dict(fn="lyapunov_task", kw=j) for j in jobs]               # `dispatch` has a keyword `fn` of its own
    with pool.kept(2):
        first = pool.pmap(probe, [dict(i=i) for i in range(4)], workers=2)
        with pool.kept(2):                                              # a study inside an outer block
            lyap = pool.pmap(tasks.lyapunov_task, jobs, workers=2) + pool.pmap(tasks.dispatch, mixed, workers=2)
            second = pool.pmap(probe, [dict(i=i) for i in range(4, 8)], workers=2)
        alone = pool.pmap(probe, [dict(i=8)], workers=2)                # one task: here, as parallel.pmap runs it
        assert os.environ["OMP_NUM_THREADS"] == "2"                     # one thread only while submitting
        ex = pool.STATE["executor"]
    assert made == [2]                                                  # one pool for every fan-out
    out = first + second
    assert [r["i"] for r in out] == list(range(8))
    assert all(r["pid"] != os.getpid() and r["omp"] == "1" and r["blas"] == 1 for r in out)
    assert alone[0]["pid"] == os.getpid()
    with one_thread():
        here = [tasks.lyapunov_task(**j) for j in jobs] * 2
    for a, b in zip(lyap, here):
        assert a["lam"] == b["lam"] and np.array_equal(a["running"], b["running"])
    assert pool.STATE["executor"] is None and not pool.active()
    with pytest.raises(RuntimeError):                                   # joined with the outermost block
        ex.submit(probe, 9)
    with pytest.raises(RuntimeError):
        pool.submit(probe, 9)                                           # no block, no pool
