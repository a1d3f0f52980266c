import numpy as np
import pytest
import torch

from common.device import select_device
from common.errors import UserError
from common.profiles import resolve
from common.seed import numpy_rng, seed_everything, torch_generator


def test_cpu_and_auto_on_a_cpu_machine(monkeypatch):
    monkeypatch.delenv("REPRO_DEVICE", raising=False)
    info = select_device("cpu")
    assert info.backend == "cpu" and info.device == torch.device("cpu") and info.threads >= 1
    if not torch.cuda.is_available():
        assert select_device().backend in ("cpu", "mps", "xpu")


def test_env_override(monkeypatch):
    monkeypatch.setenv("REPRO_DEVICE", "cpu")
    assert select_device().backend == "cpu"


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_absent_gpu_is_one_line_user_error():
    with pytest.raises(UserError, match="not available") as err:
        select_device("cuda")
    assert "\n" not in str(err.value)


def test_unknown_device():
    with pytest.raises(UserError, match="unknown device"):
        select_device("tpu")


def test_seed_everything_reproduces_draws():
    seed_everything(3)
    a = (np.random.rand(), torch.rand(2))
    seed_everything(3)
    b = (np.random.rand(), torch.rand(2))
    assert a[0] == b[0] and torch.equal(a[1], b[1])


def test_keyed_streams_are_reproducible_and_independent():
    assert numpy_rng(1, "a").random() == numpy_rng(1, "a").random()
    assert numpy_rng(1, "a").random() != numpy_rng(1, "b").random()
    assert numpy_rng(5).random() == np.random.default_rng(5).random()
    g1, g2 = torch_generator(2, "x"), torch_generator(2, "x")
    assert torch.equal(torch.rand(3, generator=g1), torch.rand(3, generator=g2))


def test_resolve_profiles():
    profiles = {"smoke": {"n": 10, "lr": 0.1, "flag": False}, "quick": {"n": 100, "lr": 0.1, "flag": False}}
    cfg = resolve(profiles, "quick", n=None, lr="0.5", flag="true")
    assert (cfg.n, cfg.lr, cfg.flag, cfg.profile) == (100, 0.5, True, "quick")
    assert resolve(profiles, "smoke", n=20.0).n == 20
    with pytest.raises(UserError, match="unknown profile"):
        resolve(profiles, "full")
    with pytest.raises(UserError, match="unknown parameter 'm'"):
        resolve(profiles, "quick", m=1)
    with pytest.raises(UserError, match="must be of type int"):
        resolve(profiles, "quick", n=2.5)
