#!/usr/bin/env bash
# The nlm checks for a lent CUDA machine, in one call (its python3 holds torch; there is no venv there):
# the nlm tests (the CUDA ones run only there), the whole suite but the notebook runs with a GPU visible,
# and benchmarks/bench_nlm_cuda.py. Logs and results/bench/nlm_cuda.json go to $OUT (default results/device).
# Usage: REPRO_GIT_SHA=<commit of this tree> bash benchmarks/device_nlm.sh
set -uo pipefail
OUT=${OUT:-results/device}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 REPRO_PROGRESS=0 MPLBACKEND=Agg
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
python3 -c "import torch, numba, scipy, sklearn, yaml; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name())" | tee -a "$OUT/gpu.txt"
echo "== nlm tests"
# the root conftest forces the CPU unless asked: REPRO_TEST_DEVICE=cuda runs the nlm tests on the GPU, the `cuda` ones included
REPRO_TEST_DEVICE=cuda timeout 180 python3 -m pytest tests/nlm -q -p no:cacheprovider -n 8 -rs > "$OUT/pytest_nlm.log" 2>&1; echo "rc=$?"
tail -15 "$OUT/pytest_nlm.log"
echo "== bench"
REPRO_RESULTS="$OUT/res" timeout 240 python3 benchmarks/bench_nlm_cuda.py "$@" > "$OUT/bench.log" 2>&1; echo "rc=$?"
echo "== gpu slice (the device check's contract)"
timeout 120 python3 benchmarks/gpu_slice_nlm.py --device cuda > "$OUT/gpu_slice_nlm.json" 2> "$OUT/gpu_slice_nlm.log"; echo "rc=$?"
tail -c 600 "$OUT/gpu_slice_nlm.json"
tail -4 "$OUT/bench.log"
cp "$OUT/res/bench/nlm_cuda.json" "$OUT/" 2>/dev/null
echo "== the whole suite but the notebook runs, a GPU visible"
timeout 120 python3 -m pytest tests -q -p no:cacheprovider -n 14 --continue-on-collection-errors > "$OUT/pytest_all.log" 2>&1; echo "rc=$?"
tail -25 "$OUT/pytest_all.log"
