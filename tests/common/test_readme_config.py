"""Profiles and claim lists that document themselves (`common.readme_config`): every profile key of every paper
has a one-line description in `papers/<id>/describe.py`, and every README's `profiles` / `claimlist` block is what
`python -m common.readme <id>` renders now (no README copies config.py or lists claim ids by hand)."""
import re

import pytest

from common import paths
from common.claims import load_claims
from common.readme import BLOCK
from common.readme_config import claims_list_block, inline_text, profile_keys, profile_problems, profiles_block, render, \
    rewrite_inline, value_cell
from common.runner.registry import papers

PAPERS = papers()


@pytest.mark.parametrize("paper", PAPERS)
def test_every_profile_key_is_described(paper):
    assert profile_problems(paper) == []


@pytest.mark.parametrize("paper", PAPERS)
def test_readme_blocks_of_declarations_are_current(paper):
    """The paper's README shows its profiles as a generated block, and every profiles / claimlist block is current
    (`python -m common.readme <id>` rewrites them)."""
    text = (paths.PAPERS / paper / "README.md").read_text()
    blocks = [(m.group("spec"), m.group("body")) for m in BLOCK.finditer(text) if render(m.group("spec"), paper) is not None]
    assert any(spec.split()[0] == "profiles" for spec, _ in blocks), \
        f"papers/{paper}/README.md has no <!-- generated: profiles --> block"
    for spec, body in blocks:
        assert body == "\n".join(render(spec, paper)) + "\n", \
            f"papers/{paper}/README.md: the '{spec}' block is not current; run `python -m common.readme {paper}`"


def test_profiles_block_lists_every_key_with_its_values(monkeypatch):
    paper = PAPERS[0]
    lines = profiles_block(paper)
    rows = [ln for ln in lines if ln.startswith("| `")]
    shown = [re.match(r"\| `([^`]+)`", r).group(1) for r in rows]
    assert sorted(shown) == sorted(profile_keys(paper)) and len(shown) == len(set(shown))
    # a key without a description is flagged in the table and by profile_problems
    from common import readme_config

    desc = readme_config.descriptions(paper)
    first = next(iter(desc))
    monkeypatch.setattr(readme_config, "descriptions", lambda p: {k: v for k, v in desc.items() if k != first})
    assert any("**not described**" in ln and f"`{first}`" in ln for ln in readme_config.profiles_block(paper))
    assert profile_problems(paper) == [f"papers/{paper}/describe.py: DESCRIPTIONS has no line for profile key {first!r}"]
    monkeypatch.setattr(readme_config, "descriptions", lambda p: dict(desc, ghost="a key no profile has", **{first: "two\nlines"}))
    problems = profile_problems(paper)
    assert any("'ghost' is described but no profile has it" in p for p in problems)
    assert any(f"description of {first!r} is not one non-empty line" in p for p in problems)


def test_value_cells_are_the_configs_notation():
    assert value_cell([2, 3]) == "`[2, 3]`" and value_cell("fp") == "`'fp'`" and value_cell(False) == "`False`"
    assert value_cell(5e-5) == "`5e-05`" and value_cell("a|b") == "`'a\\|b'`"


@pytest.mark.parametrize("paper", PAPERS)
def test_claim_list_names_every_claim_once(paper):
    ids = [c.id for c in load_claims(paths.PAPERS / paper / "claims.yaml")]
    rows = [re.match(r"\| `([^`]+)`", ln).group(1) for ln in claims_list_block(paper) if ln.startswith("| `")]
    assert rows == ids


def test_inline_values_show_the_profile_value_and_refuse_a_wrong_reference(monkeypatch):
    from common import readme_config

    monkeypatch.setattr(readme_config, "_profiles", lambda p: {"quick": {"lr": 5e-05, "steps": 400, "mix": "ring"}})
    text = ("trains <!-- cfg: quick.steps -->300<!-- /cfg --> steps at <!-- cfg: quick.lr -->1<!-- /cfg --> "
            "on the <!-- cfg: quick.mix -->grid<!-- /cfg -->")
    assert rewrite_inline(text, "p") == ("trains <!-- cfg: quick.steps -->400<!-- /cfg --> steps at "
                                         "<!-- cfg: quick.lr -->5e-05<!-- /cfg --> on the <!-- cfg: quick.mix -->ring<!-- /cfg -->")
    with pytest.raises(ValueError, match="no profile key quick.nosuch"):
        rewrite_inline("<!-- cfg: quick.nosuch -->1<!-- /cfg -->", "p")
    with pytest.raises(ValueError, match="<id>.profile.key"):
        rewrite_inline("<!-- cfg: quick.lr -->1<!-- /cfg -->", None)   # the top README names the paper


def test_inline_text_is_how_a_sentence_quotes_a_value():
    assert [inline_text(v) for v in (400, 0.005, 5e-05, 500000.0, "ring", True, [1, 2])] == \
        ["400", "0.005", "5e-05", "500000", "ring", "True", "[1, 2]"]


@pytest.mark.parametrize("paper", PAPERS + [None])
def test_inline_values_in_readmes_are_current(paper):
    path = paths.PAPERS / paper / "README.md" if paper else paths.REPO / "README.md"
    text = path.read_text()
    assert rewrite_inline(text, paper) == text, f"{path.name}: an inline value is not current; run `make readme`"
