"""Test-session defaults: notebooks run at the smoke profile, results go to a temporary folder
(removed at exit unless the caller chose REPRO_RESULTS, as `make test` does), and everything runs on the
CPU unless the session asks for a device: `REPRO_TEST_DEVICE=cuda make test` runs the same suite with the
notebooks and papers on the GPU and enables the tests marked `cuda`, which are skipped otherwise (with the
reason). So `make test` on a GPU workstation is the suite CI runs."""
import atexit
import os
import shutil
import tempfile

os.environ.setdefault("REPRO_PROFILE", "smoke")
if "REPRO_RESULTS" not in os.environ:
    _tmp = tempfile.mkdtemp(prefix="repro-test-results-")
    os.environ["REPRO_RESULTS"] = _tmp
    atexit.register(shutil.rmtree, _tmp, ignore_errors=True)
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("REPRO_PROGRESS", "0")
# The device of the test session: the CPU unless REPRO_TEST_DEVICE names another (cuda, rocm answers to cuda).
TEST_DEVICE = os.environ.get("REPRO_TEST_DEVICE", "").strip().lower() or "cpu"
os.environ["REPRO_DEVICE"] = TEST_DEVICE

# A shell starts background jobs (`make test &`, nohup) with SIGINT ignored, and children inherit
# that: the Ctrl-C tests would then test nothing. Tests (and the processes they start) get Python's
# own Ctrl-C back.
import signal  # noqa: E402

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


import pytest  # noqa: E402


def cuda_skip_reason() -> str | None:
    """Why the tests marked `cuda` cannot run in this session (None: they run)."""
    if not TEST_DEVICE.startswith("cuda"):
        return "a CUDA test: runs with REPRO_TEST_DEVICE=cuda on a machine whose torch sees a GPU"
    import torch

    if not torch.cuda.is_available():
        return "REPRO_TEST_DEVICE=cuda, but torch sees no CUDA device"
    return None


def pytest_collection_modifyitems(config, items):
    marked = [item for item in items if item.get_closest_marker("cuda")]
    reason = cuda_skip_reason() if marked else None
    if reason:
        for item in marked:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture
def test_device() -> str:
    """The test session's device: "cpu" unless REPRO_TEST_DEVICE names another."""
    return TEST_DEVICE


@pytest.fixture(autouse=True)
def _restore_environment():
    """The runner sets REPRO_PROFILE, REPRO_RESULTS and PATH for its kernels; a test that calls it in
    process must not leave them to the next test (or to the notebooks that nbval runs after it)."""
    saved = dict(os.environ)
    yield
    if os.environ != saved:
        os.environ.clear()
        os.environ.update(saved)


# Notebooks run in this process (any test folder): the runner's logic without a kernel start-up, and without
# the notebook stack (papermill, nbformat), which a bare GPU image lacks: the CUDA tests run there. The runner reads
# the notebooks' parameters without it (`common.runner.params.code_cells`).
def exec_in_process(calls: list):
    """A stand-in for `common.runner.execute.run_notebook` that execs the notebook's cells in this process (parameters cell,
    then the injected values, then the rest), recording (notebook name, parameters) in `calls`. No runner cells run
    here (`final`, the kernel's last notebook, has nothing to stop: a pool server started here ends with the tests; `later`,
    the notebooks that follow, is announced by no runner cell, so no paper starts work ahead for them)."""
    from common.runner.execute import NotebookFailed
    from common.runner.params import code_cells

    def execute(nb, out, parameters, timeout, quiet, kernel=None, final=True, later=()):
        import shutil

        calls.append((nb.name, dict(parameters)))
        scope: dict = {}
        try:
            for src, tags in code_cells(nb):
                exec(src, scope)
                if "parameters" in tags:
                    scope.update(parameters)
        except Exception as err:  # as papermill reports a failing cell
            raise NotebookFailed(nb, type(err).__name__, str(err)) from None
        finally:  # a kernel's figures die with it
            import matplotlib.pyplot as plt

            plt.close("all")
        shutil.copyfile(nb, out)
        return 0.0

    return execute


@pytest.fixture
def in_process_executor():
    """`exec_in_process`, for a test that runs some notebooks in this process and others in a kernel."""
    return exec_in_process


@pytest.fixture
def in_process(monkeypatch):
    """Run notebooks by exec-ing their cells in this process in place of a papermill kernel: the runner's
    logic, seconds faster, also where papermill and nbformat are missing (a bare GPU image)."""
    from common.runner import execute

    calls: list = []
    monkeypatch.setattr(execute, "run_notebook", exec_in_process(calls))
    return calls


# What nbval executed in this process (tests/nbval_runs.py): a paper's runner check judges those executions.
def _is_notebook(item) -> bool:
    return str(item.path).endswith(".ipynb")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if _is_notebook(item):
        from tests import nbval_runs

        nbval_runs.start(item)


@pytest.hookimpl(hookwrapper=True)     # the old-style wrapper: any pytest the CUDA images carry has it
def pytest_runtest_makereport(item, call):
    outcome = yield
    if _is_notebook(item):
        from tests import nbval_runs

        nbval_runs.record(item, outcome.get_result())


@pytest.fixture
def after_nbval(in_process, monkeypatch):
    """`in_process`, except that a paper whose notebooks nbval ran to their end in this process (a fresh kernel each,
    default parameters) is not executed again: the runner gets what those executions wrote (tests/nbval_runs.py).
    The list it returns gets (notebook name, parameters, "nbval" or "in process") per notebook."""
    from common.runner import execute
    from tests.nbval_runs import Replay

    calls: list = []
    monkeypatch.setattr(execute, "run_notebook", Replay(calls, exec_in_process))
    return calls


class GpuPeak:
    """Whether the code run since `reset()` took GPU memory of its own: the peak is reset and what is already
    allocated (by earlier tests of the session) is the base the peak must exceed."""

    def reset(self) -> None:
        import torch

        torch.cuda.reset_peak_memory_stats()
        self.base = torch.cuda.memory_allocated()

    def grew(self) -> bool:
        import torch

        return torch.cuda.max_memory_allocated() > self.base


@pytest.fixture
def gpu_peak() -> GpuPeak:
    """For the `cuda` tests: `gpu_peak.reset()` before the code, `gpu_peak.grew()` after (a silent CPU fallback
    takes no GPU memory)."""
    return GpuPeak()
