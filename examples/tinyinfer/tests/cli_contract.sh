#!/bin/sh
# CLI contract: what scripts and users rely on. Usage: tests/cli_contract.sh BINARY [--device D]
# Appends evidence cells (suite "cli", arm = device) to $TINYINFER_EVIDENCE when it is set.
set -u
bin=$1; shift
arm=cpu
[ "${1:-}" = "--device" ] && arm=$2
failed=0

check() { # name expected actual
    if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: expected '$2', got '$3'"; failed=$((failed + 1)); fi
}
cell() { [ -n "${TINYINFER_EVIDENCE:-}" ] && printf 'cli\t%s\t%s\t%s\n' "$arm" "$1" "$2" >> "$TINYINFER_EVIDENCE"; return 0; }

version=$("$bin" --version)
check version "tinyinfer 0.3.0" "$version"
matvec=$("$bin" "$@" matvec 64 48)
check matvec-64x48 "matvec rows=64 cols=48 device=$arm checksum=4.48438" "$matvec"
rmsnorm=$("$bin" "$@" rmsnorm 64)
check rmsnorm-64 "rmsnorm n=64 device=$arm checksum=4.25907" "$rmsnorm"
"$bin" bogus >/dev/null 2>&1
check usage-error-exit 2 $?
"$bin" matvec 0 4 >/dev/null 2>&1
check zero-dimension-exit 2 $?

cell version "$version"
cell matvec_checksum_64x48 "${matvec##*checksum=}"
cell rmsnorm_checksum_64 "${rmsnorm##*checksum=}"
cell contract_failures "$failed"
echo "cli_contract ($arm): $failed failed"
[ "$failed" -eq 0 ]
