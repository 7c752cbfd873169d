#!/bin/bash
# One loop holds all of a program's iterations: the program traced, merged
# as skelgen chooses (--order auto), folded; the folded program's main loop
# must run as many times as the program says it iterated (its argument, the
# independent truth), and the K = 10 skeleton must cut that loop and run to
# its end. tests/apps/mgrid.c, V-cycles whose halves of the ranks make
# different numbers of the same exchanges: merged by alignment block by
# block, the first cycle was merged unlike the others and stayed out of the
# loop (main loop 10 or 11 of 12).
#   run_loop_count_test.sh SKELGEN FLAVOR NP APP WORK ITERATIONS [APP ARGS AFTER ITERATIONS...]
set -euo pipefail
skelgen=$1 flavor=$2 np=$3 app=$4 work=$5 iterations=$6
shift 6
source "$(dirname "$0")/../common/bench/lib.sh"
bench_mpi_launcher "$flavor" "$np"
rm -rf "$work" && mkdir -p "$work"
"$skelgen" trace -q -o "$work/trace" -- "${launch[@]}" "$app" "$iterations" "$@" > "$work/app.txt"
"$skelgen" merge "$work/trace" -o "$work/merged.skm" > "$work/merge.txt"
grep '^order:' "$work/merge.txt"
"$skelgen" compress "$work/merged.skm" -o "$work/folded.skf" --verify --json > "$work/compress.json"
read -r count body program < <(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(d["main_loop_count"], d["main_loop_body"], d["program"])' "$work/compress.json")
echo "main loop: ${body} symbols x ${count}; program: ${program}"
[ "$count" -eq "$iterations" ] ||
  { echo "FAIL: the main loop runs $count times; the program iterated $iterations times" >&2; exit 1; }
"$skelgen" generate "$work/merged.skm" -K 10 -o "$work/skel.c" --build --mpi "$flavor" > "$work/generate.txt"
grep -q "^cut: *loop .*, $iterations -> " "$work/generate.txt" ||
  { echo "FAIL: the skeleton does not cut the $iterations-iteration loop:" >&2; cat "$work/generate.txt" >&2; exit 1; }
timeout 120 "${launch[@]}" "$work/skel" > "$work/skel.txt"
echo "skeleton: $(grep -m1 '^cut:' "$work/generate.txt"), ran to its end"
