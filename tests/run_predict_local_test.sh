#!/bin/bash
# skelgen predict's counting, on a launcher of our own (a script standing in
# for mpiexec, --launcher) that prints a result line of a run number it
# counts in a file, so that what predict reports is known exactly:
#   - one warm-up run first, not counted: 1 + R launches; the median, min,
#     max and each run in --json are those of runs 2 .. R + 1;
#   - the spread (max - min) / median, with a warning above 5 % and none
#     where the runs agree;
#   - --warmup 0: R launches;
#   - one progress line a run on stderr (warm-up runs too), none with -q,
#     and --json lists every counted run;
#   - without -r: 3 runs where they agree; where one of them is slow and the
#     skeleton runs under 2 s, more, one at a time up to 9 (a note each),
#     the median not the slow one; none more where the skeleton takes 2 s.
#   run_predict_local_test.sh SKELGEN TRACE_DIR WORK
set -euo pipefail
skelgen=$1 trace=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
# predicted_s = BASE (1.0) * (1 + STEP * n) for the n-th launch (n = 1, 2, ...), 1.5 times that for launch
# $SLOW_RUN; measured_s a tenth of it, or $MEASURED where set
cat > "$work/launch.sh" <<'SH'
#!/bin/bash
n=$(( $(cat "$COUNTER" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$COUNTER"
python3 -c "import sys; n = $n; p = ${BASE:-1.0} * (1 + $STEP * n) * (1.5 if n == ${SLOW_RUN:-0} else 1); m = ${MEASURED:-p / 10}; print(f'SKELGEN_RESULT measured_s={m:.6f} predicted_s={p:.6f} scale=10')"
SH
chmod +x "$work/launch.sh"
"$skelgen" generate "$trace" -K 10 -o "$work/skel.c" -q > /dev/null
np=$(sed -n 's/.*ranks=\([0-9]*\) .*/\1/p' "$work/skel.c" | head -1)
run() {  # run STEP COUNTERFILE ARGS...
  local step=$1 counter=$2
  shift 2
  COUNTER=$counter STEP=$step "$skelgen" predict "$work/skel.c" --launcher "$work/launch.sh {np} {exe}" --mpi mpich "$@"
}
# runs 2, 3, 4 counted: predicted 1.2, 1.3, 1.4 (STEP 0.1): spread 0.2 / 1.3 = 15.4 %
run 0.1 "$work/c1" -r 3 --json > "$work/spread.json" 2> "$work/spread.err"
[ "$(cat "$work/c1")" = 4 ] || fail "expected 1 warm-up + 3 launches, got $(cat "$work/c1")"
python3 - "$work/spread.json" <<'PY' || fail "predict's figures are not those of the counted runs"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["warmup"] == 1 and j["runs"] == 3, j
assert [r["predicted_s"] for r in j["each"]] == [1.2, 1.3, 1.4], j["each"]
assert abs(j["predicted_s"] - 1.3) < 1e-9 and j["predicted_min_s"] == 1.2 and j["predicted_max_s"] == 1.4, j
assert abs(j["spread"] - 0.2 / 1.3) < 1e-9, j["spread"]
PY
grep -q "warning: the predictions spread over 15.4 %" "$work/spread.err" || { cat "$work/spread.err"; fail "no spread warning"; }
# progress: one line a run as it ends on stderr, the warm-up run's first (launch 1: predicted 1.1)
cat > "$work/progress.want" <<'TXT'
skelgen predict: warm-up run 1/1: skeleton 0.110000 s, predicted 1.100000 s (not counted)
skelgen predict: run 1/3: skeleton 0.120000 s, predicted 1.200000 s
skelgen predict: run 2/3: skeleton 0.130000 s, predicted 1.300000 s
skelgen predict: run 3/3: skeleton 0.140000 s, predicted 1.400000 s
TXT
grep "run [0-9]*/[0-9]*:" "$work/spread.err" | diff "$work/progress.want" - || fail "progress lines differ (above)"
# -q: nothing on stderr (no progress, no warning, no build line); --json: all 5 runs, in order
run 0.1 "$work/c3" -r 5 --warmup 2 --json -q > "$work/five.json" 2> "$work/five.err"
[ ! -s "$work/five.err" ] || { cat "$work/five.err"; fail "-q: something on stderr"; }
python3 - "$work/five.json" <<'PY' || fail "--json does not list every counted run"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["warmup"] == 2 and j["runs"] == 5, j
assert [r["predicted_s"] for r in j["each"]] == [1.3, 1.4, 1.5, 1.6, 1.7], j["each"]
assert [r["skeleton_s"] for r in j["each"]] == [0.13, 0.14, 0.15, 0.16, 0.17], j["each"]
PY
# STEP 0.001: 0.2 % spread, no warning; --warmup 0: exactly R launches; the summary names both
run 0.001 "$work/c2" -r 3 --warmup 0 > "$work/quiet.out" 2> "$work/quiet.err"
[ "$(cat "$work/c2")" = 3 ] || fail "--warmup 0: expected 3 launches, got $(cat "$work/c2")"
if grep -q warning "$work/quiet.err"; then cat "$work/quiet.err"; fail "a warning for runs that agree"; fi
grep -q "^runs:      3 (after 0 warm-up runs, not counted)" "$work/quiet.out" || { cat "$work/quiet.out"; fail "summary"; }
grep -q "^spread:    0.2 %" "$work/quiet.out" || { cat "$work/quiet.out"; fail "no spread in the summary"; }
# without -r: launch 3 (counted run 2) 1.5 times slower: spread 50 %, runs 4 to 9 made (notes), median 1.0
SLOW_RUN=3 run 0 "$work/c4" --json > "$work/more.json" 2> "$work/more.err"
[ "$(cat "$work/c4")" = 10 ] || { cat "$work/more.err"; fail "a slow run: expected 1 warm-up + 9 launches, got $(cat "$work/c4")"; }
[ "$(grep -c 'note: the [0-9] runs spread over [0-9.]* % of their median: one more (at most 9)' "$work/more.err")" = 6 ] ||
  { cat "$work/more.err"; fail "expected 6 notes of one more run"; }
grep -q "run 9 (more): skeleton" "$work/more.err" || { cat "$work/more.err"; fail "no progress line of run 9"; }
python3 - "$work/more.json" <<'PY' || fail "the median of 9 runs with one slow"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["runs"] == 9 and j["predicted_s"] == 1.0 and j["predicted_max_s"] == 1.5, j
PY
# without -r, the runs agreeing: 3; one slow where the skeleton takes 2.5 s: 3
run 0 "$work/c5" -q > /dev/null
[ "$(cat "$work/c5")" = 4 ] || fail "runs that agree: expected 1 warm-up + 3 launches, got $(cat "$work/c5")"
SLOW_RUN=3 MEASURED=2.5 BASE=25 run 0 "$work/c6" -q > /dev/null
[ "$(cat "$work/c6")" = 4 ] || fail "a 2.5 s skeleton: expected 1 warm-up + 3 launches, got $(cat "$work/c6")"
echo "ok: without -r, 9 runs where one of 3 was slow (median 1.0), 3 where they agree or take 2.5 s"
echo "ok: progress one line a run, none with -q; --json lists all 5 runs"
echo "ok: warm-up not counted, spread $(python3 -c "import json; print(round(100 * json.load(open('$work/spread.json'))['spread'], 1))") % warned, 0.2 % not"
