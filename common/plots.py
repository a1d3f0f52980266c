"""One plotting theme for every paper, and figures saved as PNG plus a vector copy."""
from __future__ import annotations

import os
from pathlib import Path

VECTOR_FORMATS = ("svg", "pdf")


def set_theme() -> None:
    import seaborn as sns

    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind", rc={"figure.dpi": 100, "savefig.dpi": 150, "figure.figsize": (6.4, 4.2)})


def save_figure(fig, name: str, directory: str | os.PathLike, vector: str = "svg") -> Path:
    """Write `<directory>/<name>.png` and `<name>.<vector>` atomically; return the PNG path."""
    from .io import atomic_write_bytes
    import io

    if vector not in VECTOR_FORMATS:
        raise ValueError(f"vector format must be one of {VECTOR_FORMATS}")
    directory = Path(directory)
    png = directory / f"{name}.png"
    for fmt, path in (("png", png), (vector, directory / f"{name}.{vector}")):
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, bbox_inches="tight")
        atomic_write_bytes(path, buf.getvalue())
    return png
