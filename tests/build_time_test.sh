#!/bin/bash
# A skeleton whose master replays 400 tasks one by one (tests/data/farm_replay_8:
# our tracer's trace of tests/apps/farm.c, 8 Open MPI ranks, 400 uniform tasks;
# generated with --no-farms, so the master's calls stay a row of hundreds of
# blocks for rank 0) must compile at -O2 within LIMIT seconds. GCC 12's jump
# threading took over 100 s on it until the skeleton turned it off
# (generate/templates/skeleton.c.in); it compiles in about a second.
#   build_time_test.sh SKELGEN DATA_DIR WORK LIMIT
set -euo pipefail
skelgen=$1 data=$2 work=$3 limit=$4
rm -rf "$work" && mkdir -p "$work"
"$skelgen" generate "$data" --no-farms -K 10 -o "$work/replay.c" -q > /dev/null
lines=$(wc -l < "$work/replay.c")
start=$(date +%s.%N)
rc=0
timeout "$limit" "$skelgen" build "$work/replay.c" --mpi openmpi -q -o "$work/replay" || rc=$?
took=$(echo "$(date +%s.%N) - $start" | bc)
[ $rc = 0 ] || { echo "FAIL: $lines lines of C did not compile within $limit s (exit $rc)" >&2; exit 1; }
echo "ok: $lines lines of C compiled in $took s (limit $limit s)"
