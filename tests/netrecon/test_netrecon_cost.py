"""papers/netrecon/cost.py: the DMFT solves of notebooks 04-05 counted as the study runs them (issue 42)."""
from papers.netrecon import config
from papers.netrecon.cost import ENTRY_FLOPS_PER_NODE, ENTRY_FLOPS_PER_NODE2, estimate, stationary_solves, two_replica_flops


def test_two_replica_count_by_hand_at_smoke():
    """smoke: tr_cases (2, 0.1), tr_T 2 at dt 0.05, sat_T 3 at 0.1, the near miss at 2.3, the law runs at 0.8 (to 50
    and 20) and 3 (to 8), 21 nodes: five (g, dt) groups, one teacher each plus one student per eta to its longest T."""
    cfg = config.get_config("smoke")
    tri = lambda n: n * (n + 3) / 2          # noqa: E731  entries of a kernel propagated n steps
    entries = (2 * tri(40) + 2 * tri(30) + 2 * tri(40)          # (2, 0.05), (2, 0.1), (2.3, 0.05): teacher + 1 student
               + 3 * tri(500) + 3 * tri(200)                     # (0.8, 0.1): teacher, eta 0.1, 0.05 to 50; 0.28, 0.2, 0.14 to 20
               + 3 * tri(80))                                    # (3, 0.1): teacher, eta 0.1 and 0.05 to 8
    flops, groups, mem = two_replica_flops(cfg)
    assert groups == 5
    assert flops == entries * (ENTRY_FLOPS_PER_NODE2 * 21 ** 2 + ENTRY_FLOPS_PER_NODE * 21)
    assert mem == 2 * 6 * 501 ** 2 * 8
    assert stationary_solves(cfg) == 2 + 4 + 1                   # ly_gs_dmft 1.5, 2; st_gs 2 (x4); eta2_g_chaos 3


def test_full_estimate_bills_the_dmft():
    parts = estimate(config.get_config("full")).record()["cpu_parts"]
    assert parts["04 two-replica DMFT (kernels on the (t, t') grid)"]["flops"] > 0
    assert parts["04-05 stationary DMFT solves and their Lyapunov problems"]["flops"] > 0
