"""Test-session defaults: notebooks run at the smoke profile, results go to a temporary folder
(removed at exit unless the caller chose REPRO_RESULTS, as `make test` does)."""
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

# A shell starts background jobs (`make test &`, nohup) with SIGINT ignored, and children inherit
# that: the Ctrl-C tests would then test nothing. Tests (and the processes they start) get Python's
# own Ctrl-C back.
import signal  # noqa: E402

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _restore_environment():
    """The runner sets REPRO_PROFILE, REPRO_RESULTS and PATH for its kernels; a test that calls it in
    process must not leave them to the next test (or to the notebooks that nbval runs after it)."""
    saved = dict(os.environ)
    yield
    if os.environ != saved:
        os.environ.clear()
        os.environ.update(saved)


# Notebooks run in this process (any test folder): the runner's logic without a kernel start-up.
def exec_in_process(calls: list):
    """A stand-in for `reproduce.execute` that execs the notebook's cells in this process (parameters cell,
    then the injected values, then the rest), recording (notebook name, parameters) in `calls`."""
    from common import reproduce

    def execute(nb, out, parameters, timeout, quiet):
        calls.append((nb.name, dict(parameters)))
        import nbformat

        book = nbformat.read(nb, as_version=4)
        scope: dict = {}
        try:
            for cell in book.cells:
                if cell.cell_type != "code":
                    continue
                exec(cell.source, scope)
                if "parameters" in cell.metadata.get("tags", []):
                    scope.update(parameters)
        except Exception as err:  # as papermill reports a failing cell
            raise reproduce.NotebookFailed(nb, type(err).__name__, str(err)) from None
        finally:  # a kernel's figures die with it
            import matplotlib.pyplot as plt

            plt.close("all")
        nbformat.write(book, out)
        return 0.0

    return execute


@pytest.fixture
def in_process_executor():
    """`exec_in_process`, for a test that runs some notebooks in this process and others in a kernel."""
    return exec_in_process


@pytest.fixture
def in_process(monkeypatch):
    """Run notebooks by exec-ing their cells in this process in place of a papermill kernel: the runner's
    logic, seconds faster."""
    from common import reproduce

    calls: list = []
    monkeypatch.setattr(reproduce, "execute", exec_in_process(calls))
    return calls
