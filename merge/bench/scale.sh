#!/bin/bash
# Scaling in ranks (figures recorded in docs/results/performance.md, "Scaling in
# ranks"): writes synthetic traces of a 2-D halo program (halo2d_traces) and
# of an LU-like one (lu_like_traces) at each size P, with the same calls per
# rank at every P, then runs skelgen merge, compress and generate (K = 10) on them REPS
# times (round r runs every size once, so that the host's drift falls on all
# alike) under /usr/bin/time -v. Per program and size: the min and median wall
# seconds, the median CPU seconds (user + system: on a shared host, the run's
# own work) and the largest maximum resident set size (MB) of each stage; per
# program, the exponent k of a least-squares fit of the medians (and of the
# memory; and of the min wall seconds) to a * P^k over the sizes: 1 is linear.
#   merge/bench/scale.sh BUILD_DIR [REPS]
# SIZES (default "256 1024 4096 16384"; powers of two), PROGRAMS (default
# "halo lu"), HALO_ITER (default 50), LU_ITER and LU_NZ (default 3 and 20):
# about 460 calls per rank each. WORK: where the traces go (default a
# temporary directory; about 0.25 GB at 16,384 ranks).
set -euo pipefail
source "$(dirname "$0")/../../common/bench/lib.sh"
build=$1 reps=${2:-3}
sizes=${SIZES:-"256 1024 4096 16384"}
programs=${PROGRAMS:-"halo lu"}
halo_iter=${HALO_ITER:-50} lu_iter=${LU_ITER:-3} lu_nz=${LU_NZ:-20}
skelgen=$(bench_built "$build" bin/skelgen)
halo_traces=$(bench_built "$build" bench/halo2d_traces)
lu_traces=$(bench_built "$build" bench/lu_like_traces)
work=${WORK:-$(mktemp -d)}
mkdir -p "$work"
[ -n "${WORK:-}" ] || trap 'rm -rf "$work"' EXIT
results=$work/results.txt
: > "$results"

generate() {  # program P directory
  case $1 in
    halo) "$halo_traces" "$3" "$2" "$halo_iter" ;;
    lu) "$lu_traces" "$3" "$2" "$lu_iter" "$lu_nz" ;;
  esac > /dev/null
}

# One run of a stage under /usr/bin/time -v: "wall_s cpu_s max_rss_kb" appended to results with its key.
measure() {  # key command...
  local key=$1
  shift
  local start end wall user sys rss
  start=$(date +%s%N)
  /usr/bin/time -v -o "$work/time.txt" "$@" > /dev/null 2> "$work/stage.err" ||
    { cat "$work/stage.err" "$work/time.txt" >&2; exit 1; }
  end=$(date +%s%N)
  wall=$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.3f", (b - a) / 1e9}')  # time -v's is to 10 ms
  user=$(sed -n 's/.*User time (seconds): //p' "$work/time.txt")
  sys=$(sed -n 's/.*System time (seconds): //p' "$work/time.txt")
  rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time.txt")
  echo "$key $wall $(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}') $rss" >> "$results"
}

for program in $programs; do
  for P in $sizes; do
    [ -d "$work/$program-$P" ] || generate "$program" "$P" "$work/$program-$P"
  done
done
for ((r = 0; r < reps; ++r)); do
  for program in $programs; do
    for P in $sizes; do
      t=$work/$program-$P
      measure "$program $P merge" "$skelgen" merge -q "$t" -o "$t.skm"
      measure "$program $P compress" "$skelgen" compress "$t.skm" -o "$t.skf"
      measure "$program $P generate" "$skelgen" generate "$t.skf" -K 10 -o "$t.c"
    done
  done
done

python3 - "$results" "$reps" <<'PY'
import math, statistics, sys
from collections import defaultdict
runs = defaultdict(list)
for line in open(sys.argv[1]):
    program, P, stage, wall, cpu, kb = line.split()
    runs[program, int(P), stage].append((float(wall), float(cpu), int(kb)))

def fit(points):  # least-squares slope of log(y) against log(P)
    xs, ys = [math.log(p) for p, _ in points], [math.log(max(y, 1e-3)) for _, y in points]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)

STAGES = ("merge", "compress", "generate")
COLUMNS = [(stage, what) for stage in STAGES for what in ("s", "cpu s", "MB")]
WIDTH = {"s": 15, "cpu s": 8, "MB": 7}
print(f"{sys.argv[2]} runs per size; s: wall seconds min / median; cpu s: median user + system; "
      "MB: the largest max RSS; P^k: the exponent fitted to the medians, min^k to the mins")
print(f"{'program':8} {'P':>6}" + "".join(f" {stage + ' ' + what:>{max(WIDTH[what], len(stage) + 1 + len(what))}}"
                                          for stage, what in COLUMNS))
for program in dict.fromkeys(k[0] for k in runs):
    sizes = sorted({k[1] for k in runs if k[0] == program})
    series = defaultdict(list)
    for P in sizes:
        cells = []
        for stage, what in COLUMNS:
            got = runs[program, P, stage]
            if what == "s":
                t = [w for w, _, _ in got]
                series[stage, what].append((P, statistics.median(t)))
                series[stage, "min s"].append((P, min(t)))
                cells.append(f"{min(t):.3f} / {statistics.median(t):.3f}")
            elif what == "cpu s":
                series[stage, what].append((P, statistics.median(c for _, c, _ in got)))
                cells.append(f"{series[stage, what][-1][1]:.2f}")
            else:
                series[stage, what].append((P, max(kb for _, _, kb in got) / 1024))
                cells.append(f"{series[stage, what][-1][1]:.0f}")
        print(f"{program:8} {P:>6}" + "".join(f" {c:>{max(WIDTH[what], len(stage) + 1 + len(what))}}"
                                              for c, (stage, what) in zip(cells, COLUMNS)))
    if len(sizes) > 1:
        print(f"{program:8} {'P^k':>6}" + "".join(f" {fit(series[col]):>{max(WIDTH[col[1]], len(col[0]) + 1 + len(col[1]))}.2f}"
                                                  for col in COLUMNS))
        # the wall time's exponent from the mins too: on a shared host the median can carry another's load
        by_min = ["%.2f" % fit(series[stage, "min s"]) if what == "s" else "" for stage, what in COLUMNS]
        print(f"{program:8} {'min^k':>6}" + "".join(f" {c:>{max(WIDTH[what], len(stage) + 1 + len(what))}}"
                                                    for c, (stage, what) in zip(by_min, COLUMNS)))
PY
