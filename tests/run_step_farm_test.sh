#!/bin/bash
# A master-worker farm inside a time-step loop whose master polls with
# MPI_Iprobe (tests/apps/step_farm.c): the merged trace (skelgen merge
# --order auto) holds each step's MPI_Allreduce as one event of every rank
# (the program makes STEPS of them on MPI_COMM_WORLD: the independent truth),
# and the K = 10 skeleton leaves time steps out (the generator's note), runs
# the farm of each step it keeps as a farm with all of the step's TASKS
# tasks (the generator's farm lines; the skeleton's SKELGEN_FARM lines: its
# workers did TASKS tasks in each), is
# at least 2 times shorter than the traced run as planned (4-10x on a quiet
# machine; under a loaded CI the first steps are slow, stay whole and stand
# for no others: 3.0x once, 1.5x from a single run disturbed to 3x its time;
# so the program is traced 3 times and, its runs differing in their polls,
# the run of median time is the one merged), at most 10,000 lines of C (1,400-1,500 with
# the kept steps' farms run as farms; 4,700-7,200 when each was replayed
# poll by poll; with no step left out, 20 steps made 12,530), and runs to
# its end. Prints the figures.
#   run_step_farm_test.sh SKELGEN FLAVOR NP APP WORK STEPS TASKS TASK_WORK
set -euo pipefail
skelgen=$1 flavor=$2 np=$3 app=$4 work=$5 steps=$6 tasks=$7
shift 5
# the MPI's launcher for np ranks, in the array launch (the bench scripts' own)
source "$(dirname "$0")/../common/bench/lib.sh"
bench_mpi_launcher "$flavor" "$np"
rm -rf "$work" && mkdir -p "$work"
"$skelgen" trace -q --force --runs 3 -o "$work/trace" -- "${launch[@]}" "$app" "$@" > /dev/null
"$skelgen" merge -q --order auto "$work/trace" -o "$work/app.skm"
"$skelgen" dump "$work/app.skm" > "$work/merged.txt"
whole=$(grep -c ' MPI_Allreduce .* ranks=all' "$work/merged.txt" || true)
split=$(grep ' MPI_Allreduce ' "$work/merged.txt" | grep -vc ' ranks=all' || true)
echo "merged: $whole MPI_Allreduce events of every rank, $split of fewer (the program makes $steps)"
[ "$whole" -eq "$steps" ] && [ "$split" -eq 0 ] ||
  { echo "FAIL: the steps' MPI_Allreduce are not $steps events of every rank" >&2; exit 1; }
"$skelgen" generate "$work/trace" -K 10 -o "$work/skel.c" > "$work/generate.txt" 2>&1
# Where the master's polls left out make every step alike (docs/merge.md,
# "Spinning polls"), the steps fold into one loop and that loop is cut
# instead: a plan as good, whose farms inside the loop run as traced.
folded=0
if ! grep -q "did not fold into one loop" "$work/generate.txt"; then
  grep -q "^cut: .*loop" "$work/generate.txt" ||
    { cat "$work/generate.txt"; echo "FAIL: no time steps left out and no loop cut" >&2; exit 1; }
  folded=1
  echo "K = 10: the time steps folded into a loop, which is cut (no farm runs as a farm inside it)"
fi
farms=$(grep -c '^farm: ' "$work/generate.txt" || true)
whole=$(grep -c "^farm: .*: $tasks of $tasks tasks handed" "$work/generate.txt" || true)
echo "K = 10: $farms farms in the kept steps, $whole of them with all $tasks tasks"
[ "$folded" -eq 1 ] || { [ "$farms" -ge 1 ] && [ "$whole" -eq "$farms" ]; } ||
  { cat "$work/generate.txt"; echo "FAIL: the kept steps' farms are not run as farms of $tasks tasks" >&2; exit 1; }
traced=$(sed -n 's/^traced: *\([0-9.]*\) s.*/\1/p' "$work/generate.txt")
expected=$(sed -n 's/^expected: *\([0-9.]*\) s.*/\1/p' "$work/generate.txt")
lines=$(wc -l < "$work/skel.c")
echo "K = 10: $lines lines of C; traced $traced s, expected $expected s"
python3 -c "import sys; sys.exit(0 if $expected > 0 and $traced / $expected >= 2 else 1)" ||
  { echo "FAIL: the skeleton is not 2 times shorter than the traced run as planned" >&2; exit 1; }
[ "$lines" -le 10000 ] || { echo "FAIL: $lines lines of C (at most 10,000)" >&2; exit 1; }
"$skelgen" build "$work/skel.c" --mpi "$flavor" -q -o "$work/skel"
SKELGEN_FARM_REPORT=1 SKELGEN_WATCHDOG_S=20 timeout 120 "${launch[@]}" "$work/skel" > "$work/skel.out" 2>&1 || { cat "$work/skel.out"; echo "FAIL: the skeleton did not complete" >&2; exit 1; }
# each farm's workers did the step's tasks: done=RANK:N,... sums to TASKS
python3 - "$work/skel.out" "$farms" "$tasks" <<'PY' || exit 1
import re, sys
lines = [l for l in open(sys.argv[1]) if l.startswith("SKELGEN_FARM ")]
done = [sum(int(x.split(":")[1]) for x in re.search(r"done=(\S+)", l).group(1).split(",")) for l in lines]
print(f"skeleton: {len(lines)} farms run, tasks done per farm {sorted(set(done))}")
if len(lines) != int(sys.argv[2]) or any(d != int(sys.argv[3]) for d in done):
    sys.exit(f"FAIL: want {sys.argv[2]} farms of {sys.argv[3]} tasks done")
PY
grep '^SKELGEN_RESULT' "$work/skel.out" || { echo "FAIL: no result line" >&2; exit 1; }
