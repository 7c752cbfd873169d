#!/bin/bash
# Skeletons never deadlock, even when every message waits for its receive
# (rendezvous for all sizes: UCX_RNDV_THRESH=0 under MPICH's ch4:ucx).
# First a control: a program whose ranks both send first must hang under that
# setting (else the setting does not force rendezvous here, and the test
# proves nothing). Then each given trace's skeleton, K = 1 and K = 10, must
# finish under it within 60 s.
#   run_rendezvous_test.sh SKELGEN WORK CONTROL.c MERGED.skm...
set -euo pipefail
skelgen=$1 work=$2 control=$3
shift 3
rm -rf "$work" && mkdir -p "$work"
launch=(mpiexec.mpich -genv UCX_RNDV_THRESH 0 -n 2)
mpicc.mpich -O2 -o "$work/control" "$control"
rc=0
timeout 15 "${launch[@]}" "$work/control" > /dev/null 2>&1 || rc=$?
if [ $rc != 124 ]; then
  echo "FAIL: the head-to-head control finished (exit $rc) under UCX_RNDV_THRESH=0: rendezvous is not forced" >&2
  exit 1
fi
echo "control: head-to-head sends deadlock under UCX_RNDV_THRESH=0, as they must"
for trace in "$@"; do
  name=$(basename "$(dirname "$trace")")
  for K in 1 10; do
    "$skelgen" generate "$trace" -K $K -o "$work/$name-k$K.c" -q > /dev/null
    "$skelgen" build "$work/$name-k$K.c" --mpi mpich -o "$work/$name-k$K" -q
    rc=0
    timeout 60 "${launch[@]}" "$work/$name-k$K" > "$work/$name-k$K.out" 2>&1 || rc=$?
    if [ $rc != 0 ]; then
      tail -5 "$work/$name-k$K.out" >&2
      [ $rc = 124 ] && echo "FAIL: $name K=$K deadlocked under forced rendezvous" >&2
      [ $rc != 124 ] && echo "FAIL: $name K=$K exited $rc under forced rendezvous" >&2
      exit 1
    fi
    echo "ok: $name K=$K: $(grep SKELGEN_RESULT "$work/$name-k$K.out")"
  done
done
