#!/bin/bash
# A test program traced, then its skeleton generated, compiled and run
# (tests/run_skeleton_test.sh, without the round trip: the program polls,
# and how often changes from run to run).
# --keep-completions: passed on to generate (every MPI_Test* call as traced).
#   run_traced_skeleton_test.sh SKELGEN FLAVOR NP WORK K [--keep-completions] APP [ARGS...]
set -euo pipefail
skelgen=$1 flavor=$2 np=$3 work=$4 K=$5
shift 5
keep=()
if [ "$1" = --keep-completions ]; then keep=("$1"); shift; fi
source "$(dirname "$0")/../common/bench/lib.sh"
bench_mpi_launcher "$flavor" "$np"
rm -rf "$work" && mkdir -p "$work"
"$skelgen" trace -q --force -o "$work/trace" -- "${launch[@]}" "$@" > "$work/app.out"
exec "$(dirname "$0")/run_skeleton_test.sh" "$skelgen" "$flavor" "$np" "$work/trace" "$work/skel" "$K" --no-roundtrip ${keep[@]+"${keep[@]}"}
