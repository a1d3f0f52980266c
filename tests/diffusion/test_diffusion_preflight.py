"""The runner's preflight: the full profile refuses in one line when Fashion-MNIST is missing."""
import pytest

from common import data as cdata
from common.errors import UserError
from papers.diffusion.config import get_config, preflight


def test_full_without_fashion_mnist_is_refused_in_one_line(monkeypatch):
    monkeypatch.setattr(cdata, "available", lambda name: name != "fashion_mnist")
    with pytest.raises(UserError) as err:
        preflight(get_config("full"))
    msg = str(err.value)
    assert "fashion_mnist" in msg and "make data" in msg and "\n" not in msg
    preflight(get_config("quick"))                                  # the digits ship with scikit-learn
    preflight(get_config("full", learned_dataset="digits"))         # an override that needs no download
