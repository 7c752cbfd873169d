#!/bin/bash
# A computation that drifts through the run (the bundled example jacobi2d:
# its values grow small, then denormal and slow, first on one rank, then on
# the other) is followed by the skeleton: the application traced once, its
# skeletons at K = 1 and K = 10 traced in turn, and the course of every
# rank's computation compared between the traces (tests/check_course.py).
#   run_course_test.sh SKELGEN WORK APP ARGS...
set -euo pipefail
skelgen=$1 work=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
launch=(mpiexec.mpich -n 2)
# the application's drift is its own and varies by run (rank 1 of jacobi2d 400 1000 went 0.55 ... 1.59 in
# one run, 0.85 ... 1.17 in another beside other tests): a run that does not drift tests nothing, so up to
# three runs are traced until one drifts (check_course.py --drifts)
for attempt in 1 2 3; do
  "$skelgen" trace -q --force -o "$work/app.trace" -- "${launch[@]}" "$@" > /dev/null
  rc=0
  python3 "$here/check_course.py" --drifts "$skelgen" "$work/app.trace" || rc=$?
  [ $rc = 0 ] && break
  [ $rc = 3 ] || exit 1
  echo "traced run $attempt: no rank drifts; tracing again"
done
for K in 1 10; do
  "$skelgen" generate "$work/app.trace" -K "$K" -o "$work/skel$K.c" --build --mpi mpich -q > /dev/null
  grep -q '_course\[SKEL_WORLD_SIZE\]' "$work/skel$K.c" || { echo "FAIL: no computation profile in skel$K.c" >&2; exit 1; }
  # the skeleton's computation by thread CPU time (check_course.py): its work, not the host's hiccups
  SKELTRACE_GAP_CLOCK=cpu timeout 120 "$skelgen" trace -q --force -o "$work/skel$K.trace" -- "${launch[@]}" \
    "$work/skel$K" > /dev/null
  echo "K = $K:"
  python3 "$here/check_course.py" "$skelgen" "$work/app.trace" "$work/skel$K.trace"
done
