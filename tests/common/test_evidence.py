"""The forest plot's axis: each claim's margin inside its criterion, by hand."""
import math

import pytest

from common import evidence
from common.claims import INCONCLUSIVE, REPRODUCED, as_claim


def test_margin_by_hand():
    inf = math.inf
    assert evidence.margin(1.5, (1.0, inf), 1.0) == 0.5           # at_least 1: half a unit inside
    assert evidence.margin(0.5, (1.0, inf), 1.0) == -0.5
    assert evidence.margin(0.2, (-inf, 0.5), 0.5) == pytest.approx(0.6)   # at_most 0.5
    assert evidence.margin(2.0, (1.9, 2.1), 0.1) == pytest.approx(1.0)    # within: 1 at the centre
    assert evidence.margin(2.1, (1.9, 2.1), 0.1) == pytest.approx(0.0)    # 0 at the edge
    assert evidence.margin(2.3, (1.9, 2.1), 0.1) == pytest.approx(-2.0)
    assert evidence.criterion_scale((2.0, inf), [5.0]) == 2.0
    assert evidence.criterion_scale((0.0, inf), [0.3, -0.7]) == 0.7          # reference 0: the values' scale


def test_mark_maps_a_two_sided_interval_to_its_worst_and_best_margin():
    m = evidence.mark(2.05, 1.95, 2.15, (1.9, 2.1), 0.1)
    assert (m.z, m.low, m.high) == (pytest.approx(0.5), pytest.approx(-0.5), 1.0)   # the centre lies inside
    m = evidence.mark(1.5, 1.2, 1.8, (1.0, math.inf), 1.0)
    assert (m.z, m.low, m.high) == (pytest.approx(0.5), pytest.approx(0.2), pytest.approx(0.8))
    assert evidence.mark(float("nan"), None, None, (0, 1), 1) is None


def _claims():
    base = dict(statement="s", paper_value="1", source="Tab. 1", profiles=["quick"], control_is="the null")
    return [
        as_claim(dict(base, id="p", kind="statistical", nature="phenomenon", metric="m", se="m_se", compare="at_least",
                       value=1.0, control="n", control_se="n_se"), "t"),
        as_claim(dict(base, id="a", kind="exact", nature="agreement", metric="e", compare="within", value=0.0,
                       tolerance=0.1, control="near"), "t"),
        as_claim(dict(base, id="later", kind="exact", nature="agreement", metric="e", compare="at_most", value=1,
                       control="near", profiles=["full"]), "t"),
    ]


def test_rows_judge_each_seed_and_leave_out_claims_not_run():
    seeds = [{"m": 2.0, "m_se": 0.1, "n": 0.5, "n_se": 0.1, "e": 0.05, "near": 0.3},
             {"m": 3.0, "m_se": 0.1, "n": 1.5, "n_se": 0.1, "e": 0.0, "near": 0.3}]
    rows = evidence.rows(_claims(), seeds, "quick")
    assert [r.claim for r in rows] == ["p", "a"]                      # 'later' is not run at quick
    p, a = rows
    assert [m.z for m in p.metric] == pytest.approx([1.0, 2.0])        # (m - 1) / 1
    assert [m.z for m in p.control] == pytest.approx([-0.5, 0.5])
    assert p.verdict == INCONCLUSIVE                                   # seed 1's control passes too
    assert [m.z for m in a.metric] == pytest.approx([0.5, 1.0]) and a.verdict == REPRODUCED
    assert [m.z for m in a.control] == pytest.approx([-2.0, -2.0])
    # each row says its numbers in the claim's units: the mean over seeds, the criterion, the control's mean
    # (a two-sided criterion's values to the decimals its width needs: 0.3 against ± 0.1 reads +0.30)
    assert p.label == "+2.5 vs >= 1; control +1" and a.label == "+0.025 vs = 0 ± 0.1; control +0.30"
    fig = evidence.forest_figure(rows, "toy", "quick")
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["p\n+2.5 vs >= 1; control +1"]
    assert [ax.get_title().split(": ")[1] for ax in fig.axes] == ["phenomena and comparisons, 0 of 1 reproduced",
                                                                 "agreements, 1 of 1 reproduced"]
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_labels_say_the_unit_of_a_zero_reference_and_the_decimals_a_narrow_tolerance_needs():
    base = dict(statement="s", paper_value="1", source="Tab. 1", profiles=["quick"], control_is="the null")
    zero = as_claim(dict(base, id="z", kind="exact", nature="phenomenon", metric="m", compare="at_most", value=0.0,
                         control="n"), "t")
    narrow = as_claim(dict(base, id="w", kind="exact", nature="agreement", metric="m", compare="within", value=0.38649,
                           tolerance=1e-5, control="n"), "t")
    # at_most 0: the scale is the largest |value| drawn (the control's 0.35), and the label says so
    (z,) = evidence.rows([zero], [{"m": -0.1, "n": 0.35}], "quick")
    assert z.label == "-0.1 vs <= 0; control +0.35; 1 unit = 0.35"
    assert [m.z for m in z.metric] == pytest.approx([0.1 / 0.35]) and [m.z for m in z.control] == pytest.approx([-1.0])
    # = 0.38649 ± 1e-05: three significant digits (0.386 against 0.3865) would hide that it lies inside
    (w,) = evidence.rows([narrow], [{"m": 0.386492, "n": 0.4}], "quick")
    assert w.label == "+0.386492 vs = 0.386490 ± 1e-05; control +0.400000"
    assert evidence.resolution((0.985, 1.015)) == 3 and evidence.resolution((0.0, math.inf)) is None


def test_the_axis_is_explained_once_under_the_panels_and_every_panel_has_the_same_row_height():
    seeds = [{"m": 2.0, "m_se": 0.1, "n": 0.5, "n_se": 0.1, "e": 0.05, "near": 0.3}]
    claims = _claims()
    extra = as_claim(dict(statement="s", paper_value="1", source="Tab. 1", profiles=["quick"], control_is="the null",
                          id="a2", kind="exact", nature="agreement", metric="e", compare="at_most", value=0.1,
                          control="near"), "t")
    fig = evidence.forest_figure(evidence.rows(claims + [extra], seeds, "quick"), "toy", "quick")
    notes = [t.get_text() for t in fig.texts]
    assert len(notes) == 1 and " ".join(notes[0].split()) == evidence.NORMALISATION
    width_chars = int(fig.get_figwidth() * 16)
    assert all(len(line) <= width_chars for line in notes[0].splitlines())
    assert {ax.get_xlabel() for ax in fig.axes} == {evidence.AXIS}
    assert len({ax.get_ylim() for ax in fig.axes}) == 1          # 1 phenomenon and 2 agreements: the same row height
    import matplotlib.pyplot as plt

    plt.close(fig)
