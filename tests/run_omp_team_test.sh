#!/bin/bash
# A hybrid program whose main thread alone calls MPI (it asks for
# MPI_THREAD_MULTIPLE) and computes with an OpenMP team between its calls
# (tests/apps/omp_team.c), NP ranks with THREADS threads each. The tracer
# measures thread CPU gaps (the thread level asks for them). Where the ranks
# have a core each (NP at most the cores: bound to one each, so that each
# team outnumbers its core), the merge reads the wall clock instead; where
# they outnumber the cores, it adds the CPU time of the rank's other threads
# (trace field team_cpu) to the calling thread's. The K = 1 skeleton runs
# within 0.75-1.33 times the application (medians of 3 runs each, taken in
# turn). Read by the calling thread's CPU time alone it ran 0.50-0.63 times
# as long on 2 ranks, 0.36 on 4.
#   run_omp_team_test.sh SKELGEN FLAVOR NP WORKDIR APP STEPS WORK THREADS
set -euo pipefail
skelgen=$1 flavor=$2 np=$3 work=$4 app=$5
shift 5
source "$(dirname "$0")/../common/bench/lib.sh"
bench_mpi_launcher "$flavor" "$np"
if [ "$np" -le "$(nproc)" ]; then  # a core each: one rank's team does not take the other's core
  case $flavor in
    mpich) launch+=(-bind-to core) ;;
    openmpi) launch+=(--bind-to core) ;;
  esac
fi
export OMP_NUM_THREADS=$3
rm -rf "$work" && mkdir -p "$work"
"$skelgen" trace -q --force -o "$work/trace" -- "${launch[@]}" "$app" "$@" > "$work/app.out"
"$skelgen" generate -q "$work/trace" -K 1 -o "$work/k1.c" --build --mpi "$flavor" --exe "$work/k1"
apps=() skels=()
for round in 1 2 3; do
  apps+=("$(bench_app_seconds "$skelgen" "${launch[@]}" "$app" "$@")")
  skels+=("$("${launch[@]}" "$work/k1" 2> /dev/null | bench_result_field measured_s)")
  echo "round $round: application ${apps[-1]} s, K = 1 skeleton ${skels[-1]} s"
done
app_s=$(printf '%s\n' "${apps[@]}" | bench_median)
skel_s=$(printf '%s\n' "${skels[@]}" | bench_median)
awk -v a="$app_s" -v s="$skel_s" 'BEGIN {
  r = s / a; printf "median: application %.3f s, skeleton %.3f s: %.2f of it\n", a, s, r
  if (!(r >= 0.75 && r <= 1.33)) { print "FAIL: the skeleton ran " r " times the application (0.75-1.33)"; exit 1 }
  print "PASS" }'
