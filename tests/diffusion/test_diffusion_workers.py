"""The second process (common/spawned.py, papers/diffusion/workers.py, issue 43): where a section runs changes no number and no
stream key of the run's manifest; V'' left out changes neither V nor V'."""
import pickle
from concurrent.futures import Future
from contextlib import nullcontext
from types import SimpleNamespace

import numpy as np
import torch

from common.seed import Streams
from papers.diffusion import franz_parisi as fp
from common import spawned
from papers.diffusion.config import get_config
from papers.diffusion.mixture import GaussianMixture
from papers.diffusion.studies import high_dimension as hd

MIX = GaussianMixture.two_gaussians(1.0, 0.1)


def test_a_worker_process_and_v_without_v2_give_the_same_potential_bit_for_bit(monkeypatch):
    monkeypatch.setenv("REPRO_THREADS", "2")
    s = fp.draw_samples(MIX, 3000, Streams(2))
    q = 0.075 + 0.15 * np.arange(41)                 # an odd count: the last tile holds one q
    for fast in (True, False):                     # the pair's fast tile and the generic one
        ref = fp.fp_potential(MIX, 0.42, q, s, block=512, fast=fast)
        with fp.worker_pool(fp.WORKER_POOL_MIN_WORK) as pool:
            assert pool is not None and pool.shares == 2
            got = fp.fp_potential(MIX, 0.42, q, s, block=512, pool=pool, fast=fast)
            bare = fp.fp_potential(MIX, 0.42, q, s, block=512, pool=pool, fast=fast, curvature=False)
        for k in ("V", "dV", "ddV"):
            assert np.array_equal(got[k], ref[k]), k
        assert "ddV" not in bare and np.array_equal(bare["V"], ref["V"]) and np.array_equal(bare["dV"], ref["dV"])
        assert fp.secondary_minimum(bare) == {k: v for k, v in fp.secondary_minimum(ref).items() if k != "n_inflections"}
    with fp.worker_pool(fp.WORKER_POOL_MIN_WORK - 1) as pool:
        assert pool is None                                   # too little work for a process start
    monkeypatch.setenv("REPRO_THREADS", "1")
    with fp.worker_pool(1e12) as pool:
        assert pool is None                                   # one core: everything in the caller


class _PickledExecutor:
    """Runs a task here on pickled copies of its arguments and result, as a spawned worker would see them."""

    def submit(self, fn, *args):
        fut = Future()
        fut.set_result(pickle.loads(pickle.dumps(fn(*pickle.loads(pickle.dumps(args))))))
        return fut


TINY = dict(cloning_dims=[16], cloning_samples=200, clone_check_n=100, collapse_dims=[32], collapse_n=200,
            collapse_test=50, learned_steps=5, learned_hidden=16, learned_clone_starts=10, learned_clone_steps=4,
            learned_times=4, learned_empirical_noise=2)


def test_notebook_05_beside_the_training_gives_the_same_metrics_and_stream_keys(monkeypatch):
    cfg = get_config("smoke", **TINY)
    runs, asked = {}, []
    for where in ("here", "beside"):
        if where == "beside":
            monkeypatch.setattr(hd, "BESIDE_MIN_STEPS", 1)
            monkeypatch.setenv("REPRO_THREADS", "2")
            monkeypatch.setattr(spawned, "spawned", lambda n: asked.append(n) or nullcontext(_PickledExecutor() if n else None))
        run = SimpleNamespace(streams=Streams(5), device=torch.device("cpu"))   # a notebook's run.device: a torch.device
        runs[where] = (hd.measure(cfg, run)["metrics"], run.streams.drawn())
    assert asked == [1]                                  # the worker was asked for: the beside path ran
    (m_here, keys_here), (m_beside, keys_beside) = runs["here"], runs["beside"]
    assert list(m_here) == list(m_beside)
    assert all(m_here[k] == m_beside[k] or (m_here[k] != m_here[k] and m_beside[k] != m_beside[k]) for k in m_here)
    assert keys_here == keys_beside and {"collapse/32/200", "cloning/16", "score-init", "dsm"} <= set(keys_beside)


def test_record_drawn_copies_stream_and_child_keys():
    worker = pickle.loads(pickle.dumps(Streams(3)))
    worker.rng("cloning", 16)
    worker.child("fp-threshold").rng("franz-parisi")
    here = Streams(3)
    spawned.record_drawn(here, worker.drawn())
    assert here.drawn() == worker.drawn() == ["cloning/16", "fp-threshold/*", "fp-threshold/franz-parisi"]


def test_a_worker_started_at_a_later_submit_still_gets_one_blas_thread(monkeypatch):
    """The executor starts its processes at the first submit, after `spawned` has entered: the one-thread
    environment must still be in force then (it was left at creation, so workers took every core's threads)."""
    import os

    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    with spawned.spawned(1) as pool:
        got = pool.submit(os.getenv, "OMP_NUM_THREADS").result()
    assert got == "1"
    assert os.environ["OMP_NUM_THREADS"] == "2"      # the caller's environment is restored afterwards
