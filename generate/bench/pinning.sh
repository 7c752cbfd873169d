#!/bin/bash
# The figures of docs/generate.md on skeletons that pin their ranks: a built
# skeleton run RUNS times unpinned (SKELGEN_PIN=0) and RUNS times as it is,
# in turn, on NP Open MPI ranks (--oversubscribe); prints, for each way,
# min / median / max of its predicted_s and how many runs came out more than
# 20 % above the pinned runs' median.
#   generate/bench/pinning.sh SKELETON NP [RUNS]
set -euo pipefail
source "$(dirname "$0")/../../common/bench/lib.sh"
skel=$1 np=$2 runs=${3:-30}
bench_mpi_launcher openmpi "$np"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for ((i = 1; i <= runs; i++)); do
  SKELGEN_PIN=0 "${launch[@]}" -x SKELGEN_PIN "$skel" | bench_result_field predicted_s >> "$work/unpinned"
  "${launch[@]}" "$skel" | bench_result_field predicted_s >> "$work/pinned"
done
read -r _ ref _ < <(bench_min_median_max < "$work/pinned")
for way in unpinned pinned; do
  read -r lo med hi < <(bench_min_median_max < "$work/$way")
  slow=$(awk -v r="$ref" '$1 > 1.2 * r' "$work/$way" | wc -l)
  echo "$way: predicted_s min $lo median $med max $hi; $slow of $runs runs > 1.2 x the pinned median"
done
