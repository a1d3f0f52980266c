"""A second process for the sections that leave a core idle (issue 43: the quick run kept 1.22 of 2 cores busy).

The processes are `common.spawned`'s (spawned, one BLAS and one torch thread each) and work beside the caller,
which keeps working meanwhile: the Franz-Parisi potential hands them a share of its q values, in whole tiles
(`franz_parisi.worker_pool`), notebook 05 the sections that do not need the trained network
(`studies.high_dimension.measure`). Each task computes exactly what the caller would have, from the same keyed
streams, so the numbers do not depend on where it ran; `common.spawned.record_drawn` copies a worker's stream
keys into the run's manifest. This module says how many processes the run may keep busy.
"""
from __future__ import annotations

import sys

from common.parallel import n_workers


def cpu_shares() -> int:
    """Processes the run may keep busy: `common.parallel.n_workers` with no bound from the tasks ($REPRO_THREADS,
    else the CPU count; at least 1), the one reading of that budget the pools use too."""
    return n_workers(sys.maxsize)
