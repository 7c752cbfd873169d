#!/bin/bash
# Skeletons of partial traces complete: a real trace (TRACE_DIR, from a test
# program's complete run) is cut as if ranks had died at many points
# (tests/check/partial_cuts.cpp: each rank alone, and all ranks at once);
# each cut is generated as skelgen generate --allow-partial does, built and
# run under MPI. Every one must be written (none refused) and must run to
# its end, printing its result line; the skeleton's watchdog (5 s without
# progress) or a timeout stops one that hangs, and fails the test.
#   check_partial.sh SKELGEN PARTIAL_CUTS FLAVOR NP TRACE_DIR WORK CUTS K
set -euo pipefail
skelgen=$1 cutter=$2 flavor=$3 np=$4 trace=$5 work=$6 cuts=$7 K=$8
rm -rf "$work" && mkdir -p "$work"
"$cutter" "$trace" "$work" "$cuts" "$K" > "$work/cuts.txt"
cat "$work/cuts.txt"
if grep -q REFUSED "$work/cuts.txt"; then echo "FAIL: the generator refused a partial trace" >&2; exit 1; fi
case $flavor in
  mpich) launch=(mpiexec.mpich -genv SKELGEN_WATCHDOG_S 5 -n "$np") ;;
  openmpi) launch=(mpirun.openmpi --allow-run-as-root --oversubscribe -x SKELGEN_WATCHDOG_S=5 -n "$np") ;;
esac
ran=0 failed=0
for c in "$work"/cut-*.c; do
  exe=${c%.c}
  "$skelgen" build "$c" --mpi "$flavor" -q -o "$exe"
  rc=0
  timeout 60 "${launch[@]}" "$exe" > "$exe.out" 2>&1 || rc=$?
  ran=$((ran + 1))
  if [ $rc != 0 ] || ! grep -q '^SKELGEN_RESULT' "$exe.out"; then
    failed=$((failed + 1))
    echo "FAIL: $(basename "$exe") (exit $rc): $(grep "^$(basename "$exe") " "$work/cuts.txt")" >&2
    tail -3 "$exe.out" >&2
  fi
done
echo "$ran skeletons of partial traces run, $failed did not complete"
[ $ran -gt 0 ] && [ $failed = 0 ]
