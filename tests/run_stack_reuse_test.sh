#!/bin/bash
# Traced, an MPI call leaves zeros on the stack below its caller
# (libtrace/tracer_core.h, scrub_stack): tests/apps/stack_reuse.c reads the
# bytes a call left and prints how many are set; every count must be 0.
#   run_stack_reuse_test.sh SKELGEN WORKDIR LAUNCHER... APP
set -u
skelgen=$1 work=$2; shift 2
rm -rf "$work" && mkdir -p "$work"
"$skelgen" trace -q --force -o "$work/trace" -- "$@" > "$work/out" 2> "$work/err" || {
  echo "FAIL: traced run failed"; cat "$work/err"; exit 1; }
cat "$work/out"
grep -q "^most bytes set on any rank: 0$" "$work/out" || { echo "FAIL: the wrappers left data on the stack"; exit 1; }
echo ok
