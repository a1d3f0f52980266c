"""Process pool with pinned BLAS threads gives the serial answer (arXiv:2409.04240)."""
import numpy as np

from common import parallel
from common.seed import Streams
from papers.netrecon import tasks


def test_pool_matches_serial_and_keeps_order():
    jobs = [dict(N=30, g=g, streams=Streams(0), n_traj=1, t_transient=1.0, t_average=2.0) for g in (0.5, 2.0)]
    serial = parallel.pmap(tasks.lyapunov_task, jobs, workers=1)
    pooled = parallel.pmap(tasks.lyapunov_task, jobs, workers=2)
    for a, b in zip(serial, pooled):
        assert a["g"] == b["g"] and np.array_equal(a["lam"], b["lam"])


def test_autocorrelation_of_a_sine():
    t = np.linspace(0, 40 * np.pi, 20000, endpoint=False)   # 20 full periods
    x = np.sin(t)[:, None, None] * np.sqrt(2)
    ac = tasks.autocorrelation(x, 100)
    assert np.allclose(ac, np.cos(t[:101]), atol=0.01)


def test_prefetch_fills_the_cache_that_cached_pmap_reads(tmp_path, monkeypatch):
    from papers.netrecon import cache

    traj = [dict(N=20, g=float(g), streams=Streams(1), t_max=1.0, n_show=3) for g in (0.5, 2.0)]
    pair = [dict(fn="pair_distance_task", kw=dict(N=20, g=2.0, eta=0.1, streams=Streams(1), n_x0=2, T=1.0))]
    cache.prefetch([(tasks.trajectories_task, t) for t in traj] + [(tasks.dispatch, t) for t in pair], tmp_path,
                   workers=1)
    assert len(list(tmp_path.glob("*.pkl"))) == 3
    monkeypatch.setattr(cache, "pmap", lambda *a, **k: (_ for _ in ()).throw(AssertionError("recomputed")))
    got = cache.cached_pmap(tasks.trajectories_task, traj, tmp_path)      # read back, nothing recomputed
    for g, r in zip((0.5, 2.0), got):
        np.testing.assert_array_equal(r["x"], tasks.trajectories_task(N=20, g=g, streams=Streams(1), t_max=1.0, n_show=3)["x"])
    assert cache.cached_pmap(tasks.dispatch, pair, tmp_path)[0]["eta"] == 0.1


def test_single_precision_pair_follows_double():
    kw = dict(N=200, g=3.0, eta=0.1, streams=Streams(2), n_x0=2, T=10.0)
    d64, d32 = tasks.pair_distance_task(**kw), tasks.pair_distance_task(**kw, dtype="float32")
    late = d64["t"] >= 2.0
    assert np.max(np.abs(np.log(d32["D"][late] / d64["D"][late]))) < 0.05   # far inside the claims' 0.35


def test_the_reconstruction_gains_in_a_pool_give_the_serial_numbers(tmp_path):
    """Notebook 02 fits its gains, checks its teachers' exponents and fits the chaotic ones' students in one pool
    (`reconstruction.pooled`): the same numbers as one after the other (`chaotic_teachers`, then the fits)."""
    from common.study import open_run
    from papers.netrecon.studies import reconstruction

    tiny = dict(rec_N=10, rec_n_traj=3, rec_n_steps=40, adam_epochs_sub=1, adam_epochs_chaos=1, adam_batch=16,
                sweep_n_trajs=[1, 2], adam_sweep_n_trajs=[2], adam_sweep_epochs=1, adam_n_x0=2, adam_t_max=2.0,
                pred_t_burn=1.0, adam_h_nets=2, adam_h_max_draws=6, adam_h_min_lam=-0.3, adam_h_t_lyap=2.0)
    out = {}
    for w in (1, 2):
        cfg, run = open_run("netrecon", "smoke", seed=0, device="cpu", run_dir=tmp_path / str(w),
                            overrides=dict(tiny, workers=w))
        out[w] = reconstruction.measure(cfg, run)["metrics"]
    assert len(out[1]) > 10 and out[1].keys() == out[2].keys()
    # at N = 10 some draws fall below the threshold: the pool drew more teachers, as the serial order does
    assert out[1]["adam_h_draws_g2"] > out[1]["adam_h_teachers_g2"] == 2.0
    np.testing.assert_array_equal([out[1][k] for k in out[1]], [out[2][k] for k in out[1]])   # NaN == NaN here


def test_notebook_04_solves_its_theory_in_the_pool_with_the_in_process_numbers(tmp_path, monkeypatch):
    """Issue 43: `studies.dmft.work` holds the stationary DMFT (each st_g and its near miss) and lambda_DMFT at
    eta2_g_chaos beside the simulations, so after `prefetch` the study solves no stationary DMFT in process; its
    metrics are bit for bit those of the study computed in process (no pool, no cache)."""
    from papers.netrecon import cache, dmft as theory, pool
    from papers.netrecon.config import get_config
    from papers.netrecon.studies import dmft as study

    cfg = get_config("smoke")
    assert {t["g"] for t in study.stationary_theory_tasks(cfg)} == {g * f for g in cfg.st_gs for f in (1.0, 1.0 + cfg.ctrl_dg_rel)}
    with pool.kept(2):
        cache.prefetch(study.work(cfg, Streams(0)), tmp_path, workers=2)
    real = {name: getattr(theory, name) for name in ("stationary", "lyapunov")}
    for name in real:
        monkeypatch.setattr(theory, name, lambda *a, **k: (_ for _ in ()).throw(AssertionError("solved in process")))
    monkeypatch.setattr(cache, "pmap", lambda *a, **k: (_ for _ in ()).throw(AssertionError("recomputed")))
    pooled = [study.stationary_comparison(cfg, Streams(0), tmp_path), study.two_replica_comparison(cfg, Streams(0), tmp_path)]
    monkeypatch.undo()
    here = [study.stationary_comparison(cfg, Streams(0)), study.two_replica_comparison(cfg, Streams(0))]
    for a, b in zip(pooled, here):
        assert a["metrics"].keys() == b["metrics"].keys()
        assert all(a["metrics"][k] == b["metrics"][k] or (np.isnan(a["metrics"][k]) and np.isnan(b["metrics"][k]))
                   for k in a["metrics"])
    for g in cfg.st_gs:
        assert np.array_equal(pooled[0]["by_g"][g]["theory"].Delta, theory.stationary(g, tau_max=max(40.0, cfg.st_max_lag)).Delta)
