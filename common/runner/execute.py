"""Notebook execution: one notebook under papermill, and a paper's notebooks in name order into a folder.

Each notebook runs in a fresh `python3` kernel with the repository as working directory, a per-cell
timeout and the run's parameters injected after its `parameters` cell. A failing cell, a dead kernel
or a timeout is a `NotebookFailed` naming the notebook; a kernel that never came up is started once
more (`KERNEL_START_FAILURES`).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from .. import costs, paths
from . import registry
from .kernel import SharedKernel
from .params import OVERRIDES

RUNNER_CELL_TAG = "runner-cell"
# No kernel log chatter: start-up, and "KeyboardInterrupt caught in kernel" from the SIGINT that jupyter_client
# sends on every shutdown.
KERNEL_ARGUMENTS = ["--IPKernelApp.log_level=CRITICAL"]

DEFAULT_CELL_TIMEOUT = {"smoke": 600, "quick": 1800, "full": 24 * 3600}   # seconds per cell, unless --timeout

# A kernel that never came up: no cell ran, so starting another is safe. Kernels started at the same time
# (seeds fanned out to threads or workers) can draw the same free port and one dies binding it
# ("Address already in use"); jupyter_client then reports one of these.
KERNEL_START_FAILURES = ("Kernel didn't respond", "Kernel died before replying to kernel_info")


class NotebookFailed(Exception):
    """A notebook that did not run to its end: which one, and the error (`ename`, `evalue`) it stopped with."""

    def __init__(self, notebook: Path, ename: str, evalue: str):
        super().__init__(f"{notebook.name}: {ename}: {evalue}")
        self.notebook, self.ename, self.evalue = notebook, ename, evalue


def with_runner_cells(notebook: Path, run_dir: str, final: bool = False, later: tuple[str, ...] = ()):
    """The notebook (an nbformat node) with the runner's first and last cells (tagged `RUNNER_CELL_TAG`): a clean
    namespace in a shared kernel, the names of the notebooks that follow it there (`later`:
    `common.runner.kernel.runs_later`) and the start of the sampler of where its time goes
    (`common.runner.kernel.fresh`), and the sampler's stop (`common.costs.stop`). In the kernel's `final` notebook the
    last cell also releases what the kernel holds (`common.lifetime.end`: the pool workers' server, a paper's kept
    pools or zygote): the runner ends a kernel with a kill, and a child reaped by its kernel brings its CPU time
    into the run's `cores_used`."""
    import nbformat

    nb = nbformat.read(str(notebook), as_version=4)
    cell = nbformat.v4.new_code_cell(f'__import__("common.runner.kernel", fromlist=["fresh"]).fresh({str(run_dir)!r}, '
                                     f'{tuple(later)!r})  # added by the runner: a clean namespace, the notebooks that '
                                     "follow in this kernel, and where the time goes (common.costs)")
    cell.metadata["tags"] = [RUNNER_CELL_TAG]
    stop = '__import__("common.costs", fromlist=["stop"]).stop()'
    if final:
        stop += '; __import__("common.lifetime", fromlist=["end"]).end()'
    last = nbformat.v4.new_code_cell(stop + "  # added by the runner")
    last.metadata["tags"] = [RUNNER_CELL_TAG]
    nb.cells = [cell, *nb.cells, last]
    return nb


def run_notebook(nb: Path, out: Path, parameters: dict, timeout: int, quiet: bool, attempts: int = 2,
                 kernel: SharedKernel | None = None, final: bool = True, later: tuple[str, ...] = ()) -> float:
    """Execute `nb` into `out` with `parameters` injected; its wall time in seconds, or `NotebookFailed`.
    With `parameters["run_dir"]`, the notebook starts with the runner's cell (`with_runner_cells`); with a
    `kernel`, it runs in that shared kernel (started by the first notebook that needs it); `final`: the kernel's last
    notebook; `later`: the file names of the notebooks that follow it in that kernel (`with_runner_cells`)."""
    import papermill as pm

    source = with_runner_cells(nb, parameters["run_dir"], final, later) if "run_dir" in parameters else str(nb)
    start = time.perf_counter()
    for attempt in range(1, attempts + 1):
        shared = {"km": kernel.manager()} if kernel is not None else {}
        try:
            pm.execute_notebook(
                source, str(out), parameters=parameters, kernel_name="python3", language="python",
                cwd=str(paths.REPO), execution_timeout=timeout, progress_bar=not quiet and sys.stderr.isatty(),
                log_output=False, report_mode=False, extra_arguments=KERNEL_ARGUMENTS, **shared,
            )
            break
        except pm.PapermillExecutionError as err:
            raise NotebookFailed(nb, err.ename, str(err.evalue).strip().splitlines()[-1] if str(err.evalue).strip() else "") from None
        except Exception as err:  # dead kernel, timeout, ...
            if kernel is not None:
                kernel.close()
            first = str(err).strip().splitlines()[0] if str(err).strip() else ""
            if attempt < attempts and isinstance(err, RuntimeError) and first.startswith(KERNEL_START_FAILURES):
                print(f"{nb.name}: the kernel did not start ({first}); starting another", file=sys.stderr, flush=True)
                continue
            raise NotebookFailed(nb, type(err).__name__, first) from None
    return time.perf_counter() - start


def run_notebooks(paper: str, profile: str, params: dict, declared: dict[Path, dict], device: str | None,
                  timeout: int, quiet: bool, out: Path, label: str = "",
                  executed: list | None = None) -> tuple[list[dict], NotebookFailed | None]:
    """Run every notebook of `declared` (notebook -> its parameters) into `out`, each given the parameters it
    declares, appending a record of each to `executed`; stops at the first failure, which it returns."""
    (out / "notebooks").mkdir(parents=True, exist_ok=True)
    executed = [] if executed is None else executed
    names = [nb.name for nb in declared]
    with SharedKernel() as kernel:      # one kernel for the sequence (common/runner/kernel.py)
        for i, (nb, own) in enumerate(declared.items()):
            injected = {k: v for k, v in params.items() if k in own}
            if OVERRIDES in own:       # the template's dict of profile keys (common/study.py)
                keys = registry.profile_keys(paper)
                injected[OVERRIDES] = {k: v for k, v in params.items() if k in keys and k not in own}
            injected.update(profile=profile, run_dir=str(out))
            if device is not None and "device" in own:
                injected["device"] = device
            print(f"[{paper}/{profile}{label}] {nb.name} ...", file=sys.stderr, flush=True)
            try:
                secs = run_notebook(nb, out / "notebooks" / nb.name, injected, timeout, quiet, kernel=kernel,
                                    final=i == len(declared) - 1, later=tuple(names[i + 1:]))
                costs.collect(out, nb.name, secs)
                executed.append({"notebook": nb.name, "seconds": round(secs, 2), "parameters": injected, "status": "ok"})
            except NotebookFailed as err:
                executed.append({"notebook": nb.name, "parameters": injected, "status": "failed",
                                 "error": f"{err.ename}: {err.evalue}"})
                return executed, err
            except KeyboardInterrupt:
                executed.append({"notebook": nb.name, "parameters": injected, "status": "interrupted"})
                raise
    return executed, None
