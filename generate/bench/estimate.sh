#!/bin/bash
# The cut loops' estimate (generate/templates/skel_estimate.h): does a K = 10
# skeleton predict what its K = 1 skeleton measures? Traces the application
# once, generates K = 1 and K = 10 skeletons, builds the K = 10 one once per
# estimator (each: the skeleton's own, each period for itself; trimmed:
# -DSKEL_ESTIMATE_TRIMMED_MEAN, every period at the trimmed mean of periods
# 1..; generate/templates/skel_estimate.h), then REPS rounds, interleaved: K = 1, then
# each K = 10 build. Prints, per estimator, the K = 10 prediction over the same
# round's K = 1 prediction: median and min..max over the rounds.
#   generate/bench/estimate.sh BUILD_DIR REPS "each trimmed" LAUNCHER... -- APP ARGS...
set -euo pipefail
source "$(dirname "$0")/../../common/bench/lib.sh"
build=$1 reps=$2 estimators=$3
bench_launcher_and_app "${@:4}"
sk=$(bench_built "$build" bin/skelgen)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$sk" trace -q --force -o "$work/trace" -- "${launch[@]}" "${app[@]}" > /dev/null
"$sk" generate "$work/trace" -K 1 -o "$work/k1.c" --build -q > /dev/null 2>&1
"$sk" generate "$work/trace" -K 10 -o "$work/k10.c" -q > /dev/null 2>&1
grep "^ \*   cut loop" "$work/k10.c" | sed 's/^ \*  */  /' >&2 || true
names=()
for e in $estimators; do
  case $e in
    each) flags="" ;;
    trimmed) flags="-DSKEL_ESTIMATE_TRIMMED_MEAN" ;;
    *) echo "unknown estimator $e (trimmed, each)" >&2; exit 2 ;;
  esac
  "$sk" build "$work/k10.c" -o "$work/k10-$e" --cflags "-O2 $flags" -q
  names+=("$e")
done
for i in $(seq "$reps"); do
  "${launch[@]}" "$work/k1" | grep SKELGEN_RESULT | sed "s/^/K1 /" >> "$work/runs.txt"
  for n in "${names[@]}"; do "${launch[@]}" "$work/k10-$n" | grep SKELGEN_RESULT | sed "s/^/$n /" >> "$work/runs.txt"; done
done
python3 - "$work/runs.txt" "${app[*]}" "${names[*]}" <<'PY'
import re, statistics, sys
lines, app, names = open(sys.argv[1]).read().splitlines(), sys.argv[2], sys.argv[3].split()
rounds, cur = [], None
for l in lines:
    who = l.split()[0]
    p = float(re.search(r"predicted_s=([0-9.]+)", l).group(1))
    if who == "K1":
        cur = {"K1": p}
        rounds.append(cur)
    else:
        cur[who] = p
med = statistics.median
k1 = [r["K1"] for r in rounds]
print(f"app: {app}; {len(rounds)} rounds; K=1 predicted median {med(k1):.4f} s ({min(k1):.4f}..{max(k1):.4f})")
for n in names:
    d = [100 * (r[n] / r["K1"] - 1) for r in rounds if n in r]
    p = [r[n] for r in rounds if n in r]
    print(f"  K=10 {n}: predicted median {med(p):.4f} s; against K=1 in its round: median {med(d):+.1f} % "
          f"(min {min(d):+.1f}, max {max(d):+.1f})")
PY
