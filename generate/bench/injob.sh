#!/bin/bash
# Merging inside the traced job (skelgen trace --merge-in-job) against a
# traced run with rank files and skelgen merge after it (figures recorded in
# docs/results/performance.md, "Merging inside the job"). Per size NP and
# round, in turn: the traced job with rank files (its wall seconds, the
# files and their bytes), skelgen merge of them (wall seconds), and the job
# traced with --merge-in-job (its wall seconds, the merged trace's bytes,
# and rank 0's line: the tree's rounds, the seconds to gather the files at
# rank 0 and to merge and write them).
#   generate/bench/injob.sh BUILD_DIR REPS ITERS NP...
# The program: the build's tests/apps-openmpi/halo2d ITERS (Open MPI,
# oversubscribed).
set -euo pipefail
source "$(dirname "$0")/../../common/bench/lib.sh"
build=$1 reps=$2 iters=$3
shift 3
skelgen=$(bench_built "$build" bin/skelgen)
app=$(bench_built "$build" tests/apps-openmpi/halo2d)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
seconds() { local s e; s=$(date +%s.%N); "$@" > /dev/null 2>&1; e=$(date +%s.%N); echo "$e - $s" | bc; }
printf "%-5s %-6s %12s %6s %10s %10s | %12s %10s  %s\n" np round "traced job s" files bytes "merge s" "in-job job s" "skm bytes" "rank 0's line"
for np in "$@"; do
  bench_mpi_launcher openmpi "$np"
  for ((r = 1; r <= reps; ++r)); do
    rm -rf "$work"/*
    t_job=$(seconds "$skelgen" trace -q -o "$work/files" -- "${launch[@]}" "$app" "$iters")
    files=$(find "$work/files" -name 'rank-*.skt' | wc -l)
    bytes=$(du -sb "$work/files" | cut -f1)
    t_merge=$(seconds "$skelgen" merge "$work/files" -o "$work/files.skm" -q)
    s=$(date +%s.%N)
    "$skelgen" trace -q --merge-in-job -o "$work/injob" -- "${launch[@]}" "$app" "$iters" > "$work/injob.log" 2>&1
    t_injob=$(echo "$(date +%s.%N) - $s" | bc)
    printf "%-5s %-6s %12.2f %6d %10d %10.2f | %12.2f %10d  %s\n" "$np" "$r" "$t_job" "$files" "$bytes" "$t_merge" \
      "$t_injob" "$(stat -c %s "$work/injob.skm")" "$(grep -o 'gathered in .*' "$work/injob.log")"
  done
done
