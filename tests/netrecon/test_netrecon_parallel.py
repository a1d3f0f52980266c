"""Process pool with pinned BLAS threads gives the serial answer (arXiv:2409.04240)."""
import numpy as np

from common import parallel
from papers.netrecon import tasks


def test_pool_matches_serial_and_keeps_order():
    jobs = [dict(N=30, g=g, seed=0, n_traj=1, t_transient=1.0, t_average=2.0) for g in (0.5, 2.0)]
    serial = parallel.pmap(tasks.lyapunov_task, jobs, workers=1)
    pooled = parallel.pmap(tasks.lyapunov_task, jobs, workers=2)
    for a, b in zip(serial, pooled):
        assert a["g"] == b["g"] and np.array_equal(a["lam"], b["lam"])


def test_autocorrelation_of_a_sine():
    t = np.linspace(0, 40 * np.pi, 20000, endpoint=False)   # 20 full periods
    x = np.sin(t)[:, None, None] * np.sqrt(2)
    ac = tasks.autocorrelation(x, 100)
    assert np.allclose(ac, np.cos(t[:101]), atol=0.01)
