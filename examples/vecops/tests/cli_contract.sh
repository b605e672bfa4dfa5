#!/bin/sh
# contract: what scripts and users rely on in the CLI's output.
# Usage: sh tests/cli_contract.sh BINARY [--device D]
set -u
bin=$1; shift
device=cpu
[ "${1:-}" = "--device" ] && device=$2
failed=0

check() { # name expected actual
    if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: expected '$2', got '$3'"; failed=$((failed + 1)); fi
}

check version "vecops 0.3.0" "$("$bin" --version)"
check saxpy-1000 "saxpy n=1000 a=2 device=$device checksum=1494" "$("$bin" "$@" saxpy 1000)"
check dot-1000 "dot n=1000 device=$device value=-2" "$("$bin" "$@" dot 1000)"
"$bin" bogus >/dev/null 2>&1
check usage-error-exit 2 $?
"$bin" saxpy 0 >/dev/null 2>&1
check zero-length-exit 2 $?
"$bin" dot -5 >/dev/null 2>&1
check negative-length-exit 2 $?
echo "cli_contract ($device): $failed failed"
[ "$failed" -eq 0 ]
