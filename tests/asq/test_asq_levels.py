"""Level sets of every grid: exact values, sizes, storage, projection."""
import math

import pytest
import torch

from common.errors import UserError
from papers.asq.levels import (GRIDS, LUT_FRAC_BITS, fixed_point, level_set, magnitudes, project,
                               storage_bits, weight_mse)

R2 = 2 ** -0.5


def fx(v):
    return fixed_point(v)


def mags(grid, bits):
    return magnitudes(grid, bits).tolist()


def test_uniform_levels_exact():
    assert (level_set("uniform", 2) * 2).tolist() == [-2, -1, 0, 1]
    assert (level_set("uniform", 4) * 8).tolist() == list(range(-8, 8))


@pytest.mark.parametrize("bits,expected", [(2, [1.0]), (3, [1.0, 0.5, 0.25]),
                                           (4, [1.0, 0.5, 0.25, 0.125, 2**-4, 2**-5, 2**-6])])
def test_pot_magnitudes(bits, expected):
    assert mags("pot", bits) == expected


@pytest.mark.parametrize("bits,expected", [
    (2, [1.0]),
    (3, [1.0, R2, 0.5]),
    (4, [1.0, R2, 0.5, R2 / 2, 0.25, R2 / 4, 0.125]),
])
def test_post_magnitudes(bits, expected):
    assert mags("post", bits) == [fx(v) for v in expected]
    assert max(abs(a - b) for a, b in zip(mags("post", bits), expected)) <= 2.0 ** -(LUT_FRAC_BITS + 1)


def test_released_sets_have_two_more_levels():
    # released POST (sqrt 2 restored): {0, +-1} U {+-2^(-(i+1)/2)}, 2^b + 1 levels
    assert mags("post_released", 2) == [1.0, fx(R2)]
    assert mags("post_released", 4) == [fx(2 ** (-j / 2)) for j in range(8)]
    # released code as shipped: base 2
    assert mags("pot_released", 3) == [1.0, 0.5, 0.25, 0.125]
    for b in (2, 3, 4, 5):
        assert level_set("post_released", b).numel() == 2**b + 1
        assert level_set("pot_released", b).numel() == 2**b + 1
        assert storage_bits("post_released", b) == b + 1


@pytest.mark.parametrize("grid", ["uniform", "pot", "post", "apot"])
@pytest.mark.parametrize("bits", [2, 3, 4, 5])
def test_storable_sets_fit_b_bits(grid, bits):
    lv = level_set(grid, bits)
    assert lv.numel() == (2**bits if grid == "uniform" else 2**bits - 1)
    assert storage_bits(grid, bits) == bits
    assert torch.all(lv[1:] > lv[:-1])                 # sorted, distinct
    assert float(lv.abs().max()) == 1.0 and 0.0 in lv.tolist()
    if grid != "uniform":
        assert torch.equal(lv, -lv.flip(0))            # symmetric


def test_ternary_at_two_bits():
    assert level_set("pot", 2).tolist() == level_set("post", 2).tolist() == [-1.0, 0.0, 1.0]


def test_projection_lands_on_grid_and_is_idempotent():
    gen = torch.Generator().manual_seed(0)
    v = torch.rand(5000, generator=gen, dtype=torch.float64) * 2 - 1
    for grid in GRIDS:
        lv = level_set(grid, 4)
        q = project(v, lv)
        assert torch.isin(q, lv).all()
        assert torch.equal(project(q, lv), q)
        # nearest: no level is closer than the chosen one
        best = (v[:, None] - lv[None, :]).abs().min(dim=1).values
        assert torch.allclose((q - v).abs(), best, atol=0, rtol=0)


def test_weight_mse_post_beats_pot_at_4_bits_on_gaussian():
    gen = torch.Generator().manual_seed(1)
    w = torch.randn(1, 20000, generator=gen, dtype=torch.float64)
    e = {g: float(weight_mse(w, g, 4)[0]) for g in ("uniform", "pot", "post")}
    assert e["post"] < e["pot"]
    assert abs(e["post"] - e["uniform"]) < 0.3 * e["uniform"]
    assert math.isclose(e["uniform"], 0.013, rel_tol=0.25)   # reference value from the notes


@pytest.mark.parametrize("grid,bits", [("post", 6), ("pot", 1), ("uniform", 9), ("uniform", 1), ("nope", 4), ("post", 3.5)])
def test_bad_grid_or_bits_raise_user_error(grid, bits):
    with pytest.raises(UserError):
        level_set(grid, bits)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_table_projection_equals_binary_search_on_every_grid_ties_included(dtype):
    # the look-up table must agree with bucketize over the exact midpoints, on them and one ulp
    # either side, inside and outside [-1, 1]
    from papers.asq.levels import GRID_BITS, lookup_table, project_index

    gen = torch.Generator().manual_seed(5)
    for grid in GRIDS:
        for bits in GRID_BITS[grid]:
            lv = level_set(grid, bits)
            assert lookup_table(lv, dtype, values=True) is not None       # every grid here is dyadic
            lvd = lv.to(dtype)
            mids = (lvd[1:] + lvd[:-1]) / 2
            v = torch.cat([mids, torch.nextafter(mids, torch.full_like(mids, 2.0)),
                           torch.nextafter(mids, torch.full_like(mids, -2.0)), lvd,
                           torch.rand(3000, generator=gen, dtype=torch.float64).to(dtype) * 2.4 - 1.2])
            assert torch.equal(project(v, lv), lvd[torch.bucketize(v, mids)]), (grid, bits)
            assert torch.equal(project_index(v, lv), torch.bucketize(v, mids)), (grid, bits)


def test_non_dyadic_levels_fall_back_to_binary_search():
    from papers.asq.levels import lookup_table

    lv = torch.tensor([-1.0, -1 / 3, 0.0, 0.3, 1.0], dtype=torch.float64)
    assert lookup_table(lv, torch.float64, values=True) is None
    v = torch.tensor([-0.7, -0.6, -0.1, 0.14, 0.16, 0.64, 0.66], dtype=torch.float64)
    assert project(v, lv).tolist() == [-1.0, -1 / 3, 0.0, 0.0, 0.3, 0.3, 1.0]
