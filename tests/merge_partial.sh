#!/bin/bash
# A trace whose ranks were killed by MPI_Abort: merge refuses it with a clear
# message naming the file, and merges what it holds with --allow-partial.
#   merge_partial.sh SKELGEN TRACE_DIR
set -u
skelgen=$1 trace=$2
err=$("$skelgen" merge "$trace" -o "$trace.skm" 2>&1 >/dev/null)
rc=$?
if [ $rc -eq 0 ] || ! grep -q "rank-0000[0-9].skt: the trace ends early (.*); use --allow-partial" <<< "$err"; then
  echo "FAIL: expected a refusal naming the file, got exit $rc: $err"; exit 1
fi
"$skelgen" merge "$trace" -o "$trace.skm" --allow-partial --verify || { echo "FAIL: --allow-partial"; exit 1; }
echo "partial trace: refused without --allow-partial, merged exactly with it"
