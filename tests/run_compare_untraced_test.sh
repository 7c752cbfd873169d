#!/bin/bash
# skelgen trace --compare-untraced (docs/tracer.md, "Traced against untraced"):
# halo2d, rank 1 computing DISTURB kernel steps more in one iteration of the
# traced runs only (APP_DISTURB_TRACED, tests/apps/applog.h), as a tracer
# that slows the program down would. The report must find the traced runs
# at least 50 % longer than the untraced ones and warn; the application's
# output stays on stdout in both kinds of run; the medians kept in
# T/untraced.txt reach generate and predict, which say so and warn (a
# damaged file is named and ignored); an untraced run that fails
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
# the medians are kept in T/untraced.txt (docs/trace-format.md), as the line printed them
read -r mark traced_kv untraced_kv runs_kv < T/untraced.txt || fail "no T/untraced.txt"
[ "$mark" = SKELGEN_UNTRACED ] && [ "$runs_kv" = runs=2 ] || fail "T/untraced.txt: $(cat T/untraced.txt)"
python3 -c "import sys; t, u = float('${traced_kv#traced_s=}'), float('${untraced_kv#untraced_s=}'); \
sys.exit(0 if abs(100 * (t / u - 1) - float('$longer')) < 1 else 1)" || fail "T/untraced.txt disagrees with $line"
# generate finds it (through the merged trace's source, T/run-2), says so and warns; the skeleton keeps it
"$skelgen" generate T.skm -K 1 -o S.c > gen.out 2> gen.err || { cat gen.err; fail "generate failed"; }
grep -q "^untraced: [0-9.]* s, median of 2 untraced runs (skelgen trace --compare-untraced): the trace took +[0-9.]* %$" \
  gen.out || { cat gen.out; fail "generate did not report the untraced runs"; }
grep -q "^skelgen generate: warning: the trace took [0-9]* % longer than the untraced runs" gen.err ||
  { cat gen.err; fail "generate did not warn"; }
grep -q "SKELGEN_META .* ${untraced_kv%%.*}[0-9.e+-]* " S.c || fail "SKELGEN_META of S.c has no ${untraced_kv%%.*}..."
# predict warns beside its prediction, and --json carries both times
"$skelgen" predict S.c -r 1 --warmup 0 > pred.out 2> pred.err || { cat pred.err; fail "predict failed"; }
grep -q "^traced: .*, untraced .* (skelgen trace --compare-untraced): +[0-9.]* %$" pred.out ||
  { cat pred.out; fail "predict did not report the untraced runs"; }
grep -q "^skelgen predict: warning: the application ran [0-9]* % longer traced" pred.err ||
  { cat pred.err; fail "predict did not warn"; }
"$skelgen" predict S.c -r 1 --warmup 0 -q --json | python3 -c "import json, sys; j = json.load(sys.stdin); \
sys.exit(0 if j['untraced_s'] > 0 and j['traced_s'] > 1.5 * j['untraced_s'] else 1)" || fail "predict --json"
# a damaged file is named, ignored, and the skeleton written
echo "SKELGEN_UNTRACED traced_s=1 untraced_s=-2 runs=2" > T/untraced.txt
"$skelgen" generate T.skm -K 1 -o S2.c > gen2.out 2> gen2.err || { cat gen2.err; fail "a damaged untraced.txt stopped generate"; }
grep -q "^skelgen generate: warning: .*T/untraced.txt: not a SKELGEN_UNTRACED line.*; ignored$" gen2.err ||
  { cat gen2.err; fail "a damaged untraced.txt was not named"; }
! grep -q "^untraced:" gen2.out && ! grep -q "untraced_s=" S2.c || fail "a damaged untraced.txt was used"
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
