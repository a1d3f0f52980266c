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
