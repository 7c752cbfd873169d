#!/bin/bash
# skelgen trace --compare-untraced (docs/tracer.md, "Traced against untraced"):
# halo2d, rank 1 computing DISTURB kernel steps more in one iteration of the
# traced runs only (APP_DISTURB_TRACED, tests/apps/applog.h), as a tracer
# that slows the program down would. The report must find the traced runs
# at least 50 % longer than the untraced ones and warn; the application's
# output stays on stdout in both kinds of run; an untraced run that fails
# is named in one line; with --merge-in-job the flag is refused.
#   run_compare_untraced_test.sh SKELGEN FLAVOR NP HALO2D ITERS DISTURB WORK
set -euo pipefail
source "$(dirname "$0")/../common/bench/lib.sh"
skelgen=$1 flavor=$2 np=$3 app=$4 iters=$5 disturb=$6 work=$7
bench_mpi_launcher "$flavor" "$np"
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
APP_DISTURB_TRACED="1:$((iters / 2)):$disturb" \
  "$skelgen" trace -q --runs 2 --compare-untraced -o T -- "${launch[@]}" "$app" "$iters" > out 2> err ||
  { cat err; fail "trace --compare-untraced failed"; }
cat err
[ "$(grep -c "checksum" out)" = 4 ] || { cat out; fail "the application's output of 4 runs is not on stdout"; }
line=$(grep "^skelgen: traced .*, untraced .*: [-+][0-9.]* %$" err) || fail "no comparison line"
longer=$(sed 's/.*: \([-+][0-9.]*\) %$/\1/' <<< "$line")
python3 -c "import sys; sys.exit(0 if float('$longer') >= 50 else 1)" ||
  fail "traced runs only $longer % longer than untraced ones, where they computed far more"
grep -q "^skelgen: warning: the application ran [0-9]* % longer traced than untraced" err || fail "no warning"
# the trace itself is as usual: two runs, each complete
[ -d T/run-1 ] && [ -d T/run-2 ] || fail "no T/run-1, T/run-2"
"$skelgen" merge T -o T.skm -q || fail "the runs do not merge"
# an application that fails only untraced (a wrapper around halo2d): one line naming the untraced run
printf '#!/bin/sh\n"$@" || exit $?\n[ -n "$SKELTRACE_DIR" ] || exit 3\n' > fails_untraced.sh
chmod +x fails_untraced.sh
if "$skelgen" trace -q --mpi "$flavor" --compare-untraced -o F -- "${launch[@]}" ./fails_untraced.sh "$app" 2 \
    > /dev/null 2> failed.err; then
  fail "an untraced run that failed was not reported"
fi
grep -q "^skelgen: error: run 1: the application exited with status 3$" failed.err ||
  { cat failed.err; fail "the untraced run's failure is not one clear line"; }
if "$skelgen" trace -q --merge-in-job --compare-untraced -o J -- "${launch[@]}" "$app" 2 > /dev/null 2> refused.err; then
  fail "--merge-in-job with --compare-untraced was not refused"
fi
grep -q "compare-untraced" refused.err || { cat refused.err; fail "the refusal does not say why"; }
echo "ok: traced runs $longer % longer than untraced"
