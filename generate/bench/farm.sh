#!/bin/bash
# The figures of docs/results/performance.md, "Master-worker farms": each farm
# program traced once; from that trace, skeletons at K = 1 and K = 10 that
# hand the tasks to whichever worker asks (the default), and a K = 10 one
# that replays the traced shares (generate --no-farms); then REPS rounds of
# (the application untraced, each skeleton), interleaved. Prints a markdown
# table: tasks, application time (median, min-max), each skeleton's
# predicted time (median, min-max) and its error against the application's
# median, the K = 10 skeleton's own time, and hangs (skeleton runs without a
# result line; "refused": skelgen would not write a replay that cannot
# complete). Progress on stderr. FARM_BENCH_ONLY, an extended regular
# expression, keeps the programs whose name it matches (e.g. '^nb-').
#   generate/bench/farm.sh BUILD_DIR [REPS] [WORK_DIR]
set -euo pipefail
source "$(dirname "$0")/../../common/bench/lib.sh"
build=$(cd "$1" && pwd)
reps=${2:-5}
work=${3:-$build/farm-bench}
skelgen=$(bench_built "$build" bin/skelgen)
rm -rf "$work" && mkdir -p "$work"
# name | flavor | ranks | program and arguments (farm TASKS WORK SKEW [SLEEP_US]; farm2 TASKS WORK MODE;
# farm3 TASKS WORK SKEW MODE, SKEW 0: random sizes)
programs=(
  "uniform-openmpi-4|openmpi|4|$build/tests/apps-openmpi/farm 300 4000000 1"
  "skewed-openmpi-4|openmpi|4|$build/tests/apps-openmpi/farm 300 1500000 4"
  "seeded-random-openmpi-4|openmpi|4|$build/tests/apps-openmpi/farm2 300 3000000 seeded"
  "probe-random-openmpi-4|openmpi|4|$build/tests/apps-openmpi/farm2 300 3000000 probe"
  "uniform-openmpi-8|openmpi|8|$build/tests/apps-openmpi/farm 400 3000000 1"
  "skewed-mpich-2|mpich|2|$build/tests/apps-mpich/farm 200 2000000 4"
  "nb-wait-uniform-openmpi-4|openmpi|4|$build/tests/apps-openmpi/farm3 300 4000000 1 wait"
  "nb-waitany-random-openmpi-4|openmpi|4|$build/tests/apps-openmpi/farm3 300 3000000 0 waitany"
  "nb-cancel-skewed-openmpi-4|openmpi|4|$build/tests/apps-openmpi/farm3 300 1500000 4 cancel"
  "nb-waitany-random-mpich-2|mpich|2|$build/tests/apps-mpich/farm3 200 2000000 0 waitany"
  "sleep-openmpi-4|openmpi|4|$build/tests/apps-openmpi/farm 200 300000 1 5000"
  "sleep-mpich-2|mpich|2|$build/tests/apps-mpich/farm 100 300000 1 5000"
  # the last results taken, then every worker stopped (drain); the same, the master polling with MPI_Iprobe
  "drain-random-openmpi-4|openmpi|4|$build/tests/apps-openmpi/farm2 300 3000000 drain"
  "poll-random-openmpi-4|openmpi|4|$build/tests/apps-openmpi/farm2 300 3000000 poll"
  "poll-random-openmpi-8|openmpi|8|$build/tests/apps-openmpi/farm2 400 3000000 poll"
  "poll-random-mpich-2|mpich|2|$build/tests/apps-mpich/farm2 200 2000000 poll"
  "nb-test-random-openmpi-4|openmpi|4|$build/tests/apps-openmpi/farm3 300 3000000 0 test"
  # two tasks in flight per worker (sent two unasked, the next receive posted while computing)
  "prefetch-random-openmpi-4|openmpi|4|$build/tests/apps-openmpi/farm2 300 3000000 prefetch"
  "prefetch-random-openmpi-8|openmpi|8|$build/tests/apps-openmpi/farm2 400 3000000 prefetch"
  "prefetch-random-mpich-2|mpich|2|$build/tests/apps-mpich/farm2 200 2000000 prefetch"
)
# "MEDIAN (MIN-MAX)" of the numbers in FILE, MIN and MAX to 3 decimals
median_range() { bench_min_median_max < "$1" | awk '{printf "%s (%.3f-%.3f)", $2, $1, $3}'; }
err() { awk -v p="$1" -v a="$2" 'BEGIN {printf "%+.1f %%", 100 * (p - a) / a}'; }
echo "| program | tasks | application s | K = 1 predicted s | error | K = 10 predicted s | error | K = 10 skeleton s | replayed shares, K = 10 | error | hangs |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for spec in "${programs[@]}"; do
  bench_program_line "$spec"
  [[ -n "${FARM_BENCH_ONLY:-}" && ! "$name" =~ $FARM_BENCH_ONLY ]] && continue
  d=$work/$name
  mkdir -p "$d"
  echo "== $name: tracing" >&2
  "$skelgen" trace -q --force -o "$d/trace" -- "${launch[@]}" "${app[@]}" > /dev/null
  "$skelgen" generate -q "$d/trace" -K 1 -o "$d/k1.c"
  "$skelgen" generate -q "$d/trace" -K 10 -o "$d/k10.c"
  skels=(k1 k10 replay)  # the replay is refused where it could not complete (a master cancelling its receives)
  "$skelgen" generate -q "$d/trace" -K 10 --no-farms -o "$d/replay.c" 2> "$d/replay.err" || skels=(k1 k10)
  tasks=$(grep -o 'hands [0-9]* of the application.s [0-9]* tasks' "$d/k10.c" | awk '{print $2 "/" $6}' | head -1)
  for s in "${skels[@]}"; do "$skelgen" build -q "$d/$s.c" --mpi "$flavor" -o "$d/$s"; done
  hangs=0
  : > "$d/app.txt"
  for s in k1 k10 replay; do : > "$d/$s.pred"; : > "$d/$s.meas"; done
  for ((i = 1; i <= reps; i++)); do
    echo "== $name: round $i/$reps" >&2
    bench_app_seconds "$skelgen" "${launch[@]}" "${app[@]}" >> "$d/app.txt"
    for s in "${skels[@]}"; do
      out=$(timeout 600 "${launch[@]}" "$d/$s" 2> /dev/null | grep SKELGEN_RESULT || true)
      if [ -z "$out" ]; then hangs=$((hangs + 1)); continue; fi
      bench_result_field predicted_s <<< "$out" >> "$d/$s.pred"
      bench_result_field measured_s <<< "$out" >> "$d/$s.meas"
    done
  done
  a=$(bench_median < "$d/app.txt")
  row="| $name | $tasks | $(median_range "$d/app.txt")"
  for s in k1 k10 replay; do
    if [ ! -x "$d/$s" ]; then row+=" | refused | -"; continue; fi
    p=$(bench_median < "$d/$s.pred")
    if [ -n "$p" ]; then row+=" | $(median_range "$d/$s.pred") | $(err "$p" "$a")"; else row+=" | - | -"; fi
    [ $s = k10 ] && row+=" | $(bench_median < "$d/k10.meas")"
  done
  echo "$row | $hangs |"
done
