#!/bin/bash
# The tracer's cost when ranks share cores (figures in docs/results/performance.md,
# "Tracing ranks that share cores"). Runs bench/shared_cores (a 2-D halo
# loop) on NP Open MPI ranks (--oversubscribe), REPS rounds, each round in
# turn: untraced, traced with the default gap clock (auto: the thread CPU
# clock when ranks outnumber the CPUs) and traced with SKELTRACE_GAP_CLOCK=wall;
# with OLD_LIB, also traced by that tracer library (another build, to compare).
# Prints each round's loop times, then per variant min, median and max of
# the loop time and of traced/untraced in the same round, and for the
# default tracer the bytes per event on disk and the share of events that
# carry cpu_gap.
#   libtrace/bench/shared_cores.sh BUILD_DIR [REPS=5] [NP=64] [ITERS=200] [WORK=100000] [OLD_LIB]
# WORK is the computation per iteration (terms of a series; 100000 is about
# 0.2 ms on this machine's cores).
set -euo pipefail
source "$(dirname "$0")/../../common/bench/lib.sh"
build=$1 reps=${2:-5} np=${3:-64} iters=${4:-200} work=${5:-100000} old=${6:-}
exe=$(bench_built "$build" bench/shared_cores)
lib=$(bench_built "$build" lib/libskeltrace-openmpi.so)
sk=$(bench_built "$build" bin/skelgen)
[ -z "$old" ] || [ -e "$old" ] || { echo "shared_cores.sh: $old: not found" >&2; exit 2; }
bench_mpi_launcher openmpi "$np"
work_dir=$(mktemp -d)
trap 'rm -rf "$work_dir"' EXIT
variants=(untraced auto wall)
[ -n "$old" ] && variants+=(old)
run() {  # VARIANT TRACE_DIR -> loop seconds
  local v=$1 dir=$2 env=()
  case $v in
    untraced) ;;
    auto) env=(-x "LD_PRELOAD=$lib" -x "SKELTRACE_DIR=$dir") ;;
    wall) env=(-x "LD_PRELOAD=$lib" -x "SKELTRACE_DIR=$dir" -x SKELTRACE_GAP_CLOCK=wall) ;;
    old) env=(-x "LD_PRELOAD=$old" -x "SKELTRACE_DIR=$dir") ;;
  esac
  "${launch[@]}" "${env[@]}" "$exe" "$iters" "$work" | sed -n 's/^loop_s=//p'
}
echo "# $np ranks, $iters iterations of $work terms; $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= reps; ++r)); do
  line="round $r:"
  for v in "${variants[@]}"; do
    rm -rf "$work_dir/$v"
    t=$(run "$v" "$work_dir/$v")
    echo "$v $t" >> "$work_dir/times"
    line+=" $v $t"
  done
  echo "$line"
  if [ "$r" = 1 ]; then  # what the default tracer wrote
    "$sk" dump "$work_dir/auto" --format jsonl |
      python3 -c '
import json, sys
n = cpu = 0
for line in sys.stdin:
    e = json.loads(line)
    if "func" in e:
        n += 1
        cpu += "cpu_gap" in e
print(f"{n} events, {cpu / max(n, 1) * 100:.1f} % with cpu_gap")' > "$work_dir/events"
    bytes=$(cat "$work_dir/auto"/rank-*.skt | wc -c)
    echo "default tracer: $(cat "$work_dir/events"), $bytes bytes on disk"
  fi
done
python3 - "$work_dir/times" "$reps" <<'PY'
import sys
from statistics import median
rows = [l.split() for l in open(sys.argv[1])]
variants = list(dict.fromkeys(v for v, _ in rows))
times = {v: [float(t) for w, t in rows if w == v] for v in variants}
print(f"{'variant':10} {'loop s min/median/max':>28} {'traced/untraced min/median/max':>34}")
for v in variants:
    t = times[v]
    ratio = "" if v == "untraced" else "%.3f / %.3f / %.3f" % (
        min(r := [a / b for a, b in zip(t, times["untraced"])]), median(r), max(r))
    print(f"{v:10} {min(t):8.3f} / {median(t):.3f} / {max(t):.3f} {ratio:>34}")
PY
