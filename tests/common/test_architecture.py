"""The architecture's standing rules: every paper keeps the one contract with the runner, no module
imports itself round a cycle, no private name crosses a module boundary, notebooks stay thin."""
import ast
import json
from pathlib import Path

import pytest

from common import paths
from common.runner import registry

PAPERS = registry.papers()
MAX_NOTEBOOK_LINES = 40


def _modules() -> dict[str, Path]:
    """Dotted name -> file, for every module of `common` and `papers`."""
    out = {}
    for top in ("common", "papers"):
        for f in sorted((paths.REPO / top).rglob("*.py")):
            parts = f.relative_to(paths.REPO).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    return out


def imports_of(name: str, file: Path, known: set[str]) -> list[tuple[str, list[str], int]]:
    """(imported module, names imported from it, line) for every import anywhere in the file (inside
    functions too), relative imports resolved; only modules in `known`."""
    package = name if file.stem == "__init__" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(file.read_text())):
        if isinstance(node, ast.Import):
            out += [(a.name, [], node.lineno) for a in node.names if a.name in known]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            names = [a.name for a in node.names]
            subs = [f"{base}.{n}" for n in names if f"{base}.{n}" in known]
            if base in known:
                out.append((base, [n for n in names if f"{base}.{n}" not in known], node.lineno))
            out += [(s, [], node.lineno) for s in subs]
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), or a module importing itself."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    known = set(mods)
    graph = {}
    for name, f in mods.items():
        # a module importing its own package's __init__ is not a cycle of code (the package is a namespace)
        graph[name] = {m for m, _, _ in imports_of(name, f, known) if m != name and not name.startswith(m + ".")}
    return graph


def test_no_import_cycles_anywhere():
    """Walks every import of common/ and papers/, those inside functions too."""
    assert cycles(_graph()) == []


def test_the_cycle_finder_finds_cycles():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    assert cycles({"a": {"a"}}) == [["a"]]


def _importers() -> dict[str, Path]:
    """Every module of `common` and `papers`, and the tests and benchmarks that import them."""
    out = dict(_modules())
    for top in ("tests", "benchmarks"):
        for f in sorted((paths.REPO / top).rglob("*.py")):
            out[".".join(f.relative_to(paths.REPO).with_suffix("").parts)] = f
    out["conftest"] = paths.REPO / "conftest.py"
    return out


def test_no_private_name_crosses_a_module_boundary():
    """`from m import _x` and `m._x` (m a module of this repository) are refused, in the tests and benchmarks
    too: a name used by another module is public and documented."""
    known = set(_modules())
    found = []
    for name, f in _importers().items():
        tree = ast.parse(f.read_text())
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in known:
                        aliases[a.asname or a.name.split(".")[0]] = a.name
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)   # x = load_benchmark("name")
                    and getattr(node.value.func, "id", getattr(node.value.func, "attr", None)) == "load_benchmark"
                    and node.value.args and isinstance(node.value.args[0], ast.Constant)):
                aliases.update({tg.id: f"benchmarks.{node.value.args[0].value}" for tg in node.targets
                                if isinstance(tg, ast.Name)})
        for mod, names, line in imports_of(name, f, known):
            found += [f"{f.relative_to(paths.REPO)}:{line}: from {mod} import {n}" for n in names
                      if n.startswith("_") and not n.startswith("__")]
            for n in names:
                if f"{mod}.{n}" in known:
                    aliases[n] = f"{mod}.{n}"
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                for a in node.names:
                    target = f"{node.module}.{a.name}" if node.module else None
                    if target in known:
                        aliases[a.asname or a.name] = target
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not node.attr.startswith("__") and aliases[node.value.id] != name):
                found.append(f"{f.relative_to(paths.REPO)}:{node.lineno}: {node.value.id}.{node.attr}")
    assert found == []


def _code_lines(nb: Path) -> int:
    cells = json.loads(nb.read_text())["cells"]
    return sum(1 for c in cells if c["cell_type"] == "code" for ln in "".join(c["source"]).splitlines()
               if ln.strip() and not ln.strip().startswith("#"))


@pytest.mark.parametrize("nb", sorted(paths.NOTEBOOKS.glob("*/*.ipynb")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_notebooks_are_thin(nb):
    """A notebook is its parameters, one call into its study module, plots and log_metrics."""
    assert _code_lines(nb) <= MAX_NOTEBOOK_LINES, f"{_code_lines(nb)} code lines; move the logic into papers/<id>/studies/"
    study = f"papers.{nb.parent.name}.studies.{registry.study_name(nb)}"
    assert study in _imported_modules(nb), f"the notebook does not import its study module {study}"


def _imported_modules(nb: Path) -> set[str]:
    """Dotted modules a notebook's code cells import (`import a.b`, `from a import b`, `from a.b import c`)."""
    out = set()
    for c in json.loads(nb.read_text())["cells"]:
        if c["cell_type"] != "code":
            continue
        src = "\n".join(ln for ln in "".join(c["source"]).splitlines() if not ln.lstrip().startswith(("%", "!")))
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.Import):
                out.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                out.add(node.module)
                out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


@pytest.mark.parametrize("paper", PAPERS)
def test_every_paper_keeps_the_contract(paper):
    """config.py exports PROFILES, get_config(profile, **params) and preflight(cfg); every notebook has a
    study module; TUNED names, for settings of the profiles, the development run that chose them."""
    assert registry.contract_problems(paper) == []
    cfg_mod = registry.config(paper)
    cfg = cfg_mod.get_config("smoke")
    assert cfg.profile == "smoke"
    assert cfg_mod.preflight(cfg) is None                    # smoke needs nothing beyond the repository
    tuned = getattr(cfg_mod, "TUNED", None)
    assert isinstance(tuned, dict)
    from common.claims import load_claims

    claim_ids = {c.id for c in load_claims(paths.PAPERS / paper / "claims.yaml")}
    for key, spec in tuned.items():
        assert any(key in p for p in cfg_mod.PROFILES.values()) or key in claim_ids, \
            f"TUNED names {key!r}, which is neither a profile key nor a claim (whose criterion was tuned)"
        assert set(spec) == {"result", "show", "why"} and spec["why"].strip() and spec["show"], key
    for nb in registry.notebooks(paper):
        module = __import__(f"papers.{paper}.studies.{registry.study_name(nb)}", fromlist=["measure"])
        assert callable(getattr(module, "measure", None)), f"{module.__name__} has no measure()"


def test_the_contract_check_names_what_a_paper_lacks(tmp_path, monkeypatch):
    (tmp_path / "papers" / "toy").mkdir(parents=True)
    (tmp_path / "notebooks" / "toy").mkdir(parents=True)
    (tmp_path / "notebooks" / "toy" / "01-some-topic.ipynb").write_text("{}")
    monkeypatch.setattr(paths, "PAPERS", tmp_path / "papers")
    monkeypatch.setattr(paths, "NOTEBOOKS", tmp_path / "notebooks")
    import types
    monkeypatch.setattr(registry, "config", lambda paper: types.SimpleNamespace(PROFILES={"smoke": {}, "quick": {}},
                                                                                 BOUNDS={"n": {"min": 1}}))
    assert registry.contract_problems("toy") == [
        "config.py does not define preflight", "config.py does not define TUNED",
        "config.PROFILES must be a dict with exactly the profiles smoke, quick, full",
        "config.BOUNDS names n, which no profile holds",
        "notebook 01-some-topic.ipynb has no study module papers/toy/studies/some_topic.py"]


def test_documentation_modules_are_run_by_no_notebook():
    """`papers/<id>/cost*` and `papers/<id>/describe*` never make a run stale (`common.stamp.DOCUMENTATION`), so no
    notebook and no other module of a paper may import them."""
    from common.stamp import DOCUMENTATION

    mods = _modules()
    docs = {n for n, f in mods.items() if n.startswith("papers.") and any(f.match(p + ".py") for p in DOCUMENTATION)}
    bad = [f"{n} imports {m}" for n, f in mods.items() if n.startswith("papers.") and n not in docs
           for m, _, _ in imports_of(n, f, set(mods)) if m in docs]
    bad += [f"{nb.name} imports {m}" for nb in sorted(paths.NOTEBOOKS.rglob("*.ipynb")) for m in _imported_modules(nb) & docs]
    assert bad == []
