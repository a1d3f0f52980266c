"""Test-session defaults: notebooks run at the smoke profile, results go to a temporary folder."""
import os
import tempfile

os.environ.setdefault("REPRO_PROFILE", "smoke")
os.environ.setdefault("REPRO_RESULTS", tempfile.mkdtemp(prefix="repro-test-results-"))
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("REPRO_PROGRESS", "0")
