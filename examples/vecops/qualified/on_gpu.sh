#!/usr/bin/env bash
# examples/vecops qualified on a machine with an NVIDIA GPU, as relgate's local host:
# `relgate init` on a fresh copy, then `nox -s host gate contract -- --require-all`, the CUDA
# arms on that machine's GPU (nothing typed in: the host's board, driver and toolkit are
# detected). For a machine with no network: the kit (examples/tinyinfer/qualified/kit/
# make_kit.sh) carried as .carry gives relgate's wheels and git.
#   bash examples/vecops/qualified/on_gpu.sh OUT      # OUT: a folder for what the run leaves
set -euo pipefail
CHECKOUT=$(cd "$(dirname "$0")/../../.." && pwd)
OUT=$(mkdir -p "${1:?usage: on_gpu.sh OUT}" && cd "$1" && pwd)
bash "$CHECKOUT/examples/tinyinfer/qualified/kit/device_sshd.sh" > "$OUT/kit.log" 2>&1 || { cat "$OUT/kit.log"; exit 1; }
. /tmp/relgate-kit/env.sh
export PYTHONPATH=$CHECKOUT:$PYTHONPATH NO_COLOR=1
commit() { git -c user.name=relgate -c user.email=relgate@localhost commit -qm "$1"; }
WORK=$(mktemp -d)/vecops
cp -r "$CHECKOUT/examples/vecops" "$WORK" && rm -rf "$WORK/build" "$WORK/qualified"
cd "$WORK"
git init -q -b main && git add -A && commit "vecops 0.3.0"
python3 -m relgate.cli init > "$OUT/init.txt" 2>&1
git add -A && commit "relgate init"
set +e
python3 -m nox -s host gate contract -- --require-all > "$OUT/nox.log" 2>&1
rc=$?
set -e
python3 -m relgate.cli status --json > "$OUT/status.json"
python3 -m relgate.cli status > "$OUT/status.txt"
{ echo "nox -s host gate contract -- --require-all: exit $rc"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader;
  nvcc --version | tail -2; cmake --version | head -1; } > "$OUT/summary.txt"
cat "$OUT/summary.txt" "$OUT/status.txt"
exit $rc
