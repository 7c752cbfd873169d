#!/bin/bash
# Skeleton ranks that share cores unbound pin themselves (docs/generate.md):
# the skeleton of a traced ring (Open MPI, NP ranks) run with SKELGEN_PIN=show
# says where each rank went. Against this shell's own CPU affinity (taskset):
# where NP ranks outnumber the cores allowed, each rank is on the (k mod C)-th
# allowed core, k its rank on the node (one node here: its world rank); where
# they do not, no rank is pinned. SKELGEN_PIN=0, and ranks the launcher bound
# (--bind-to core:overload-allowed), are never pinned.
#   run_pin_test.sh SKELGEN TRACE_DIR WORK NP
set -euo pipefail
skelgen=$1 trace=$2 work=$3 np=$4
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
"$skelgen" generate "$trace" -K 10 -o "$work/skel.c" -q > /dev/null
"$skelgen" build "$work/skel.c" --mpi openmpi -q -o "$work/skel"
launch=(mpirun.openmpi --oversubscribe -n "$np")
[ "$(id -u)" = 0 ] && launch+=(--allow-run-as-root)
# the cores this shell may run on, in order (the launcher's ranks inherit them)
mapfile -t cpus < <(python3 -c 'import os; print("\n".join(str(c) for c in sorted(os.sched_getaffinity(0))))')
run() {  # run PIN [LAUNCHER OPTIONS]: the skeleton's pin lines, sorted by rank
  local pin=$1
  shift
  SKELGEN_PIN=$pin "${launch[@]}" "$@" -x SKELGEN_PIN "$work/skel" 2>&1 >/dev/null | grep ' pinned to cpu ' | sort -t' ' -k3n || true
}
run show > "$work/show.txt"
: > "$work/want.txt"
if [ "$np" -gt "${#cpus[@]}" ]; then
  for ((r = 0; r < np; ++r)); do
    echo "rank $r pinned to cpu ${cpus[$((r % ${#cpus[@]}))]} (rank $r of $np on its node, ${#cpus[@]} cpus)" >> "$work/want.txt"
  done
fi
sed 's/^[^:]*: //' "$work/show.txt" | diff "$work/want.txt" - || fail "pinned otherwise than round robin over ${#cpus[@]} cpus (above)"
[ -z "$(run 0)" ] || fail "SKELGEN_PIN=0: ranks pinned"
[ -z "$(run show --bind-to core:overload-allowed)" ] || fail "ranks the launcher bound were pinned again"
echo "ok: $np ranks on ${#cpus[@]} cpus: $(wc -l < "$work/show.txt") pinned round robin; none with SKELGEN_PIN=0 or bound by the launcher"
