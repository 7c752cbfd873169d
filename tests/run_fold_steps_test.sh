#!/bin/bash
# A program whose time steps differ only in their messages' counts (small
# messages: tests/apps/particles.c, particles that leave towards the
# neighbours, a different number in every step) is traced with STEPS and
# 2 x STEPS steps: both fold to a program of the same length, the time
# steps one loop whatever their counts (before, every step was symbols of
# its own and the length grew with the steps). Prints both programs.
#   run_fold_steps_test.sh SKELGEN FLAVOR NP APP WORK STEPS
set -euo pipefail
skelgen=$1 flavor=$2 np=$3 app=$4 work=$5 steps=$6
source "$(dirname "$0")/../common/bench/lib.sh"
bench_mpi_launcher "$flavor" "$np"
rm -rf "$work" && mkdir -p "$work"
for n in "$steps" $((2 * steps)); do
  "$skelgen" trace -q --force -o "$work/t$n" -- "${launch[@]}" "$app" "$n" > /dev/null
  "$skelgen" merge -q "$work/t$n" -o "$work/t$n.skm"
  "$skelgen" compress "$work/t$n.skm" -o "$work/t$n.skf" --verify > "$work/compress$n.txt"
  "$skelgen" dump "$work/t$n.skf" | sed -n 2p > "$work/program$n.txt"
  echo "$n steps: $(cat "$work/program$n.txt")"
done
a=$(wc -w < "$work/program$steps.txt") b=$(wc -w < "$work/program$((2 * steps)).txt")
[ "$a" -eq "$b" ] || { echo "FAIL: $steps steps fold to $a words, $((2 * steps)) steps to $b" >&2; exit 1; }
echo "both fold to $a words"
