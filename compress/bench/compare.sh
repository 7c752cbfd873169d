#!/bin/bash
# Fold time of one merged trace under two skelgen builds, runs interleaved
# (A, B, A, B, ...) so that the host's drift falls on both alike: each
# build's fold_s (skelgen compress --json: the fold alone, reading and
# writing excluded), min and median, and the ratio of the medians.
#   compress/bench/compare.sh SKELGEN_A SKELGEN_B MERGED.skm REPS [compress options, e.g. --join-call-sites]
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: $0 SKELGEN_A SKELGEN_B MERGED.skm REPS [compress options]" >&2; exit 2; }
a=$1 b=$2 merged=$3 reps=$4
shift 4
for x in "$a" "$b"; do [ -x "$x" ] || { echo "$0: $x: not an executable" >&2; exit 2; }; done
[ -f "$merged" ] || { echo "$0: $merged: no such file" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fold_s() { "$1" compress "$merged" -o "$out/f.skf" --json "${@:2}" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])["fold_s"])'; }
ta=() tb=()
for ((r = 0; r < reps; ++r)); do
  ta+=("$(fold_s "$a" "$@")")
  tb+=("$(fold_s "$b" "$@")")
done
python3 - "$a" "$b" "${#ta[@]}" "${ta[@]}" "${tb[@]}" <<'PY'
import statistics, sys
a, b, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
ta, tb = [float(x) for x in sys.argv[4:4 + n]], [float(x) for x in sys.argv[4 + n:]]
for name, t in ((a, ta), (b, tb)):
    print(f"{name}: fold min {min(t):.4f} s, median {statistics.median(t):.4f} s ({n} runs)")
print(f"median B / median A: {statistics.median(tb) / statistics.median(ta):.3f}")
PY
