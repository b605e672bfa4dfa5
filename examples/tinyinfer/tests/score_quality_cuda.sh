#!/bin/sh
# Quality scorer on the CUDA build: tests/score_quality.sh through --device cuda (needs a GPU).
# The golden lines are the CPU reference's, so a CUDA result must print the same checksum.
# Usage: tests/score_quality_cuda.sh BINARY
set -eu
exec sh "$(dirname "$0")/score_quality.sh" "$1" --device cuda
