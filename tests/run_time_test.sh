#!/bin/bash
# skelgen time: each run's line gives its time and the CPU time its ranks
# used. A program whose ranks sleep most of the run (halo2d, APP_SLEEP_US)
# must show far less CPU than ranks x time (0.09 of it here, quiet); the same
# program computing (MPICH ranks spin in their waits) close to it (0.99),
# and at least 0.35 of it where another test shares the two cores.
#   run_time_test.sh SKELGEN HALO2D
set -u
skelgen=$1 app=$2
launch=(mpiexec.mpich -n 2)
check() {  # NAME LOW HIGH OUTPUT: every run's CPU / (2 x time) within [LOW, HIGH]
  echo "$4" | grep -E "^run [0-9]+/[0-9]+: " | awk -v name="$1" -v lo="$2" -v hi="$3" '
    { t = $3; c = $8; sub(/\)/, "", c); r = c / (2 * t); printf "%s: %.3f s, CPU %.3f s: %.2f of 2 ranks x time\n", name, t, c, r
      if (r < lo || r > hi) { print "FAIL: " name ": CPU share " r " outside [" lo ", " hi "]"; bad = 1 } ++n }
    END { if (n != 2) { print "FAIL: " name ": " n " run lines"; bad = 1 } exit bad }'
}
out=$(APP_SLEEP_US=20000 "$skelgen" time -r 2 -- "${launch[@]}" "$app" 60 2>/dev/null) || { echo "FAIL: $out"; exit 1; }
check sleeping 0 0.2 "$out" || exit 1
echo "$out" | grep -qE "^SKELGEN_APP runs=2 min_s=\S+ median_s=\S+ ranks=2 cpu_median_s=[0-9.]+$" || {
  echo "FAIL: summary line: $out"; exit 1; }
out=$("$skelgen" time -r 2 -- "${launch[@]}" "$app" 60 2>/dev/null) || { echo "FAIL: $out"; exit 1; }
check computing 0.35 1.3 "$out" || exit 1
echo "PASS"
