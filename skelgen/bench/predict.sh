#!/bin/bash
# Prediction accuracy on this machine: trace an application once, generate
# skeletons at K = 1 and K = 10, then REPS times, interleaved, run the
# application untraced (`skelgen time`) and both skeletons. Prints min / median
# of the application's time, of the skeletons' measured and predicted times,
# and the error of the K = 10 prediction (median against median). All times
# are the slowest rank's, from MPI_Init's return to MPI_Finalize.
#   skelgen/bench/predict.sh BUILD_DIR REPS LAUNCHER... -- APP ARGS...
set -euo pipefail
source "$(dirname "$0")/../../common/bench/lib.sh"
build=$1 reps=$2
bench_launcher_and_app "${@:3}"
sk=$(bench_built "$build" bin/skelgen)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$sk" trace -q --force -o "$work/trace" -- "${launch[@]}" "${app[@]}" > /dev/null
for K in 1 10; do
  "$sk" generate "$work/trace" -K "$K" -o "$work/k$K.c" --build -q > "$work/gen$K.txt" 2>&1
done
traced=$("$sk" generate "$work/trace" -K 10 -o "$work/tmp.c" 2>/dev/null | sed -n 's/^traced: *\([0-9.]*\) s.*/\1/p')
for i in $(seq "$reps"); do
  bench_app_seconds "$sk" "${launch[@]}" "${app[@]}" | sed 's/^/app /' >> "$work/runs.txt"
  for K in 1 10; do "${launch[@]}" "$work/k$K" | grep SKELGEN_RESULT | sed "s/^/K$K /" >> "$work/runs.txt"; done
done
python3 - "$traced" "$work/runs.txt" "${app[*]}" <<'PY'
import re, statistics, sys
traced, runs, app = float(sys.argv[1]), open(sys.argv[2]).read().splitlines(), sys.argv[3]
res, t_app = {1: [], 10: []}, []
for l in runs:
    if l.startswith("app "):
        t_app.append(float(l.split()[1]))
        continue
    k = int(l.split()[0][1:])
    m = re.search(r"measured_s=([0-9.]+) predicted_s=([0-9.]+)", l)
    res[k].append((float(m.group(1)), float(m.group(2))))
med = statistics.median
def mm(v): return f"{min(v):.4f} / {med(v):.4f}"
p10 = [p for _, p in res[10]]
print(f"app: {app}")
print(f"  application (untraced)       {mm(t_app)} s (min / median of {len(t_app)})")
print(f"  application (traced run)     {traced:.4f} s")
print(f"  skeleton K=1  measured       {mm([m for m, _ in res[1]])} s")
print(f"  skeleton K=10 measured       {mm([m for m, _ in res[10]])} s")
print(f"  skeleton K=10 predicted      {mm(p10)} s")
err = 100 * (med(p10) - med(t_app)) / med(t_app)
print(f"  error of the K=10 prediction {err:+.1f} % (median against median)")
name = app.split("/")[-1]
print(f"| {name} | {med(t_app):.4f} | {med([m for m, _ in res[1]]):.4f} | {med([m for m, _ in res[10]]):.4f} | "
      f"{med(p10):.4f} | {err:+.1f} % |")
PY
