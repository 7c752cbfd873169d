#!/bin/bash
# Fold benchmark (figures recorded in docs/performance.md): our O(n log n)
# fold and the O(n^2) baseline on the same LU-like inputs, REPS runs each,
# min and median seconds, peak memory per symbol. The baseline is skipped
# above NAIVE_MAX symbols (default 100000: it grows as n^2).
#   compress/bench/run.sh BUILD_DIR [REPS]
set -euo pipefail
build=$1 reps=${2:-3}
naive_max=${NAIVE_MAX:-100000}
bench=$build/bench/fold_bench
printf '%-10s %-7s %10s %10s %12s %12s %12s\n' n method "min s" "median s" "peak B/sym" "own B/sym" "folded len"
for n in 10000 100000 324355 1000000 10000000; do
  for method in greedy naive; do
    if [ $method = naive ] && [ "$n" -gt "$naive_max" ]; then
      printf '%-10s %-7s %10s\n' "$n" naive "skipped (O(n^2))"
      continue
    fi
    times=() mem=0 own=0 result=
    for ((r = 0; r < reps; ++r)); do
      out=$("$bench" "$n" "$method")
      times+=("$(sed 's/.*seconds=\([0-9.]*\).*/\1/' <<< "$out")")
      b=$(sed 's/.*peak_bytes_per_symbol=\([0-9.]*\).*/\1/' <<< "$out")
      o=$(sed 's/.*own_bytes_per_symbol=\([0-9.]*\).*/\1/' <<< "$out")
      own=$(awk -v a="$own" -v b="$o" 'BEGIN {print (b > a ? b : a)}')
      result=$(sed 's/.*result=\([0-9]*\).*/\1/' <<< "$out")
      mem=$(awk -v a="$mem" -v b="$b" 'BEGIN {print (b > a ? b : a)}')
    done
    sorted=($(printf '%s\n' "${times[@]}" | sort -g))
    printf '%-10s %-7s %10s %10s %12s %12s %12s\n' "$n" "$method" "${sorted[0]}" "${sorted[$(( (reps - 1) / 2 ))]}" \
      "$mem" "$own" "$([ $method = greedy ] && echo "$result" || echo "-")"
  done
done
