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
# Pinned to one CPU where taskset exists (TI_BENCH_CPU, default 0): a process that the
# scheduler moves between cores runs whole runs slower on a shared machine.
set -eu
bin=$1; shift
pin=""
command -v taskset >/dev/null 2>&1 && taskset -c "${TI_BENCH_CPU:-0}" true 2>/dev/null && pin="taskset -c ${TI_BENCH_CPU:-0}"
for size in 512 1024 2048 4096; do
    $pin "$bin" "$@" time-matvec $size 15
done
