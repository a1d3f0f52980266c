"""One plotting theme for every paper, and figures saved as PNG plus a vector copy."""
from __future__ import annotations

import os
from pathlib import Path

VECTOR_FORMATS = ("svg", "pdf")

#: text sizes shared by every figure of every paper, so the report reads at one scale
STYLE = {"font.size": 10, "axes.titlesize": 10, "axes.labelsize": 10, "xtick.labelsize": 9,
         "ytick.labelsize": 9, "legend.fontsize": 8, "figure.titlesize": 11, "figure.dpi": 100}


def styled(fn):
    """Decorator: build the figure under `STYLE` (text sizes are fixed when the artists are created)."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        import matplotlib.pyplot as plt

        with plt.rc_context(STYLE):
            return fn(*args, **kwargs)
    return wrapper


def set_theme() -> None:
    import seaborn as sns

    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind", rc={"figure.dpi": 100, "savefig.dpi": 150, "figure.figsize": (6.4, 4.2)})


def save_figure(fig, name: str, directory: str | os.PathLike, vector: str | None = "svg") -> Path:
    """Write `<directory>/<name>.png` and, unless `vector` is None, `<name>.<vector>` atomically; return the PNG path."""
    from .io import atomic_write_bytes
    import io

    if vector is not None and vector not in VECTOR_FORMATS:
        raise ValueError(f"vector format must be one of {VECTOR_FORMATS}")
    directory = Path(directory)
    png = directory / f"{name}.png"
    for fmt, path in (("png", png), *(((vector, directory / f"{name}.{vector}"),) if vector else ())):
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, bbox_inches="tight")
        atomic_write_bytes(path, buf.getvalue())
    return png
