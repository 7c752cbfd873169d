#!/bin/bash
# Generates a skeleton from a test program's trace, compiles it with -Wall
# -Werror, runs it under a timeout (a deadlock fails the test), checks its
# result line, then traces the skeleton itself and checks the round trip
# (tests/check_roundtrip.py); with --check-computation (K = 1), that it
# computes at each of the application's long gaps as long as the application
# did, and that the same skeleton with its phase tables taken out does not
# (tests/check_computation.py).
#   run_skeleton_test.sh SKELGEN FLAVOR NP TRACE_DIR|MERGED.skm WORK K [--allow-partial] [--no-roundtrip]
#                        [--join-call-sites] [--check-computation] [--means]
set -euo pipefail
skelgen=$1 flavor=$2 np=$3 trace=$4 work=$5 K=$6
shift 6
# --no-roundtrip: run only (threaded programs: their threads' calls come in another order each run);
# --allow-partial: passed on; a partial trace is cut where its first rank stopped, so no round trip either;
# --thread-calls: an MPI_THREAD_MULTIPLE program (TRACE_DIR): at K = 1, the skeleton traced again makes each
#   thread's calls in order (tests/check_thread_calls.py); no round trip of the merged programs
# --join-call-sites: passed on, and the round trip folds both programs so too
# --means: the skeleton sends message counts as their means (small messages, docs/compress.md): the round
#   trip compares each rank's bytes sent over the run instead of each call's count
extra=()
roundtrip_opts=()
fold=()
roundtrip=1
check_computation=0
thread_calls=0
for a in "$@"; do
  case "$a" in
    --no-roundtrip) roundtrip=0 ;;
    --thread-calls) roundtrip=0; thread_calls=1 ;;
    --check-computation) check_computation=1 ;;
    --means) roundtrip_opts+=("$a") ;;
    --allow-partial) roundtrip=0; extra+=("$a") ;;
    --join-call-sites) fold+=("$a"); extra+=("$a") ;;
    *) extra+=("$a") ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
if [ "$flavor" = mpich ]; then
  launch=(mpiexec.mpich -n "$np")
else
  launch=(mpirun.openmpi --allow-run-as-root --oversubscribe -n "$np")
fi
"$skelgen" generate "$trace" -K "$K" -o "$work/skel.c" ${extra[@]+"${extra[@]}"} > "$work/generate.out"
"$skelgen" build "$work/skel.c" --mpi "$flavor" --cflags -Werror -o "$work/skel"
rc=0
timeout 120 "${launch[@]}" "$work/skel" > "$work/run.out" 2> "$work/run.err" || rc=$?
if [ $rc != 0 ]; then
  cat "$work/run.err" >&2
  [ $rc = 124 ] && echo "FAIL: the skeleton did not finish in 120 s (deadlock?)" >&2
  exit 1
fi
n=$(grep -c '^SKELGEN_RESULT measured_s=[0-9.]* predicted_s=[0-9.]* scale='"$K"'$' "$work/run.out" || true)
[ "$n" = 1 ] || { cat "$work/run.out"; echo "FAIL: expected exactly one SKELGEN_RESULT line" >&2; exit 1; }
grep SKELGEN_RESULT "$work/run.out"
if grep -q '^ \* note: the time steps did not fold into one loop' "$work/skel.c"; then
  roundtrip=0  # its calls are a sample of the application's time steps (tests/run_irregular_test.sh)
fi
# a result line that cannot be written (stdout on a full device): exit non-zero
if [ -e /dev/full ] && [[ $work == *ring_*K10* ]]; then  # once: each run costs time
  rc=0
  # the skeleton's own stdout, not the launcher's, is the full device
  timeout 120 "${launch[@]}" sh -c 'exec "$0" > /dev/full' "$work/skel" > "$work/full.out" 2> "$work/full.err" || rc=$?
  grep -q "cannot write the SKELGEN_RESULT line" "$work/full.err" ||
    { cat "$work/full.err" >&2; echo "FAIL: the skeleton did not say it lost its result line" >&2; exit 1; }
  [ $rc != 0 ] || { echo "FAIL: the skeleton exited 0 without printing its SKELGEN_RESULT line" >&2; exit 1; }
fi
if [ $thread_calls = 1 ] && [ "$K" = 1 ]; then
  # an MPI_THREAD_MULTIPLE program: each thread's calls, in order, as the application's threads made them
  "$skelgen" trace -q --force -o "$work/skel.trace" -- "${launch[@]}" "$work/skel" > /dev/null
  python3 "$here/check_thread_calls.py" "$skelgen" "$trace" "$work/skel.trace"
  exit $?
fi
if [ $roundtrip = 0 ]; then
  echo "ok: ran to completion (no round trip for this program)"
  exit 0
fi
# the application's merged trace and folded program, as the generator saw them
if [ -d "$trace" ]; then
  "$skelgen" merge "$trace" -o "$work/app.skm" -q
else
  cp "$trace" "$work/app.skm"
fi
"$skelgen" compress "$work/app.skm" -o "$work/app.skf" -q ${fold[@]+"${fold[@]}"}
# round trip: the skeleton under our tracer, merged and folded (its gaps by thread CPU time where they
# are checked: the work done, not the time another test had the core), its completion calls kept as it
# made them (the application's merged trace has its completions made one MPI_Waitall already, and the
# skeleton may post a step's requests before its completions where the application interleaved them)
if [ $check_computation = 1 ]; then export SKELTRACE_GAP_CLOCK=cpu; fi
"$skelgen" trace -q --force -o "$work/skel.trace" -- "${launch[@]}" "$work/skel" > /dev/null
"$skelgen" merge "$work/skel.trace" -o "$work/skel.skm" -q --keep-completions
"$skelgen" compress "$work/skel.skm" -o "$work/skel.skf" -q ${fold[@]+"${fold[@]}"}
python3 "$here/check_roundtrip.py" "$skelgen" "$work/app.skm" "$work/app.skf" "$work/skel.c" "$work/skel.skm" \
  "$work/skel.skf" ${roundtrip_opts[@]+"${roundtrip_opts[@]}"}
[ $check_computation = 1 ] || exit 0
[ "$K" = 1 ] || { echo "ERROR: --check-computation needs K = 1 (every loop run as traced)" >&2; exit 2; }
python3 "$here/check_computation.py" "$skelgen" "$work/app.skm" "$work/skel.skm"
# the control: the same skeleton computing each position's mean, its phase tables taken out, must fail
grep -q '_phase\[skel_rank\]\[' "$work/skel.c" || { echo "FAIL: no phase table in skel.c" >&2; exit 1; }
sed -E 's/ \* n[0-9]+_phase\[skel_rank\]\[[^]]*\]//g' "$work/skel.c" > "$work/flat.c"
if grep -q '_phase\[skel_rank\]\[' "$work/flat.c"; then
  echo "FAIL: a phase table is still used in flat.c" >&2
  exit 1
fi
"$skelgen" build "$work/flat.c" --mpi "$flavor" -q -o "$work/flat" 2> "$work/flat.build.err"
"$skelgen" trace -q --force -o "$work/flat.trace" -- "${launch[@]}" "$work/flat" > /dev/null
"$skelgen" merge "$work/flat.trace" -o "$work/flat.skm" -q --keep-completions
python3 "$here/check_computation.py" --expect-fail "$skelgen" "$work/app.skm" "$work/flat.skm"
