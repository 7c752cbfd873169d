#!/bin/bash
# Merging inside the job (skelgen trace --merge-in-job): the merged trace
# the ranks make at MPI_Finalize, along a tree of the ranks, must be the one
# skelgen merge makes of the same rank files, byte for byte; nothing may
# stay on the nodes' staging directory; without --keep-rank-files the trace
# directory holds no rank file; where the merge cannot run (its library
# missing) the rank files reach the trace directory and a line says why.
#   run_injob_test.sh SKELGEN FLAVOR NP APP WORKDIR [APP ARGS...]
set -u
skelgen=$1 flavor=$2 np=$3 app=$4 work=$5
shift 5
# the MPI's launcher for np ranks, in the array launch (the bench scripts' own)
source "$(dirname "$0")/../common/bench/lib.sh"
bench_mpi_launcher "$flavor" "$np"
rm -rf "$work" && mkdir -p "$work/stage"
export SKELTRACE_STAGE_DIR=$work/stage APPLOG_DIR=$work/log
mkdir -p "$APPLOG_DIR"
fail() { echo "FAIL: $*"; exit 1; }

# 1. kept rank files: the in-job merge against skelgen merge of the same files
"$skelgen" trace --merge-in-job --keep-rank-files -o "$work/kept" -- "${launch[@]}" "$app" "$@" > "$work/kept.log" 2>&1 ||
  { cat "$work/kept.log"; fail "traced run"; }
grep -q "skeltrace: merged in the job into $work/kept.skm: $np rank files" "$work/kept.log" ||
  { cat "$work/kept.log"; fail "no merged-in-the-job line"; }
[ "$(ls "$work/kept"/rank-*.skt | wc -l)" = "$np" ] || fail "not $np rank files kept"
"$skelgen" merge "$work/kept" -o "$work/offline.skm" -q || fail "offline merge"
cmp "$work/kept.skm" "$work/offline.skm" || fail "the in-job merge differs from skelgen merge of the same rank files"
[ -z "$(ls -A "$work/stage")" ] || fail "left in the staging directory: $(ls "$work/stage")"

# 2. one file: no rank file in the trace directory; the merged trace makes a skeleton that completes
"$skelgen" trace --merge-in-job -o "$work/one" -- "${launch[@]}" "$app" "$@" > "$work/one.log" 2>&1 ||
  { cat "$work/one.log"; fail "traced run"; }
[ -f "$work/one.skm" ] || fail "no $work/one.skm"
[ -z "$(ls "$work/one")" ] || fail "rank files in $work/one: $(ls "$work/one" | head -3)"
"$skelgen" generate "$work/one.skm" -K 10 -o "$work/one/skel.c" -q || fail "generate from the in-job merged trace"

# 3. the merge's library missing: the rank files reach the trace directory
SKELTRACE_MERGE_IN_JOB_LIB=$work/no-such-lib.so "$skelgen" trace --merge-in-job -o "$work/fallback" -- \
  "${launch[@]}" "$app" "$@" > "$work/fallback.log" 2>&1 || { cat "$work/fallback.log"; fail "traced run (fallback)"; }
grep -q "the merge in the job failed (cannot load the in-job merge" "$work/fallback.log" ||
  { cat "$work/fallback.log"; fail "no line saying why the merge failed"; }
[ "$(ls "$work/fallback"/rank-*.skt | wc -l)" = "$np" ] || fail "the rank files did not reach $work/fallback"
"$skelgen" merge "$work/fallback" -o "$work/fallback.skm" -q || fail "merge of the fallback's rank files"
[ -z "$(ls -A "$work/stage")" ] || fail "left in the staging directory: $(ls "$work/stage")"
# 4. one rank cannot trace (its staging directory cannot be made): the others must not wait for it
# at MPI_Finalize; their files reach the trace directory
case $flavor in
  mpich) split=(mpiexec.mpich -n 1 -env SKELTRACE_STAGE_DIR /etc/hostname "$app" "$@" : -n $((np - 1)) "$app" "$@") ;;
  openmpi) split=(mpirun.openmpi --allow-run-as-root --oversubscribe -n 1 -x SKELTRACE_STAGE_DIR=/etc/hostname "$app" "$@" :
                  -n $((np - 1)) "$app" "$@") ;;
esac
timeout 120 "$skelgen" trace --merge-in-job -o "$work/onefails" -- "${split[@]}" > "$work/onefails.log" 2>&1
rc=$?
[ $rc = 124 ] && fail "the job hung at MPI_Finalize with one rank not tracing"
[ "$(ls "$work/onefails"/rank-*.skt 2>/dev/null | wc -l)" = $((np - 1)) ] ||
  { cat "$work/onefails.log"; fail "the $((np - 1)) tracing ranks' files did not reach $work/onefails (status $rc)"; }
[ -z "$(ls -A "$work/stage")" ] || fail "left in the staging directory: $(ls "$work/stage")"
echo "PASS: $np ranks, in-job merge identical to skelgen merge ($(stat -c %s "$work/kept.skm") bytes)"
