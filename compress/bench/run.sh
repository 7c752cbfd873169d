#!/bin/bash
# Fold benchmark (figures recorded in docs/results/performance.md): the fold on
# LU-like inputs of each size, by each method, REPS runs taken in turn
# (round r runs every size and method once, so that the host's drift falls
# on all alike); per size and method the min, median and max seconds, peak
# memory per symbol (the largest of the runs), the median CPU seconds (user
# + system: on a shared host, the run's own work) and the folded length.
#   compress/bench/run.sh BUILD_DIR [REPS]
# SIZES (default "100000 1000000 10000000 100000000") and METHODS (default
# "shortest"; also longest-first, the choice rule used until 2026-11-25,
# and naive, the O(n^2) repeat finder, skipped above NAIVE_MAX = 100000).
set -euo pipefail
source "$(dirname "$0")/../../common/bench/lib.sh"
build=$1 reps=${2:-3}
sizes=${SIZES:-"100000 1000000 10000000 100000000"}
methods=${METHODS:-shortest}
naive_max=${NAIVE_MAX:-100000}
bench=$(bench_built "$build" bench/fold_bench)
declare -A times cpus mem result
field() { sed "s/.* $1=\([0-9.]*\).*/\1/" <<< " $2"; }
for ((r = 0; r < reps; ++r)); do
  for n in $sizes; do
    for method in $methods; do
      [ "$method" = naive ] && [ "$n" -gt "$naive_max" ] && continue
      out=$("$bench" "$n" "$method")
      times[$n/$method]+="$(field seconds "$out") "
      cpus[$n/$method]+="$(field cpu_seconds "$out") "
      b=$(field peak_bytes_per_symbol "$out")
      mem[$n/$method]=$(awk -v a="${mem[$n/$method]:-0}" -v b="$b" 'BEGIN {print (b > a ? b : a)}')
      result[$n/$method]=$(field result "$out")
    done
  done
done
printf '%-10s %-14s %9s %9s %9s %9s %11s %12s\n' n method "min s" "median s" "max s" "cpu med s" "peak B/sym" "folded len"
for n in $sizes; do
  for method in $methods; do
    if [ -z "${times[$n/$method]:-}" ]; then
      printf '%-10s %-14s %9s\n' "$n" "$method" "skipped (O(n^2))"
      continue
    fi
    # shellcheck disable=SC2086  # the runs' figures, one word each
    read -r lo med hi < <(printf '%s\n' ${times[$n/$method]} | bench_min_median_max)
    # shellcheck disable=SC2086
    cpu=$(printf '%s\n' ${cpus[$n/$method]} | bench_median)
    printf '%-10s %-14s %9s %9s %9s %9s %11s %12s\n' "$n" "$method" "$lo" "$med" "$hi" "$cpu" "${mem[$n/$method]}" \
      "$([ "$method" = naive ] && echo - || echo "${result[$n/$method]}")"
  done
done
