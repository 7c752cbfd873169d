#!/bin/bash
# Prediction accuracy on this machine: trace an application once, generate
# skeletons at K = 1 and K = 10, run each REPS times; prints the traced
# application time (MPI_Init to MPI_Finalize, slowest rank), the skeletons'
# measured and predicted times (min / median) and the error of the K = 10
# prediction.
#   skelgen/bench/predict.sh BUILD_DIR REPS LAUNCHER... -- APP ARGS...
set -euo pipefail
build=$1 reps=$2
shift 2
launch=()
while [ "$1" != -- ]; do launch+=("$1"); shift; done
shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sk=$build/bin/skelgen
"$sk" trace -q --force -o "$work/trace" -- "${launch[@]}" "$@" > /dev/null
for K in 1 10; do
  "$sk" generate "$work/trace" -K "$K" -o "$work/k$K.c" --build -q > "$work/gen$K.txt" 2>&1
done
traced=$("$sk" generate "$work/trace" -K 10 -o "$work/tmp.c" 2>/dev/null | sed -n 's/^traced: *\([0-9.]*\) s.*/\1/p')
for i in $(seq "$reps"); do
  for K in 1 10; do "${launch[@]}" "$work/k$K" | grep SKELGEN_RESULT | sed "s/^/K$K /" >> "$work/runs.txt"; done
done
python3 - "$traced" "$work/runs.txt" "$*" <<'PY'
import re, statistics, sys
traced, runs, app = float(sys.argv[1]), open(sys.argv[2]).read().splitlines(), sys.argv[3]
res = {1: [], 10: []}
for l in runs:
    k = int(l.split()[0][1:])
    m = re.search(r"measured_s=([0-9.]+) predicted_s=([0-9.]+)", l)
    res[k].append((float(m.group(1)), float(m.group(2))))
def mm(v): return f"{min(v):.4f} / {statistics.median(v):.4f}"
p10 = [p for _, p in res[10]]
err = [100 * (p - traced) / traced for p in p10]
print(f"app: {app}")
print(f"  traced application time      {traced:.4f} s")
print(f"  skeleton K=1  measured       {mm([m for m, _ in res[1]])} s (min / median)")
print(f"  skeleton K=10 measured       {mm([m for m, _ in res[10]])} s")
print(f"  skeleton K=10 predicted      {mm(p10)} s")
print(f"  error of the K=10 prediction {min(err):+.1f} .. {max(err):+.1f} %, median {statistics.median(err):+.1f} %")
PY
