#!/bin/bash
# A pipelined wavefront on more ranks than the grid has edges
# (tests/apps/wavefront.c: NPB LU's shape, few planes per sweep), traced
# twice: both traces fold to the same program (timings aside), whose main
# loop is the program's own (ITERS / 5 groups of 5 iterations, each group
# ending with the residual's MPI_Allreduce) and holds 95 % of the calls; the
# whole folded program is at most two iterations' calls of the busiest rank
# (the look-ahead walk's merge folded to 609 and 1,237 symbols at 8 and 16
# Open MPI ranks, the alignment's to 185 and 881); the K = 10 skeleton is
# planned at least 5 times shorter than the traced run and runs to its end.
#   run_pipeline_test.sh SKELGEN FLAVOR NP APP WORK ITERS NZ [WORK_TERMS]
set -euo pipefail
skelgen=$1 flavor=$2 np=$3 app=$4 work=$5 iters=$6 nz=$7
shift 5
source "$(dirname "$0")/../common/bench/lib.sh"
bench_mpi_launcher "$flavor" "$np"
rm -rf "$work" && mkdir -p "$work"
bench_fold_twice "$skelgen" "$work" "$app" "$@"
python3 - "$work" "$iters" "$nz" <<'EOF'
import json, re, sys
work, iters, nz = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
merged = json.load(open(f"{work}/merge1.json"))
text = open(f"{work}/compress1.txt").read()
length = int(re.search(r"folded length (\d+)", text).group(1))
main = re.search(r"main: +\((\d+)\)\^(\d+), ([0-9.]+) % of the calls", text)
# the busiest rank's calls per iteration: the halo exchange (Irecv, Send, Wait from and to both sides of
# both axes: 12) and the two sweeps (two receives and two sends per plane, nz - 2 planes each)
per_iteration = 12 + 2 * 4 * (nz - 2)
print(f"merged by {merged['order']}: {merged['merged_events']} events; folded length {length}, "
      f"main loop ({main.group(1)})^{main.group(2)} holding {main.group(3)} % of the calls")
ok = True
if int(main.group(2)) != iters // 5 or float(main.group(3)) < 95:
    print(f"FAIL: the main loop is not the program's {iters // 5} groups of 5 iterations", file=sys.stderr)
    ok = False
if length > 2 * per_iteration:
    print(f"FAIL: folded length {length} > two iterations' calls ({2 * per_iteration})", file=sys.stderr)
    ok = False
sys.exit(0 if ok else 1)
EOF
"$skelgen" generate "$work/trace1.skf" -K 10 -o "$work/skel.c" > "$work/generate.txt" 2>&1
traced=$(sed -n 's/^traced: *\([0-9.]*\) s.*/\1/p' "$work/generate.txt")
expected=$(sed -n 's/^expected: *\([0-9.]*\) s.*/\1/p' "$work/generate.txt")
echo "K = 10: $(wc -l < "$work/skel.c") lines of C; traced $traced s, expected $expected s"
python3 -c "import sys; sys.exit(0 if $expected > 0 and $traced / $expected >= 5 else 1)" ||
  { cat "$work/generate.txt"; echo "FAIL: the K = 10 skeleton is not planned 5 times shorter" >&2; exit 1; }
"$skelgen" build "$work/skel.c" --mpi "$flavor" -q -o "$work/skel"
SKELGEN_WATCHDOG_S=20 timeout 120 "${launch[@]}" "$work/skel" > "$work/skel.out" 2>&1 ||
  { cat "$work/skel.out"; echo "FAIL: the skeleton did not complete" >&2; exit 1; }
grep '^SKELGEN_RESULT' "$work/skel.out" || { echo "FAIL: no result line" >&2; exit 1; }
