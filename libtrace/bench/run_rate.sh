#!/bin/bash
# The kernel rate a trace keeps against the computation it converts
# (docs/tracer.md, "Samples through the run"): TRIALS traces of one program,
# one after the other; per trace and rank, the sum of its gaps (s), MPI_Init's
# calibration, the run's rate (MPI_Finalize: calibration and samples) and the
# work a skeleton would run with each (gaps x rate, million units). Then the
# spread (min, max, max/min) of gaps and of both works.
#   libtrace/bench/run_rate.sh BUILD_DIR TRIALS LAUNCHER... -- APP ARGS...
set -euo pipefail
source "$(dirname "$0")/../../common/bench/lib.sh"
build=$1 trials=$2
bench_launcher_and_app "${@:3}"
sk=$(bench_built "$build" bin/skelgen)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for i in $(seq "$trials"); do
  "$sk" trace -q --force -o "$work/t$i" -- "${launch[@]}" "${app[@]}" > /dev/null
  "$sk" dump -f jsonl --info "$work/t$i" > "$work/t$i.jsonl"
done
python3 - "$work" "$trials" <<'PY'
import json, sys
from collections import defaultdict
work, trials = sys.argv[1], int(sys.argv[2])
rows = []
for i in range(1, trials + 1):
    gaps, init, run = defaultdict(float), {}, {}
    for line in open(f"{work}/t{i}.jsonl"):
        e = json.loads(line)
        r = e["rank"]
        if e.get("type") == "rank_info":
            init[r] = e["kernel"]["units_per_s"]
            continue
        if not e["func"].startswith("MPI_Init"):
            gaps[r] += e["gap"]
        if "kernel_rate" in e:
            run[r] = e["kernel_rate"]
    for r in sorted(gaps):
        g, a, b = gaps[r], init[r], run.get(r, init[r])
        rows.append((g, a * g / 1e6, b * g / 1e6))
        print(f"trace {i} rank {r}: gaps {g:.4f} s  init rate {a / 1e6:.2f} M/s  run rate {b / 1e6:.2f} M/s  "
              f"work {a * g / 1e6:.3f} / {b * g / 1e6:.3f} M units (init / run)")
for k, name in enumerate(("gaps", "work with MPI_Init's rate", "work with the run's rate")):
    v = [x[k] for x in rows]
    print(f"{name}: min {min(v):.4f}, max {max(v):.4f}, max/min {max(v) / min(v):.3f}")
PY
