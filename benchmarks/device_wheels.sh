#!/usr/bin/env bash
# Wheels for the packages a lent GPU machine's python3 (3.12, x86-64, no network) lacks, into .whl/ (git-ignored),
# for benchmarks/device_check.sh to install there: the notebook stack (papermill, nbformat, nbclient,
# jupyter_client, ipykernel and those of their needs the image does not hold) and prdc (acl's metrics). The
# image already holds pytest, pluggy, iniconfig, pytest-xdist, pyyaml, requests, click, tqdm, packaging,
# psutil, pygments, python-dateutil, attrs and the scientific stack. The versions are requirements.txt's and
# those its resolution installs. Only wheels, never an sdist (nothing can be built there); any failure stops here.
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=${1:-.whl}
SPECS=(
  papermill==2.7.0 nbformat==5.11.1 nbclient==0.11.0 jupyter_client==8.10.0 ipykernel==7.4.0 prdc==0.2
  jupyter_core==5.9.1 traitlets==5.16.1 fastjsonschema==2.22.3 jsonschema==4.26.0 jsonschema-specifications==2025.9.1
  referencing==0.37.0 rpds-py==2026.9.1 platformdirs==4.14.9 pyzmq==27.3.0 tornado==6.6.1 tenacity==9.2.1
  entrypoints==0.4.2 ipython==9.19.1 ipython-pygments-lexers==1.1.1 comm==0.2.3 debugpy==1.8.22
  matplotlib-inline==0.2.2 nest-asyncio2==1.7.4 jedi==0.20.1 parso==0.8.7 pexpect==4.9.0 ptyprocess==0.7.0
  prompt-toolkit==3.0.53 wcwidth==0.9.5 stack-data==0.6.3 executing==2.3.0 asttokens==3.0.2 pure-eval==0.2.4
)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 --abi abi3 --abi none \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_26_x86_64 \
  --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --platform manylinux1_x86_64 --platform any -d "$tmp" "${SPECS[@]}"
got=$(ls "$tmp"/*.whl | wc -l)
if [ "$got" -ne "${#SPECS[@]}" ]; then
  echo "error: ${#SPECS[@]} packages asked for, $got wheels fetched into $tmp" >&2
  exit 1
fi
mkdir -p "$DEST"
# never committed: the repository's own .whl/ is ignored here (git's info/exclude); the device call carries it
if [ "$DEST" = .whl ] && ex=$(git rev-parse --git-path info/exclude 2>/dev/null); then
  mkdir -p "$(dirname "$ex")"
  grep -qxF /.whl/ "$ex" 2>/dev/null || echo /.whl/ >>"$ex"
fi
for w in "$tmp"/*.whl; do               # one version of each: an older wheel of the same package goes
  name=$(basename "$w" | cut -d- -f1)
  rm -f "$DEST/$name"-*.whl
  mv "$w" "$DEST/"
done
echo "$got wheels in $DEST ($(du -sh "$DEST" | cut -f1)); carry $DEST to the GPU machine (it is git-ignored: name it in what the call carries)"
