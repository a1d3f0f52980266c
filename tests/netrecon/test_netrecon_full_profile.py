"""The full profile runs the code quick runs: every function the notebooks call, with the full profile's
settings (its gains, eta grid, two-replica cases, Delta(tau) window, dtype) and every size cut to seconds.
netrecon needs no dataset (its teachers are random networks drawn from the seed), so there are no files to
fake; its preflight checks only the two-replica cases and the sweeps' sizes. Every claim judged at full gets a finite metric and a finite control from that code
(arXiv:2409.04240)."""
import numpy as np
import pytest

from common.claims import load_claims
from common import paths
from common.study import open_run
from papers.netrecon import pool
from papers.netrecon.config import get_config, preflight
from papers.netrecon.studies import dmft, lyapunov, prediction, reconstruction, regimes

TINY = dict(  # sizes and times cut; gains, eta grid, cases, dt, dtype and the claims' windows stay full's
    # two worker processes: full's pool path (workers = 0 is one per core), not the in-process loop
    workers=2, traj_N=30, traj_t=2.0,
    grid_N=30, grid_seeds=1, grid_t_transient=1.0, grid_t_align=0.5, grid_t_average=1.0,
    sub_N=30, sub_seeds=2, ctrl_sub_seeds=2, sub_t_transient=1.0, sub_t_align=0.5, sub_t_average=2.0,
    rec_N=16, rec_n_traj=4, rec_n_steps=60, adam_epochs_sub=2, adam_epochs_chaos=2, adam_batch=50,
    sweep_n_trajs=[1, 2, 4], adam_sweep_n_trajs=[2, 4], adam_sweep_epochs=4, adam_sweep_patience=1, adam_n_x0=2, adam_t_max=60.0,
    adam_h_nets=2, adam_h_min_lam=-1.0, adam_h_t_lyap=2.0, adam_h_max_draws=2,   # N = 16 is rarely chaotic: take any
    pred_N=300, pred_seeds=2, pred_n_x0=2, pred_t_burn=3.0, pred_t_max=250.0, pred_t_lyap=3.0, pred_t_align=1.0,
    q_N=30, q_T=30.0, q_n_x0=2, q_seeds=1, q_ctrl_T=5.0,
    ds_N=60, ds_seeds=2, ds_n_trajs=[12, 18, 24], ds_n_steps=100, ds_n_x0=3, ds_t_max=400.0,
    st_N=30, st_seeds=2, st_n_traj=1, st_t_transient=1.0, st_t_align=0.5, st_t_average=40.0,
    tr_N=30, tr_seeds=1, tr_n_x0=2, tr_dt=0.05, tr_nodes=21, sat_dt=0.2, eta2_T=60.0, eta2_T_chaos=12.0,
    ly_gs_dmft=[1.5, 2.0], os_N=20, os_seeds=1, os_t_total=3.0, os_t_discard=1.0, qr_N=20, qr_k=3, qr_t_average=3.0,
)


def test_full_profile_runs_the_notebooks_code_and_every_full_claim_gets_its_numbers(test_device, tmp_path):
    cfg = get_config("full", **TINY)
    full = get_config("full")
    assert (cfg.tr_cases, cfg.pred_etas, cfg.st_max_lag, cfg.st_dtype) == (full.tr_cases, full.pred_etas,
                                                                           full.st_max_lag, "float32")
    assert cfg.workers > 1 and full.workers == 0                      # a pool, as full runs (one per core)
    assert (full.adam_sweep_epochs, full.adam_sweep_patience) == (10_000, 100)   # the official P-sweep
    assert np.allclose(np.diff(full.grid_gs), 0.2) and (full.grid_gs[0], full.grid_gs[-1]) == (0.0, 4.8)
    assert preflight(cfg) is None
    _, run = open_run("netrecon", "full", seed=0, device=test_device, run_dir=tmp_path, overrides=TINY)
    metrics = {}
    with pool.kept(cfg.workers):              # one pool for the five studies (a run's notebooks keep one each)
        for study in (regimes, reconstruction, prediction, dmft, lyapunov):                               # 01 ... 05
            metrics |= study.measure(cfg, run)["metrics"]
    every = load_claims(paths.REPO / "papers" / "netrecon" / "claims.yaml")
    claims = [c for c in every if "full" in c.profiles]
    assert claims and [c.id for c in claims] == [c.id for c in every]      # full lists every claim of claims.yaml
    missing = []
    for c in claims:
        for key in (c.metric, c.se, c.control, c.control_se):
            if isinstance(key, str) and key != "none" and not np.isfinite(metrics.get(key, np.nan)):
                missing.append((c.id, key, metrics.get(key)))
    assert not missing, [m[:2] for m in missing]
    assert [c.id for c in claims if c.control == "none"] == ["least-squares-exact-g2"]   # the identity, declared


def test_a_profile_judges_the_data_size_horizon_claim_only_where_it_runs_the_horizons():
    """`ds_horizons` (issue 43): quick runs no data-size horizon, and no claim it judges reads one; smoke and full
    run them for data-horizon-logarithmic."""
    reads = {c.id: [k for k in (c.metric, c.se, c.control, c.control_se, c.value)
                    if isinstance(k, str) and (k.startswith(("ds_slope", "ds_Tpd")) or "_ds_slope" in k)]
             for c in load_claims(paths.REPO / "papers" / "netrecon" / "claims.yaml")}
    assert {cid for cid, keys in reads.items() if keys} == {"data-horizon-logarithmic"}
    assert not get_config("quick").ds_horizons
    assert get_config("smoke").ds_horizons and get_config("full").ds_horizons
    for c in load_claims(paths.REPO / "papers" / "netrecon" / "claims.yaml"):
        for profile in c.profiles:
            if reads[c.id]:
                assert get_config(profile).ds_horizons, (c.id, profile)


@pytest.mark.cuda
def test_full_profile_on_a_gpu_fits_adam_there(gpu_peak, tmp_path):
    cfg, run = open_run("netrecon", "full", seed=0, device="cuda", run_dir=tmp_path, overrides=TINY)
    gpu_peak.reset()
    m = reconstruction.measure(cfg, run)["metrics"]
    assert gpu_peak.grew() and np.isfinite(m["adam_r_g2"]) and np.isfinite(m["adam_r_g0p8"])
