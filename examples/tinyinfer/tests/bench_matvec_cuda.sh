#!/bin/sh
# Timing only: the matvec timings of tests/bench_matvec.sh on the CUDA build (needs a GPU).
# Usage: tests/bench_matvec_cuda.sh BINARY
set -eu
exec sh "$(dirname "$0")/bench_matvec.sh" "$1" --device cuda
