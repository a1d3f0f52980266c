#!/usr/bin/env bash
# The one device check for a lent GPU machine (no network; its python3 holds torch, no venv): every paper's
# smoke notebooks on the GPU and on the CPU, the CUDA tests, a timed slice of every full profile with its
# projected GPU-hours. Sized for 9 minutes on one H100/H200. Summary: $OUT/device_check.json (and logs).
#   here, once:   bash benchmarks/device_wheels.sh      # the packages that machine lacks, as wheels in .whl/
#   there:        bash benchmarks/device_check.sh       # (with .whl carried)
#   anywhere:     bash benchmarks/device_check.sh --dry-run   # the same steps on the CPU at smoke sizes
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-results/device}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 REPRO_PROGRESS=0 MPLBACKEND=Agg
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] && [ -z "${PYTHON:-}" ] && PY=.venv/bin/python
if ls .whl/*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
fi
export PYTHONPATH=$PWD:${PYTHONPATH:-}
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"
timeout 540 $PY benchmarks/device_check.py --out "$OUT" "$@" 2>&1 | tee "$OUT/device_check.log"
exit "${PIPESTATUS[0]}"
