#!/bin/sh
# Quality scorer: runs every case of tests/quality_golden.txt through the CLI and prints
# scorer lines in the format the sign-off reads (kv):
#   summary cases=N first_match=M
#   api_summary cases=N top1_rate=R pair_rate=P     (matvec and rmsnorm agreement)
# Usage: tests/score_quality.sh BINARY [--device D]
set -eu
bin=$1; shift
opts="$*"   # --device D, passed to every call
device=cpu
[ "${1:-}" = --device ] && device=$2
golden=$(dirname "$0")/quality_golden.txt
cases=0; matched=0; mv=0; mv_ok=0; rn=0; rn_ok=0
while IFS= read -r want; do
    case $want in '#'*|'') continue ;; esac
    set -- $want
    kernel=$1
    if [ "$kernel" = matvec ]; then
        rows=${2#rows=}; cols=${3#cols=}
        got=$("$bin" $opts matvec "$rows" "$cols" || true)
        mv=$((mv + 1))
    else
        n=${2#n=}
        got=$("$bin" $opts rmsnorm "$n" || true)
        rn=$((rn + 1))
    fi
    cases=$((cases + 1))
    want=$(printf '%s\n' "$want" | sed "s/ device=cpu / device=$device /")  # the CPU reference's checksum
    if [ "$got" = "$want" ]; then
        matched=$((matched + 1))
        if [ "$kernel" = matvec ]; then mv_ok=$((mv_ok + 1)); else rn_ok=$((rn_ok + 1)); fi
    else
        echo "mismatch: expected '$want', got '$got'"
    fi
done < "$golden"
echo "summary cases=$cases first_match=$matched"
awk -v c="$cases" -v a="$mv_ok" -v b="$mv" -v d="$rn_ok" -v e="$rn" \
    'BEGIN { printf "api_summary cases=%d top1_rate=%.3f pair_rate=%.3f\n", c, a / b, d / e }'
