"""Run directories with provenance: `results/<paper>/<profile>/`.

A run directory holds `manifest.json` (git SHA and dirty flag, parameters, seed, library versions,
device record, start/end, checksums of input data), `metrics.json`, `figures/` and the executed
notebooks. Every write is atomic. The runner (`common.reproduce`, `common/runner/`) writes into a staging directory
and swaps it in only when every notebook succeeded, so a failed run never damages the last good one.
"""
from __future__ import annotations

import datetime as _dt
import platform
import subprocess
from pathlib import Path
from typing import Any

from . import paths
from .io import jsonable, atomic_write_json, read_json


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def git_state() -> dict:
    """SHA of HEAD, whether tracked files differ from it and which (None outside a checkout)."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=paths.REPO, capture_output=True, text=True, timeout=20)

    try:
        sha = git("rev-parse", "HEAD")
        if sha.returncode != 0:
            return {"sha": None, "dirty": None}
        dirty = git("status", "--porcelain", "--untracked-files=no")
        files = sorted({line[3:].split(" -> ")[-1] for line in dirty.stdout.splitlines() if line.strip()})
        return {"sha": sha.stdout.strip(), "dirty": bool(files), "dirty_files": files[:200]}
    except (OSError, subprocess.SubprocessError):
        return {"sha": None, "dirty": None}


def versions() -> dict:
    """Interpreter, platform and library versions (read from package metadata: no imports)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version(), "platform": platform.platform()}
    for pkg in ("numpy", "torch", "pandas", "scipy", "papermill"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            continue
    return out


class Run:
    """A handle on one run directory, used by the notebooks."""

    def __init__(self, paper: str, profile: str, directory: Path, device_info=None, seed=None):
        from .seed import Streams

        self.paper, self.profile, self.dir = paper, profile, Path(directory)
        self.device_info, self.seed = device_info, seed
        self.streams = Streams(0 if seed is None else seed)

    # -- random streams (common.seed.Streams): every draw of a study comes from (seed, *keys) ----------------
    def rng(self, *keys):
        """The numpy Generator of the run's stream `keys`, e.g. `run.rng("codes", replicate)`."""
        return self.streams.rng(*keys)

    def torch_generator(self, *keys, device=None):
        """The torch.Generator of the run's stream `keys`, on `device` (default: the run's device)."""
        return self.streams.torch_generator(*keys, device=self.device if device is None else device)

    # -- opening ---------------------------------------------------------------------------
    @classmethod
    def open(cls, paper: str, profile: str, run_dir=None, params: dict | None = None, seed: int | None = None,
             device: str | None = None, select: bool = True) -> "Run":
        """Open (create) the run directory, seed everything, pick the device, record provenance.

        `run_dir=None` (a notebook opened by hand) means `<results>/<paper>/<profile>-interactive`,
        so interactive work never overwrites a runner's complete run.
        """
        from .device import select_device
        from .plots import set_theme
        from .seed import seed_everything

        directory = Path(run_dir) if run_dir else paths.results_root() / paper / f"{profile}-interactive"
        (directory / "figures").mkdir(parents=True, exist_ok=True)
        info = select_device(device) if select else None
        if seed is not None:
            seed_everything(seed)
        set_theme()
        run = cls(paper, profile, directory, info, seed)
        run.update_manifest(params=params or {})
        return run

    @property
    def device(self):
        import torch

        return self.device_info.device if self.device_info else torch.device("cpu")

    # -- writing ---------------------------------------------------------------------------
    def update_manifest(self, params: dict | None = None, **fields) -> None:
        """Merge into `manifest.json`: provenance (git, versions, device, seed) refreshed, `params` merged into
        its `parameters`, every other field set; written atomically. The runner records its own fields here."""
        path = self.dir / "manifest.json"
        man = read_json(path, default={}) or {}
        man.setdefault("paper", self.paper)
        man.setdefault("profile", self.profile)
        man.setdefault("started", now())
        man["git"] = git_state()
        man["versions"] = versions()
        if self.device_info is not None:
            man["device"] = self.device_info.record()
        if self.seed is not None:
            man["seed"] = self.seed
        if params:
            man.setdefault("parameters", {}).update(params)
        man.update(fields)
        man["updated"] = now()
        atomic_write_json(path, man)

    def log_metrics(self, metrics: dict[str, Any]) -> dict:
        """Merge `metrics` into `metrics.json`; returns the merged dict."""
        path = self.dir / "metrics.json"
        merged = read_json(path, default={}) or {}
        merged.update(jsonable(metrics))
        atomic_write_json(path, merged)
        self.record_streams()
        return merged

    def record_streams(self) -> None:
        """Add the stream keys this process drew (`run.streams.drawn()`) to the manifest's `streams`."""
        drawn = self.streams.drawn()
        if drawn:
            man = read_json(self.dir / "manifest.json", default={}) or {}
            self.update_manifest(streams=sorted(set(man.get("streams", [])) | set(drawn)))

    def metrics(self) -> dict:
        return read_json(self.dir / "metrics.json", default={}) or {}

    def save_figure(self, fig, name: str, caption: str = "", claims: tuple[str, ...] | list[str] = (),
                    vector: str | None = "svg") -> Path:
        """The PNG in `figures/`, and at the `full` profile a vector copy for print (`vector`; None: none); smoke
        and quick runs write PNG only, which is what the report shows (a vector copy of a scatter plot costs more
        than its PNG and weighs megabytes). `caption` (what the figure shows) and the ids of the `claims` it
        supports are recorded in `figures.json`, which the report prints under the image."""
        from .plots import save_figure

        png = save_figure(fig, name, self.dir / "figures", vector=vector if self.profile == "full" else None)
        path = self.dir / "figures.json"
        index = read_json(path, default={}) or {}
        index[name] = {"caption": caption, "claims": list(claims)}
        atomic_write_json(path, index)
        return png

    def figure_captions(self) -> dict:
        """{figure name: {"caption", "claims"}} of this run."""
        return read_json(self.dir / "figures.json", default={}) or {}

    def save_json(self, name: str, obj: Any) -> Path:
        return atomic_write_json(self.dir / name, obj)

    def log_inputs(self, provenance: list[dict] | dict) -> None:
        """Record input files (path, sha256, bytes) in the manifest's `inputs`."""
        items = provenance if isinstance(provenance, list) else [provenance]
        man = read_json(self.dir / "manifest.json", default={}) or {}
        known = {i["path"]: i for i in man.get("inputs", [])}
        for item in items:
            known[str(item["path"])] = dict(item, path=str(item["path"]))
        self.update_manifest(inputs=sorted(known.values(), key=lambda i: i["path"]))
