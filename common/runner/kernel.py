"""One kernel for a paper's notebooks at one seed: started once, reset between notebooks.

Starting a kernel and importing torch, matplotlib, seaborn and the paper's modules cost about 2.5 s per
notebook on a 2-core machine (`common.costs` measures it as "kernel start + imports"), more than some
notebooks compute. The runner therefore executes a paper's notebooks in name order in one kernel
(`SharedKernel`), each starting with `fresh`: an empty user namespace (IPython's `%reset -f`), every figure
closed, garbage collected, the GPU cache emptied, and the process state a notebook may change without
naming it put back as the kernel started (`KernelState`: torch's thread count, default dtype and grad mode,
the warning filters, numpy's error handling and the environment variables; a notebook that leaves torch on
one thread would otherwise slow, and change the float rounding of, the next one). What survives is what a
notebook cannot see by name: the imported modules (so imports are paid once) and the device's
initialisation. Every notebook seeds
everything itself (`Run.open`), so no random stream depends on the notebook before it; the test suite
checks that a paper's numbers are the same either way. A notebook opened in JupyterLab runs in its own
kernel as always.
"""
from __future__ import annotations

import gc
import sys
from pathlib import Path


class KernelState:
    """What a notebook can change in its process without naming it, as the kernel's first notebook found it."""

    def __init__(self):
        import os
        import warnings

        import numpy as np
        import torch

        self.threads, self.dtype = torch.get_num_threads(), torch.get_default_dtype()
        self.filters, self.np_err = list(warnings.filters), np.geterr()
        self.environ = dict(os.environ)

    def restore(self) -> None:
        import os
        import warnings

        import numpy as np
        import torch

        torch.set_num_threads(self.threads)
        torch.set_default_dtype(self.dtype)
        torch.set_grad_enabled(True)
        warnings.filters[:] = self.filters
        np.seterr(**self.np_err)
        for k in set(os.environ) - set(self.environ):
            del os.environ[k]
        os.environ.update(self.environ)


_state: KernelState | None = None
_later: tuple[str, ...] | None = None   # the notebooks this kernel runs after the current one (None: not the runner's)


def fresh(run_dir: str, later: tuple[str, ...] | list[str] = ()) -> None:
    """The first cell of every notebook the runner executes: a clean namespace and process state, then the
    time sampler. `later`: the file names of the notebooks the runner runs in this kernel after this one
    (`runs_later`)."""
    global _state
    announce(later)
    from .. import costs, workerstart

    ip = sys.modules.get("IPython") and sys.modules["IPython"].get_ipython()
    if ip is not None:
        dunders = {k: v for k, v in ip.user_ns.items() if k.startswith("__") and k.endswith("__")}
        ip.run_line_magic("reset", "-f")
        for k, v in dunders.items():     # `__spec__`, `__name__`, ...: what multiprocessing's spawn reads of __main__
            ip.user_ns.setdefault(k, v)
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close("all")
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()
    if _state is None:
        _state = KernelState()
        workerstart.warm()      # pool workers' server: its imports run beside this kernel's first notebook
    else:
        _state.restore()
    costs.start(run_dir)


def announce(later) -> None:
    """Set what `runs_later` reads: the file names of the notebooks this kernel runs after the current one (`fresh`
    does, from the runner's first cell), or None: nothing later is known, as in a kernel the runner did not start."""
    global _later
    _later = None if later is None else tuple(later)


def runs_later(stem: str) -> bool:
    """Whether the runner runs notebook `stem` (its file name without `.ipynb`, e.g. "04-cluster") in this kernel
    after the current notebook. False in a kernel the runner did not start (a notebook opened in JupyterLab, a
    paper's function called from a script or a test), where nothing later is known: a paper's work for a later
    notebook, started early to use an idle core, is then not started."""
    return _later is not None and any(Path(name).stem == stem for name in _later)


class SharedKernel:
    """The kernel manager that `run_notebook` hands to papermill for every notebook of one sequence;
    `close` shuts the kernel down (also when a notebook failed)."""

    def __init__(self):
        self.km = None

    def manager(self):
        if self.km is None:
            from jupyter_client.manager import KernelManager

            self.km = KernelManager(kernel_name="python3")
        return self.km

    def close(self) -> None:
        """Shut the kernel down and forget it (also one that did not start or died): the next notebook starts
        another."""
        km, self.km = self.km, None
        if km is not None and km.has_kernel:
            try:
                km.shutdown_kernel(now=True)
            except Exception:  # noqa: BLE001 (a dead kernel has nothing left to shut down)
                pass

    def __enter__(self) -> "SharedKernel":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
