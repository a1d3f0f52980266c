"""A paper's findings, as its README states them, for the report (issue 41: findings are reported as findings).

A finding is what a run showed that no claim states as reproduced or not: a null that does as well as the method, a
regime the profile cannot reach, a gain that is another effect. It lives in the README's prose, with its numbers,
between two markers:

    <!-- finding -->
    **Finding: the untrained network crosses as close to ½ ln Λ as the trained one.** Read from ...
    <!-- /finding -->

`findings(text)` returns the marked blocks as Markdown: a generated block inside one keeps its stamp and table (the
numbers as the README was last generated, `make readme`), and an inline config value keeps its value, both without
their markers. `to_html` renders the little Markdown these blocks use (paragraphs, a heading line, `*` / `-` lists,
`|` tables, **bold**, *italic*, `code`). Presentation only: nothing here reads a run.
"""
from __future__ import annotations

import html
import re

from . import paths

OPEN, CLOSE = "<!-- finding -->", "<!-- /finding -->"
MEANING = ("Findings, as the paper's README states them (its prose, with the numbers of the runs it names; not "
           "regenerated from this run, whose own numbers are the claims table above).")
_BLOCK = re.compile(re.escape(OPEN) + r"(.*?)" + re.escape(CLOSE), re.S)
_GENERATED = re.compile(r"<!-- /?generated(?::[^>]*)? -->")
_CFG = re.compile(r"<!-- /?cfg(?::[^>]*)? -->")


def findings(text: str) -> list[str]:
    """The blocks between `OPEN` and `CLOSE`, stripped: a generated block inside keeps its stamp and table (as the
    README last generated it) without its markers, and an inline config value keeps its value."""
    out = []
    for block in _BLOCK.findall(text):
        block = _CFG.sub("", _GENERATED.sub("\n", block)).strip()
        if block:
            out.append(block)
    return out


def paper_findings(paper: str) -> list[str]:
    """`findings` of `papers/<paper>/README.md` (none when it has no README)."""
    readme = paths.PAPERS / paper / "README.md"
    return findings(readme.read_text(encoding="utf-8")) if readme.exists() else []


def quoted(block: str) -> list[str]:
    """A finding as Markdown quote lines for REPORT.md (a heading line in bold, so the report's own headings stay
    its outline)."""
    return [f"> **{line.lstrip('#').strip()}**" if line.startswith("#") else f"> {line}".rstrip()
            for line in block.splitlines()]


def _inline(s: str) -> str:
    s = html.escape(s, quote=False).replace("\\*", "\x00")            # an escaped star is a star, never emphasis
    s = re.sub(r"`([^`]+)`", r"<code>\1</code>", s)
    s = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", s, flags=re.S)
    s = re.sub(r"(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])", r"<i>\1</i>", s)
    return s.replace("\x00", "*")


def _table(lines: list[str]) -> str:
    rows = [[c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))] for line in lines
            if not re.fullmatch(r"\|?[\s:|-]+\|?", line.strip())]
    head, body = rows[0], rows[1:]
    return ("<table><tr>" + "".join(f"<th>{_inline(c)}</th>" for c in head) + "</tr>"
            + "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>" for r in body) + "</table>")


def to_html(block: str) -> str:
    """A finding's Markdown as HTML: paragraphs split by blank lines; a heading line in bold; a paragraph of `|` rows
    as a table; lines starting with `* ` or `- ` (and their indented continuations) as list items, the lines before
    the first item as a paragraph; **bold**, *italic* and `code` inline; everything else escaped."""
    out = []
    for para in re.split(r"\n\s*\n", block.strip()):
        lines = para.splitlines()
        if all(line.lstrip().startswith("|") for line in lines):
            out.append(_table(lines))
            continue
        lead: list[str] = []
        items: list[str] = []
        for line in lines:
            if line.startswith("#"):
                out.append(f"<p><b>{_inline(line.lstrip('#').strip())}</b></p>")
            elif re.match(r"\s*[*-] ", line):
                items.append(re.sub(r"^\s*[*-] ", "", line))
            elif items:
                items[-1] += " " + line.strip()
            else:
                lead.append(line.strip())
        if lead:
            out.append(f"<p>{_inline(' '.join(lead))}</p>")
        if items:
            out.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in items) + "</ul>")
    return "\n".join(out)
