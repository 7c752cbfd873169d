#!/bin/bash
# Runs a command while N processes keep the cores busy (a loaded machine,
# where any instruction of a traced rank can lose a time slice), then stops
# them; the command's exit status is returned.
#   with_busy_cores.sh N COMMAND [ARGS...]
set -u
n=$1
shift
busy=()
for ((i = 0; i < n; ++i)); do
  (while :; do :; done) &
  busy+=($!)
done
SKELTEST_BUSY_CORES=$n "$@"  # checks that allow for the load read it (tests/check_trace.py)
rc=$?
kill "${busy[@]}" 2>/dev/null
wait "${busy[@]}" 2>/dev/null
exit $rc
