#!/bin/bash
# The generator's completion check against real runs: random programs
# (random_programs), each generated (with --force, so that the skeletons it
# finds cannot complete are written too), built and run; the run decides.
# The check's verdict, from skelgen generate's "check:" line:
#   strict  completes with every message waiting for its receive
#   eager   completes where the MPI sends short messages before their receive is posted
#   fails   cannot complete
# MPICH runs each skeleton twice, with rendezvous forced for every message
# (UCX_RNDV_THRESH=0: only `strict` may complete) and as it runs by default
# (messages of 64 bytes go eagerly: `strict` and `eager` complete); Open MPI
# once, by default. A hang is stopped by the skeleton's watchdog
# (SKELGEN_WATCHDOG_S=5) or, failing that, by a timeout. Where the check
# fails because the members of a communicator do not make the same
# collective calls, the program is erroneous by MPI's rules whatever a run
# does: an MPI may let it pass (a collective that needs nothing from a
# missing member returns), so either outcome agrees. Any other disagreement
# fails the test, as does a set of programs without both outcomes.
#   check_completion.sh SKELGEN RANDOM_PROGRAMS WORK FLAVOR NP COUNT SEED
set -euo pipefail
skelgen=$1 generator=$2 work=$3 flavor=$4 np=$5 count=$6 seed=$7
rm -rf "$work" && mkdir -p "$work"
"$generator" "$work" "$np" "$count" "$seed"
if [ "$flavor" = mpich ]; then
  modes=(rendezvous default)
else
  modes=(default)
fi
launch() {  # launch MODE EXE
  if [ "$flavor" = mpich ]; then
    if [ "$1" = rendezvous ]; then
      mpiexec.mpich -genv UCX_RNDV_THRESH 0 -genv SKELGEN_WATCHDOG_S 5 -n "$np" "$2"
    else
      mpiexec.mpich -genv SKELGEN_WATCHDOG_S 5 -n "$np" "$2"
    fi
  else
    mpirun.openmpi --allow-run-as-root --oversubscribe -x SKELGEN_WATCHDOG_S=5 -n "$np" "$2"
  fi
}
agree=0 disagree=0 completed=0 stopped=0 predicted_hang=0
for ((i = 0; i < count; i++)); do
  name=$(printf 'prog-%03d' "$i")
  K=$(( i % 2 ? 10 : 1 ))
  out="$work/$name.K$K"
  "$skelgen" generate "$work/$name" -K "$K" --force -o "$out.c" > "$out.generate" 2>&1
  line=$(grep '^check:' "$out.generate" || true)
  case "$line" in
    "check:    completes on every rank"*) verdict=strict ;;
    "check:    completes where"*) verdict=eager ;;
    "check:    FAILS"*"the other members of its communicator"*|"check:    FAILS: collective calls differ"*)
      verdict=erroneous ;;
    "check:    FAILS"*) verdict=fails ;;
    *) cat "$out.generate" >&2; echo "FAIL: $name: no check line from skelgen generate" >&2; exit 1 ;;
  esac
  "$skelgen" build "$out.c" --mpi "$flavor" -q -o "$out"
  for mode in "${modes[@]}"; do
    rc=0
    timeout 60 bash -c "$(declare -f launch); flavor=$flavor np=$np launch $mode $out" > "$out.$mode.out" 2>&1 || rc=$?
    if [ $rc = 0 ] && grep -q '^SKELGEN_RESULT' "$out.$mode.out"; then
      ran=completes
      completed=$((completed + 1))
    else
      ran="stops (exit $rc$(grep -q 'watchdog' "$out.$mode.out" && echo ', watchdog' || true))"
      stopped=$((stopped + 1))
      # the watchdog's line names the call, its call site and its node, one of the skeleton's (skel_calls[]),
      # or the skeleton's MPI_Finalize
      if [[ "$ran" == *watchdog* ]] && ! grep -q "watchdog: no progress for [0-9]* s in MPI_Finalize (the skeleton's end)" \
           "$out.$mode.out"; then
        node=$(sed -nE 's/.*watchdog: no progress for [0-9]+ s in MPI_[A-Za-z_]+ at [^ ]+ \(n([0-9]+)\).*/\1/p' \
               "$out.$mode.out" | head -1)
        if [ -z "$node" ] || ! grep -Eq "\{[0-9]+, $node, " "$out.c"; then
          cat "$out.$mode.out" >&2; echo "FAIL: the watchdog's line does not name a call of the skeleton" >&2; exit 1
        fi
      fi
    fi
    expect=stops
    if [ $verdict = strict ] || { [ $verdict = eager ] && [ $mode = default ]; }; then expect=completes; fi
    if [ $verdict = erroneous ]; then expect=${ran%% *}; fi
    if [ "${ran%% *}" = $expect ]; then
      agree=$((agree + 1))
      status=ok
    else
      disagree=$((disagree + 1))
      status=DISAGREE
    fi
    printf '%s %s K=%-2s %-10s check: %-9s run: %s\n' "$status" "$name" "$K" "$mode" "$verdict" "$ran"
    # skelgen predict on the first skeleton that hangs: a failed repetition that names the watchdog's line
    if [ $predicted_hang = 0 ] && [ $verdict = fails ] && [ "${ran%% *}" = stops ] && [[ "$ran" == *watchdog* ]]; then
      predicted_hang=1
      rc=0
      SKELGEN_WATCHDOG_S=5 "$skelgen" predict "$out" -r 2 -q > "$out.predict" 2>&1 || rc=$?
      if [ $rc = 0 ] || ! grep -q "warm-up run on .* hung and the skeleton's watchdog stopped it: .*: rank [0-9]*: watchdog: no progress" "$out.predict"; then
        cat "$out.predict" >&2; echo "FAIL: skelgen predict did not report the watchdog's stop (exit $rc)" >&2; exit 1
      fi
      echo "skelgen predict $name: $(cat "$out.predict")"
    fi
    if [ $status = DISAGREE ]; then
      cat "$work/$name.txt" "$out.generate" >&2
      tail -5 "$out.$mode.out" >&2
    fi
  done
done
echo "$agree runs agree with the check, $disagree disagree ($completed completed, $stopped stopped)"
[ $disagree = 0 ] || { echo "FAIL: the completion check disagrees with a real run" >&2; exit 1; }
[ $completed -gt 0 ] && [ $stopped -gt 0 ] || { echo "FAIL: the programs did not give both outcomes" >&2; exit 1; }
[ $predicted_hang = 1 ] || { echo "FAIL: no skeleton hung for skelgen predict to report" >&2; exit 1; }
