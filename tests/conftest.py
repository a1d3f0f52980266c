"""How `make test` hands tests to its processes (pytest-xdist, `--dist loadfile --no-loadscope-reorder`): in work
units, each run by one process, the longest units first, the rest in collection order (the notebooks last).

A unit is a test file, except that a paper's notebooks (nbval) and that paper's runner check
(`tests/common/test_repository.py::test_smoke_run_produces_metrics_and_claims[<paper>]`) are one unit,
`notebooks/<paper>`, with the check last: it judges what the nbval executions wrote instead of running the notebooks
again (tests/nbval_runs.py). A long unit handed out last keeps one process busy while the others have nothing left;
started first, it runs beside the many short ones. Only the order changes: every test runs, its tests in their order.
"""
import pytest

SMOKE_CHECK = "tests/common/test_repository.py::test_smoke_run_produces_metrics_and_claims"

# Longest first: seconds per unit in `make test` on the 2-core Xeon (family 6, model 207), 2 processes, 2026-12-07
# 21:45 UTC (76ea4a3), from a per-test timeline of each process (first test's start to last test's end; a paper's
# unit includes its runner check, which judges what nbval wrote). A unit that is listed must exist
# (tests/common/test_makefile.py); one that is not runs in collection order, after these: every one of those took
# under 3 s, so both processes end within a few seconds of each other (before, tests/hetero/test_hetero_zygote.py,
# 36 s, and tests/common/test_workerstart.py, 13 s, were not listed and ran last on one process, which ended 23 s
# after the other). xdist hands a process its next unit while it still has up to two tests to run, so the order is
# replayed with that rule when it is re-measured (a sort by seconds: both processes end together).
LONGEST_FIRST = (
    "tests/common/test_cluster.py",                      # 52
    "tests/hetero/test_hetero_zygote.py",                # 36 (+2 tests of the warm-up, ~10 s, 2026-12-08)
    "notebooks/hetero",                                  # 47
    "tests/common/test_makefile.py",                     # 43
    "notebooks/diffusion",                               # 37
    "notebooks/nlm",                                     # 35
    "tests/common/test_reproduce_report.py",             # 35
    "notebooks/netrecon",                                # 34
    "tests/acl/test_acl_full_profile.py",                # 33
    "notebooks/acl",                                     # 33
    "tests/common/test_device_check.py",                 # 29
    "notebooks/asq",                                     # 28
    "tests/asq/test_asq_full_profile.py",                # 28
    "tests/hetero/test_hetero_full_profile.py",          # 26
    "tests/hetero/test_hetero_bugs.py",                  # 19
    "tests/hetero/test_hetero_cluster.py",               # 18
    "tests/common/test_paper_template.py",               # 15
    "tests/netrecon/test_netrecon_full_profile.py",      # 15
    "tests/hetero/test_hetero_dist.py",                  # 13
    "tests/common/test_workerstart.py",                  # 13
    "tests/asq/test_asq_qat_pool.py",                    # 10
    "tests/nlm/test_nlm_workers.py",                     # 9
    "tests/nlm/test_nlm_full_profile.py",                # 8
    "tests/acl/test_acl_codes.py",                       # 8
    "tests/asq/test_asq_device.py",                      # 8
    "tests/netrecon/test_netrecon_parallel.py",          # 7
    "tests/acl/test_acl_train.py",                       # 7
    "tests/common/test_study.py",                        # 6
    "tests/common/test_netcluster.py",                   # 6
    "tests/common/test_runner_robustness.py",            # 6
    "tests/common/test_download.py",                     # 5
    "tests/common/test_architecture.py",                 # 5
    "tests/nlm/test_nlm_notebooks.py",                   # 4
    "tests/nlm/test_nlm_sampler.py",                     # 4
    "tests/diffusion/test_diffusion_full_profile.py",    # 3
    "tests/common/test_data_checkpoint_dist.py",         # 3
)


def work_unit(nodeid: str) -> str:
    """The unit a test is handed out in: its file, or `notebooks/<paper>` for a paper's notebooks and runner check."""
    path, _, rest = nodeid.partition("::")
    if path.startswith("notebooks/") and path.endswith(".ipynb"):
        return path.rsplit("/", 1)[0]
    if nodeid.startswith(SMOKE_CHECK + "[") and nodeid.endswith("]"):
        return "notebooks/" + nodeid[len(SMOKE_CHECK) + 1:-1]
    return path


def pytest_collection_modifyitems(config, items):
    """Listed units first, in the list's order, then the others in the order they are first met; a unit's tests
    together and in their order, a paper's runner check after its notebooks (a stable sort)."""
    rank = {unit: i for i, unit in enumerate(LONGEST_FIRST)}
    first: dict = {}
    for i, item in enumerate(items):
        first.setdefault(work_unit(item.nodeid), i)

    def key(item):
        unit = work_unit(item.nodeid)
        return rank.get(unit, len(rank)), first[unit], item.nodeid.startswith(SMOKE_CHECK + "[")

    items.sort(key=key)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile` with `work_unit` as its unit (a file, or a paper's notebooks with its runner check)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class WorkUnits(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return WorkUnits(config, log)
