"""Progress bars: tqdm on a terminal; elsewhere (papermill, CI logs) a plain line every 10%."""
from __future__ import annotations

import os
import sys
import time
from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")


def interactive() -> bool:
    """A terminal on stderr, and progress not switched off (REPRO_PROGRESS=0): draw bars, not log lines."""
    if os.environ.get("REPRO_PROGRESS") == "0":
        return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def progress(iterable: Iterable[T], total: int | None = None, desc: str | None = None, every: float = 0.1) -> Iterator[T]:
    """Iterate with a progress display suited to where the output goes."""
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    if interactive():
        from tqdm.auto import tqdm

        yield from tqdm(iterable, total=total, desc=desc, leave=False)
        return
    label = desc or "progress"
    start = time.perf_counter()
    next_mark = every
    for i, item in enumerate(iterable, 1):
        yield item
        if total and i / total >= next_mark - 1e-12:
            pct = int(round(100 * i / total))
            print(f"{label}: {pct:3d}% ({i}/{total}, {time.perf_counter() - start:.1f}s)", file=sys.stderr, flush=True)
            while next_mark <= i / total + 1e-12:
                next_mark += every
