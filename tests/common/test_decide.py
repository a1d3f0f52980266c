"""`common.decide` and the engine's "what would decide it" on hand-computable cases."""
import math

import pytest

from common.claims import (INCONCLUSIVE, NO_N, REPRODUCED, as_claim, between_seeds, combine_seeds, evaluate, headline,
                           judge, summary, what_would_decide)
from common.decide import nearest_edge, paired_n, sample_factor


def claim(**kw):
    base = dict(id="c", kind="comparison", nature="phenomenon", statement="s", paper_value="1", source="Tab. 1",
                metric="d", profiles=["quick"], compare="at_least", value=0.0, control="ctl", control_is="the null")
    base.update(kw)
    return as_claim(base, "test")


def test_paired_n_by_hand():
    # mean 1, sd 1, edge 0: n = 4 gives t(.95, 3) / 2 = 2.353 / 2 = 1.18 > 1; n = 5 gives 2.132 / 2.236 = 0.953 <= 1
    assert paired_n(1.0, 1.0, 0.0) == 5
    # mean 0.5, sd 1: n = 12 gives 1.796 / 3.464 = 0.518 > 0.5; n = 13 gives 1.782 / 3.606 = 0.494
    assert paired_n(0.5, 1.0, 0.0) == 13
    assert paired_n(0.5, 1.0, 0.5) is None      # on the edge: no n
    assert paired_n(0.5, 0.0, 0.0) == 2


def test_sample_factor_by_hand():
    z = 1.6448536269514722
    assert sample_factor(0.1, 0.1, 0.0) == pytest.approx(z ** 2)
    assert sample_factor(0.3, 0.1, 0.0) == pytest.approx((z / 3) ** 2)
    assert sample_factor(0.0, 0.1, 0.0) is None


def test_nearest_edge():
    assert nearest_edge(0.9, (0.0, 1.0)) == 1.0
    assert nearest_edge(-3.0, (0.0, math.inf)) == 0.0
    assert nearest_edge(1.0, (-math.inf, math.inf)) is None


def test_comparison_inconclusive_names_the_pairs_that_decide_it():
    c = claim()
    m = {"d": [0.5, -0.5, 1.5], "ctl": [-1.0, -1.1, -0.9]}   # mean 0.5, sd 1, n 3; control clearly fails
    o = judge(c, m, "quick")
    assert o.verdict == INCONCLUSIVE
    assert what_would_decide(c, o, m).startswith("n = 13 paired replicates (now 3;")


def test_control_on_the_passing_side_is_decided_by_no_n():
    c = claim()
    m = {"d": [1.0, 1.1, 0.9], "ctl": [0.5, -0.5, 1.5]}     # metric reproduced, control's mean 0.5 >= 0
    o = judge(c, m, "quick")
    assert o.verdict == INCONCLUSIVE
    assert what_would_decide(c, o, m) == NO_N + "the control passes whatever the sample (its estimate lies inside the accepted region)"


def test_control_not_excluded_needs_its_own_n():
    c = claim()
    m = {"d": [1.0, 1.1, 0.9], "ctl": [-0.5, 0.5, -1.5]}    # control's mean -0.5, sd 1: excluded at n = 13
    o = judge(c, m, "quick")
    assert o.verdict == INCONCLUSIVE
    assert what_would_decide(c, o, m).startswith("n = 13 paired replicates")


def test_estimate_outside_the_region_is_decided_toward_not_reproduced():
    c = claim(kind="statistical", compare="within", value=1.0, tolerance=0.1, se="se", control="cm", control_se="cse",
              metric="m")
    m = {"m": 1.2, "se": 0.1, "cm": 2.0, "cse": 0.01}       # 0.1 from the edge 1.1 at SE 0.1: k = 1.645^2
    o = judge(c, m, "quick")
    assert o.verdict == INCONCLUSIVE
    text = what_would_decide(c, o, m)
    assert text.startswith("2.71 x the present sample") and text.endswith("(toward not reproduced)")


def test_degenerate_control_is_decided_by_no_n():
    c = claim()
    m = {"d": [1.0, 1.2, 0.9], "ctl": [2.0, 2.4, 1.8]}
    o = judge(c, m, "quick")
    assert what_would_decide(c, o, m).startswith(NO_N + "the control cannot fail on its own")


def test_seeds_that_disagree_need_a_larger_per_seed_sample():
    c = claim(kind="exact", compare="at_least", value=0.0, metric="m", control="cm")
    # seed means 0.1, -0.1, 0.3: mean 0.1, sd 0.2, 0.1 from the edge: k = (1.645 * 0.2 / 0.1)^2 = 10.8
    tables = {s: evaluate([c], {"m": v, "cm": -5.0}, "quick") for s, v in zip((0, 1, 2), (0.1, -0.1, 0.3))}
    rows = [t.iloc[0] for t in tables.values()]
    assert between_seeds(c, rows, {"m": 0.1}).startswith("a per-seed sample 10.8 x the present one")
    combined = combine_seeds(tables, [c], {s: {"m": v, "cm": -5.0} for s, v in zip((0, 1, 2), (0.1, -0.1, 0.3))}, "quick")
    assert combined.iloc[0]["verdict"] == INCONCLUSIVE and combined.iloc[0]["decide"].startswith("a per-seed sample 10.8")


def test_identities_are_shown_not_counted():
    ident = claim(id="i", kind="exact", nature="identity", compare="at_least", value=0.0, metric="m", control="cm")
    phen = claim(id="p", kind="exact", compare="at_least", value=0.0, metric="m", control="cm")
    df = evaluate([ident, phen], {"m": 1.0, "cm": -1.0}, "quick")
    assert list(df["verdict"]) == [REPRODUCED, REPRODUCED]
    s = summary(df)
    assert (s["total"], s[REPRODUCED], s["identity"], s["phenomenon"]) == (1, 1, (1, 1), (1, 1))
    assert headline(s).startswith("1/1 claims reproduced") and "1 identity shown apart, not counted (1 holds)" in headline(s)
