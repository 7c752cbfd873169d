#!/bin/bash
# Skeleton ranks that share cores unbound pin themselves (docs/generate.md):
# the skeleton of a traced program (Open MPI, NP ranks) run with
# SKELGEN_PIN=show says where each rank went and its traced computation.
# Against this shell's own CPU affinity (taskset): where NP ranks outnumber
# the cores allowed, every rank is pinned to an allowed core, and the most
# computation a core gets is within 4/3 of the least possible (a brute-force
# search over every placement; placing the most loaded first, each on the
# least loaded core, keeps within 4/3); where ranks do not outnumber the
# cores, none is pinned. SKELGEN_PIN=0, and ranks the launcher
# bound (--bind-to core:overload-allowed), are never pinned.
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
if [ "$np" -gt "${#cpus[@]}" ]; then
  [ "$(wc -l < "$work/show.txt")" -eq "$np" ] || { cat "$work/show.txt"; fail "not every rank was pinned"; }
  python3 - "$work/show.txt" "${cpus[*]}" <<'PY' || fail "pinned otherwise (above)"
import itertools, re, sys
allowed = [int(c) for c in sys.argv[2].split()]
cpu, load = {}, {}
for line in open(sys.argv[1]):
    m = re.search(r"rank (\d+) pinned to cpu (\d+) .*traced computation ([0-9.]+) s", line)
    if not m:
        sys.exit("unreadable: " + line.strip())
    cpu[int(m[1])], load[int(m[1])] = int(m[2]), float(m[3])
if any(c not in allowed for c in cpu.values()):
    sys.exit("a rank pinned to a cpu outside " + str(allowed))
def most(place):  # the most computation one core gets
    per = {}
    for r, c in place.items():
        per[c] = per.get(c, 0) + load[r]
    return max(per.values())
ranks = sorted(load)
best = min(most(dict(zip(ranks, p))) for p in itertools.product(allowed, repeat=len(ranks)))
got = most(cpu)
print(f"most computation on one core: {got:.3f} s, least possible {best:.3f} s; loads " +
      ", ".join(f"{load[r]:.3f}@{cpu[r]}" for r in ranks))
if got > best * 4 / 3 + 1e-6:
    sys.exit(f"a core computes {got:.3f} s where {best:.3f} s is possible")
PY
fi
[ -z "$(run 0)" ] || fail "SKELGEN_PIN=0: ranks pinned"
[ -z "$(run show --bind-to core:overload-allowed)" ] || fail "ranks the launcher bound were pinned again"
echo "ok: $np ranks on ${#cpus[@]} cpus: $(wc -l < "$work/show.txt") pinned; none with SKELGEN_PIN=0 or bound by the launcher"
