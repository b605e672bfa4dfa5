#!/bin/sh
# Timing only: matvec at a few sizes, timed inside the CLI process (`tinyinfer
# time-matvec N RUNS`: one warm-up, then 15 timed runs). One line per size and timing:
#   bench matvec device=D n=N timing=kernel dtype=f32 runs=15 median_us=… runs_us=… checksum=…
#   call matvec device=cuda n=N timing=call …      (CUDA only, for people: not a sign-off row)
# timing=kernel is the kernel alone (on CUDA by CUDA events, data resident on the device);
# timing=call is the whole library call: allocation, copies, launch, copy back.
# The process start and the CUDA context's creation are in neither. Host, board, driver
# and toolkit are the ledger row's, recorded by relgate with the step.
# Usage: tests/bench_matvec.sh BINARY [--device D]
set -eu
bin=$1; shift
for size in 512 1024 2048 4096; do
    "$bin" "$@" time-matvec $size 15
done
