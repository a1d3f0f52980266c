"""The machine record of a benchmark: timings from different CPUs are not comparable, so each says its CPU."""
from common.machine import describe_machine, machine

ZEN3 = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC
flags\t\t: fpu sse2 avx avx2 fma bmi2
processor\t: 1
model name\t: AMD EPYC
flags\t\t: fpu sse2 avx avx2 fma bmi2
"""


def test_machine_reads_the_first_processor_model_family_and_simd_flags():
    rec = machine(ZEN3)
    assert (rec["model"], rec["family_model"], rec["simd"]) == ("AMD EPYC", "25/1", ["avx2"])
    zen4 = machine(ZEN3.replace("bmi2", "bmi2 avx512f avx512_bf16"))
    assert zen4["simd"] == ["avx2", "avx512f", "avx512_bf16"]
    assert describe_machine(dict(rec, cpus=2)) == "2 CPUs, AMD EPYC (25/1; avx2)"


def test_a_record_without_the_model_says_so():
    assert describe_machine({"cpus": 2, "processor": "x86_64"}) == "2 CPUs, CPU model not recorded"
    assert describe_machine(None) == "machine not recorded"
    assert "model" not in machine("flags : avx2\n") and machine("flags : avx2\n")["simd"] == ["avx2"]


def test_load_benchmark_loads_a_module_that_defines_a_dataclass(tmp_path, monkeypatch):
    """dataclasses look their module up in sys.modules while the class is built."""
    from common import bench, paths

    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "bench_toyclass.py").write_text(
        "from dataclasses import dataclass\n\n@dataclass\nclass Cost:\n    hours: float = 1.5\n")
    monkeypatch.setattr(paths, "REPO", tmp_path)
    module = bench.load_benchmark("bench_toyclass")
    assert module.Cost().hours == 1.5
