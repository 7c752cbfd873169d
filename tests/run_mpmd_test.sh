#!/bin/bash
# An MPMD command (LAUNCHER -n 1 APP : -n N APP) traced: every application
# context's ranks must be traced (Open MPI takes -x per context: untraced
# ranks left the traced one waiting in MPI_Init for ever), and the trace
# must merge and verify.
#   run_mpmd_test.sh SKELGEN FLAVOR APP WORKDIR
set -u
skelgen=$1 flavor=$2 app=$3 work=$4
case $flavor in
  mpich) cmd=(mpiexec.mpich -n 1 "$app" : -n 1 "$app"); np=2 ;;
  openmpi) cmd=(mpirun.openmpi --allow-run-as-root --oversubscribe -n 1 "$app" : -n 3 "$app"); np=4 ;;
  *) echo "unknown MPI $flavor"; exit 2 ;;
esac
rm -rf "$work" && mkdir -p "$work"
export APPLOG_DIR=$work/log
mkdir -p "$APPLOG_DIR"
timeout 120 "$skelgen" trace -o "$work/trace" -- "${cmd[@]}" > "$work/trace.log" 2>&1
rc=$?
[ $rc = 124 ] && { echo "FAIL: the traced MPMD job hung"; exit 1; }
[ $rc = 0 ] || { cat "$work/trace.log"; echo "FAIL: status $rc"; exit 1; }
n=$(ls "$work/trace"/rank-*.skt | wc -l)
[ "$n" = "$np" ] || { echo "FAIL: $n rank files, not $np"; exit 1; }
"$skelgen" merge "$work/trace" -o "$work/trace.skm" --verify -q || { echo "FAIL: merge --verify"; exit 1; }
echo "PASS: $np ranks in two application contexts traced and merged"
