"""The order in which `make test` hands files to its processes (pytest-xdist, `--dist loadfile
--no-loadscope-reorder`): the files that take longest start first, the rest follow in collection order (the notebooks
last). A long file handed out last keeps one process busy while the others have nothing left; started first, it runs
beside the many short files. Only the order changes: every test runs, each file on one process, its tests in their
own order."""

# Longest first: seconds per file in `make test` on the 2-core Zen 3 (family 25, model 1), 2 processes, 2026-12-06.
# A file that is listed must exist (tests/common/test_makefile.py); one that is not runs in collection order.
LONGEST_FIRST = (
    "tests/common/test_repository.py",               # every paper's smoke run but diffusion's, in process (~130-190 s)
    "tests/common/test_cluster.py",                  # the Dask cluster and its worker processes (~110 s)
    "tests/hetero/test_hetero_full_profile.py",      # 95 s
    "tests/acl/test_acl_full_profile.py",            # 81 s
    "tests/common/test_makefile.py",                 # `make reproduce-diffusion` and the report in a browser (61-72 s)
    "tests/common/test_device_check.py",             # 66 s
    "tests/hetero/test_hetero_bugs.py",              # 58 s
    "tests/asq/test_asq_full_profile.py",            # 58 s
    "notebooks/asq/02-qat-comparison.ipynb",         # 52-75 s
    "tests/common/test_reproduce_report.py",         # 47 s
    "tests/hetero/test_hetero_cluster.py",           # 38 s
    "tests/common/test_paper_template.py",           # 33 s
)


def pytest_collection_modifyitems(config, items):
    """Listed files first, in the list's order; a stable sort keeps every file's tests together and in order."""
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))
