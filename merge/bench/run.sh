#!/bin/bash
# Merge benchmark (figures recorded in docs/results/performance.md): writes synthetic
# LU-like traces at several sizes, merges each with skelgen merge, and prints
# wall time and peak memory (min and median of REPS runs).
#   [ORDER=auto|walk|align] merge/bench/run.sh BUILD_DIR [REPS]   (ORDER: skelgen merge --order, default auto)
set -euo pipefail
source "$(dirname "$0")/../../common/bench/lib.sh"
build=$1 reps=${2:-3}
order=${ORDER:-auto}
gen=$(bench_built "$build" bench/lu_like_traces)
sk=$(bench_built "$build" bin/skelgen)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '%-28s %12s %10s %10s %10s\n' "size" "calls" "min s" "median s" "peak MiB"
for size in "4 249" "8 249" "16 62" "16 124" "16 249"; do
  read -r P iters <<< "$size"
  "$gen" "$work/t" "$P" "$iters" > "$work/gen.log"
  calls=$(sed -n 's/.*: \([0-9]*\) events in all/\1/p' "$work/gen.log")
  times=() mem=0
  for ((r = 0; r < reps; ++r)); do
    /usr/bin/time -f "%e %M" -o "$work/time" "$sk" merge -q --order "$order" "$work/t" -o "$work/m.skm"
    read -r s kb < "$work/time"
    times+=("$s")
    (( kb > mem )) && mem=$kb
  done
  read -r lo med _ < <(printf '%s\n' "${times[@]}" | bench_min_median_max)
  printf '%-28s %12s %10s %10s %10d\n' "$P ranks x $iters iterations" "$calls" "$lo" "$med" $((mem / 1024))
  rm -rf "$work/t" "$work/m.skm"
done
