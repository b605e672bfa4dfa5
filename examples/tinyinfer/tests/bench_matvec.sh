#!/bin/sh
# Timing only: matvec at a few sizes, median of 3 runs after a discarded warm-up.
# Usage: tests/bench_matvec.sh BINARY [--device D]
# One line per size: bench matvec device=D n=N median_us=… runs_us=… (host, board, driver
# and toolkit are the ledger row's, recorded by relgate with the step).
set -eu
bin=$1; shift
device=cpu
[ "${1:-}" = --device ] && device=$2
for size in 512 1024 2048; do
    "$bin" "$@" matvec $size $size >/dev/null   # warm-up, discarded
    times=""
    for _ in 1 2 3; do
        start=$(date +%s%N)
        "$bin" "$@" matvec $size $size >/dev/null
        end=$(date +%s%N)
        times="$times $(( (end - start) / 1000 ))"
    done
    median=$(printf '%s\n' $times | sort -n | sed -n 2p)
    echo "bench matvec device=$device n=$size median_us=$median runs_us=$times"
done
