"""The runner tells each notebook of a shared kernel which notebooks follow it there (`common.runner.kernel.runs_later`):
the only way a notebook's work-ahead for a later one (nlm's notebook 01 for its 04) knows that later one will run."""
from common import paths
from common.runner import execute, kernel


def test_run_notebooks_tells_each_notebook_the_notebooks_that_follow_it_in_the_kernel(tmp_path, monkeypatch):
    seen = []

    def record(nb, out, injected, timeout, quiet, kernel=None, final=True, later=()):
        seen.append((nb.name, final, later))
        return 1.0

    monkeypatch.setattr(execute, "run_notebook", record)
    declared = {tmp_path / f"{name}.ipynb": {} for name in ("01-a", "02-b", "03-c")}
    executed, failed = execute.run_notebooks("toy", "smoke", {}, declared, None, 60, True, tmp_path / "out")
    assert failed is None and [e["status"] for e in executed] == ["ok"] * 3
    assert seen == [("01-a.ipynb", False, ("02-b.ipynb", "03-c.ipynb")), ("02-b.ipynb", False, ("03-c.ipynb",)),
                    ("03-c.ipynb", True, ())]


def test_the_runner_cell_carries_them_and_runs_later_reads_them(tmp_path):
    nb = paths.REPO / "notebooks" / "diffusion" / "01-fluctuation-theorems.ipynb"
    first = execute.with_runner_cells(nb, str(tmp_path), later=("02-b.ipynb", "04-exploration.ipynb")).cells[0].source
    assert f"fresh({str(tmp_path)!r}, ('02-b.ipynb', '04-exploration.ipynb'))" in first
    assert f"fresh({str(tmp_path)!r}, ())" in execute.with_runner_cells(nb, str(tmp_path)).cells[0].source
    kernel.announce(None)                                  # a kernel the runner did not start: nothing later is known
    assert not kernel.runs_later("04-exploration")
    kernel.announce(["02-b.ipynb", "04-exploration.ipynb"])
    assert kernel.runs_later("04-exploration") and kernel.runs_later("02-b")
    assert not kernel.runs_later("03-c") and not kernel.runs_later("04") and not kernel.runs_later("01-fluctuation-theorems")
    kernel.announce(())                                    # the runner's last notebook: nothing follows
    assert not kernel.runs_later("02-b")
    kernel.announce(None)
