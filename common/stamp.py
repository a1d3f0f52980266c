"""Is a run still the code's result? The revision stamp of generated tables and of the report.

A run's manifest records the git revision it ran at (and the tracked files that differed from it).
`staleness` compares that with the working tree now, over the files that decide a paper's numbers:
`papers/<id>/` and `notebooks/<id>/` and the modules of `common/` that the paper's code, its notebooks
or the runner import, directly or through each other (`common_files`: a common module that none of
them reaches cannot change the paper's numbers), leaving out prose (`*.md`) and four kinds of file
named by folder or name prefix, never by single file, so that splitting a module into several (or into a
package) never silently moves code from one kind to another:

- `PRESENTATION`: what only presents, observes or orchestrates a run (the runner package `common/runner/`,
  the report, the README generator, these stamps, the evidence plots, the cluster fan-out, the sampler of
  where a notebook's time goes and the CPU record it is stamped with); the manifest records the runner's
  parameters and executed notebooks.
- `TUNING`: a paper's development-seed runs and investigations (`papers/<id>/devtune*`,
  `papers/<id>/investigations*`, whose imports do not count either), `common/devseeds*` (which seeds
  may run, never a number) and `common/decidability*` (the checks of a development run): no notebook runs
  them; what they chose is in the paper's config.
- `DOCUMENTATION`: a paper's full-profile cost model and the description of its profile keys
  (`papers/<id>/cost*`, `papers/<id>/describe*`, and what only they import): no notebook runs them.
- `JUDGING`: what decides the verdicts rather than the numbers: the judging code (`common/claims*`, and
  `common/decide*`, which says what sample would decide an inconclusive claim); and the
  claims file (its sha256 is in the manifest). Those are flagged on their own, and `--rejudge` mends them
  without a rerun.

A pattern is a git pathspec: `*` matches across `/`, so `common/report*` holds `common/report.py` and a
future `common/report/` package alike.
"""
from __future__ import annotations

import ast
import fnmatch
import json
import subprocess
from pathlib import Path

from . import paths
from .io import sha256_file


PRESENTATION = ("common/runner/*", "common/reproduce*", "common/report*", "common/readme*", "common/stamp*",
                "common/evidence*", "common/cluster*", "common/costs*", "common/machine*")
JUDGING = ("common/claims*", "common/decide*")   # `decide`: what would decide an inconclusive claim
TUNING = ("devtune*", "investigations*")   # under papers/<id>/: development-seed runs, investigations
DOCUMENTATION = ("cost*", "describe*")     # under papers/<id>/: the full profile's cost model and what each profile
                                           # key means: no notebook runs them (the architecture test checks that)
TUNING_COMMON = ("common/devseeds*", "common/decidability*")  # the development-seed range, records and checks:
                                           # decide which runs may happen, never a number (the runner imports
                                           # devseeds for its refusal)


RUNNER = "common.reproduce"   # every paper's notebooks run through it: its imports count for all


def _matches(f: str, patterns) -> bool:
    return any(fnmatch.fnmatch(f, pat) for pat in patterns)


def tuning_patterns(paper: str) -> list[str]:
    """The pathspecs of a paper's development runs and investigations, and of common's development-seed module."""
    return [f"papers/{paper}/{t}" for t in TUNING] + list(TUNING_COMMON)


def documentation_patterns(paper: str) -> list[str]:
    """The pathspecs of a paper's documentation modules (`DOCUMENTATION`): never a run's number."""
    return [f"papers/{paper}/{t}" for t in DOCUMENTATION]


def _common_imports(source: str, package: str | None) -> set[str] | None:
    """Dotted names of the `common` modules a source imports (None: it does not parse). `package`: the
    dotted package the source sits in when it is part of `common` (relative imports resolve against it)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name == "common" or a.name.startswith("common."))
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level >= 1 and package:                       # from . import x / from ..x import y
                parts = package.split(".")
                if node.level - 1 >= len(parts):
                    continue
                base = ".".join(parts[:len(parts) - (node.level - 1)] + ([mod] if mod else []))
            elif node.level == 0 and (mod == "common" or mod.startswith("common.")):
                base = mod
            else:
                continue
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)   # `from common import x` may name a module
    return out


def code_cells(nb) -> list[str]:
    """The Python of a notebook's code cells, one string per cell, shell (!) and magic (%) lines dropped.
    Raises OSError or ValueError when the notebook cannot be read."""
    cells = json.loads(Path(nb).read_text()).get("cells", [])
    return ["\n".join(ln for ln in "".join(c.get("source", [])).splitlines() if not ln.lstrip().startswith(("%", "!")))
            for c in cells if c.get("cell_type") == "code"]


def _paper_sources(paper: str) -> list[str]:
    """The Python of a paper's package and of its notebooks' code cells (shell and magic lines dropped)."""
    tuning = [f"papers/{paper}/{t}" for t in TUNING] + documentation_patterns(paper)
    out = [p.read_text() for p in sorted((paths.PAPERS / paper).rglob("*.py"))
           if not _matches(p.relative_to(paths.PAPERS.parent).as_posix(), tuning)]   # no notebook runs them
    for nb in sorted((paths.NOTEBOOKS / paper).glob("*.ipynb")):
        try:
            out += code_cells(nb)
        except (OSError, ValueError):
            out.append("(")                                       # unreadable: counts as unparsable
    return out


def common_files(paper: str) -> list[str]:
    """The `common/*.py` files (repository-relative) that can change `paper`'s numbers: those its package
    and notebooks import and those the runner imports, closed under imports between common modules. A
    source that does not parse makes every common file count."""
    mods, packages = {}, {}
    for p in sorted((paths.REPO / "common").rglob("*.py")):
        rel = p.relative_to(paths.REPO)
        dotted = ".".join(rel.with_suffix("").parts)
        if p.stem == "__init__":
            dotted = dotted[: -len(".__init__")]
        mods[dotted] = rel.as_posix()
        packages[dotted] = dotted if p.stem == "__init__" else dotted.rpartition(".")[0]
    mods.setdefault("common", "common/__init__.py")
    packages.setdefault("common", "common")
    every = sorted(mods.values())
    todo = {RUNNER} & set(mods)
    for src in _paper_sources(paper):
        found = _common_imports(src, package=None)
        if found is None:
            return every
        todo |= found & set(mods)
    seen = {"common"}
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            found = _common_imports((paths.REPO / mods[name]).read_text(), package=packages[name])
        except OSError:
            found = None
        if found is None:
            return every
        todo |= (found & set(mods)) - seen
    return sorted(mods[m] for m in seen)


def code_paths(paper: str, tuning: bool = False) -> list[str]:
    """The pathspecs whose change can change a paper's numbers (`tuning`: of its development-seed runs,
    so its devtune and investigations count too)."""
    return [f"papers/{paper}", f"notebooks/{paper}", *common_files(paper), ":(exclude)*.md",
            f":(exclude)papers/{paper}/claims.yaml", *([] if tuning else [f":(exclude){t}" for t in tuning_patterns(paper)]),
            *(f":(exclude){t}" for t in documentation_patterns(paper)),
            *(f":(exclude){f}" for f in JUDGING), *(f":(exclude){f}" for f in PRESENTATION)]


def numbers_file(f: str, paper: str, common: list[str] | None = None) -> bool:
    in_common = f in (common_files(paper) if common is None else common)
    return ((f.startswith((f"papers/{paper}/", f"notebooks/{paper}/")) or in_common) and not f.endswith(".md")
            and f != f"papers/{paper}/claims.yaml"
            and not _matches(f, [*tuning_patterns(paper), *documentation_patterns(paper), *JUDGING, *PRESENTATION]))


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=paths.REPO, capture_output=True, text=True, timeout=30)


def changed_since(sha: str | None, paper: str, pathspecs: list[str] | None = None) -> list[str] | None:
    """Files that decide `paper`'s numbers (or match `pathspecs`) and differ between revision `sha` and the
    working tree now; None when that cannot be told (no revision recorded, or not one of this checkout)."""
    if not sha:
        return None
    try:
        out = _git("diff", "--name-only", sha, "--", *(pathspecs or code_paths(paper)))
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return sorted(f for f in set(out.stdout.split()) if not (f.endswith(".ipynb") and same_code_cells(sha, f)))


def same_code_cells(sha: str, notebook: str) -> bool:
    """Whether the notebook (repository-relative) has the same code cells at revision `sha` as in the working tree
    (`code_cells`): a notebook whose cell ids, metadata, outputs or markdown alone changed computes the same."""
    import tempfile

    try:
        old = _git("show", f"{sha}:{notebook}")
        if old.returncode != 0 or not (paths.REPO / notebook).exists():
            return False
        with tempfile.NamedTemporaryFile("w", suffix=".ipynb", delete=False) as tmp:
            tmp.write(old.stdout)
        try:
            return code_cells(tmp.name) == code_cells(paths.REPO / notebook)
        finally:
            Path(tmp.name).unlink(missing_ok=True)
    except (OSError, ValueError, subprocess.SubprocessError):
        return False


def staleness(manifest: dict, paper: str) -> list[str]:
    """Why a run's numbers may not be what the code computes now (empty when they are)."""
    git = manifest.get("git") or {}
    why = []
    common = common_files(paper)
    dirty = [f for f in git.get("dirty_files") or [] if numbers_file(f, paper, common)]
    if dirty:
        why.append(f"the run had uncommitted changes in {len(dirty)} of its code files ({', '.join(dirty[:3])}"
                   f"{', …' if len(dirty) > 3 else ''})")
    elif git.get("dirty") and "dirty_files" not in git:
        why.append("the run had uncommitted changes (which files was not recorded)")
    changed = changed_since(git.get("sha"), paper)
    if changed is None:
        why.append("the run's revision is unknown here, so its code cannot be compared with this checkout")
    elif changed:
        why.append(f"the code changed after the run in {len(changed)} file{'s' * (len(changed) > 1)} "
                   f"({', '.join(changed[:3])}{', …' if len(changed) > 3 else ''}): rerun it")
    judged_at = (manifest.get("rejudged") or {}).get("git") or git.get("sha")
    judging = changed_since(judged_at, paper, list(JUDGING)) if changed is not None else None
    if judging:
        why.append(f"the judging code ({', '.join(judging)}) changed after the verdicts were judged: re-judge with "
                   f"`python -m common.reproduce {paper} --profile {manifest.get('profile', '<profile>')} --rejudge`")
    recorded = manifest.get("claims_sha256")
    claims = paths.PAPERS / paper / "claims.yaml"
    if recorded and claims.exists() and sha256_file(claims) != recorded:
        why.append(f"papers/{paper}/claims.yaml has changed since this run: the verdicts follow the run's claims file; "
                   f"re-judge with `python -m common.reproduce {paper} --profile {manifest.get('profile', '<profile>')} "
                   "--rejudge` (no rerun needed)")
    return why


def stamp(manifest: dict, claims: bool = True) -> str:
    """'git 1a2b3c4d5e6f (dirty), claims.yaml sha256 0123456789ab, finished 2026-12-01T...' (without the
    claims part when `claims` is False: benchmarks and development runs judge no claims)."""
    git = manifest.get("git") or {}
    sha = str(git.get("sha") or "unknown")[:12]
    text = f"git {sha}{' (uncommitted changes)' if git.get('dirty') else ''}"
    if claims:
        text += f", claims.yaml sha256 {str(manifest.get('claims_sha256') or 'not recorded')[:12]}"
    if manifest.get("finished"):
        text += f", finished {manifest['finished']}"
    if (manifest.get("rejudged") or {}).get("at"):
        text += f", re-judged {manifest['rejudged']['at']}"
    return text
