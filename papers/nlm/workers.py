"""Independent runs of a study on the machine's cores: `common.parallel.pmap`, callable from a notebook kernel.

Paper: Yu, Huang & Huang, arXiv:2506.23546 (no equation: how the studies use a 2-core machine). Each task owns its
generators, so its numbers do not depend on the process that runs it.
"""
from __future__ import annotations

import sys

from common.parallel import pmap


def spread(fn, tasks: list, desc: str | None = None) -> list:
    """`pmap(fn, tasks)`. A kernel whose namespace was reset (`%reset -f`, as a runner that shares one kernel between
    notebooks does) has lost `__main__.__spec__`, which multiprocessing's spawn reads: it is put back as None (what
    a script run by path has), so the workers start."""
    main = sys.modules.get("__main__")
    if main is not None and not hasattr(main, "__spec__"):
        main.__spec__ = None
    return pmap(fn, tasks, desc=desc)
