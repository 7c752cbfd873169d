#!/bin/bash
# A halo exchange completed by polling or one request at a time
# (tests/apps/poll_halo.c MODE: waitsome, testall, testsome, waitany,
# testfirst), whose completion calls change from run to run, traced twice:
# merge makes each step's completions one MPI_Waitall (its note says so;
# testfirst: leaves out the tests that found nothing), both traces fold to
# the same program (timings aside) and merge as two runs of it call by call
# (per-position medians), and the time steps fold: the program is
# at most 40 symbols, where with every completion call kept as traced it is
# more than 100 (the control). Then its K = 10 skeleton is generated,
# compiled, run and traced (tests/run_skeleton_test.sh: it completes and
# makes the application's merged calls, its cut loops run fewer times).
# PERSISTENT 1: the program's requests are persistent (MPI_Startall each step).
#   run_polling_test.sh SKELGEN FLAVOR NP APP WORK MODE [PERSISTENT]
set -euo pipefail
skelgen=$1 flavor=$2 np=$3 app=$4 work=$5 mode=$6 persistent=${7:-0}
source "$(dirname "$0")/../common/bench/lib.sh"
bench_mpi_launcher "$flavor" "$np"
rm -rf "$work" && mkdir -p "$work"
length() { "$skelgen" compress "$1" -o "$2" --json -q | python3 -c 'import json, sys; print(json.load(sys.stdin)["folded_length"])'; }
for run in 1 2; do
  "$skelgen" trace -q --force -o "$work/trace$run" -- "${launch[@]}" "$app" "$mode" 200 2000 100000 "$persistent" > /dev/null
  "$skelgen" merge "$work/trace$run" -o "$work/trace$run.skm" > /dev/null 2> "$work/merge$run.txt"
  read -r made_one idle < <("$skelgen" merge "$work/trace$run" -o "$work/json$run.skm" --json -q |
    python3 -c 'import json, sys; d = json.load(sys.stdin); print(d["completions_made_one"], d["idle_calls_left_out"])')
  if [ "$mode" = testfirst ]; then
    # the tests that found nothing left out (another receive of the same call is still active, so the
    # episode is not made one): how many there were is the timing's choice, at least one is near certain
    grep -q "completed nothing left out" "$work/merge$run.txt" && [ "$idle" -gt 0 ] ||
      { cat "$work/merge$run.txt"; echo "FAIL: no tests that found nothing left out ($idle)" >&2; exit 1; }
  else
    grep -q "merged as one MPI_Waitall each" "$work/merge$run.txt" || { cat "$work/merge$run.txt"; echo "FAIL: no completions made one" >&2; exit 1; }
    # one episode per rank and step (200 steps), the program's own count
    [ "$made_one" = $((np * 200)) ] || { echo "FAIL: $made_one completion episodes made one, want $((np * 200))" >&2; exit 1; }
  fi
  folded[$run]=$(length "$work/trace$run.skm" "$work/trace$run.skf")
  "$skelgen" dump "$work/trace$run.skf" | sed -n 2p > "$work/program$run.txt"
done
bench_same_program "$work/program1.txt" "$work/program2.txt"
# the two traces as two runs of one program (skelgen trace --runs 2): the same calls, merged by each
# call's median over the runs (with the polls as traced, each run's calls are its own)
mkdir -p "$work/runs" && cp -r "$work/trace1" "$work/runs/run-1" && cp -r "$work/trace2" "$work/runs/run-2"
"$skelgen" merge "$work/runs" -o "$work/runs.skm" 2> "$work/runs.txt" > /dev/null
grep -q "per-position medians" "$work/runs.txt" || { cat "$work/runs.txt"; echo "FAIL: the two runs do not merge call by call" >&2; exit 1; }
"$skelgen" merge "$work/trace1" --keep-completions -q -o "$work/kept.skm"
kept=$(length "$work/kept.skm" "$work/kept.skf")
echo "folded: ${folded[1]} symbols, the same program for both traces; completions kept as traced: $kept"
[ "${folded[1]}" -le 40 ] || { cat "$work/program1.txt"; echo "FAIL: the time steps do not fold (${folded[1]} symbols)" >&2; exit 1; }
[ "$kept" -gt 100 ] || echo "note: with the completions kept as traced this run folds too ($kept symbols): the control did not vary"
exec "$(dirname "$0")/run_skeleton_test.sh" "$skelgen" "$flavor" "$np" "$work/trace1.skm" "$work/skel" 10
