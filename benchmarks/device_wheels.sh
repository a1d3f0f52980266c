#!/usr/bin/env bash
# Wheels for the packages a lent GPU machine's python3 (3.12) lacks, into .whl/ (git-ignored), for
# benchmarks/device_check.sh to install there: pytest and its needs (the CUDA tests), prdc (acl's metrics).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl
for spec in pytest==9.2.0 pluggy==1.6.0 iniconfig==2.1.0 prdc==0.2; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 --platform any -d .whl "$spec" \
  || python3 -m pip download -q --no-deps --python-version 3.12 -d .whl "$spec" || echo "could not fetch $spec"
done
ls .whl
