"""`make new-paper ID=<id>`: a seventh paper from the template, with nothing to change in `common/`.

Copies `templates/paper/` (a working toy paper: papers/, notebooks/, tests/, benchmarks/) into the repository with
the placeholder id `paperid` replaced by <id>, in file names and file contents alike, and says what to fill in
next. A bad id, or one a paper already uses, is one line and exit 2, with nothing written. Standard library only
(no virtual environment needed).

    python templates/new_paper.py <id> [--repo DIR]      # DIR: the repository to write into (default: this one)
    python templates/new_paper.py --check <id>           # only the checks (the Makefile runs them first)
"""
from __future__ import annotations

import keyword
import re
import sys
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parent / "paper"
PLACEHOLDER = "paperid"
ID_PATTERN = re.compile(r"[a-z][a-z0-9_]{1,31}")
# names the runner, the results folder or the repository's layout already use: `reproduce all`, results/bench/,
# results/development/, and the top-level folders
RESERVED = {"all", "bench", "development", "common", "papers", "notebooks", "tests", "benchmarks", "templates", "data",
            "results", PLACEHOLDER}
SKIP = {"__pycache__", ".ipynb_checkpoints", ".pytest_cache"}


def template_files() -> list[Path]:
    """Every file of the template, relative to `templates/paper/` (caches left out)."""
    return sorted(p.relative_to(TEMPLATE) for p in TEMPLATE.rglob("*")
                  if p.is_file() and not SKIP & set(p.relative_to(TEMPLATE).parts))


def targets(paper: str) -> dict[Path, Path]:
    """Template file -> its path in the repository for the paper `paper`."""
    return {rel: Path(str(rel).replace(PLACEHOLDER, paper)) for rel in template_files()}


def problem(paper: str, repo: Path) -> str | None:
    """Why `paper` cannot be a new paper's id in `repo` (one line naming the fix), or None."""
    if not paper:
        return "new-paper: give the new paper's id, e.g. make new-paper ID=mypaper"
    if not ID_PATTERN.fullmatch(paper) or keyword.iskeyword(paper):
        return (f"new-paper: bad ID {paper!r}: 2 to 32 characters, lower-case letters, digits and '_', starting with "
                "a letter (it is a Python package name), e.g. make new-paper ID=mypaper")
    if paper in RESERVED:
        return f"new-paper: ID {paper!r} is a name the repository already uses; choose another, e.g. make new-paper ID=mypaper"
    taken = sorted({str(Path(*t.parts[:2])) for t in targets(paper).values() if (repo / Path(*t.parts[:2])).exists()})
    if taken:
        return f"new-paper: paper {paper!r} exists ({', '.join(taken)}); choose another ID"
    return None


def materialise(paper: str, repo: Path) -> list[Path]:
    """Write the template into `repo` as the paper `paper` (checked by `problem` first); the files written."""
    texts = {dst: (TEMPLATE / src).read_text().replace(PLACEHOLDER, paper) for src, dst in targets(paper).items()}
    for dst, text in texts.items():   # every file read and renamed before the first is written
        (repo / dst).parent.mkdir(parents=True, exist_ok=True)
        (repo / dst).write_text(text)
    return sorted(texts)


NEXT = """created paper '{id}' (a working toy: an agreement and a phenomenon, each with its control):
  {files}
next (common/README.md, "Adding a paper"; you never edit common/):
  1. papers/{id}/claims.yaml  your paper's claims, each with a criterion and a control
  2. papers/{id}/config.py    PROFILES (smoke, quick, full), BOUNDS, preflight, TUNED; describe.py: one line per key
  3. papers/{id}/studies/     measure(cfg, run) per notebook; notebooks/{id}/NN-topic.ipynb drives studies/topic.py
  4. papers/{id}/cost.py, benchmarks/bench_{id}.py and gpu_slice_{id}.py, tests/{id}/
  then: make reproduce-{id} PROFILE=smoke, and .venv/bin/python -m common.readme {id} (the README's generated blocks)"""


def main(argv: list[str]) -> int:
    check = argv[:1] == ["--check"]
    args = argv[1:] if check else argv
    repo = Path(__file__).resolve().parent.parent
    if len(args) == 3 and args[1] == "--repo":
        repo, args = Path(args[2]), args[:1]
    if len(args) != 1:
        print("new-paper: give the new paper's id, e.g. make new-paper ID=mypaper", file=sys.stderr)
        return 2
    why = problem(args[0], repo)
    if why:
        print(why, file=sys.stderr)
        return 2
    if not check:
        written = materialise(args[0], repo)
        print(NEXT.format(id=args[0], files="\n  ".join(map(str, written))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
