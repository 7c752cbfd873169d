#!/bin/bash
# Kernel calibration against the kernel's speed right after it (docs/tracer.md,
# "Kernel calibration"): TRIALS times, two processes at once (one per core,
# as two ranks calibrate at MPI_Init), each runs BUILD_DIR/bench/calibration.
# Prints every ratio, then the mean, min and max for the median rate (what
# the tracer records) and for the fastest run's rate.
#   libtrace/bench/calibration.sh BUILD_DIR [TRIALS [CALIBRATION_MS]]   (20 ms: the tracer's default)
set -euo pipefail
source "$(dirname "$0")/../../common/bench/lib.sh"
build=$1 trials=${2:-6} cal_ms=${3:-20}
exe=$(bench_built "$build" bench/calibration)
out=$(for i in $(seq "$trials"); do "$exe" 0.24 0.24 "$cal_ms" & "$exe" 0.24 0.24 "$cal_ms"; wait; done)
echo "$out"
echo "$out" | python3 -c '
import re, statistics, sys
rows = [dict(re.findall(r"(\w+)=([0-9.e+-]+)", l)) for l in sys.stdin if "ratio" in l]
for key in ("median_ratio", "best_ratio"):
    v = [float(r[key]) for r in rows]
    print(f"{key}: mean {statistics.mean(v):.3f}, median {statistics.median(v):.3f}, sd {statistics.pstdev(v):.3f}, "
          f"min {min(v):.3f}, max {max(v):.3f} over {len(v)} runs")
'
