"""The spawned one-thread pool (`common.spawned`): results in task order on one worker or two, one thread in every
worker whatever the caller's environment, the caller's environment left as it was, a kernel's reset namespace
mended, and a worker's stream keys recorded in the caller's streams."""
import os
import sys

import pytest

from common import spawned
from common.seed import Streams
from common.threads import THREAD_VARS


def worker_probe(i: int, key: str) -> dict:
    """What a worker sees: its thread counts, and a draw from a keyed stream (module level: spawn imports it)."""
    import torch

    streams = Streams(7)
    value = float(streams.rng("task", key).standard_normal())
    return {"i": i, "pid": os.getpid(), "torch_threads": torch.get_num_threads(),
            "omp": os.environ.get("OMP_NUM_THREADS"), "value": value, "drawn": streams.drawn()}


TASKS = [dict(i=i, key=f"k{i}") for i in range(5)]


@pytest.mark.parametrize("workers", [1, 2])
def test_results_come_back_in_task_order_with_one_thread_each(workers, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")          # what a 2-core caller may have
    out = spawned.run_tasks(worker_probe, TASKS, workers)
    assert [o["i"] for o in out] == list(range(5))
    assert all(o["torch_threads"] == 1 and o["omp"] == "1" for o in out)
    assert all(o["pid"] != os.getpid() for o in out)     # always spawned, one worker too
    assert len({o["pid"] for o in out}) <= workers
    here = [worker_probe(**t)["value"] for t in TASKS]
    assert [o["value"] for o in out] == here             # the task's numbers, wherever it ran
    assert os.environ["OMP_NUM_THREADS"] == "2"          # the caller's environment is restored


def test_no_tasks_start_no_pool_and_zero_workers_give_none():
    assert spawned.run_tasks(worker_probe, [], 2) == []
    with spawned.spawned(0) as pool:
        assert pool is None


def test_the_one_thread_environment_is_held_for_the_pool_life_only(monkeypatch):
    for k in THREAD_VARS:
        monkeypatch.delenv(k, raising=False)
    with spawned.spawned(1) as pool:
        assert all(os.environ[k] == "1" for k in THREAD_VARS)
        assert pool.submit(worker_probe, 0, "a").result()["torch_threads"] == 1
    assert not any(k in os.environ for k in THREAD_VARS)


def test_a_reset_kernel_namespace_gets_its_spec_back(monkeypatch):
    main = sys.modules["__main__"]
    monkeypatch.delattr(main, "__spec__", raising=False)
    assert not hasattr(main, "__spec__")
    spawned.restore_main_spec()
    assert main.__spec__ is None


def test_a_workers_stream_keys_are_recorded_as_if_drawn_here():
    streams = Streams(7)
    spawned.record_drawn(streams, ["task/k1", "train/0/*"])
    assert streams.drawn() == ["task/k1", "train/0/*"]
    mine = Streams(7)
    mine.rng("task", "k1")
    mine.child("train", "0")
    assert mine.drawn() == streams.drawn()
