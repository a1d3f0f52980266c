"""The development-seed tuner and investigations refuse the reported seeds and write nothing then; what
each measures, on stand-in metrics; every TUNED entry names a tuning command and its record."""
import numpy as np
import pytest

from papers.nlm import devtune_runs, devtune, investigations


@pytest.mark.parametrize("module, what", [(devtune, w) for w in devtune.COMMANDS] + [(investigations, w) for w in investigations.COMMANDS])
def test_reported_seeds_are_refused_with_exit_2(module, what, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("REPRO_RESULTS", str(tmp_path))
    with pytest.raises(SystemExit) as err:
        module.main([what, "--seeds", "100", "2"])
    assert err.value.code == 2
    assert "development runs use seeds >= 100" in capsys.readouterr().err
    assert not any(tmp_path.rglob("*.json"))


def test_tuning_and_investigations_are_apart_and_every_tuned_key_names_its_tuning_record():
    from papers.nlm.config import PROFILES, TUNED

    from pathlib import Path

    from common.claims import load_claims

    ids = {c.id for c in load_claims(Path(devtune.__file__).with_name("claims.yaml"))}
    assert set(devtune.COMMANDS) == {"explore", "dwell", "ooe", "frames", "models", "memorization"}
    assert set(investigations.COMMANDS) == {"precision", "replicates", "generalization", "noise_length", "binary", "relative"}
    for key, entry in TUNED.items():
        assert all(key in p for p in PROFILES.values()) or key in ids, key     # a setting, or a claim's criterion
        assert entry["result"] in devtune.COMMANDS and entry["why"] and entry["show"], key
        assert all(s in ("chosen_dwell", "chosen_models") or s.startswith("results.1") for s in entry["show"]), key


def test_variants_are_the_documented_ones():
    # the README and config cite these variants; the chosen ones must be among them
    from papers.nlm.config import PROFILES

    q = PROFILES["quick"]
    assert q["explore_chains"] == 8 and q["explore_steps"] in set(devtune.EXPLORE_VARIANTS.values())
    assert q["ooe_rdm_updates"] in {v["ooe_rdm_updates"] for v in devtune.OOE_VARIANTS.values()}


def test_precision_compares_the_sweep_in_both_dtypes_on_the_same_seed(monkeypatch):
    """tune_precision runs the sweep once per dtype with only gemm_dtype changed, and reports z = (bf16 -
    fp32) / sqrt(se1^2 + se2^2) per claim metric (checked on stand-in metrics)."""
    from papers.nlm.studies import memorization_sweep

    seen = []

    def fake_sweep(cfg, run):
        seed = run.seed
        seen.append((cfg.gemm_dtype, seed, cfg.sweep_sizes))
        shift = 0.03 if cfg.gemm_dtype == "bfloat16" else 0.0
        m = {k: 0.4 + shift for k in investigations.SWEEP_KEYS} | {k + "_se": 0.03 for k in investigations.SWEEP_KEYS}
        return {"metrics": m | {"p_star_pcd_inside": 1.0, "mem_spearman": -0.9}}

    monkeypatch.setattr(memorization_sweep, "measure", fake_sweep)
    out = investigations.investigate_precision(101)
    assert [s[:2] for s in seen] == [("float32", 101), ("bfloat16", 101)] and seen[0][2] == seen[1][2]
    assert set(out["z"]) == set(investigations.SWEEP_KEYS)
    assert out["z"]["mem_acc_small_p_pcd"] == pytest.approx(0.03 / (2 * 0.03 ** 2) ** 0.5)
    assert out["max_abs_z"] == pytest.approx(0.03 / (2 * 0.03 ** 2) ** 0.5)


def test_replicates_reports_each_window_claim_with_both_parts_of_its_se(monkeypatch):
    """tune_replicates runs notebook 03 once at quick as it is (its ooe_replicates), and reports each window
    claim's value, SE parts and signed margins (positive on the claim's side), its control's, and the whole
    verdict claims.yaml gives, checked on stand-in metrics; ooe and frames keep one trained model per mode."""
    from papers.nlm.studies import out_of_equilibrium

    seen = []

    def fake_ooe(cfg, run):
        seen.append((cfg.ooe_replicates, cfg.ooe_window_frames))
        m = {}
        for key in ("rdm_late_minus_near_k", "rdm_late_minus_mid", "pcd_late_minus_mid", "rdm_minus_pcd_late_rise"):
            m |= {key: 0.015, key + "_se": 0.005, key + "_boot_se": 0.004, key + "_between_se": 0.003,
                  key + "_reps": [0.01, 0.015, 0.02]}
        m["rdm_late_minus_near_k"] = 0.05                                   # 6 SEs over 0.02
        m |= {"pcd_late_minus_near_k": -0.01, "pcd_late_minus_near_k_se": 0.01,   # 3 SEs under 0.02
              "untrained_minus_pcd_late_rise": 0.0, "untrained_minus_pcd_late_rise_se": 0.01}
        return {"metrics": m}

    monkeypatch.setattr(out_of_equilibrium, "measure", fake_ooe)
    row = investigations.investigate_replicates(100)
    from papers.nlm.config import PROFILES
    assert seen == [(PROFILES["quick"]["ooe_replicates"], PROFILES["quick"]["ooe_window_frames"])]
    pcd = row["pcd-does-not-degrade"]                                       # at_most 0.01: 0.015 is 1 SE over
    assert pcd["margin_se"] == pytest.approx(-1.0) and pcd["margin_boot_se"] == pytest.approx(-1.25)
    assert pcd["verdict"] == "inconclusive at this scale"
    # its control (the Rdm rise, 0.015 +- 0.005) is 1 SE on the claim's side of 0.01: inconclusive too
    assert pcd["control_margin_se"] == pytest.approx(-1.0) and pcd["control_verdict"] == "inconclusive at this scale"
    assert row["rdm-degrades-at-long-times"]["margin_se"] == pytest.approx(-1.0)  # at_least 0.02
    best = row["rdm-best-at-finite-time"]                                   # at_least 0.02, control PCD
    assert best["margin_se"] == pytest.approx(6.0) and best["control_margin_se"] == pytest.approx(-3.0)
    assert (best["verdict"], best["control_verdict"]) == ("reproduced", "not reproduced")
    assert pcd["reps"] == [0.01, 0.015, 0.02] and pcd["between_se"] == 0.003
    seen.clear()
    devtune.tune_frames(100)
    devtune.tune_ooe(100)
    assert {r for r, _ in seen} == {1} and len(seen) == len(devtune.FRAME_VARIANTS) + len(devtune.OOE_VARIANTS)


def test_window_claims_are_notebook_03s_claims_as_claims_yaml_states_them():
    """The tuner names the window claims only; each one's metric, comparison, threshold and control come
    from claims.yaml, and each is a quantity notebook 03 logs with its SE."""
    from pathlib import Path

    from common.claims import load_claims

    claims = {c.id: c for c in load_claims(Path(devtune.__file__).with_name("claims.yaml"))}
    got = devtune_runs.window_claims()
    assert list(got) == list(devtune_runs.WINDOW_CLAIMS)
    for cid, c in got.items():
        assert c.metric == claims[cid].metric and c.value == claims[cid].value and c.compare == claims[cid].compare
        assert c.control == claims[cid].control and c.se == c.metric + "_se" and c.profiles == ("quick",)
        assert c.metric.startswith(("rdm_", "pcd_"))


def test_frames_margins_use_the_thresholds_of_claims_yaml(monkeypatch):
    """tune_frames' margin of each window claim is (value - threshold) / SE on the claim's side, with the
    threshold claims.yaml gives (checked on stand-in metrics: every metric 0.05 +- 0.01)."""
    from papers.nlm.studies import out_of_equilibrium

    monkeypatch.setattr(out_of_equilibrium, "measure", lambda cfg, run: {"metrics": {
        k: (0.01 if k.endswith("_se") else 0.05) for c in devtune_runs.window_claims().values() for k in (c.metric, c.se)}})
    out = devtune.tune_frames(100)
    for cid, c in devtune_runs.window_claims().items():
        want = ((0.05 - c.value) if c.compare == "at_least" else (c.value - 0.05)) / 0.01
        assert [out[f][cid]["margin_se"] for f in devtune.FRAME_VARIANTS] == [pytest.approx(want)] * 3
    # rdm-best-at-finite-time: at_least 0.02 -> +3 SEs; pcd-does-not-degrade: at_most 0.01 -> -4 SEs
    assert out["frames8"]["rdm-best-at-finite-time"]["margin_se"] == pytest.approx(3.0)
    assert out["frames8"]["pcd-does-not-degrade"]["margin_se"] == pytest.approx(-4.0)
    assert out["frames8"]["mean_se"] == pytest.approx(0.01) and out["frames8"]["min_abs_margin_se"] == pytest.approx(3.0)


def test_the_record_names_the_tree_at_the_start_and_at_the_end_when_it_changed(tmp_path, monkeypatch):
    """A development run stamps the revision it started from; a tree edited while it ran is recorded too."""
    import json

    states = iter([{"sha": "a", "dirty": False}, {"sha": "a", "dirty": True, "dirty_files": ["x.py"]}])
    monkeypatch.setattr("common.runs.git_state", lambda: next(states))   # read by common.devseeds.run_seeds
    monkeypatch.setitem(investigations.COMMANDS, "replicates", lambda seed: {"seed": seed})
    monkeypatch.setenv("REPRO_RESULTS", str(tmp_path))
    investigations.main(["replicates", "--seeds", "100"])
    out = json.loads((tmp_path / "nlm" / "dev" / "replicates.json").read_text())
    assert out["git"] == {"sha": "a", "dirty": False} and out["git_at_end"]["dirty_files"] == ["x.py"]
    assert out["results"] == {"100": {"seed": 100}}


def test_generalization_trains_the_two_ends_of_the_sweep_per_variant_and_measures_against_claims_yaml(monkeypatch):
    """tune_generalization runs notebook 02's sweep at the smallest and largest P (one replicate) once per
    variant, with only that variant's settings changed, and reports each large-P claim's margin from the
    threshold claims.yaml gives (checked on stand-in metrics)."""
    from papers.nlm.config import PROFILES
    from papers.nlm.studies import memorization_sweep

    seen = []

    def fake_sweep(cfg, run):
        seed = run.seed
        seen.append((seed, list(cfg.sweep_sizes), cfg.sweep_replicates, cfg.sweep_updates, cfg.sweep_lr, cfg.n_chains))
        return {"metrics": {"gen_acc_dev_both_large_p_pcd": 0.4, "gen_acc_dev_both_large_p_pcd_se": 0.03,
                            "e_aai_both_large_p_pcd": 0.09, "e_aai_both_large_p_pcd_se": 0.01,
                            "sweep_pcd_acc_s_test": [1.0, 0.6], "sweep_pcd_acc_t_test": [1.0, 0.9], "sweep_spectral_norm": [9.0, 6.0],
                            "sweep_euler_stability": [1.8, 0.5], "sweep_frozen_at": [1900, -1]}}

    monkeypatch.setattr(memorization_sweep, "measure", fake_sweep)
    out = investigations.investigate_generalization(100)
    q = PROFILES["quick"]
    lo, hi = min(q["sweep_sizes"]), max(q["sweep_sizes"])
    assert seen[0] == (100, [lo, hi], 1, q["sweep_updates"], q["sweep_lr"], q["n_chains"])   # quick as it runs
    assert seen[1] == (100, [lo, hi], 1, 8000, q["sweep_lr"], q["n_chains"])
    assert seen[-1] == (100, [lo, 546 - q["n_test"]], 1, q["sweep_updates"], q["sweep_lr"], q["n_chains"])
    assert list(out) == list(investigations.GENERALIZATION_VARIANTS)
    row = out["quick"]
    # at_most 0.1: 0.4 is 10 SEs on the wrong side; at_most 0.05: 0.09 is 4 SEs on the wrong side
    assert row["generalization-large-p"]["margin_se"] == pytest.approx(-10.0)
    assert row["test-aai-large-p"]["margin_se"] == pytest.approx(-4.0)
    assert (row["acc_s_test"], row["acc_t_test"], row["spectral_norm"], row["sizes"]) == (0.6, 0.9, 6.0, [lo, hi])
    assert (row["euler_stability"], row["frozen_at"]) == (0.5, -1)                # the largest P's, not the smallest's


def test_noise_length_runs_the_sweeps_ends_per_length_and_measures_against_claims_yaml(monkeypatch):
    """tune_noise_length runs notebook 02's sweep at the smallest and largest P with quick's replicates
    once per generation length, only sweep_gen_steps changed, and reports the from-noise claim's margin
    from claims.yaml's threshold (checked on stand-in metrics)."""
    from papers.nlm.config import PROFILES
    from papers.nlm.studies import memorization_sweep

    seen = []

    def fake_sweep(cfg, run):
        seed = run.seed
        seen.append((seed, list(cfg.sweep_sizes), cfg.sweep_replicates, cfg.sweep_updates, cfg.sweep_gen_steps))
        return {"metrics": {"mem_gap_small_p": 0.1, "mem_gap_small_p_se": 0.05, "mem_acc_small_p_pcd": 0.2,
                            **{k: float(i) for i, k in enumerate(investigations.NOISE_DIAGNOSTICS)}}}

    monkeypatch.setattr(memorization_sweep, "measure", fake_sweep)
    out = investigations.investigate_noise_length(101)
    q = PROFILES["quick"]
    ends = [min(q["sweep_sizes"]), max(q["sweep_sizes"])]
    assert seen == [(101, ends, q["sweep_replicates"], q["sweep_updates"], n) for n in (3000, 15_000, 50_000)]
    assert q["sweep_gen_steps"] == investigations.NOISE_LENGTHS["quick"]                # the first variant is quick as it runs
    row = out["paper50k"]
    assert row["margin_se"] == pytest.approx(-2.0)                               # at_most 0: 0.1 is 2 SEs on the wrong side
    assert (row["steps"], row["pcd_value"], row["small_p_pcd_d_train_median"]) == (50_000, 0.2, 1.0)


def test_relative_runs_quick_sweep_once_and_judges_the_sweep_claims_as_claims_yaml_states_them(monkeypatch):
    """investigate_relative runs notebook 02 at quick unchanged and reports each relative claim's value, margin
    and whole verdict (stand-in metrics: every claim on its side by 3 SEs, every control failing)."""
    from papers.nlm.studies import memorization_sweep

    claims = devtune_runs.claims(investigations.RELATIVE_CLAIMS)
    seen = []

    def fake_sweep(cfg, run):
        seed = run.seed
        seen.append((seed, cfg.sweep_sizes, cfg.sweep_gen_steps))
        m = {k: 0.0 for k in investigations.RELATIVE_KEYS}
        for c in claims.values():
            sign = 1 if c.compare == "at_least" else -1
            m[c.metric] = c.value + sign * 0.03
            m[c.control] = c.value - sign * 0.5
            if c.se:
                m[c.se] = m[c.control_se] = 0.01
        return {"metrics": m}

    monkeypatch.setattr(memorization_sweep, "measure", fake_sweep)
    out = investigations.investigate_relative(102)
    q = devtune_runs.quick()
    assert seen == [(102, q.sweep_sizes, q.sweep_gen_steps)]
    for cid, c in claims.items():
        assert out[cid]["verdict"] == "reproduced" and out[cid]["control_verdict"] == "not reproduced", cid
        if c.se:
            assert out[cid]["margin_se"] == pytest.approx(3.0)


def test_binary_runs_the_sweeps_ends_on_both_datasets_and_judges_each_claim_with_its_control(monkeypatch):
    """tune_binary runs notebook 02's sweep at the smallest and largest P with quick's replicates on quick's
    digits and on the thresholded digits, only the dataset changed, and reports each sweep claim's margin
    from claims.yaml's threshold and its verdict with the control (stand-in metrics)."""
    from papers.nlm.config import PROFILES
    from papers.nlm.studies import memorization_sweep

    seen = []
    claims = devtune_runs.claims(investigations.BINARY_CLAIMS)

    def fake_sweep(cfg, run):
        seed = run.seed
        seen.append((seed, cfg.dataset, list(cfg.sweep_sizes), cfg.sweep_replicates, cfg.sweep_updates))
        good = cfg.dataset == "digits_binary"
        m = {k: float(i) for i, k in enumerate(investigations.BINARY_DIAGNOSTICS)}
        for c in claims.values():                 # each claim's metric 3 SEs on its side (binary) or against it
            sign = 1 if c.compare == "at_least" else -1
            m[c.metric] = c.value + sign * (0.03 if good else -0.03)
            m[c.se] = 0.01
            m[c.control] = c.value - sign * 0.5   # every control fails
            if c.control_se:
                m[c.control_se] = 0.01
        return {"metrics": m}

    monkeypatch.setattr(memorization_sweep, "measure", fake_sweep)
    out = investigations.investigate_binary(101)
    q = PROFILES["quick"]
    ends = [min(q["sweep_sizes"]), max(q["sweep_sizes"])]
    assert seen == [(101, d, ends, q["sweep_replicates"], q["sweep_updates"]) for d in ("digits", "digits_binary")]
    assert q["dataset"] == investigations.BINARY_DATASETS[0]                            # the first is quick's own data
    for cid in investigations.BINARY_CLAIMS:
        assert out["digits_binary"][cid]["margin_se"] == pytest.approx(3.0)
        assert out["digits"][cid]["margin_se"] == pytest.approx(-3.0)
        assert out["digits_binary"][cid]["verdict"] == "reproduced"
        assert out["digits"][cid]["verdict"] == "not reproduced"
    assert out["digits"]["large_p_pcd_acc_t_test"] == 1.0 and out["digits"]["sizes"] == ends


def test_explore_reads_every_chain_length_from_the_first_windows_of_one_run(monkeypatch):
    """tune_explore runs notebook 04 once, at the longest length, and judges each shorter length on the windows
    that length has ((steps - burn-in) / window), for the trained model and the restart and quench nulls."""
    from papers.nlm import mainmodel
    from papers.nlm.studies import exploration

    cfg = devtune.quick()
    longest = max(devtune.EXPLORE_VARIANTS.values())
    n_long = (longest - cfg.explore_burn) // cfg.avg_steps
    n_short = (min(devtune.EXPLORE_VARIANTS.values()) - cfg.explore_burn) // cfg.avg_steps
    D = cfg.explore_dwell
    trained = np.array(([1] * D + [3] * D) * (n_long // (2 * D) + 1))[:n_long]   # a transition every D windows
    trained[n_short:] = 6                                                 # after the shortest length: one class
    cls = {"trained": [trained] * 2, "quench": [np.full(n_long, -1)] * 2, "restart": [np.full(n_long, 3)] * 2}
    runs = []
    monkeypatch.setattr(mainmodel, "main_model", lambda cfg, streams: {"seed": streams.seed})
    monkeypatch.setattr(exploration, "explore", lambda cfg, streams, model: runs.append(cfg.explore_steps) or {"window_classes_all": cls})
    out = devtune.tune_explore(100)
    assert runs == [longest]
    short = min(devtune.EXPLORE_VARIANTS, key=devtune.EXPLORE_VARIANTS.get)
    long_ = max(devtune.EXPLORE_VARIANTS, key=devtune.EXPLORE_VARIANTS.get)
    assert out[short]["windows"] == n_short and out[short]["trained"]["transitions_mean"] == n_short // D - 1
    assert out[long_]["trained"]["transitions_mean"] == n_short // D - 1 + 1     # one more: into class 6
    assert out[short]["restart"]["transitions_mean"] == 0 and out[short]["restart"]["classes_median"] == 1
    assert out[short]["quench"]["data_like"] == 0


def test_dwell_counts_each_dwell_on_one_run_and_its_rule_picks_the_first_plateau(monkeypatch):
    """tune_dwell runs notebook 04 once per seed and counts visits at every dwell of DWELLS from the same
    window classes; chosen_dwell is the smallest dwell whose change to the next is < 20 % on every seed."""
    from papers.nlm import mainmodel
    from papers.nlm.studies import exploration
    from papers.nlm.visits import EXPLORE_MODELS

    runs = []
    # two identical chains per model: classes 1 1 3 3 3 1 (trained), constant 3 (quench), off the data (the others)
    cls = {"trained": [np.array([1, 1, 3, 3, 3, 1])] * 2, "quench": [np.array([3] * 6)] * 2,
           "untrained": [np.array([-1] * 6)] * 2, "j0": [np.array([-1] * 6)] * 2, "restart": [np.array([3] * 6)] * 2}
    monkeypatch.setattr(mainmodel, "main_model", lambda cfg, streams: {"seed": streams.seed})
    monkeypatch.setattr(exploration, "explore", lambda cfg, streams, model: runs.append(streams.seed) or {
        "window_classes_all": cls, "metrics": {f"explore_{n}_data_like": 0.0 for n in EXPLORE_MODELS}})
    out = devtune.tune_dwell(100)
    assert runs == [100]
    assert out["dwell1"]["trained"]["transitions_mean"] == 2.0          # 1 -> 3 -> 1
    assert out["dwell2"]["trained"]["transitions_mean"] == 1.0          # the last single 1 no longer counts
    assert out["dwell3"]["trained"]["transitions_mean"] == 0.0 and out["dwell3"]["trained"]["classes_median"] == 1.0
    assert out["dwell1"]["quench"]["transitions_mean"] == 0.0 and out["dwell6"]["quench"]["classes_median"] == 1.0
    assert out["rel_change_next"]["dwell1"] == 0.5
    assert out["dwell1"]["restart"]["transitions_mean"] == 0.0
    # the rule: the smallest dwell whose restart-null transitions, averaged over the seeds, fall below 1
    rec = lambda **t: {f"dwell{d}": {"restart": {"transitions_mean": t.get(f"d{d}", 0.0)}} for d in devtune.DWELLS}  # noqa: E731
    assert devtune.chosen_dwell({"100": rec(d1=5, d2=2, d3=1.2), "101": rec(d1=4, d2=1, d3=0.7)}) == 3   # (1.2 + 0.7) / 2 < 1
    assert devtune.chosen_dwell({"100": rec(d1=0.5)}) == 1
    assert devtune.chosen_dwell({"100": rec(**{f"d{d}": 2.0 for d in devtune.DWELLS})}) is None


def test_models_needed_hand_cases():
    """The fewest models whose SE between models at the given spread puts mean - 1.645 SE at or above 3."""
    # development seed 100's first three models: mean 7.042, sd 5.052 -> (1.645 * 5.052 / 4.042)^2 = 4.23 -> 5
    assert devtune.models_needed([7.875, 11.625, 1.625]) == 5
    assert devtune.models_needed([4.0, 6.0]) == 2          # (1.645 * 1.414 / 2)^2 = 1.35 -> at least 2
    assert devtune.models_needed([2.0, 3.0]) is None       # mean 2.5 is not above 3: no K decides it
    assert devtune.chosen_models({"100": {"models_needed_first3": 5}, "101": {"models_needed_first3": 3}}) == 5
    assert devtune.chosen_models({"100": {"models_needed_first3": 5}, "101": {"models_needed_first3": None}}) is None
    assert devtune.chosen_models({"100": {"models_needed": 2}, "101": {"models_needed": 3}}, "models_needed") == 3
    n = devtune.model_numbers([4.0, 6.0])
    assert n["mean"] == 5.0 and abs(n["se"] - 1.0) < 1e-12 and abs(n["margin_se"] - 2.0) < 1e-12


def test_models_and_memorization_read_the_development_run(tmp_path, monkeypatch):
    """Both commands read results/development/nlm/quick/seed-<s>/metrics.json (a missing run is a UserError naming
    the command that makes it) and report the claims of claims.yaml with their controls."""
    import json

    from common.errors import UserError

    monkeypatch.setenv("REPRO_RESULTS", str(tmp_path))
    with pytest.raises(UserError, match="--development"):
        devtune.tune_models(100)
    run = tmp_path / "development" / "nlm" / "quick" / "seed-100"
    run.mkdir(parents=True)
    m = {"explore_trained_transitions_models": [4.0, 6.0, 5.0, 5.0], "mem_gap_small_p_pcd": -0.2, "mem_gap_small_p_pcd_se": 0.1,
         "mem_gap_small_p_untrained": 0.5, "mem_gap_small_p_untrained_se": 0.1, "cross_margin_rel_pcd": 0.3,
         "cross_margin_rel_pcd_se": 0.05, "cross_margin_rel_heldout_split": -0.05, "cross_margin_rel_heldout_split_se": 0.05, "mem_fall": 0.4, "mem_fall_se": 0.02, "mem_fall_heldout": 0.0, "mem_fall_heldout_se": 0.01}
    (run / "metrics.json").write_text(json.dumps(m))
    out = devtune.tune_models(100)
    assert out["all"]["models"] == 4 and out["first3"]["models"] == 3 and out["models_needed"] == 2
    assert out["models_needed_first3"] == 2          # 4, 6, 5: mean 5, sd 1 -> (1.645 / 2)^2 < 2
    mem = devtune.tune_memorization(100)
    assert mem["memorization-small-p"]["margin_se"] == pytest.approx(2.0) and mem["memorization-small-p"]["control"]["margin_se"] == pytest.approx(-5.0)
    tr = mem["transition-in-range"]                  # 0.3 +- 0.05 against 0.1: 4 SEs above; the control 3 SEs below
    assert tr["margin_se"] == pytest.approx(4.0) and tr["control"]["margin_se"] == pytest.approx(-3.0) and tr["threshold"] == 0.1
    assert mem["memorization-falls-with-p"]["margin_se"] == pytest.approx(10.0)
