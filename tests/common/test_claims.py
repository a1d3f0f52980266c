import math

import pytest

from common.claims import (INCONCLUSIVE, MISSING_CONTROL, NOT_REPRODUCED, NOT_RUN, PROJECTION, REPRODUCED, as_claim,
                           combine_seeds, evaluate, format_control, headline, pooled_metrics,
                           format_measured, judge, load_paper, paired, summary, verdict, write_claims_table)


def claim(**kw):
    base = dict(id="c", kind="exact", statement="s", paper_value="1", source="Tab. 1", metric="m", profiles=["quick"],
                control="none", why="a test of the metric alone")
    if "control" in kw and kw["control"] != "none":
        base.pop("why")
    base.update(kw)
    return as_claim(base, "test")


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


def test_missing_metric_at_a_listed_profile_is_not_reproduced():
    c = claim(compare="at_least", value=-math.inf)
    for metrics in ({}, {"m": None}, {"m": float("nan")}, {"m": "nan"}):
        v, _, why = verdict(c, metrics, "quick")
        assert (v, why.split(":")[0]) == (NOT_REPRODUCED, "not measured")
    # a failed search at a profile the claim does not list stays "not run"
    assert verdict(c, {"m": float("nan")}, "smoke")[0] == NOT_RUN


def test_profile_outside_claim_is_not_run_even_when_measured():
    c = claim(compare="at_least", value=0)
    v, measured, _ = verdict(c, {"m": 5.0}, "smoke")
    assert (v, measured) == (NOT_RUN, 5.0)


def test_metric_references_for_value_and_tolerance():
    c = claim(compare="within", value="ref", tolerance={"metric": "tol"})
    assert verdict(c, {"m": 1.0, "ref": 1.3, "tol": 0.31}, "quick")[0] == REPRODUCED
    assert verdict(c, {"m": 1.0, "ref": 1.3, "tol": 0.29}, "quick")[0] == NOT_REPRODUCED
    assert verdict(c, {"m": 1.0, "ref": 1.3}, "quick")[0] == NOT_REPRODUCED  # tolerance not measured


def test_bad_claims_are_rejected():
    with pytest.raises(ValueError, match="compare"):
        claim(compare="equals", value=1)
    with pytest.raises(ValueError, match="exactly one"):
        claim(compare="within", value=1)
    with pytest.raises(ValueError, match="unknown keys tolerence"):
        claim(compare="within", value=1, rel_tolerance=0.1, tolerence=0.2)
    with pytest.raises(ValueError, match="kind must be"):
        claim(kind="vibes", compare="at_least", value=1)
    with pytest.raises(ValueError, match="needs `se`"):
        claim(kind="statistical", compare="at_least", value=1)
    with pytest.raises(ValueError, match="`baseline` belongs"):
        claim(compare="at_least", value=1, baseline="b")
    with pytest.raises(ValueError, match="lacks"):
        as_claim({"id": "x"}, "t")


def test_table_files(tmp_path):
    claims = [claim(id="a", compare="at_least", value=1), claim(id="b", compare="at_most", value=0), claim(id="c", metric="zz", compare="at_least", value=0)]
    df = evaluate(claims, {"m": 1.5}, "quick")
    assert list(df["verdict"]) == [REPRODUCED, NOT_REPRODUCED, NOT_REPRODUCED]
    assert summary(df) == {"total": 3, REPRODUCED: 1, NOT_REPRODUCED: 2, INCONCLUSIVE: 0, NOT_RUN: 0, "projection": 0,
                           "uncontrolled": 3, "agreement": (0, 0), "phenomenon": (0, 0), "identity": (0, 0)}
    write_claims_table(df, tmp_path)
    assert (tmp_path / "claims.md").read_text().startswith("1/3 claims reproduced (2 not reproduced, 0 inconclusive")
    assert "; 3 uncontrolled" in (tmp_path / "claims.md").read_text().splitlines()[0]
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


def test_paired_statistics_by_hand():
    # d = (1, 2, 3): mean 2, sd 1, se 1/sqrt(3), t_{0.95, 2} = 2.919986
    out = paired([3.0, 5.0, 7.0], [2.0, 3.0, 4.0])
    assert out["mean"] == 2.0 and out["n"] == 3
    assert out["se"] == pytest.approx(1 / math.sqrt(3), rel=1e-12)
    assert out["low"] == pytest.approx(2 - 2.919986 / math.sqrt(3), abs=1e-5)
    assert paired([4.0])["se"] is None


SEEDS_A = [0.80, 0.82, 0.79, 0.81, 0.80]


@pytest.mark.parametrize("b,expected", [
    ([0.70, 0.71, 0.69, 0.70, 0.72], REPRODUCED),           # A beats B by 0.10 +- 0.005
    ([0.80, 0.83, 0.78, 0.80, 0.81], INCONCLUSIVE),         # null effect: the interval holds 0
    ([0.90, 0.91, 0.89, 0.92, 0.90], NOT_REPRODUCED),       # reversed: B beats A beyond the noise
])
def test_paired_comparison_true_null_and_reversed_effects(b, expected):
    c = claim(kind="comparison", metric="a", baseline="b", compare="at_least", value=0.0)
    o = judge(c, {"a": SEEDS_A, "b": b}, "quick")
    assert o.verdict == expected and o.n == 5
    assert o.ci_low <= o.measured <= o.ci_high


def test_comparison_edge_cases():
    c = claim(kind="comparison", metric="a", baseline="b", compare="at_least", value=0.0)
    assert judge(c, {"a": [0.9], "b": [0.1]}, "quick").verdict == INCONCLUSIVE           # one seed: no interval
    assert judge(c, {"a": [0.9, None], "b": [0.1, 0.2]}, "quick").verdict == NOT_REPRODUCED  # a seed not measured
    assert judge(c, {"a": [0.9, 0.8], "b": [0.1]}, "quick").verdict == NOT_REPRODUCED    # unpaired lengths
    assert judge(c, {"a": [0.9, 0.8], "b": [0.1, 0.2]}, "smoke").verdict == NOT_RUN
    # without a baseline the metric holds the paired differences; a margin moves the bar
    d = claim(kind="comparison", metric="d", compare="at_most", value=0.05)
    assert judge(d, {"d": [0.01, 0.02, 0.015]}, "quick").verdict == REPRODUCED
    assert judge(d, {"d": [0.10, 0.11, 0.12]}, "quick").verdict == NOT_REPRODUCED
    # equivalence (within): the 90 % interval inside +-tol reproduces, straddling is inconclusive
    e = claim(kind="comparison", metric="d", compare="within", value=0.0, tolerance=0.3)
    assert judge(e, {"d": [0.05, -0.05, 0.0, 0.02]}, "quick").verdict == REPRODUCED
    assert judge(e, {"d": [0.5, -0.4, 0.3, -0.2]}, "quick").verdict == INCONCLUSIVE
    assert judge(e, {"d": [1.0, 1.1, 0.9, 1.05]}, "quick").verdict == NOT_REPRODUCED


@pytest.mark.parametrize("m,se,expected", [
    (1.0005, 0.0011, REPRODUCED),     # [0.99869, 1.00231] inside [0.99, 1.01]
    (1.0005, 0.01, INCONCLUSIVE),     # the interval reaches beyond 1 +- 0.01
    (1.05, 0.001, NOT_REPRODUCED),    # entirely outside
])
def test_statistical_claim_uses_its_standard_error(m, se, expected):
    c = claim(kind="statistical", metric="m", se="m_se", compare="within", value=1.0, tolerance=0.01)
    o = judge(c, {"m": m, "m_se": se}, "quick")
    assert o.verdict == expected
    assert o.ci_low == pytest.approx(m - 1.6448536 * se) and o.se == se
    assert judge(c, {"m": m}, "quick").verdict == NOT_REPRODUCED  # its standard error not measured


def test_criterion_and_measured_read_as_numbers():
    c = claim(compare="within", value="ref", tolerance={"metric": "tol"})
    df = evaluate([c], {"m": 1.0, "ref": 1.3, "tol": 0.31}, "quick")
    assert df.loc[0, "criterion"] == "= 1.3 (ref) ± 0.31 (tol)"
    s = claim(kind="statistical", metric="m", se=0.004, compare="at_least", value=0.1)
    row = evaluate([s], {"m": 0.123}, "quick").iloc[0]
    assert format_measured(row) == "0.123 ± 0.004"
    missing = evaluate([claim(compare="at_least", value=0)], {}, "quick").iloc[0]
    assert format_measured(missing) == "not measured"


def test_combine_seeds_overall_verdict():
    c = [claim(id="a", compare="at_least", value=1), claim(id="b", metric="k", compare="at_least", value=1)]
    tables = {s: evaluate(c, {"m": 2.0, "k": float(s)}, "quick") for s in (0, 1, 2)}
    df = combine_seeds(tables).set_index("id")
    assert df.loc["a", "verdict"] == REPRODUCED
    assert df.loc["b", "verdict"] == INCONCLUSIVE
    assert df.loc["b", "note"] == ("verdict differs between seeds: seed 0: not reproduced, seed 1: reproduced, "
                                  "seed 2: reproduced")


def test_when_limits_a_claim_to_a_run_configuration():
    c = claim(compare="at_least", value=1, profiles=["full"], when={"dataset": "imagenet"})
    assert judge(c, {"dataset": "cifar10", "m": 0.0}, "full").verdict == NOT_RUN
    assert judge(c, {"dataset": "cifar10"}, "full").note == "testable when dataset = imagenet"
    assert judge(c, {"dataset": "imagenet", "m": 2.0}, "full").verdict == REPRODUCED
    assert judge(c, {"dataset": "imagenet"}, "full").verdict == NOT_REPRODUCED  # configured, but not measured
    with pytest.raises(ValueError, match="`when`"):
        claim(compare="at_least", value=1, when="imagenet")


# -- controls ------------------------------------------------------------------------------------

def controlled(**kw):
    base = dict(compare="at_least", value=0.9, control="m_null", control_is="an untrained model")
    base.update(kw)
    return claim(**base)


def test_control_that_fails_lets_the_claim_reproduce():
    o = judge(controlled(), {"m": 0.95, "m_null": 0.5}, "quick")
    assert o.verdict == REPRODUCED
    assert (o.control.verdict, o.control.measured) == (NOT_REPRODUCED, 0.5)


def test_control_that_passes_too_makes_the_claim_inconclusive():
    o = judge(controlled(), {"m": 0.95, "m_null": 0.93}, "quick")
    assert o.verdict == INCONCLUSIVE
    assert o.note == "control passes too: an untrained model"
    assert o.control.verdict == REPRODUCED
    row = evaluate([controlled()], {"m": 0.95, "m_null": 0.93}, "quick").iloc[0]
    assert (row["verdict"], row["control_verdict"], row["control_measured"]) == (INCONCLUSIVE, REPRODUCED, 0.93)
    assert format_control(row) == "0.93: reproduced (an untrained model)"


def test_control_missing_is_not_measured_and_a_failing_metric_stays_failed():
    for metrics in ({"m": 0.95}, {"m": 0.95, "m_null": float("nan")}):
        o = judge(controlled(), metrics, "quick")
        assert o.verdict == NOT_REPRODUCED and o.note == "not measured: control 'm_null'"
    assert judge(controlled(), {"m": 0.5, "m_null": 0.95}, "quick").verdict == NOT_REPRODUCED
    # a profile the claim does not list stays "not run", with the control still reported
    o = judge(controlled(), {"m": 0.95, "m_null": 0.93}, "smoke")
    assert o.verdict == NOT_RUN and o.control.measured == 0.93
    # and a claim not run judges no control: its control is "not run" too, never "not reproduced" for a missing value
    assert o.control.verdict == NOT_RUN
    o = judge(controlled(), {}, "smoke")
    assert (o.verdict, o.control.verdict, o.control.measured) == (NOT_RUN, NOT_RUN, None)


def test_statistical_control_uses_its_own_standard_error():
    c = controlled(kind="statistical", se="m_se", control_se="null_se")
    # null at 0.85: with se 0.01 its bound 0.866 < 0.9 fails; with se 0.05 it reaches 0.93: not excluded
    assert judge(c, {"m": 0.95, "m_se": 0.01, "m_null": 0.85, "null_se": 0.01}, "quick").verdict == REPRODUCED
    o = judge(c, {"m": 0.95, "m_se": 0.01, "m_null": 0.85, "null_se": 0.05}, "quick")
    assert (o.verdict, o.control.verdict) == (INCONCLUSIVE, INCONCLUSIVE)
    assert o.note.startswith("control not excluded (inconclusive): an untrained model")
    assert o.control.ci_high == pytest.approx(0.85 + 1.6448536 * 0.05)
    assert judge(c, {"m": 0.95, "m_se": 0.01, "m_null": 0.85}, "quick").verdict == NOT_REPRODUCED


def test_comparison_control_is_paired_with_the_claims_baseline_or_its_own():
    c = controlled(kind="comparison", metric="a", baseline="b", value=0.0, control="c")
    a, b = [0.80, 0.82, 0.79, 0.81], [0.70, 0.71, 0.69, 0.70]
    assert judge(c, {"a": a, "b": b, "c": [0.70, 0.72, 0.68, 0.70]}, "quick").verdict == INCONCLUSIVE  # null "beats" b too?
    assert judge(c, {"a": a, "b": b, "c": [0.60, 0.61, 0.60, 0.62]}, "quick").verdict == REPRODUCED
    own = controlled(kind="comparison", metric="a", baseline="b", value=0.0, control="c", control_baseline="cb")
    o = judge(own, {"a": a, "b": b, "c": [0.5, 0.5, 0.5, 0.5], "cb": [0.6, 0.61, 0.59, 0.6]}, "quick")
    assert o.verdict == REPRODUCED and o.control.measured == pytest.approx(-0.1)


def test_identity_with_a_broken_variant_shows_the_resolution():
    c = controlled(compare="within", value=0.0, tolerance=1e-6, metric="err", control="err_symmetrised",
                   control_is="the rule with J symmetrised")
    assert judge(c, {"err": 6e-11, "err_symmetrised": 0.22}, "quick").verdict == REPRODUCED
    assert judge(c, {"err": 6e-11, "err_symmetrised": 1e-7}, "quick").verdict == INCONCLUSIVE


def test_projection_is_shown_never_judged_nor_counted():
    p = claim(id="p", kind="projection", metric="proj", inputs=["speed_ratio", "an assumed bandwidth"],
              control="none", why="a projection from assumed inputs is not a measurement")
    o = judge(p, {"proj": 0.97, "speed_ratio": 0.945}, "quick")
    assert o.verdict == PROJECTION and o.measured == 0.97
    assert o.note == "projection from assumed inputs: 0.945 (speed_ratio), an assumed bandwidth"
    df = evaluate([p, controlled()], {"proj": 0.97, "m": 0.95, "m_null": 0.1}, "quick")
    s = summary(df)
    assert (s["total"], s[REPRODUCED], s["projection"], s["uncontrolled"]) == (1, 1, 1, 0)
    assert headline(s).endswith("; 1 projection (not judged)")
    with pytest.raises(ValueError, match="lists its assumed `inputs`"):
        claim(kind="projection", metric="proj")
    with pytest.raises(ValueError, match="projection is not judged"):
        claim(kind="projection", metric="proj", inputs=["x"], control="m_null", control_is="null")


def test_control_declarations_are_checked():
    with pytest.raises(ValueError, match="`control: none` needs `why`"):
        as_claim(dict(id="c", kind="exact", statement="s", paper_value="1", source="s", metric="m", profiles=["quick"],
                       compare="at_least", value=1, control="none"), "t")
    with pytest.raises(ValueError, match="`control_is` says"):
        claim(compare="at_least", value=1, control="m_null")
    with pytest.raises(ValueError, match="control needs `control_se`"):
        controlled(kind="statistical", se="m_se")
    with pytest.raises(ValueError, match="`control_baseline` belongs"):
        controlled(control_baseline="x")
    with pytest.raises(ValueError, match="`why` belongs"):
        controlled(why="because")
    # a claim that names no control at all is judged as uncontrolled (and the test below forbids it in the repo)
    bare = as_claim(dict(id="c", kind="exact", statement="s", paper_value="1", source="s", metric="m", profiles=["quick"],
                          compare="at_least", value=1), "t")
    row = evaluate([bare], {"m": 2}, "quick").iloc[0]
    assert (row["verdict"], row["control_verdict"], row["control_is"]) == (REPRODUCED, "uncontrolled", MISSING_CONTROL)


def test_every_claim_in_the_repository_names_a_control_or_why_not():
    import yaml

    from common import paths

    missing = []
    for f in sorted(paths.PAPERS.glob("*/claims.yaml")):
        for raw in (yaml.safe_load(f.read_text()) or {}).get("claims", []):
            ctl = raw.get("control")
            if ctl is None or (str(ctl).strip().lower() == "none" and not str(raw.get("why") or "").strip()):
                missing.append(f"{f.parent.name}:{raw.get('id')}")
            elif raw.get("kind") == "projection" and str(ctl).lower() != "none":
                missing.append(f"{f.parent.name}:{raw.get('id')} (a projection)")
    assert not missing, f"{len(missing)} claims name no control: {' '.join(missing)}"


def test_seeds_pool_the_paired_differences_of_a_comparison():
    c = claim(id="cmp", kind="comparison", metric="a", baseline="b", compare="at_least", value=0.0)
    # each seed alone (2 replicates, t = 6.31) cannot decide; the 6 pooled differences can
    per = {0: {"a": [1.0, 1.3], "b": [0.9, 0.9]}, 1: {"a": [1.2, 0.95], "b": [0.9, 0.9]}, 2: {"a": [1.1, 1.05], "b": [1.0, 0.9]}}
    tables = {s: evaluate([c], m, "quick") for s, m in per.items()}
    assert {t.loc[0, "verdict"] for t in tables.values()} == {INCONCLUSIVE}
    row = combine_seeds(tables, [c], per, "quick").iloc[0]
    d = [0.1, 0.4, 0.3, 0.05, 0.1, 0.15]
    assert row["verdict"] == REPRODUCED
    assert row["pooled"].startswith(f"{sum(d) / 6:.4g}") and "n=6" in row["pooled"]
    assert row["note"].startswith("overall verdict: pooled paired differences over seeds 0, 1, 2 (n = 6)")
    assert row["note"].endswith("per seed: seed 0: inconclusive at this scale, seed 1: inconclusive at this scale, "
                                "seed 2: inconclusive at this scale")
    # a seed whose list is missing leaves the pooled test not measured
    per[1] = {"b": [0.9, 0.9]}
    tables[1] = evaluate([c], per[1], "quick")
    assert combine_seeds(tables, [c], per, "quick").iloc[0]["verdict"] == NOT_REPRODUCED
    assert pooled_metrics(c, list(per.values()))["a"] is None


def test_every_judged_claim_in_the_repository_says_what_it_is():
    """agreement, phenomenon or identity on every claim but projections (the summaries count them apart)."""
    import yaml

    from common import paths

    missing = [f"{f.parent.name}:{raw.get('id')}" for f in sorted(paths.PAPERS.glob("*/claims.yaml"))
               for raw in (yaml.safe_load(f.read_text()) or {}).get("claims", [])
               if raw.get("kind") != "projection" and raw.get("nature") not in ("agreement", "phenomenon", "identity")]
    assert not missing, f"{len(missing)} claims declare no nature: {' '.join(missing)}"


def test_nature_is_checked_and_counted_apart():
    with pytest.raises(ValueError, match="nature must be"):
        claim(compare="at_least", value=1, nature="vibes")
    with pytest.raises(ValueError, match="projection is neither"):
        claim(kind="projection", inputs=["x"], nature="agreement")
    claims = [claim(id="p1", compare="at_least", value=1, nature="phenomenon"),
              claim(id="p2", compare="at_least", value=9, nature="phenomenon"),
              claim(id="a1", compare="at_most", value=2, nature="agreement")]
    df = evaluate(claims, {"m": 1.5}, "quick")
    assert list(df["nature"]) == ["phenomenon", "phenomenon", "agreement"]
    s = summary(df)
    assert (s["phenomenon"], s["agreement"]) == ((1, 2), (1, 1))
    assert headline(s).startswith("2/3 claims reproduced: 1 of 2 phenomena, 1 of 1 agreement (1 not reproduced")


def _competitor(**kw):
    return claim(kind="comparison", metric="a", baseline="b", compare="at_least", value=0.0, nature="phenomenon",
                 control_is="the null", **kw)


def test_a_negated_or_rescaled_or_offset_control_is_refused():
    a, b = [1.0, 1.4, 0.9, 1.2], [0.2, 0.1, 0.3, 0.0]          # A beats B on every replicate
    d = [x - y for x, y in zip(a, b)]
    # the swapped competitor: control = B paired with A, exactly -(A - B)
    swapped = _competitor(control="b", control_baseline="a")
    v, _, why = verdict(swapped, {"a": a, "b": b}, "quick")
    assert v == INCONCLUSIVE and why.startswith("control degenerate: the competitor swapped")
    # the same by numbers, under another name: refused on the values
    v, _, why = verdict(_competitor(control="neg"), {"a": a, "b": b, "neg": [y - x + y for x, y in zip(a, b)]}, "quick")
    assert v == INCONCLUSIVE and "the metric negated" in why
    # a fixed multiple (the metric x 0.3 beside the same baseline) and a fixed offset
    scaled = {"a": a, "b": b, "c": [y + 0.3 * x for x, y in zip(d, b)]}
    v, _, why = verdict(_competitor(control="c"), scaled, "quick")
    assert v == INCONCLUSIVE and "a fixed multiple of the metric (x 0.3)" in why
    offset = {"a": a, "b": b, "c": [x - 2.0 for x in a]}
    v, _, why = verdict(_competitor(control="c"), offset, "quick")
    assert v == INCONCLUSIVE and "offset by a constant (-2)" in why
    # a real null, not tied to the metric, that does no better than B and lets the claim reproduce
    null = {"a": a, "b": b, "c": [0.0, 0.0, 0.1, -0.3]}
    assert verdict(_competitor(control="c"), null, "quick")[0] == REPRODUCED


def test_degenerate_over_seeds_for_scalar_claims():
    c = claim(compare="at_least", value=1.0, control="m_null", control_is="the null", nature="phenomenon")
    runs = {0: {"m": 1.5, "m_null": 0.5}, 1: {"m": 1.7, "m_null": 0.7}, 2: {"m": 1.2, "m_null": 0.2}}
    tables = {s: evaluate([c], m, "quick") for s, m in runs.items()}
    assert {t["verdict"][0] for t in tables.values()} == {REPRODUCED}    # each seed alone cannot tell
    row = combine_seeds(tables, [c], runs, "quick").iloc[0]
    assert row["verdict"] == INCONCLUSIVE and "offset by a constant (-1)" in row["note"]
    same = {k: {"m": m["m"], "m_null": m["m"]} for k, m in runs.items()}    # a null equal to the metric passes too
    tables = {s: evaluate([c], m, "quick") for s, m in same.items()}
    row = combine_seeds(tables, [c], same, "quick").iloc[0]
    assert row["verdict"] == INCONCLUSIVE and "control degenerate" not in row["note"]
    runs[2]["m_null"] = 0.4                                              # a null that moves on its own
    tables = {s: evaluate([c], m, "quick") for s, m in runs.items()}
    assert combine_seeds(tables, [c], runs, "quick").iloc[0]["verdict"] == REPRODUCED
