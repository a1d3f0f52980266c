"""The front door: the Makefile's documented targets, driven through `make` itself.

Every target `make help` lists runs here, for real on a tiny case or as `make -n`. One paper runs
for real (`make reproduce-<id> PROFILE=smoke`, the same smoke run the other papers get in
test_repository.py), and its report is opened in a headless browser when one is installed
(`make test-deps` installs Debian's chromium where it can).
"""
import os
import re
import shutil
import subprocess

import pytest

from common import paths
from common.runner.registry import papers as registered_papers

PAPERS = registered_papers()
MAKE_PAPER = "diffusion" if "diffusion" in PAPERS else (PAPERS[0] if PAPERS else None)  # the one run through make
VENV_PY = paths.REPO / ".venv" / "bin" / "python"
TARGETS = {"help", "setup", "data", "reproduce", "reproduce-<id>", "report", "readme", "test-deps", "test", "bench", "device-check", "budget", "lab", "clean", "distclean", "new-paper"}

pytestmark = pytest.mark.skipif(shutil.which("make") is None or not VENV_PY.exists(),
                                reason="needs GNU make and the project's .venv (make setup)")


def make(*args, results, timeout=120):
    """`make ARGS` in the repository with results in `results`; no make state inherited from a calling make."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    env["REPRO_RESULTS"] = str(results)
    return subprocess.run(["make", "--no-print-directory", *args], cwd=paths.REPO, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_help_lists_every_target_and_each_one_dry_runs(tmp_path):
    out = make("help", results=tmp_path)
    assert out.returncode == 0, out.stderr
    listed = {line.split()[0] for line in out.stdout.splitlines()[1:] if line.startswith("  ") and not line.startswith("  papers:")}
    assert listed == TARGETS
    assert out.stdout.splitlines()[-1] == f"  papers: {' '.join(PAPERS)}"
    for target in sorted(listed - {"help"}):
        name = target.replace("<id>", MAKE_PAPER)
        dry = make("-n", name, "PROFILE=smoke", "P=seed=1 x=2", "SEEDS=", "ID=dryrun_paper", results=tmp_path)
        assert dry.returncode == 0, (name, dry.stderr)
        if name.startswith("reproduce"):
            # data first, then the run, then the report (only after a run that completed)
            assert "common.download" in dry.stdout and "--profile smoke -p 'seed=1' -p 'x=2'" in dry.stdout, dry.stdout
            assert dry.stdout.index("common.download") < dry.stdout.index("common.reproduce") < dry.stdout.index("common.report")
    assert "common.reproduce all " in make("-n", "reproduce", results=tmp_path).stdout
    assert "--seeds 0 1 2" in make("-n", f"reproduce-{MAKE_PAPER}", "SEEDS=0 1 2", results=tmp_path).stdout
    assert "tmp_path_retention_policy=failed" in make("-n", "test", results=tmp_path).stdout  # pytest cleans up after itself
    assert not tmp_path.joinpath(MAKE_PAPER).exists()


def test_make_test_shares_the_cores_and_hands_out_the_longest_units_first(tmp_path, monkeypatch):
    """`make test`: one BLAS/OpenMP thread and one pool worker (REPRO_THREADS) per process on 2 cores (each of TEST_JOBS
    processes gets its share), and the
    work units of tests/conftest.py's LONGEST_FIRST handed out first, each unit's tests kept together and in order: a
    unit is a file, or a paper's notebooks with its runner check after them (which judges what nbval ran)."""
    from types import SimpleNamespace

    import tests.conftest as order
    from tests.conftest import LONGEST_FIRST, SMOKE_CHECK, pytest_collection_modifyitems, work_unit

    recipe = make("-n", "test", "TEST_JOBS=2", results=tmp_path).stdout
    assert "--dist loadfile --no-loadscope-reorder" in recipe          # xdist would reorder the units by test count
    script = recipe[recipe.index("n=$(nproc"):recipe.index("REPRO_RESULTS=")]
    for jobs, cores, threads in (("2", 2, 1), ("4", 2, 1), ("1", 2, 2), ("4", 16, 4), ("auto", 8, 1)):
        shell = script.replace("n=$(nproc 2>/dev/null || echo 2)", f"n={cores}").replace('case "2"', f'case "{jobs}"')
        shell = shell.replace("$((n / 2))", f"$((n / {jobs}))")
        env = subprocess.run(["sh", "-c", shell + " env"], capture_output=True, text=True).stdout.splitlines()
        assert {f"{v}={threads}" for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "REPRO_THREADS")} <= set(env), (jobs, cores)
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
    assert [u for u in LONGEST_FIRST if not (paths.REPO / u).exists()] == []    # a renamed file or paper is renamed here too
    assert SMOKE_CHECK.split("::")[1] in (paths.REPO / SMOKE_CHECK.split("::")[0]).read_text()
    assert work_unit("tests/a.py::x[1]") == "tests/a.py" and work_unit("tests/a.py::C::y") == "tests/a.py"
    assert work_unit("notebooks/p/01-a.ipynb::Cell 3") == work_unit(f"{SMOKE_CHECK}[p]") == "notebooks/p"
    first, second = "tests/common/test_makefile.py", "notebooks/nlm"
    ids = ["tests/a.py::x", f"{SMOKE_CHECK}[p]", f"{second}/02-b.ipynb::Cell 0", "tests/a.py::z[1]", f"{first}::w",
           "notebooks/p/01-a.ipynb::Cell 0", "notebooks/p/01-a.ipynb::Cell 1", f"{second}/01-a.ipynb::Cell 0", f"{SMOKE_CHECK}[nlm]"]
    items = [SimpleNamespace(nodeid=i) for i in ids]
    monkeypatch.setattr(order, "LONGEST_FIRST", (first, second))
    pytest_collection_modifyitems(None, items)
    assert [i.nodeid for i in items] == [f"{first}::w", f"{second}/02-b.ipynb::Cell 0", f"{second}/01-a.ipynb::Cell 0",
                                         f"{SMOKE_CHECK}[nlm]", "tests/a.py::x", "tests/a.py::z[1]",
                                         "notebooks/p/01-a.ipynb::Cell 0", "notebooks/p/01-a.ipynb::Cell 1", f"{SMOKE_CHECK}[p]"]


def test_unknown_paper_is_one_line_and_writes_nothing(tmp_path):
    results = tmp_path / "results"
    out = make("reproduce-nosuch", results=results)
    assert out.returncode == 2 and out.stdout == ""
    err = out.stderr.strip().splitlines()
    assert len(err) == 1 and "unknown paper 'nosuch'; choose one of: " + " ".join(PAPERS) in err[0], err
    assert not results.exists()


@pytest.mark.skipif(MAKE_PAPER is None, reason="no paper registered")
def test_make_reproduce_paper_runs_it_and_writes_the_report(tmp_path, check_smoke_run):
    results = tmp_path / "results"
    out = make("-o", ".venv/.installed", f"reproduce-{MAKE_PAPER}", "PROFILE=smoke", "P=seed=3", results=results, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    check_smoke_run(MAKE_PAPER, results / MAKE_PAPER / "smoke", seed=3)
    page = results / "report.html"
    assert page.exists() and (results / "REPORT.md").exists() and f"wrote {results / 'REPORT.md'}" in out.stdout
    stamp = page.stat().st_mtime_ns

    # a refused run (bad value) leaves the run and the report alone
    bad = make("-o", ".venv/.installed", f"reproduce-{MAKE_PAPER}", "PROFILE=smoke", "P=seed=abc", results=results)
    err = bad.stderr.strip().splitlines()  # the runner's one line, then make's own "*** [...] Error 2"
    assert bad.returncode == 2 and len(err) == 2 and err[0].startswith("error: parameter 'seed' must be an integer")
    assert err[1].startswith("make: *** ") and err[1].endswith("Error 2")
    assert page.stat().st_mtime_ns == stamp

    rebuilt = make("-o", ".venv/.installed", "report", results=results)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert f"{MAKE_PAPER} (smoke): " in rebuilt.stdout  # `make report` finds the smoke run by itself
    # the first screen's verdict chart and the paper's forest plot (its smoke claims) are in the page
    html = page.read_text()
    assert "<img src='evidence/verdicts.png'" in html and f"<img src='evidence/{MAKE_PAPER}-smoke.png'" in html
    check_in_browser(page, tmp_path)


def browser() -> str | None:
    return next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)


def check_in_browser(page, tmp_path):
    """The page renders in a real headless browser, with every image loaded."""
    exe = browser()
    if exe is None:
        pytest.skip("no headless browser (chromium): `make test-deps` installs Debian's chromium where root or sudo is available")
    flags = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--user-data-dir={tmp_path / 'chromium'}"]
    dom = subprocess.run([*flags, "--virtual-time-budget=10000", "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=180)
    assert dom.returncode == 0, dom.stderr[-2000:]
    n_img = page.read_text().count("<img ")
    assert n_img > 0
    loaded = re.search(r'data-images="(\d+)/(\d+)"', dom.stdout)
    assert loaded and loaded.groups() == (str(n_img), str(n_img)), (loaded and loaded.group(0), n_img)
    assert not re.search(r'<img[^>]*class="broken"', dom.stdout)
    wide = subprocess.run([*flags, "--window-size=1400,900", "--virtual-time-budget=10000", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=180)
    right = re.search(r'data-first-table-right="(\d+)"', wide.stdout)
    assert right and int(right.group(1)) <= 1400, right and right.group(0)   # the first table fits a 1400 px screen
    shot = tmp_path / "report.png"
    subprocess.run([*flags, "--window-size=1280,1600", f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=180)
    from PIL import Image

    with Image.open(shot) as im:  # drawn, not blank: tables, coloured verdicts and figures
        assert im.size == (1280, 1600) and len(im.convert("RGB").getcolors(1 << 24)) > 50
