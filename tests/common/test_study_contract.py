"""The study interface holds in every paper, read from the syntax trees (common/README.md, the contract):
every study is `measure(cfg, run)`, every notebook opens its run through `common.study.open_run`, and every random
draw in `papers/` comes from a run's keyed stream (`run.rng(...)`, `run.streams`): no seed arithmetic, no
`manual_seed`, `default_rng`, `np.random.seed`, `RandomState` or `random.seed` in a paper."""
import ast
import json
from pathlib import Path

import pytest

from common import paths
from common.runner.registry import notebooks, papers, study_name

SEEDING_CALLS = {"manual_seed", "manual_seed_all", "default_rng", "RandomState", "SeedSequence", "seed_everything",
                 "numpy_rng", "torch_generator"}


def paper_modules(paper: str) -> list[Path]:
    return sorted(p for p in (paths.PAPERS / paper).rglob("*.py") if "__pycache__" not in p.parts)


def names_seed(node: ast.AST) -> bool:
    """`node` is a name or attribute that holds a seed (`seed`, `cfg.seed`, `base_seed`, `seeds[i]`), not a count
    or list of them (`cfg.tr_seeds`, `n_seeds`)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("int", "float") and node.args:
        node = node.args[0]                                   # int(seed) * 7919
    subscript = isinstance(node, ast.Subscript)
    if subscript:
        node = node.value
    name = (node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else "").lower()
    return "seed" in name and (subscript or not name.endswith("seeds"))


def seeding_problems(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) for each hand-made seed in a module: a call that seeds a generator by hand, or arithmetic on a
    seed. Keyed streams are methods (`run.rng`, `streams.torch_generator`), so only the bare names, the numpy and
    torch seeding calls and `random.seed`/`np.random.seed` count."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id in SEEDING_CALLS:
                out.append((node.lineno, f"{f.id}(...)"))
            elif isinstance(f, ast.Attribute) and f.attr in SEEDING_CALLS - {"numpy_rng", "torch_generator"}:
                out.append((node.lineno, f".{f.attr}(...)"))
            elif isinstance(f, ast.Attribute) and f.attr == "seed" and isinstance(f.value, (ast.Name, ast.Attribute)) \
                    and (getattr(f.value, "id", "") == "random" or getattr(f.value, "attr", "") == "random"):
                out.append((node.lineno, "random.seed(...)"))
        elif isinstance(node, ast.BinOp) and (names_seed(node.left) or names_seed(node.right)):
            out.append((node.lineno, "arithmetic on a seed"))
    return sorted(out)


def test_the_checker_finds_hand_made_seeds_and_passes_keyed_streams():
    bad = ("torch.manual_seed(int(seed) * 7919 + 17)\nrng = np.random.default_rng(seed * 100 + r)\n"
           "np.random.seed(1)\nrandom.seed(cfg.seed)\ng = torch.Generator().manual_seed(3)\nx = numpy_rng(seed, 'a')\n"
           "s = cfg.seed + 1\n")
    assert [line for line, _ in seeding_problems(ast.parse(bad))] == [1, 1, 2, 2, 3, 4, 5, 6, 7]
    good = "rng = run.rng('codes', r)\ng = run.streams.child('w', r).torch_generator('init')\nk = run.seed\n"
    assert seeding_problems(ast.parse(good)) == []


@pytest.mark.parametrize("paper", papers())
def test_no_paper_module_seeds_by_hand(paper):
    found = [f"{p.relative_to(paths.REPO)}:{line} {what}" for p in paper_modules(paper)
             for line, what in seeding_problems(ast.parse(p.read_text()))]
    assert not found, "seed by a keyed stream (run.rng / run.streams, common/study.py) instead:\n" + "\n".join(found)


@pytest.mark.parametrize("paper", papers())
def test_every_study_is_measure_cfg_run(paper):
    wrong = []
    for nb in notebooks(paper):
        path = paths.PAPERS / paper / "studies" / f"{study_name(nb)}.py"
        fn = next((n for n in ast.parse(path.read_text()).body
                   if isinstance(n, ast.FunctionDef) and n.name == "measure"), None)
        args = None if fn is None else [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
        if args != ["cfg", "run"] or fn.args.vararg or fn.args.kwarg:
            wrong.append(f"{path.relative_to(paths.REPO)}: measure({', '.join(args or [])})")
    assert not wrong, "every study is measure(cfg, run) (common/study.py):\n" + "\n".join(wrong)


@pytest.mark.parametrize("paper", papers())
def test_every_notebook_follows_the_template(paper):
    """Its parameters cell ends in `overrides = {}`, it opens the run with `open_run(...)` and calls
    `study.measure(cfg, run)` of its own study, and it never calls a paper's preflight or get_config itself."""
    wrong = []
    for nb in notebooks(paper):
        cells = [c for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "code"]
        params = next(("".join(c["source"]) for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])), "")
        code = "\n".join("".join(c["source"]) for c in cells)
        imports = f"from papers.{paper}.studies import {study_name(nb)} as study"
        problems = [what for what, bad in (
            ("no `overrides = {}` parameter", "overrides = {}" not in params),
            ("no `from common.study import open_run`", "from common.study import open_run" not in code),
            (f"no `{imports}`", imports not in code),
            ("no `cfg, run = open_run(...)`", f'cfg, run = open_run("{paper}", profile' not in code),
            ("no `study.measure(cfg, run)`", "study.measure(cfg, run)" not in code),
            ("calls preflight or get_config itself", "preflight(" in code or "get_config(" in code))
            if bad]
        wrong += [f"{nb.name}: {p}" for p in problems]
    assert not wrong, "\n".join(wrong)
