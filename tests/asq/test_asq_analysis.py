"""Per-seed metrics the comparison claims pair, and the disjoint training seeds of each run."""
import math

import pandas as pd

from common.claims import load_paper, paired
from common import paths
from papers.asq.analysis import per_seed
from papers.asq.config import get_config, training_seeds
from papers.asq.studies.qat_comparison import claim_metrics


def table():
    rows = []
    acc = {"fp": [90.0, 91.0, 92.0], "lsq-w2a2-uniform": [80.0, 81.0, 82.0], "asq-w2a2-uniform": [81.0, 81.5, 83.5],
           "lsq-w4a4-uniform": [89.0, 90.0, 91.0], "asq-w4a4-uniform": [89.0, 90.5, 90.5],
           "asq-w4a4-pot": [88.0, 89.0, 90.0], "asq-w4a4-post": [89.5, 90.0, 90.0], "asq-w4a4-apot": [89.0, 89.0, 89.0],
           "sbeta-w2a2-uniform": [81.0, 82.0, 83.0], "sbeta-w4a4-uniform": [89.0, 90.0, 92.0],
           "frozen-asq-w2a2-uniform": [80.0, 81.0, 82.0], "frozen-asq-w4a4-uniform": [89.0, 90.0, 91.0]}
    for config, vals in acc.items():
        for seed, a in zip([5, 3, 4], vals):                               # unsorted on purpose
            rows.append({"seed": seed, "config": config, "acc": a})
    return pd.DataFrame(rows)


def test_per_seed_lists_are_ordered_by_seed_and_paired():
    m = claim_metrics(table(), [2, 4], 4, ("uniform", "pot", "post"))
    assert m["seeds"] == [3, 4, 5]
    assert m["acc_fp_per_seed"] == [91.0, 92.0, 90.0]
    assert m["acc_asq_w2_per_seed"] == [81.5, 83.5, 81.0] and m["acc_lsq_w2_per_seed"] == [81.0, 82.0, 80.0]
    # per seed: mean over bit widths of ASQ - LSQ = ((0.5 + 0.5) / 2, (1.5 - 0.5) / 2, (1 + 0) / 2)
    assert m["delta_asq_lsq_allbits_per_seed"] == [0.5, 0.5, 0.5]
    assert m["acc_uniform_w4_per_seed"] == m["acc_asq_w4_per_seed"]
    # the engine's paired mean over the lists equals the logged paired delta (0.5, 1.5, 1.0 -> 1.0)
    assert math.isclose(paired(m["acc_asq_w2_per_seed"], m["acc_lsq_w2_per_seed"])["mean"], 1.0)
    assert math.isclose(m["delta_asq_lsq_w2"], 1.0)


def test_missing_config_gives_nan_not_a_shorter_list():
    df = table()
    df = df[~((df.config == "asq-w4a4-pot") & (df.seed == 4))]
    assert math.isnan(per_seed(df, "asq-w4a4-pot", [3, 4, 5])[1])
    assert all(math.isnan(v) for v in per_seed(df, "absent", [3, 4]))


def test_runs_train_disjoint_seed_blocks():
    assert training_seeds([0, 1, 2], 0) == [0, 1, 2]
    assert training_seeds([0, 1, 2], 2) == [6, 7, 8]
    assert get_config("quick", seed=1).seeds == [3, 4, 5]
    assert get_config("smoke", seed=3).seeds == [3]


def test_scalar_beta_null_lists_and_differences():
    m = claim_metrics(table(), [2, 4], 4, ("uniform", "pot", "post", "apot"), sbeta_bits=(2, 4))
    # seeds 3, 4, 5: sbeta W2 (82, 83, 81), LSQ W2 (81, 82, 80), ASQ W2 (81.5, 83.5, 81)
    assert m["acc_sbeta_w2_per_seed"] == [82.0, 83.0, 81.0]
    assert m["delta_sbeta_lsq_w2_per_seed"] == [1.0, 1.0, 1.0]
    assert m["delta_asq_sbeta_w2_per_seed"] == [-0.5, 0.5, 0.0]
    # all bits: W4 sbeta - LSQ = (0, 1, 0): per seed (1 + 0) / 2, (1 + 1) / 2, (1 + 0) / 2
    assert m["delta_sbeta_lsq_allbits_per_seed"] == [0.5, 1.0, 0.5]
    assert m["delta_asq_sbeta_allbits_per_seed"] == [0.0, -0.5, 0.0]
    assert m["acc_apot_w4_per_seed"] == [89.0, 89.0, 89.0]
    # without the null at every width, no all-bits list is made up
    assert "delta_sbeta_lsq_allbits_per_seed" not in claim_metrics(table(), [2, 4], 4, sbeta_bits=(2,))


def test_comparison_claims_name_logged_per_seed_metrics():
    _, claims = load_paper(paths.PAPERS / "asq" / "claims.yaml")
    m = claim_metrics(table(), [2, 4], 4, ("uniform", "pot", "post", "apot"), sbeta_bits=(2, 4))
    checked = 0
    for c in claims:
        if c.kind == "comparison" and "w3" not in c.metric and "imagenet" not in c.metric:
            assert isinstance(m[c.metric], list), c.id
            for key in (c.baseline, c.control, c.control_baseline):
                assert key is None or len(m[key]) == len(m[c.metric]), (c.id, key)
            checked += 1
    assert checked == 7
