# shellcheck shell=bash
# What the bench scripts (*/bench/*.sh) share (the test scripts, tests/*.sh,
# take their MPI launchers from here too): the build's programs, the MPI
# launchers, one untraced run of an application, a skeleton's result line,
# min / median / max of a list of numbers, and the tests' two traces of a program and
# their check that both fold alike.
# Sourced, after set -euo pipefail:
#   source "$(dirname "$0")/../../common/bench/lib.sh"
# Functions that make an array set it under the name they say (launch, app).

# The path of PATH in the build directory (bin/skelgen, bench/pingpong, ...),
# printed; exits 2 with a message when the build has not made it. Use it as a
# plain assignment, so that set -e stops the script: exe=$(bench_built "$build" bin/skelgen)
bench_built() {  # BUILD_DIR PATH
  [ -e "$1/$2" ] || { echo "${0##*/}: $1/$2: not built (cmake --build $1)" >&2; exit 2; }
  echo "$1/$2"
}

# The launch command of one MPI for NP ranks, in the array launch: mpich
# (mpiexec.mpich, at most 2 ranks on this kind of machine) or openmpi
# (mpirun.openmpi, oversubscribed, allowed as root).
bench_mpi_launcher() {  # FLAVOR NP
  case $1 in
    mpich) launch=(mpiexec.mpich -n "$2") ;;
    openmpi) launch=(mpirun.openmpi --allow-run-as-root --oversubscribe -n "$2") ;;
    *) echo "${0##*/}: unknown MPI $1 (mpich, openmpi)" >&2; exit 2 ;;
  esac
}

# A command line's tail LAUNCHER... -- APP ARGS... split into the arrays
# launch and app.
bench_launcher_and_app() {  # LAUNCHER... -- APP ARGS...
  launch=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do launch+=("$1"); shift; done
  [ $# -gt 1 ] || { echo "${0##*/}: expected LAUNCHER... -- APP ARGS..." >&2; exit 2; }
  shift
  app=("$@")
}

# A line of a bench's program table, NAME|FLAVOR|NP|APP ARGS, into name,
# flavor, launch (bench_mpi_launcher FLAVOR NP) and app.
# shellcheck disable=SC2034  # name and app are for the caller
bench_program_line() {  # LINE
  local np cmd
  IFS='|' read -r name flavor np cmd <<< "$1"
  bench_mpi_launcher "$flavor" "$np"
  read -ra app <<< "$cmd"
}

# The application's time in one untraced run (skelgen time -r 1: from
# MPI_Init's return to MPI_Finalize, the slowest rank), in seconds.
bench_app_seconds() {  # SKELGEN LAUNCHER... APP ARGS...
  "$1" time -r 1 -- "${@:2}" 2> /dev/null | sed -n 's/^SKELGEN_APP .* median_s=\([0-9.]*\).*/\1/p'
}

# A field (measured_s, predicted_s) of the SKELGEN_RESULT line in a
# skeleton's output on stdin.
bench_result_field() {  # FIELD
  sed -n "/SKELGEN_RESULT /s/.* $1=\([0-9.]*\).*/\1/p"
}

# Numbers on stdin, one a line, as "MIN MEDIAN MAX": MIN and MAX as written,
# MEDIAN the middle one as written, or the mean of the middle two for an even
# count (as Python's statistics.median); nothing when there are none.
bench_min_median_max() {
  sort -g | awk '{ v[NR] = $1 }
    END { if (NR == 0) exit
          if (NR % 2) m = v[(NR + 1) / 2]; else m = (v[NR / 2] + v[NR / 2 + 1]) / 2
          print v[1], m, v[NR] }'
}

# The median of numbers on stdin, one a line (as bench_min_median_max).
bench_median() {
  bench_min_median_max | cut -d' ' -f2
}

# The test scripts' determinism check: two traces of one program folded to
# the same program (skelgen dump's program line in each file), or exit 1
# showing the start of both.
bench_same_program() {  # PROGRAM1.txt PROGRAM2.txt
  cmp -s "$1" "$2" && return 0
  echo "FAIL: two traces of the same run fold to different programs:" >&2
  head -c 400 "$1" "$2" >&2
  exit 1
}

# The test scripts' two traces of one program: APP ARGS traced twice with
# "${launch[@]}" into WORK/trace1 and WORK/trace2, each merged (trace$N.skm,
# the summary as JSON in merge$N.json) and folded (trace$N.skf, the summary
# in compress$N.txt, the folded form in program$N.txt); both must fold to
# the same program (bench_same_program).
bench_fold_twice() {  # SKELGEN WORK APP ARGS...
  local skelgen=$1 work=$2 run
  shift 2
  for run in 1 2; do
    "$skelgen" trace -q --force -o "$work/trace$run" -- "${launch[@]}" "$@" > /dev/null
    "$skelgen" merge --json -q "$work/trace$run" -o "$work/trace$run.skm" > "$work/merge$run.json"
    "$skelgen" compress "$work/trace$run.skm" -o "$work/trace$run.skf" > "$work/compress$run.txt"
    "$skelgen" dump "$work/trace$run.skf" | sed -n 2p > "$work/program$run.txt"
  done
  # BENCH_SAME_FOLD=0: the traces may fold differently (which request of a pool takes a message is the timing's)
  [ "${BENCH_SAME_FOLD:-1}" = 0 ] || bench_same_program "$work/program1.txt" "$work/program2.txt"
}
