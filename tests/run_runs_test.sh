#!/bin/bash
# Several traced runs (skelgen trace --runs, skelgen merge of several runs;
# docs/merge.md "Several runs"): one run in which rank 1 computes
# DISTURB kernel steps more in one iteration (APP_DISTURB, tests/apps/applog.h)
# must not move the prediction of the skeleton built from the per-call
# medians of three runs, while the skeleton of that run alone predicts it
# (so that the check can fail); runs that differ in structure are merged as
# the run of median time, with a one-line message.
# The merged times and the generator's expected skeleton time are checked
# sharply (they follow from the traces); the skeletons' predictions only
# with "predict" (2 MPICH ranks: Open MPI's 4 ranks on 2 shared cores move
# 3-4x from one run to the next on a busy machine), in a wide margin.
#   run_runs_test.sh SKELGEN FLAVOR NP HALO2D ITERS DISTURB WORK [predict]
set -euo pipefail
skelgen=$1 flavor=$2 np=$3 app=$4 iters=$5 disturb=$6 work=$7 mode=${8:-}
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
if [ "$flavor" = mpich ]; then
  launch=(mpiexec.mpich -n "$np")
else
  launch=(mpirun.openmpi --allow-run-as-root --oversubscribe -n "$np")
fi
# two quiet runs into T/run-1, T/run-2; the single-run layout elsewhere
"$skelgen" trace -q --runs 2 -o T -- "${launch[@]}" "$app" "$iters" > /dev/null
[ -d T/run-1 ] && [ -d T/run-2 ] && [ -z "$(ls T/*.skt 2>/dev/null)" ] || fail "--runs 2 did not write T/run-1, T/run-2"
"$skelgen" trace -q --runs 2 -o T -- "${launch[@]}" "$app" "$iters" > /dev/null 2> again.err && fail "T replaced without --force"
grep -q "already holds a trace" again.err || { cat again.err; fail "no refusal"; }
# the disturbed run, alone in D
APP_DISTURB="1:$((iters / 2)):$disturb" "$skelgen" trace -q -o D -- "${launch[@]}" "$app" "$iters" > /dev/null
"$skelgen" merge T/run-1 T/run-2 D -o m3.skm --json > m3.json
"$skelgen" merge T -o m2.skm -q
python3 - m3.json <<'PY' || fail "the runs' report"
import json, sys
r = json.load(open(sys.argv[1]))["runs"]
assert r["medians"] and len(r["total_s"]) == 3, r
assert r["total_s"][2] == max(r["total_s"]), f"the disturbed run is not the slowest: {r['total_s']}"
assert r["spread"] > 0 and 0 < r["varying"] < r["positions"], r
print(f"runs traced {r['total_s']} s, spread {100 * r['spread']:.1f} %, "
      f"{100 * r['varying'] / r['positions']:.1f} % of the calls ({100 * r['varying_time_share']:.1f} % of the time) vary > 10 %")
PY
# the merged times and the skeletons' expected times (deterministic from the traces): the medians' are no
# longer than the slower quiet run's (each call's median lies between the quiet runs' values), the
# disturbed run's far longer
times() {  # times INPUT: "TRACED EXPECTED"
  "$skelgen" generate "$1" -K 10 -o /dev/null 2> /dev/null |
    sed -n 's/^traced: *\([0-9.]*\) s.*/\1/p; s/^expected: *\([0-9.]*\) s.*/\1/p' | tr '\n' ' '
}
t3=$(times m3.skm) t1=$(times T/run-1) t2=$(times T/run-2) td=$(times D)
echo "traced, expected: medians of 3 runs $t3; quiet runs $t1/ $t2; the disturbed run $td"
python3 - $t3 $t1 $t2 $td <<'PY' || fail "the disturbed run's time is in the medians"
import sys
t3, e3, t1, e1, t2, e2, td, ed = map(float, sys.argv[1:])
assert t3 <= 1.02 * max(t1, t2) and e3 <= 1.02 * max(e1, e2), "medians above the quiet runs"
assert td > 1.5 * t3 and ed > 1.3 * e3, "the disturbance is too small to tell"
PY
[ "$mode" = predict ] || { echo "ok (predictions not compared: $flavor, $np ranks)"; exit_after_structure=1; }
predict() {  # predict NAME INPUT: the K = 10 skeleton's median prediction of 3 runs
  "$skelgen" generate "$2" -K 10 -o "s_$1.c" -q > /dev/null 2>&1
  "$skelgen" predict "s_$1.c" -r 3 --json -q | python3 -c "import json, sys; print(json.load(sys.stdin)['predicted_s'])"
}
if [ -z "${exit_after_structure:-}" ]; then
p3=$(predict m3 m3.skm) p2=$(predict m2 m2.skm) pd=$(predict d D)
uptime
echo "predicted: 3 runs (one disturbed) $p3 s, 2 quiet runs $p2 s, the disturbed run alone $pd s"
python3 - "$p3" "$p2" "$pd" <<'PY' || fail "the disturbed run moved the prediction (above)"
import sys
p3, p2, pd = map(float, sys.argv[1:])
assert pd > 2 * p2, f"the disturbance is too small to tell: alone it predicts {pd} against {p2}"
# nearer the quiet runs' than the disturbed run's (their geometric mean: a mean of the three runs' times,
# with a disturbance of 5x the run, would be above it); on a quiet machine within a few % of p2
assert p3 < (p2 * pd) ** 0.5, f"the median of 3 runs predicts {p3}: nearer {pd} (disturbed) than {p2} (quiet)"
PY
fi
# a run of another iteration count: structure differs; the run of median time is merged alone, said in one line
"$skelgen" trace -q -o E -- "${launch[@]}" "$app" "$((iters + 1))" > /dev/null
"$skelgen" merge T/run-1 T/run-2 E -o mx.skm --json > mx.json 2> mx.err
grep -q "differ in structure.*merged run [0-9] alone, the run of median traced time" mx.err || { cat mx.err; fail "no message"; }
[ "$(grep -c . mx.err)" = 1 ] || { cat mx.err; fail "more than one line"; }
python3 -c "import json, sys; r = json.load(open('mx.json'))['runs']; assert not r['medians'] and 'calls against' in r['mismatch'], r"
echo "ok: $(cat mx.err)"
