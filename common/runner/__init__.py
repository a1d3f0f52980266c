"""The runner: `python -m common.reproduce` (see common/README.md, "The runner"), one job per module.

- `registry`: the papers and their notebooks, each paper's `config.py` (the contract: PROFILES,
  BOUNDS, preflight) and the configuration a run resolves to.
- `params`: `-p key=value` parsed and checked (names against the notebooks' parameters cells, values
  against the profiles, seeds against the development range, the device), the paper's preflight, and
  the rerun command written back.
- `execute`: papermill execution of one notebook, and of a paper's notebooks into a folder.
- `lock`: one run of a paper at a profile at a time; the leftovers of killed runs swept.
- `judge`: the claims table and manifest of a run folder, seeds combined, `--rejudge`, the printed table.
- `staging`: the staged run shared by both paths: a staging folder, swapped in on success, kept as
  `<profile>-failed` otherwise, removed after a user error.
- `local`: the local path, each paper and seed one after another on this machine.
- `fanout`: the Dask path (`--cluster`), every (paper, seed) run a task on the cluster's workers.
- `cli`: the command line, the checks made before anything is written, and the choice of path.

Imports go one way (no cycle; tests/common/test_architecture.py walks them): cli -> local, fanout ->
staging -> judge, lock, execute; judge -> lock, params; params -> registry; execute and lock stand alone.
"""
