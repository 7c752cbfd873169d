#!/bin/bash
# The figures of docs/results/performance.md, "Irregular time steps": for each program,
# traced once, its K = 10 skeleton generated and built, then REPS rounds of
# (the application untraced, the skeleton), interleaved. Prints a markdown
# table: calls per rank (every thread's calls / ranks), folded length, lines of C,
# compile seconds, application and skeleton time (median, min-max), shrink
# (application median / skeleton median), prediction error (median of the
# skeleton's predicted_s against the application's median) and hangs
# (skeleton runs that did not print their result line). Progress on stderr.
# SET: irregular (the adaptive-refinement program and the farm in time steps,
# docs/results/performance.md "Irregular time steps") or threads (MPI_THREAD_MULTIPLE programs, each
# thread's calls folded on their own: "folded" is the sum of the threads') or collectives (a
# breadth-first search that talks in collectives alone: its levels are the time steps) or polling (a halo
# exchange completed by MPI_Waitsome, MPI_Testall or MPI_Testsome polls, or MPI_Waitany, whose completion calls
# change from run to run: docs/merge.md "Completions by polling") or periods (refinements that come and go in
# periods: docs/generate.md "Short top-level loops").
#   generate/bench/irregular.sh BUILD_DIR [REPS] [WORK_DIR] [SET]
set -euo pipefail
source "$(dirname "$0")/../../common/bench/lib.sh"
build=$(cd "$1" && pwd)
reps=${2:-5}
set=${4:-irregular}
work=${3:-$build/$set-bench}
skelgen=$(bench_built "$build" bin/skelgen)
rm -rf "$work" && mkdir -p "$work"
# name | flavor | ranks | program and arguments (bench_program_line)
case $set in
  irregular) programs=(
  "amr-openmpi-4|openmpi|4|$build/tests/apps-openmpi/amr 300 20000"
  "amr-flat-openmpi-4|openmpi|4|$build/tests/apps-openmpi/amr 300 20000 1"
  "amr-mpich-2|mpich|2|$build/tests/apps-mpich/amr 300 20000"
  "amr-flat-mpich-2|mpich|2|$build/tests/apps-mpich/amr 300 20000 1"
  "amr-openmpi-8|openmpi|8|$build/tests/apps-openmpi/amr 200 10000"
  # step_farm STEPS TASKS WORK: a farm in each time step, the master polling with MPI_Iprobe
  "step_farm-openmpi-4|openmpi|4|$build/tests/apps-openmpi/step_farm 60 20 100000"
  "step_farm-openmpi-8|openmpi|8|$build/tests/apps-openmpi/step_farm 60 40 100000"
  "step_farm-mpich-2|mpich|2|$build/tests/apps-mpich/step_farm 60 20 100000"
  ) ;;
  # thread_halo THREADS STEPS WORK (pthreads started and joined by the first thread)
  threads) programs=(
  "thread_halo-2x2-mpich|mpich|2|$build/tests/apps-mpich/thread_halo 2 400 400000"
  "thread_halo-4x2-openmpi|openmpi|4|$build/tests/apps-openmpi/thread_halo 2 400 200000"
  "thread_halo-2x3-openmpi|openmpi|2|$build/tests/apps-openmpi/thread_halo 3 400 300000"
  # omp_halo THREADS REGIONS STEPS WORK
  "omp_halo-2x3-openmpi|openmpi|2|$build/tests/apps-openmpi/omp_halo 3 4 100 200000"
  ) ;;
  # bfs VERTICES ROOTS: a breadth-first search in collectives alone (levels of changing counts and times)
  collectives) programs=(
  "bfs-openmpi-4|openmpi|4|$build/tests/apps-openmpi/bfs 1048576 32"
  "bfs-openmpi-8|openmpi|8|$build/tests/apps-openmpi/bfs 1048576 32"
  "bfs-mpich-2|mpich|2|$build/tests/apps-mpich/bfs 1048576 32"
  ) ;;
  # poll_halo MODE STEPS FACE WORK
  polling) programs=(
  "poll_halo-waitsome-openmpi-6|openmpi|6|$build/tests/apps-openmpi/poll_halo waitsome 1000 2000 200000"
  "poll_halo-testall-openmpi-4|openmpi|4|$build/tests/apps-openmpi/poll_halo testall 1000 2000 200000"
  "poll_halo-testsome-openmpi-6|openmpi|6|$build/tests/apps-openmpi/poll_halo testsome 1000 2000 200000"
  "poll_halo-waitany-openmpi-4|openmpi|4|$build/tests/apps-openmpi/poll_halo waitany 1000 2000 200000"
  "poll_halo-waitsome-mpich-2|mpich|2|$build/tests/apps-mpich/poll_halo waitsome 1000 2000 200000"
  "poll_halo-testall-mpich-2|mpich|2|$build/tests/apps-mpich/poll_halo testall 1000 2000 200000"
  ) ;;
  # periods STEPS WORK PERIOD: refinements that come and go every PERIOD steps (a top-level loop of two
  # periods and a tail, unrolled by the generator)
  periods) programs=(
  "periods-openmpi-4|openmpi|4|$build/tests/apps-openmpi/periods 100 3000000 40"
  "periods-openmpi-8|openmpi|8|$build/tests/apps-openmpi/periods 100 1500000 40"
  "periods-mpich-2|mpich|2|$build/tests/apps-mpich/periods 100 3000000 40"
  ) ;;
  *) echo "unknown set $set (irregular, threads, collectives, polling, periods)" >&2; exit 2 ;;
esac
echo "| program | calls/rank | folded | C lines | compile s | application s | skeleton s | shrink | prediction | hangs |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for spec in "${programs[@]}"; do
  bench_program_line "$spec"
  d=$work/$name
  mkdir -p "$d"
  echo "== $name: tracing" >&2
  "$skelgen" trace -q --force -o "$d/trace" -- "${launch[@]}" "${app[@]}" > /dev/null
  summary=$("$skelgen" merge "$d/trace" -o "$d/app.skm" --json -q)
  "$skelgen" compress -q "$d/app.skm" -o "$d/app.skf"
  np=${launch[-1]}
  calls=$(python3 -c "import json,sys; s=json.loads(sys.argv[1]); print(s['calls'] // $np)" "$summary")
  folded=$("$skelgen" dump "$d/app.skf" | sed -n 's/^# .*, length \([0-9]*\)$/\1/p' | paste -sd+ | bc)
  "$skelgen" generate "$d/app.skf" -K 10 -o "$d/skel.c" -q > "$d/generate.txt"
  lines=$(wc -l < "$d/skel.c")
  start=$(date +%s.%N)
  "$skelgen" build "$d/skel.c" --mpi "$flavor" -q -o "$d/skel"
  compile=$(echo "$(date +%s.%N) - $start" | bc)
  hangs=0
  : > "$d/app.txt"; : > "$d/skel.txt"; : > "$d/pred.txt"
  for ((i = 1; i <= reps; i++)); do
    echo "== $name: round $i of $reps" >&2
    bench_app_seconds "$skelgen" "${launch[@]}" "${app[@]}" >> "$d/app.txt"
    if out=$(SKELGEN_WATCHDOG_S=60 timeout 300 "${launch[@]}" "$d/skel" 2>&1) && grep -q '^SKELGEN_RESULT' <<< "$out"; then
      bench_result_field measured_s <<< "$out" >> "$d/skel.txt"
      bench_result_field predicted_s <<< "$out" >> "$d/pred.txt"
    else
      hangs=$((hangs + 1))
    fi
  done
  read -r a_min a a_max < <(bench_min_median_max < "$d/app.txt")
  read -r s_min s s_max < <(bench_min_median_max < "$d/skel.txt")
  p=$(bench_median < "$d/pred.txt")
  python3 -c "
a, s, p = $a, $s, $p
print(f'| $name | $calls | $folded | $lines | {float(\"$compile\"):.1f} | {a:.3f} ($a_min-$a_max) | {s:.3f} ($s_min-$s_max) | {a / s:.1f}x | {100 * (p - a) / a:+.1f} % | $hangs |')"
done
