#!/bin/bash
# Runs one test program untraced and traced, checks that its standard output
# is the same both times and that the trace agrees with its own call log.
#   run_app_test.sh SKELGEN LAUNCHER NP APP WORKDIR [check_trace.py options]
# LAUNCHER is "mpich" or "openmpi". Extra environment (SKELTRACE_*) passes through.
set -u
skelgen=$1 flavor=$2 np=$3 app=$4 work=$5
shift 5
here=$(cd "$(dirname "$0")" && pwd)
# the MPI's launcher for np ranks, in the array launch (the bench scripts' own)
source "$(dirname "$0")/../common/bench/lib.sh"
bench_mpi_launcher "$flavor" "$np"
rm -rf "$work" && mkdir -p "$work/log"
expect_rc=0
[[ " $* " == *" --prefix-ranks "* ]] && expect_rc=nonzero

"${launch[@]}" "$app" > "$work/plain.out" 2> "$work/plain.err"
rc_plain=$?
# Kernel samples every 5 ms instead of 50: the short test programs then take
# several, and check_trace.py sees that their time stays out of the gaps.
export SKELTRACE_CALIBRATE_EVERY_MS=${SKELTRACE_CALIBRATE_EVERY_MS:-5}
APPLOG_DIR="$work/log" timeout 120 "$skelgen" trace -o "$work/trace" -- "${launch[@]}" "$app" \
  > "$work/traced.out" 2> "$work/traced.err"
rc_traced=$?
if [ "$expect_rc" = 0 ] && { [ $rc_plain != 0 ] || [ $rc_traced != 0 ]; }; then
  echo "FAIL: exit status untraced $rc_plain, traced $rc_traced"; cat "$work/traced.err"; exit 1
fi
if [ "$rc_plain" != "$rc_traced" ]; then
  echo "FAIL: exit status differs: untraced $rc_plain, traced $rc_traced"; exit 1
fi
if ! diff -u "$work/plain.out" "$work/traced.out"; then
  echo "FAIL: standard output differs with the tracer"; exit 1
fi
if grep -q "skeltrace:" "$work/traced.err"; then
  echo "FAIL: the tracer warned:"; grep "skeltrace:" "$work/traced.err"; exit 1
fi
# The gap clock the tracer must choose: thread CPU time when the ranks
# outnumber this machine's CPUs (SKELTRACE_GAP_CLOCK=auto), unless forced.
shared=()
[ "$np" -gt "$(nproc)" ] && shared=(--shared-cores)
# and always for MPI_THREAD_MULTIPLE programs (the threaded ones: --by-thread, --unordered)
multiple=0
[[ " $* " == *" --by-thread "* || " $* " == *" --unordered "* ]] && multiple=1
case ${SKELTRACE_GAP_CLOCK:-auto} in
  cpu) clock=thread_cpu ;;
  wall) clock=wall ;;
  *) if [ ${#shared[@]} -gt 0 ] || [ $multiple = 1 ]; then clock=thread_cpu; else clock=wall; fi ;;
esac
python3 "$here/check_trace.py" "$skelgen" "$work/trace" "$work/log" --gap-clock "$clock" "${shared[@]}" "$@"
