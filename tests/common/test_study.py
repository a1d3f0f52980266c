"""The study interface (common/study.py), the keyed streams (common.seed.Streams) and the declared bounds
(common.profiles.check_bounds): exact values on hand-made cases."""
import pickle
import sys
import types
from types import SimpleNamespace

import numpy as np
import pytest

from common.errors import UserError
from common.io import read_json
from common.profiles import check_bounds, configure
from common.seed import Streams, numpy_rng, torch_generator


# -- streams -----------------------------------------------------------------------------------------------
def test_a_stream_is_the_keyed_generator_of_common_seed():
    s = Streams(7)
    assert s.rng("codes", 3).random() == numpy_rng(7, "codes", 3).random()
    assert s.child("replicate", 2).rng("init").random() == numpy_rng(7, "replicate", 2, "init").random()
    a, b = s.torch_generator("x").initial_seed(), torch_generator(7, "x").initial_seed()
    assert a == b == s.seed_for("x")


def test_streams_of_other_keys_or_seeds_differ_and_never_collide_like_seed_arithmetic():
    # seed * 100 + r: seed 0's replicate 100 is seed 1's replicate 0; keyed streams keep them apart
    assert Streams(0).seed_for("replicate", 100) != Streams(1).seed_for("replicate", 0)
    assert Streams(0).seed_for("a", 1) != Streams(0).seed_for("a", 2) != Streams(0).seed_for("b", 1)
    assert Streams(np.int64(3)).seed_for("a", np.int32(1)) == Streams(3).seed_for("a", 1)


def test_a_stream_key_is_a_string_or_an_integer_and_a_stream_has_a_name():
    for bad in (1.5, True, None, ("a",)):
        with pytest.raises(TypeError):
            Streams(0).rng("x", bad)
    with pytest.raises(ValueError):
        Streams(0).rng()
    with pytest.raises(TypeError):
        Streams(1.0)


def test_drawn_records_the_keys_and_a_child_is_picklable_for_a_worker():
    s = Streams(5)
    s.rng("noise")
    child = s.child("worker", 1)
    child.seed_for("init")
    assert s.drawn() == ["noise", "worker/1/*", "worker/1/init"]
    clone = pickle.loads(pickle.dumps(child))
    assert clone == child and clone.drawn() == [] and clone.rng("init").random() == child.rng("init").random()


def test_torch_global_seeds_from_the_stream_and_restores_the_global_generator():
    import torch

    torch.manual_seed(123)
    before = torch.get_rng_state()
    with Streams(4).torch_global("init"):
        inside = torch.rand(3)
    assert torch.equal(torch.get_rng_state(), before)
    torch.manual_seed(Streams(4).seed_for("init"))
    assert torch.equal(inside, torch.rand(3))


# -- bounds ------------------------------------------------------------------------------------------------
BOUNDS = {"g": {"min": 0}, "mode": {"choices": ["joint", "two_stage"]}, "lr": {"above": 0, "max": 1},
          "sizes": {"min": 1}, "dt": {"above": 0, "below": 1}}


def ok(**kw):
    base = dict(g=0.0, mode="joint", lr=1.0, sizes=[1, 4], dt=0.5)
    return SimpleNamespace(**{**base, **kw})


def test_values_on_the_bound_pass_and_values_past_it_name_key_bound_and_value():
    check_bounds(BOUNDS, ok())
    cases = {"g": (-0.1, "parameter 'g' must be >= 0, got -0.1"),
             "mode": ("solo", "parameter 'mode' must be one of 'joint', 'two_stage', got 'solo'"),
             "lr": (0.0, "parameter 'lr' must be > 0, got 0.0"),
             "sizes": ([2, 0], "parameter 'sizes' must be >= 1, got [2, 0]"),
             "dt": (1.0, "parameter 'dt' must be < 1, got 1.0")}
    for key, (value, message) in cases.items():
        with pytest.raises(UserError) as err:
            check_bounds(BOUNDS, ok(**{key: value}))
        assert str(err.value) == message
    with pytest.raises(UserError, match="'lr' must be <= 1"):
        check_bounds(BOUNDS, ok(lr=1.5))


def test_a_bound_on_an_unknown_key_or_of_an_unknown_kind_is_a_programming_error():
    with pytest.raises(KeyError):
        check_bounds({"nope": {"min": 0}}, ok())
    with pytest.raises(KeyError):
        check_bounds({"g": {"at_least": 0}}, ok())


def toy_config():
    config = types.ModuleType("papers.toy.config")
    config.PROFILES = {p: {"x": 2.0, "n": 3} for p in ("smoke", "quick", "full")}
    config.BOUNDS = {"n": {"min": 1}}
    config.TUNED = {}
    config.preflight = lambda cfg: None
    return config


def test_configure_applies_overrides_then_the_declared_bounds():
    cfg = configure(toy_config(), "quick", n="5", x=None)
    assert (cfg.n, cfg.x, cfg.profile) == (5, 2.0, "quick")
    with pytest.raises(UserError, match="'n' must be >= 1, got 0"):
        configure(toy_config(), "quick", n=0)


# -- open_run, measure, run_all ----------------------------------------------------------------------------
@pytest.fixture
def toy_paper(monkeypatch, tmp_path):
    """A paper `toy` in sys.modules: config and one study whose metrics come from the run's streams."""
    from common.runner import registry

    study = types.ModuleType("papers.toy.studies.draw")

    def measure(cfg, run):
        return {"metrics": {"x": cfg.x, "u": float(run.rng("draw").random()), "seed": run.seed}}

    study.measure = measure
    config = toy_config()
    config.preflight = lambda cfg: (_ for _ in ()).throw(UserError("x too large: run `make data`")) if cfg.x > 10 else None
    monkeypatch.setitem(sys.modules, "papers.toy.config", config)
    monkeypatch.setitem(sys.modules, "papers.toy.studies.draw", study)
    monkeypatch.setattr(registry, "notebooks", lambda paper: [tmp_path / "01-draw.ipynb"])
    return tmp_path


def test_run_all_runs_each_study_as_its_notebook_does_and_records_the_streams(toy_paper):
    from common.study import run_all

    out = run_all("toy", "smoke", toy_paper / "run", seed=3, overrides={"x": 4})
    assert out["draw"]["metrics"] == {"x": 4.0, "u": numpy_rng(3, "draw").random(), "seed": 3}
    assert read_json(toy_paper / "run" / "metrics.json")["u"] == out["draw"]["metrics"]["u"]
    manifest = read_json(toy_paper / "run" / "manifest.json")
    assert manifest["streams"] == ["draw"] and manifest["parameters"]["x"] == 4.0 and manifest["seed"] == 3


def test_open_run_refuses_bad_values_and_runs_the_preflight_before_writing(toy_paper):
    from common.study import open_run

    for overrides, message in (({"n": 0}, "'n' must be >= 1"), ({"x": 50}, "make data")):
        with pytest.raises(UserError, match=message):
            open_run("toy", "smoke", run_dir=toy_paper / "bad", overrides=overrides)
        assert not (toy_paper / "bad").exists()


TEMPLATE_PARAMS = '''import os
profile = os.environ.get("REPRO_PROFILE", "quick")
seed = 0
device = None
run_dir = None
overrides = {}'''

TEMPLATE_BODY = '''from common.runs import Run
run = Run.open("toy", profile, run_dir=run_dir, seed=seed, device=device)
run.log_metrics({"override_x": overrides.get("x", -1.0), "override_keys": sorted(overrides)})'''


def test_the_runner_fills_a_template_notebooks_overrides_from_p(toy_repo):
    from common import reproduce
    from tests.common.conftest import make_notebook

    make_notebook(toy_repo / "notebooks" / "toy" / "02-template.ipynb", TEMPLATE_PARAMS, TEMPLATE_BODY)
    assert reproduce.main(["toy", "--profile", "smoke", "-p", "x=3", "--results", str(toy_repo / "r")]) == 0
    metrics = read_json(toy_repo / "r" / "toy" / "smoke" / "metrics.json")
    assert (metrics["x"], metrics["override_x"], metrics["override_keys"]) == (3.0, 3, ["x"])
    manifest = read_json(toy_repo / "r" / "toy" / "smoke" / "manifest.json")   # the kernel's CPU time, once it ended
    assert 0 < manifest["cpu_s"] and manifest["cores_used"] == pytest.approx(manifest["cpu_s"] / manifest["wall_s"], abs=0.011)
    assert manifest["other_cores"] >= 0 and len(manifest["load_average_before"]) == 3   # what shared the machine
    with pytest.raises(SystemExit) as err:   # a key neither a notebook nor the profiles hold
        reproduce.main(["toy", "--profile", "smoke", "-p", "nope=1", "--results", str(toy_repo / "r2")])
    assert err.value.code == 2
