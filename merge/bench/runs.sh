#!/bin/bash
# One traced run against the medians of three (skelgen trace --runs 3,
# docs/merge.md "Several runs"): ROUNDS times, trace the application 3
# times, generate a K = 10 skeleton from the first run alone and one from
# the medians of the three, then, interleaved, run the application untraced
# (skelgen time -r 1) and each skeleton once. Prints one row per round (the
# traced runs' times and spread, the application's time, each skeleton's
# prediction and its error against the application in that round), then
# the median and the largest |error| of each over the rounds.
# With SIMGRID=PLATFORM.xml the skeletons run on that simulated platform
# (skelgen predict --simgrid, deterministic: only the traces differ), the
# application is not run, and the summary is each prediction's spread over
# the rounds ((max - min) / median): how much the traced runs move it.
#   [SIMGRID=PLATFORM.xml] merge/bench/runs.sh BUILD_DIR ROUNDS LAUNCHER... -- APP ARGS...
set -euo pipefail
source "$(dirname "$0")/../../common/bench/lib.sh"
build=$1 rounds=$2
bench_launcher_and_app "${@:3}"
sk=$(bench_built "$build" bin/skelgen)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "| round | traced runs s | spread | application s | one run: predicted s | error | median of 3: predicted s | error |"
echo "|---|---|---|---|---|---|---|---|"
for r in $(seq "$rounds"); do
  t=$work/t$r
  "$sk" trace -q --runs 3 -o "$t" -- "${launch[@]}" "${app[@]}" > /dev/null
  runs=$("$sk" merge "$t" -o "$t.skm" --json -q | python3 -c "
import json, sys
r = json.load(sys.stdin)['runs']
print(', '.join(f'{x:.3f}' for x in r['total_s']), f\"{100 * r['spread']:.1f} %\" + ('' if r['medians'] else ' (differ: one run)'), sep='|')")
  if [ -n "${SIMGRID:-}" ]; then
    "$sk" generate "$t/run-1" -K 10 -o "$work/one$r.c" -q > /dev/null 2>&1
    "$sk" generate "$t.skm" -K 10 -o "$work/med$r.c" -q > /dev/null 2>&1
    sg() { "$sk" predict "$1" --simgrid "$SIMGRID" -r 1 --json -q | python3 -c "import json, sys; print(json.load(sys.stdin)['predicted_s'])"; }
    app_s=0 one=$(sg "$work/one$r.c") med=$(sg "$work/med$r.c")
  else
    "$sk" generate "$t/run-1" -K 10 -o "$work/one$r.c" --build -q > /dev/null 2>&1
    "$sk" generate "$t.skm" -K 10 -o "$work/med$r.c" --build -q > /dev/null 2>&1
    app_s=$(bench_app_seconds "$sk" "${launch[@]}" "${app[@]}")
    one=$("${launch[@]}" "$work/one$r" | bench_result_field predicted_s)
    med=$("${launch[@]}" "$work/med$r" | bench_result_field predicted_s)
  fi
  python3 -c "
a, o, m = $app_s, $one, $med
e = lambda p: f'{100 * (p / a - 1):+.1f} %' if a > 0 else '-'
print(f'| $r | ${runs%%|*} | ${runs#*|} | {a:.3f} | {o:.3f} | {e(o)} | {m:.3f} | {e(m)} |')"
done | tee "$work/rows.txt"
python3 - "$work/rows.txt" <<'PY'
import statistics, sys
rows = [l.split("|") for l in open(sys.argv[1]) if l.startswith("| ")]
for name, col in (("one run", 5), ("median of 3", 7)):
    p = [float(r[col]) for r in rows]
    med = statistics.median(p)
    line = f"{name}: predicted median {med:.3f} s, spread over the rounds {100 * (max(p) - min(p)) / med:.1f} %"
    if rows[0][8].strip() != "-":
        e = [float(r[col + 1].strip().rstrip(" %")) for r in rows]
        line += f"; error median {statistics.median(e):+.1f} %, largest |error| {max(map(abs, e)):.1f} %"
    print(line + f" ({len(p)} rounds)")
PY
