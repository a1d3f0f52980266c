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



def test_ahead_runs_tasks_until_stopped_and_collect_gives_exactly_those(monkeypatch):
    """`ahead.start` runs the tasks in one worker, one after the other; `stop` says which ran or run (the first at
    least, none after), `collect` gives exactly their results; nothing started: empty; one CPU: nothing starts."""
    from papers.nlm import ahead

    monkeypatch.setenv("REPRO_THREADS", "2")
    monkeypatch.delenv("REPRO_CLUSTER", raising=False)
    tasks = [dict(fraction=f, n=n) for f, n in ((0.5, 100), (0.1, 9), (0.25, 48), (0.0, 5))]
    assert ahead.start("test", binomial_se, tasks)
    assert not ahead.start("test", binomial_se, tasks)        # already started under that key
    taken = ahead.stop("test")
    assert 0 in taken and taken <= set(range(4))
    got = ahead.collect("test")
    assert set(got) == taken and all(got[i] == binomial_se(**tasks[i]) for i in taken)
    assert ahead.stop("test") == set() and ahead.collect("test") == {}
    assert ahead.start("all", dict, tasks)
    import time
    deadline = time.monotonic() + 120
    while not ahead.finished("all") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ahead.finished("all") and ahead.collect("all") == dict(enumerate(tasks))   # every task ran, by index
    monkeypatch.setenv("REPRO_THREADS", "1")
    assert not ahead.start("test", dict, tasks) and ahead.collect("test") == {}


def test_explored_runs_started_ahead_are_the_runs_made_in_process(monkeypatch, tmp_path):
    """Notebook 04 on the CPU: its models' runs partly started ahead in a low-priority worker (as notebook 01 does,
    `train_ahead`), the rest spread over two workers (`explored_in_workers`), give bit for bit the models, tasks and
    chain states of every model run in this process (`explored_model`)."""
    from types import SimpleNamespace

    import torch

    from common.profiles import configure
    from common.seed import Streams
    from papers.nlm import ahead, config
    from papers.nlm.studies import exploration

    monkeypatch.setenv("REPRO_THREADS", "2")
    monkeypatch.delenv("REPRO_CLUSTER", raising=False)
    cfg = configure(config, "smoke", explore_models=2)
    assert not exploration.train_ahead(cfg, SimpleNamespace(streams=Streams(7), dir=tmp_path, device="cpu"))  # short chains
    run = SimpleNamespace(streams=Streams(7), dir=tmp_path / "ahead", device="cpu")
    assert ahead.start(exploration.ahead_key(cfg, run), exploration.chain_part, exploration.chain_parts(cfg, run, "cpu", 1))
    got = exploration.explored_in_workers(cfg, run, "cpu")
    own = [exploration.explored_model(cfg, run.streams, r, tmp_path / "own", "cpu") for r in range(2)]
    assert len(got) == 2
    for g, o in zip(got, own):
        for key in ("J", "b", "chains"):
            assert torch.equal(g["model"]["state"][key], o["model"]["state"][key])
        assert all(torch.equal(a, b) for a, b in zip(g["states"], o["states"]))
        assert [(t["part"], t["burn"], t["per_window"], t["every"]) for t in g["tasks"]] == \
            [(t["part"], t["burn"], t["per_window"], t["every"]) for t in o["tasks"]]


def test_reversibility_runs_in_workers_are_the_runs_one_after_the_other(monkeypatch):
    """Notebook 06's reversibility runs spread over the kept workers (`thermo.sampler_vs_rate_network`'s `spread`):
    each run starts from the generator state its turn would find (the earlier runs' draws skipped), so every
    estimate and SE is the one of the runs made one after the other, and the generator ends in the same state; the
    workers stay for the next notebook until `release` joins them."""
    import torch

    from papers.nlm import thermo

    monkeypatch.setenv("REPRO_THREADS", "2")
    monkeypatch.delenv("REPRO_CLUSTER", raising=False)
    kw = dict(chains=200, steps=100, burn=60, lag=10)
    g_seq, g_par = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    seq = thermo.sampler_vs_rate_network(generator=g_seq, **kw)
    par = thermo.sampler_vs_rate_network(generator=g_par, spread=workers.spread, **kw)
    assert par == seq and torch.equal(g_seq.get_state(), g_par.get_state())
    ex = workers.pool(2)
    procs = list(ex._processes.values())
    assert len(procs) == 2                                 # the workers ran the runs and are kept
    workers.release()
    assert all(p.exitcode is not None for p in procs) and workers.pool(2) is not ex
    workers.release()


def test_work_ahead_for_notebook_04_starts_only_where_the_runner_runs_04_later_in_this_kernel(monkeypatch, tmp_path):
    """Notebook 01 opened on its own (JupyterLab, or the runner given other notebooks) starts nothing for 04; in the
    runner's kernel with 04 to come, the same call starts 04's runs (`ahead.start`, recorded here, not run)."""
    from types import SimpleNamespace

    from common.profiles import configure
    from common.runner import kernel
    from common.seed import Streams
    from papers.nlm import ahead, config
    from papers.nlm.studies import exploration

    from common import paths

    # the name runs_later is asked about is a real notebook of nlm (renamed, the work ahead would silently stop)
    assert (paths.REPO / "notebooks" / "nlm" / f"{exploration.NOTEBOOK}.ipynb").is_file()
    started = []
    monkeypatch.setattr(ahead, "start", lambda key, fn, tasks: started.append(len(tasks)) or True)
    cfg = configure(config, "smoke", explore_models=2, explore_steps=exploration.PARALLEL_MIN_STEPS)
    run = SimpleNamespace(streams=Streams(7), dir=tmp_path, device="cpu")
    kernel.announce(None)                                                 # not a kernel of the runner
    assert not exploration.train_ahead(cfg, run) and started == []
    kernel.announce(["02-memorization-sweep.ipynb", "03-out-of-equilibrium.ipynb"])
    assert not exploration.train_ahead(cfg, run) and started == []        # the runner runs no 04 after this one
    kernel.announce(["02-memorization-sweep.ipynb", "04-exploration.ipynb"])
    try:
        assert exploration.train_ahead(cfg, run)
        assert started == [len(exploration.chain_parts(cfg, run, "cpu", exploration.notebook01_models(cfg)))] != [0]
    finally:
        kernel.announce(None)
