#!/bin/bash
# Kept runs written once (docs/generate.md, "Kept runs written once"): a
# program whose time steps do not fold (tests/apps/amr.c, a refinement every
# step), its K = 10 skeleton generated twice, with the kept runs that are
# alike shared (the default) and each written out (--expand-runs). Both are
# built and run under our tracer; every rank must make the very same calls
# in both (tests/check_same_calls.py), the shared one must be shorter, and
# the generator must say how many runs it shared.
#   run_shared_runs_test.sh SKELGEN FLAVOR NP WORK APP [ARGS...]
set -euo pipefail
skelgen=$1 flavor=$2 np=$3 work=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../common/bench/lib.sh"
bench_mpi_launcher "$flavor" "$np"
rm -rf "$work" && mkdir -p "$work"
"$skelgen" trace -q --force -o "$work/app" -- "${launch[@]}" "$@" > "$work/app.out"
"$skelgen" generate "$work/app" -K 10 -o "$work/shared.c" > "$work/shared.txt" 2>&1
"$skelgen" generate "$work/app" -K 10 --expand-runs -o "$work/full.c" > "$work/full.txt" 2>&1
grep -E "^shared: +[1-9][0-9]* kept runs and [0-9]+ loops or steps written alike: [1-9][0-9]* function" "$work/shared.txt" ||
  { cat "$work/shared.txt"; echo "FAIL: no kept runs shared" >&2; exit 1; }
! grep -q "^shared:" "$work/full.txt" || { echo "FAIL: --expand-runs shared runs" >&2; exit 1; }
grep -q "static void skel_shared0(" "$work/shared.c" || { echo "FAIL: no shared function in the skeleton" >&2; exit 1; }
lines_shared=$(wc -l < "$work/shared.c") lines_full=$(wc -l < "$work/full.c")
echo "lines: $lines_shared shared, $lines_full written out"
[ "$lines_shared" -lt "$lines_full" ] || { echo "FAIL: sharing did not make the skeleton shorter" >&2; exit 1; }
for v in shared full; do
  "$skelgen" build "$work/$v.c" --mpi "$flavor" -q -o "$work/$v"
  SKELGEN_WATCHDOG_S=20 "$skelgen" trace -q --force -o "$work/trace_$v" -- "${launch[@]}" "$work/$v" > "$work/$v.out" 2>&1 ||
    { cat "$work/$v.out"; echo "FAIL: the $v skeleton did not complete" >&2; exit 1; }
  "$skelgen" merge -q "$work/trace_$v" -o "$work/trace_$v.skm"
done
python3 "$here/check_same_calls.py" "$skelgen" "$work/trace_full.skm" "$work/trace_shared.skm"
