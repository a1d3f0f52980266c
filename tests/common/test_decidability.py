"""`common.decidability`: each check on hand-made development seeds, and the runner's `--development` refusals."""
import pytest

from common.claims import as_claim, evaluate
from common.decidability import check_claim
from common.runner.cli import main as reproduce


def claim(**kw):
    base = dict(id="c", kind="statistical", nature="agreement", statement="s", paper_value="1", source="Eq. 1",
                metric="m", se="se", compare="within", value=1.0, tolerance=0.1, profiles=["quick"],
                control="cm", control_se="cse", control_is="a near miss")
    base.update(kw)
    return as_claim(base, "test")


def checks(c, per_seed):
    tables = {s: evaluate([c], m, "quick") for s, m in per_seed.items()}
    return check_claim(c, {s: t.iloc[0] for s, t in tables.items()}, per_seed)


def test_a_near_miss_two_se_outside_resolves_and_one_se_does_not():
    # accepted region [0.9, 1.1]; the near miss 1.4 with SE 0.1 lies 3 SE out; with SE 0.25, 1.2 SE
    good = checks(claim(), {100: {"m": 1.0, "se": 0.01, "cm": 1.4, "cse": 0.1}, 101: {"m": 1.0, "se": 0.01, "cm": 1.4, "cse": 0.1}})
    assert good == {"control": "ok", "resolution": "ok", "fixed criterion": "ok", "no tie": "n/a: not a comparison against margin 0",
                    "stable": "ok"}
    bad = checks(claim(), {100: {"m": 1.0, "se": 0.01, "cm": 1.4, "cse": 0.25}})
    assert bad["resolution"] == "fails: the near miss lies 1.2 SE outside the accepted region (< 2)"
    assert bad["control"].startswith("fails: the control inconclusive at this scale at seed 100")


def test_a_control_that_passes_fails_the_check():
    out = checks(claim(nature="phenomenon"), {100: {"m": 1.0, "se": 0.01, "cm": 1.0, "cse": 0.01}})
    assert out["control"] == "fails: the control reproduced at seed 100"
    assert out["resolution"] == "n/a: not an agreement"


def test_a_criterion_read_from_the_run_must_not_vary_between_seeds():
    c = claim(value="ref")
    fixed = {s: {"m": 1.0, "se": 0.01, "cm": 2.0, "cse": 0.01, "ref": 1.0} for s in (100, 101)}
    assert checks(c, fixed)["fixed criterion"] == "ok"
    moving = {100: dict(fixed[100]), 101: dict(fixed[101], ref=1.02)}
    assert checks(c, moving)["fixed criterion"] == "fails: the criterion reads ref, which varies between development seeds"
    assert checks(c, {100: fixed[100]})["fixed criterion"].startswith("n/a: one development seed")


def test_a_tie_against_margin_zero_and_an_unstable_verdict_fail():
    c = claim(kind="comparison", nature="phenomenon", metric="d", se=None, compare="at_least", value=0.0, tolerance=None,
              control="dc", control_se=None)
    tie = {100: {"d": [0.1, -0.1, 0.05], "dc": [-1.0, -1.2, -0.9]}, 101: {"d": [1.0, 1.1, 0.9], "dc": [-1.0, -1.2, -0.9]}}
    out = checks(c, tie)
    assert out["no tie"].startswith("fails: at seed 100 the mean difference lies within 2 SE of 0")
    assert out["stable"] == "fails: inconclusive at this scale at seed 100, reproduced at seed 101"


def test_a_comparison_is_checked_on_the_differences_pooled_over_the_seeds():
    """Two replicates per seed cannot exclude the control alone (t with 1 degree of freedom); pooled over three
    seeds, as the reported run judges it, six can."""
    from common.claims import pooled_metrics

    c = claim(kind="comparison", nature="phenomenon", metric="d", se=None, compare="at_least", value=1.0, tolerance=None,
              control="dc", control_se=None)
    per_seed = {s: {"d": [2.0 + e, 2.1 - e], "dc": [0.2 + e, 0.5 - e]} for s, e in ((100, 0.0), (101, 0.1), (102, -0.1))}
    alone = checks(c, per_seed)
    assert alone["control"].startswith("fails: the control inconclusive at this scale at seed 100")
    pooled = evaluate([c], pooled_metrics(c, list(per_seed.values())), "quick").iloc[0]
    assert pooled["n"] == 6
    out = check_claim(c, {s: evaluate([c], m, "quick").iloc[0] for s, m in per_seed.items()}, per_seed, pooled)
    assert out["control"] == "ok" and out["stable"].startswith("n/a: judged on the differences pooled")


@pytest.mark.parametrize("argv,message", [
    (["diffusion", "--development"], "--development needs --seeds"),
    (["diffusion", "--development", "--seeds", "0"], "reported seed"),
    (["diffusion", "--seeds", "100"], "development seed"),
])
def test_development_runs_take_development_seeds_only(argv, message, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("REPRO_RESULTS", str(tmp_path))
    with pytest.raises(SystemExit) as e:
        reproduce(argv)
    assert e.value.code == 2 and message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
