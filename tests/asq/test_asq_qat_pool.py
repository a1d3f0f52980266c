"""The QAT grid's worker pool (`common.spawned`, `QATGrid.train_missing`): every QAT model is trained in a
spawned one-thread worker, so one worker and two give the same models bit for bit, whichever worker trains a
model, in which order, alone or with the grid, and the worker's thread count does not follow the machine's."""
import torch

from common.seed import Streams
from common.parallel import n_workers
from papers.asq.config import get_config
from papers.asq.qat_grid import QATGrid

NB03 = dict(seed=0, method="asq", bits=4, grid="post")     # notebook 03's model, handed to the pool with the grid
CONFS = [("lsq", 2, "uniform"), ("asq", 2, "uniform"), ("sbeta", 2, "uniform"), ("asq", 4, "post")]


def tiny_cfg():
    return get_config("smoke", fp_epochs=1, bits=[2], sbeta_bits=[2], frozen_bits=[2], ablation_grids=[],
                      eval_batch=500)


def test_one_worker_and_two_give_the_same_models_bit_for_bit_with_one_thread_each(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")                     # what a 2-core machine's caller may have set
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        cfg, streams = tiny_cfg(), Streams(100)
        one, two = QATGrid(cfg, tmp_path / "one", streams), QATGrid(cfg, tmp_path / "two", Streams(100))
        assert one.pooled and two.pooled
        out_one = one.train_missing(one.grid_jobs([0]), workers=1)                 # 3 models, one after another
        out_two = two.train_missing(two.grid_jobs([0]) + [NB03], workers=2)        # 4 models, shared out
        assert len(out_one) == 3 and len(out_two) == 4
        assert [o["threads"] for o in out_one + out_two] == [1] * 7                  # whatever the caller has
        assert all("100%" in o["log"] for o in out_one)             # a worker's progress lines come back to print
        assert torch.get_num_threads() == 2                                           # the caller's left as it was
        assert two.train_missing(two.grid_jobs([0]) + [NB03], workers=2) == []      # all in the folder now
        one_models = {conf: one.qat_model(0, *conf) for conf in CONFS}      # POST: trained alone, a pool of its own
        two_models = {conf: two.qat_model(0, *conf) for conf in CONFS}      # loaded
    finally:
        torch.set_num_threads(before)
    assert one._results() == two._results()                                          # accuracies, frozen-beta record
    assert {"fp-s100r0", "asq-w4a4-post-s100r0", "frozen-asq-w2a2-uniform-s100r0"} <= set(one._results())
    for conf in CONFS:
        (a, acc_a), (b, acc_b) = one_models[conf], two_models[conf]
        assert acc_a == acc_b
        sa, sb = a.state_dict(), b.state_dict()
        assert sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa), conf
    df1, df2 = one.run_grid([0]), two.run_grid([0])
    assert df1.equals(df2) and "frozen-asq-w2a2-uniform" in set(df1.config)
    # the workers' draws are the run's: their stream keys are recorded here, for the manifest
    assert "train/0/qat-order/0" in streams.drawn() and "train/0/adapters" in " ".join(streams.drawn())


def test_the_pool_is_the_cpu_path_only(tmp_path):
    grid = QATGrid(tiny_cfg(), tmp_path, Streams(103), in_worker=True)
    assert not grid.pooled and grid.train_missing([dict(seed=0, method="lsq", bits=2)]) == []
    assert n_workers(16) >= 1 and n_workers(1) == 1
