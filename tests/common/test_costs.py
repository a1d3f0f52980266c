"""common.costs: where a notebook's time goes (the place rule, the attribution, the runner's renaming, the table)."""
import importlib.util

from common import costs, paths


def test_module_of_names_paper_and_common_files_only():
    assert costs.module_of(str(paths.REPO / "papers" / "acl" / "studies" / "fid.py")) == ("papers", "studies.fid")
    assert costs.module_of(str(paths.REPO / "common" / "runs.py")) == ("common", "common.runs")
    assert costs.module_of("/usr/lib/python3/site-packages/torch/nn/modules/module.py") is None


def test_place_is_the_outermost_paper_functions_then_common_then_notebook():
    ext = "/site-packages/ipykernel/kernelbase.py"
    paper = [(str(paths.REPO / "papers/acl/studies/ae.py"), "measure"), (str(paths.REPO / "papers/acl/acl.py"), "train"),
             (str(paths.REPO / "papers/acl/nets.py"), "Net.forward")]
    assert costs.place([(ext, "dispatch")] + paper + [("/site-packages/torch/functional.py", "mm")]) == \
        ("studies.ae.measure > acl.train", False)
    assert costs.place(paper[:1], depth=1) == ("studies.ae.measure", False)
    save = [(ext, "run"), (str(paths.REPO / "common/runs.py"), "Run.save_figure"),
            (str(paths.REPO / "common/plots.py"), "save_figure"), ("/site-packages/matplotlib/figure.py", "savefig")]
    assert costs.place(save) == ("common.runs.Run.save_figure", True)
    assert costs.place([(ext, "run"), ("<ipython-input-3>", "<module>")]) == ("notebook", False)


def test_sampler_attributes_wall_time_to_the_function_the_main_thread_is_in(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "REPO", tmp_path)
    src = tmp_path / "papers" / "toy" / "studies" / "slow.py"
    src.parent.mkdir(parents=True)
    src.write_text("import time\n\ndef measure(s):\n    time.sleep(s)\n")
    spec = importlib.util.spec_from_file_location("toy_slow", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sampler = costs.Sampler(tmp_path / "cost" / "x.json", interval=0.005, flush_s=0.05)
    sampler.start()
    mod.measure(0.5)
    sampler.stop()
    rec = sampler.record()
    got = rec["places"]["studies.slow.measure"]
    assert 0.4 <= got <= 0.6, rec                       # the 0.5 s sleep, within a few looks
    assert got > 0.7 * sum(rec["places"].values())
    assert (tmp_path / "cost" / "x.json").exists()


def test_runner_cell_starts_the_sampler_and_collect_names_the_record(tmp_path, monkeypatch):
    from common.runner.execute import RUNNER_CELL_TAG, with_runner_cells

    nb = with_runner_cells(paths.REPO / "notebooks" / "diffusion" / "01-fluctuation-theorems.ipynb", str(tmp_path))
    assert nb.cells[0].metadata["tags"] == nb.cells[-1].metadata["tags"] == [RUNNER_CELL_TAG]
    assert repr(str(tmp_path)) in nb.cells[0].source and "stop()" in nb.cells[-1].source
    tagged = [i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1 and tagged[0] > 0                    # papermill still finds the parameters cell
    first = costs.start(tmp_path)
    second = costs.start(tmp_path)             # a second notebook in the same kernel
    second.stop()
    assert first.before_s is None or first.before_s >= 0
    assert second.before_s in (0.0, None)      # the kernel's start counted once, with its first notebook
    monkeypatch.setattr(costs, "_active", None)
    rec = costs.collect(tmp_path, "02-train.ipynb", 12.345)
    assert rec["notebook_s"] == 12.35
    assert [p.name for p in (tmp_path / "cost").iterdir()] == ["02-train.json"]
    assert costs.collect(tmp_path, "03-none.ipynb", 1.0) is None


def test_summary_means_over_seeds_and_table_totals(tmp_path):
    for seed, (a, b) in enumerate([(10.0, 2.0), (20.0, 4.0)]):
        d = tmp_path / f"seed-{seed}" / "cost"
        d.mkdir(parents=True)
        (d / "01-x.json").write_text(
            f'{{"notebook_s": {a + b + 4}, "kernel_start_s": 3, "figures_s": 1, '
            f'"places": {{"imports": 0.5, "m > t": {a}, "notebook": {b}, "f": 0.5}}}}')
    rows = costs.summarize(costs.records(sorted(tmp_path.glob("seed-*"))), top=2)
    assert rows == [{"notebook": "01-x", "runs": 2, "notebook_s": 22.0, "start_s": 3.5, "figures_s": 1.0,
                     "top": [("m > t", 15.0), ("notebook", 3.0)], "other_s": 0.5}]
    lines = costs.table(rows)
    assert lines[2] == "| 01-x | 22.0 | 3.5 | 1.0 | `m > t` 15.0; `notebook` 3.0; other 0.5 |"
    assert lines[-1] == "| **all** | **22.0** | 3.5 | 1.0 | |"


def test_the_block_says_how_many_cores_the_runs_kept_busy(tmp_path):
    from common.costs import cores_line
    from common.io import atomic_write_json

    for k, used in ((0, 1.5), (1, 1.25)):
        atomic_write_json(tmp_path / f"seed-{k}" / "manifest.json", {"cores_used": used})
    line = cores_line([tmp_path / "seed-0", tmp_path / "seed-1"])
    assert "kept 1.25-1.50 of the machine's cores busy" in line
    assert "was not recorded" in line and "Not a timing" not in line     # runs made before the runner recorded it
    assert cores_line([tmp_path / "none"]) == ""
    for k, other in ((0, 0.05), (1, 0.15)):
        atomic_write_json(tmp_path / f"seed-{k}" / "manifest.json", {"cores_used": 1.5, "other_cores": other})
    line = cores_line([tmp_path / "seed-0", tmp_path / "seed-1"])
    assert "Other work took 0.05-0.15 cores beside them" in line and "Not a timing" not in line
    atomic_write_json(tmp_path / "seed-1" / "manifest.json", {"cores_used": 1.5, "other_cores": 0.9})
    assert "**Not a timing:**" in cores_line([tmp_path / "seed-0", tmp_path / "seed-1"])


def test_the_machines_busy_seconds_count_a_processs_work_and_the_runs_own_cpu_counts_its_waited_children():
    """`local.Usage`: a child busy-looping for 1 CPU second shows in the machine's busy seconds (/proc/stat, every
    process) and, once waited for, in the run's own CPU seconds (RUSAGE_CHILDREN), so it is not "other work"."""
    import subprocess
    import sys

    from common.runner import local

    usage = local.Usage()
    subprocess.run([sys.executable, "-c", "import time\nt = time.process_time()\nwhile time.process_time() - t < 1.0: pass"],
                   check=True)
    got = usage.now()
    assert got["busy"] is not None and got["busy"] >= 0.9
    assert got["cpu"] >= 0.9
    assert len(got["load_before"]) == 3
