import math

import pytest

from common.claims import (NOT_REPRODUCED, NOT_RUN, REPRODUCED, _as_claim, evaluate, load_paper, summary,
                           verdict, write_claims_table)


def claim(**kw):
    base = dict(id="c", statement="s", paper_value="1", source="Tab. 1", metric="m", profiles=["quick"])
    base.update(kw)
    return _as_claim(base, "test")


@pytest.mark.parametrize("compare,extra,value,expected", [
    ("at_least", {"value": 1.0}, 1.0, REPRODUCED),
    ("at_least", {"value": 1.0}, 0.999, NOT_REPRODUCED),
    ("at_most", {"value": 0.5}, 0.5, REPRODUCED),
    ("at_most", {"value": 0.5}, 0.51, NOT_REPRODUCED),
    ("within", {"value": 2.0, "tolerance": 0.1}, 2.1, REPRODUCED),
    ("within", {"value": 2.0, "tolerance": 0.1}, 1.85, NOT_REPRODUCED),
    ("within", {"value": 10.0, "rel_tolerance": 0.2}, 8.0, REPRODUCED),
    ("within", {"value": 10.0, "rel_tolerance": 0.2}, 7.9, NOT_REPRODUCED),
    ("interval", {"interval": [0.1, 0.2]}, 0.15, REPRODUCED),
    ("interval", {"interval": [0.1, 0.2]}, 0.25, NOT_REPRODUCED),
])
def test_comparisons(compare, extra, value, expected):
    assert verdict(claim(compare=compare, **extra), {"m": value}, "quick")[0] == expected


def test_missing_metric_is_never_reproduced():
    c = claim(compare="at_least", value=-math.inf)
    assert verdict(c, {}, "quick")[0] == NOT_RUN
    assert verdict(c, {"m": None}, "quick")[0] == NOT_RUN
    assert verdict(c, {"m": float("nan")}, "quick")[0] == NOT_RUN


def test_profile_outside_claim_is_not_run_even_when_measured():
    c = claim(compare="at_least", value=0)
    v, measured, _ = verdict(c, {"m": 5.0}, "smoke")
    assert (v, measured) == (NOT_RUN, 5.0)


def test_metric_references_for_value_and_tolerance():
    c = claim(compare="within", value="ref", tolerance={"metric": "tol"})
    assert verdict(c, {"m": 1.0, "ref": 1.3, "tol": 0.31}, "quick")[0] == REPRODUCED
    assert verdict(c, {"m": 1.0, "ref": 1.3, "tol": 0.29}, "quick")[0] == NOT_REPRODUCED
    assert verdict(c, {"m": 1.0, "ref": 1.3}, "quick")[0] == NOT_RUN


def test_bad_claims_are_rejected():
    with pytest.raises(ValueError, match="compare"):
        claim(compare="equals", value=1)
    with pytest.raises(ValueError, match="exactly one"):
        claim(compare="within", value=1)
    with pytest.raises(ValueError, match="unknown keys tolerence"):
        claim(compare="within", value=1, rel_tolerance=0.1, tolerence=0.2)
    with pytest.raises(ValueError, match="lacks"):
        _as_claim({"id": "x"}, "t")


def test_table_files(tmp_path):
    claims = [claim(id="a", compare="at_least", value=1), claim(id="b", compare="at_most", value=0), claim(id="c", metric="zz", compare="at_least", value=0)]
    df = evaluate(claims, {"m": 1.5}, "quick")
    assert list(df["verdict"]) == [REPRODUCED, NOT_REPRODUCED, NOT_RUN]
    assert summary(df) == {"total": 3, REPRODUCED: 1, NOT_REPRODUCED: 1, NOT_RUN: 1}
    write_claims_table(df, tmp_path)
    assert (tmp_path / "claims.md").read_text().startswith("1/3 claims reproduced")
    assert "| a |" in (tmp_path / "claims.md").read_text()
    assert (tmp_path / "claims.csv").read_text().count("\n") == 4


def test_every_paper_claims_file_loads():
    from common import paths

    for f in sorted(paths.PAPERS.glob("*/claims.yaml")):
        meta, claims = load_paper(f)
        assert meta.get("title") and meta.get("url"), f
        assert claims, f
        for c in claims:
            assert set(c.profiles) <= {"smoke", "quick", "full"}, (f, c.id)
