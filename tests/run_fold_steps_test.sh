#!/bin/bash
# A program traced with two sizes of its loops fold to programs of the same
# length: its loops fold whatever the values that change in them.
# tests/apps/particles.c, time steps that differ only in their messages'
# counts (small messages, a different number of particles in every step),
# at 40 and 80 steps: before, every step was symbols of its own and the
# length grew with the steps. tests/apps/rows.c, a pipeline whose tags are
# its rows (an inner loop longer than the cycles kept), at 100 and 200
# rows: before, every row was a symbol of its own. Prints both programs.
#   run_fold_steps_test.sh SKELGEN FLAVOR NP APP WORK "ARGS1" "ARGS2"
set -euo pipefail
skelgen=$1 flavor=$2 np=$3 app=$4 work=$5 args1=$6 args2=$7
source "$(dirname "$0")/../common/bench/lib.sh"
bench_mpi_launcher "$flavor" "$np"
rm -rf "$work" && mkdir -p "$work"
words=()
for n in 1 2; do
  if [ $n = 1 ]; then args=$args1; else args=$args2; fi
  # shellcheck disable=SC2086 # the program's arguments, split
  "$skelgen" trace -q --force -o "$work/t$n" -- "${launch[@]}" "$app" $args > /dev/null
  "$skelgen" merge -q "$work/t$n" -o "$work/t$n.skm"
  "$skelgen" compress "$work/t$n.skm" -o "$work/t$n.skf" --verify > "$work/compress$n.txt"
  "$skelgen" dump "$work/t$n.skf" | sed -n 2p > "$work/program$n.txt"
  echo "$(basename "$app") $args: $(cat "$work/program$n.txt")"
  words+=("$(wc -w < "$work/program$n.txt")")
done
[ "${words[0]}" -eq "${words[1]}" ] ||
  { echo "FAIL: '$args1' folds to ${words[0]} words, '$args2' to ${words[1]}" >&2; exit 1; }
echo "both fold to ${words[0]} words"
