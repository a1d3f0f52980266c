#!/usr/bin/env bash
# The one device check for a lent GPU machine (no network; its python3 holds torch, no venv): every paper's
# smoke notebooks on the GPU (and on the CPU where smoke judges claims), the CUDA tests, a timed slice of
# every full profile with its projected GPU-hours. Its steps' limits sum to 8 minutes, for a machine had for 15
# (start-up included); the summary is written after every step. Summary and logs: $OUT (results/device here).
#   here, once:   bash benchmarks/device_wheels.sh      # the packages that machine lacks, as wheels in .whl/
#   there:        DEVICE_CHECK_REV=<git sha here> bash benchmarks/device_check.sh   # (.whl carried; installed first,
#                 loudly; the revision names the code checked where the machine's copy has no .git)
#   here, after:  make device-check IMPORT=PATH   # PATH: the folder $OUT came back to, or its device_check.json;
#                 then `make readme`
#   anywhere:     bash benchmarks/device_check.sh --dry-run   # the same steps on the CPU at smoke sizes
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-results/device}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 REPRO_PROGRESS=0 MPLBACKEND=Agg
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] && [ -z "${PYTHON:-}" ] && PY=.venv/bin/python
dry=0
for a in "$@"; do [ "$a" = --dry-run ] && dry=1; done
WHEELS=${DEVICE_WHEELS:-.whl}
SITE=${DEVICE_SITE:-/tmp/device-check-site}
if [ "$dry" = 1 ]; then
  export DEVICE_WHEELS_STATUS="not installed (dry run: this python's own packages)"
elif ls "$WHEELS"/*.whl >/dev/null 2>&1; then
  n=$(ls "$WHEELS"/*.whl | wc -l)
  if $PY -m pip install --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$WHEELS"/*.whl \
       >"$OUT/wheels.log" 2>&1; then
    export PYTHONPATH=$SITE:${PYTHONPATH:-} DEVICE_WHEELS_STATUS="installed $n wheels from $WHEELS"
    echo "[device check] installed $n wheels from $WHEELS into $SITE"
    # installed without their needs (--no-deps): each must import, else a need is missing from the wheels
    if ! $PY -c "import papermill, nbformat, nbclient, jupyter_client, ipykernel, prdc" >>"$OUT/wheels.log" 2>&1; then
      export DEVICE_WHEELS_STATUS="failed: the $n wheels installed, but the notebook stack or prdc does not import (see wheels.log)"
      echo "error: the wheels of $WHEELS installed but do not import ($(tail -n 1 "$OUT/wheels.log")); add the missing" \
           "package to benchmarks/device_wheels.sh; the check goes on without them, and fails" >&2
    fi
  else
    export DEVICE_WHEELS_STATUS="failed: pip could not install the wheels of $WHEELS (see wheels.log)"
    echo "error: installing the $n wheels of $WHEELS failed ($(tail -n 1 "$OUT/wheels.log")); see $OUT/wheels.log;" \
         "the check goes on without them, and fails" >&2
  fi
else
  export DEVICE_WHEELS_STATUS="failed: no wheels in $WHEELS (run bash benchmarks/device_wheels.sh where pip works, and carry .whl)"
  echo "error: no wheels in $WHEELS: the notebook stack and prdc (acl's metrics) are missing; run" \
       "\`bash benchmarks/device_wheels.sh\` where pip works and carry .whl; the check goes on without them, and fails" >&2
fi
export PYTHONPATH=$PWD:${PYTHONPATH:-}
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"
# the steps' own limits sum to 480 s (benchmarks/device_check.py: BUDGET_S); this is the net under them
timeout 540 $PY benchmarks/device_check.py --out "$OUT" "$@" 2>&1 | tee "$OUT/device_check.log"
exit "${PIPESTATUS[0]}"
