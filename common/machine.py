"""The CPU a timing was taken on, for stamps: timings from different CPUs are not comparable."""
from __future__ import annotations

import platform
from pathlib import Path

SIMD_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_tile")   # what decides which kernels a CPU gets


def machine(cpuinfo: str | None = None) -> dict:
    """The CPU a timing was taken on: logical cores, model name, and which of SIMD_FLAGS it has (read from
    /proc/cpuinfo on Linux; the model alone elsewhere). Timings from different CPUs are not comparable."""
    import os

    rec = {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine()}
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return rec
    fields = {}
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    if fields.get("model name"):
        rec["model"] = fields["model name"]
    if "cpu family" in fields and "model" in fields:
        rec["family_model"] = f"{fields['cpu family']}/{fields['model']}"
    if "flags" in fields:
        have = set(fields["flags"].split())
        rec["simd"] = [f for f in SIMD_FLAGS if f in have]
    return rec


def same_cpu(a: dict, b: dict) -> bool:
    """Whether two `machine()` records name the same CPU: model name, and family/model and logical cores where both
    have them (a virtual machine's model name can be as generic as "Intel(R) Xeon(R) Processor")."""
    return bool(a.get("model")) and a.get("model") == b.get("model") and all(
        a.get(k) == b.get(k) for k in ("family_model", "cpus") if a.get(k) is not None and b.get(k) is not None)


def describe_machine(rec: dict | None) -> str:
    """One line for a stamp: "2 CPUs, AMD EPYC (25/1; avx2)"; what is missing is said so."""
    if not rec:
        return "machine not recorded"
    model = rec.get("model") or "CPU model not recorded"
    extra = "; ".join(x for x in (rec.get("family_model"), ", ".join(rec.get("simd") or []) or None) if x)
    return f"{rec.get('cpus')} CPUs, {model}" + (f" ({extra})" if extra else "")
