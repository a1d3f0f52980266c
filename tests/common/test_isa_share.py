"""benchmarks/isa_share.py: the share of the gap to Zen 3 that the vector instruction set explains (the heavy runs
are the benchmark's; here its arithmetic, its environments and its refusals)."""
import json

import pytest

from common.bench import load_benchmark

isa = load_benchmark("isa_share")


def test_the_avx2_side_holds_every_library_to_avx2_and_the_native_side_to_nothing():
    base = {"PATH": "/bin", "ATEN_CPU_CAPABILITY": "avx512", "MKL_ENABLE_INSTRUCTIONS": "AVX512"}
    native, avx2 = isa.side_env("native", base), isa.side_env("avx2", base)
    assert native == {"PATH": "/bin"}   # a value left over in the caller's environment does not leak into "as built"
    assert avx2 == {"PATH": "/bin", "ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2",
                    "OPENBLAS_CORETYPE": "Haswell"}
    with pytest.raises(ValueError):
        isa.side_env("avx512", base)


def test_the_slowdown_is_avx2_seconds_over_native_seconds_per_pair():
    res = isa.share([100.0, 110.0], [120.0, 121.0], 2.4)
    assert res["slowdown"] == [1.2, 1.1] and res["slowdown_min"] == 1.1 and res["slowdown_max"] == 1.2
    assert res["zen3_ratio"] == 2.4


def test_zen3_ratios_are_read_only_from_the_same_cpu():
    here = {"cpus": 2, "family_model": "6/207", "model": "Intel(R) Xeon(R) Processor", "simd": ["avx2", "avx512f"]}
    speed = {"machine": dict(here), "results": {"papers": {"nlm": {"ratio": 2.426}, "acl": {"ratio": None}}}}
    assert isa.zen3_ratios(speed, here) == {"nlm": 2.426, "acl": None}
    assert isa.zen3_ratios(dict(speed, machine=dict(here, family_model="6/167")), here) == {}   # another Xeon
    assert isa.zen3_ratios(None, here) == {}


def test_a_cpu_without_avx512_is_refused_in_one_line_and_nothing_is_written(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("REPRO_RESULTS", str(tmp_path))
    monkeypatch.setattr(isa, "machine", lambda: {"cpus": 2, "model": "AMD EPYC", "simd": ["avx2"]})
    monkeypatch.setattr(isa, "run_side", lambda *a: pytest.fail("nothing may run"))
    assert isa.main(["--papers", "diffusion"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no AVX-512" in err[0]
    assert not (tmp_path / "bench").exists()


def test_pairs_alternate_which_side_runs_first_and_the_figures_are_written(monkeypatch, tmp_path):
    monkeypatch.setenv("REPRO_RESULTS", str(tmp_path))
    monkeypatch.setattr(isa, "machine", lambda: {"cpus": 2, "model": "Xeon", "family_model": "6/207",
                                                 "simd": ["avx2", "avx512f"]})
    order, seconds = [], {"native": 100.0, "avx2": 125.0}
    monkeypatch.setattr(isa, "run_side", lambda p, side: order.append(side) or seconds[side])
    assert isa.main(["--papers", "diffusion", "--pairs", "2"]) == 0
    assert order == ["native", "avx2", "avx2", "native"]
    res = json.loads((tmp_path / "bench" / "isa_share.json").read_text())["results"]
    assert res["papers"]["diffusion"]["slowdown"] == [1.25, 1.25] and res["pairs"] == 2
