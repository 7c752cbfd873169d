#!/bin/bash
# The prediction table of docs/results/performance.md: skelgen/bench/predict.sh on the
# bundled example and on the test programs, 2 MPICH ranks, longer runs of the
# test programs, each with an iteration count (argv[1]).
#   skelgen/bench/predict_all.sh BUILD_DIR [REPS]
set -euo pipefail
source "$(dirname "$0")/../../common/bench/lib.sh"
build=$1 reps=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
apps=$build/tests/apps-mpich
bench_mpi_launcher mpich 2
rows=()
for cmd in "$build/examples/jacobi2d 400 1000" "$apps/ring 10000" "$apps/halo2d 200" "$apps/persistent 20000" \
  "$apps/cxx_vector 60000" "$apps/collectives 1000" "$apps/misc 1000" "$apps/master_worker 1000" \
  "$apps/callsites 1000" "$apps/fortran_mix 1000" "$apps/pair_exchange 10000" "$apps/stages 300"; do
  # shellcheck disable=SC2086
  out=$("$here/predict.sh" "$build" "$reps" "${launch[@]}" -- $cmd)
  echo "$out" | grep -v '^|' >&2
  rows+=("$(echo "$out" | grep '^|')")
done
echo "| program | application (untraced) s | skeleton K=1 s | skeleton K=10 s | K=10 predicted s | error |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
