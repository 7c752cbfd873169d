#!/bin/bash
# skelgen predict --timeout ends the whole job: after predict returns, no
# process of it may run. The "skeleton" is a tiny MPI program with a
# SKELGEN_META string that writes its pid to a file and sleeps forever,
# ignoring SIGTERM, so that only SIGKILL ends it; its name is unique to this
# test run, so that pgrep finds only its processes.
#   - MPICH, 2 ranks (mpiexec.mpich: the hydra proxy and each rank call
#     setsid, so the launcher's process group does not hold them);
#   - a launcher that starts the program with setsid in the background and
#     then sleeps (a rank that leaves the launcher's group and session);
#   - a launcher that prints a result and exits, leaving its rank running:
#     predict succeeds, ends the rank and notes it;
#   - Open MPI, 3 ranks (each rank leads a process group of its own), when
#     mpicc.openmpi is installed.
# Each: exit status 1, the message "timed out after N s; killed the launcher
# (NAME) and its ranks", back within the timeout + 3 s grace + a margin,
# and every pid the ranks wrote gone, no process of the unique name left.
#   run_predict_timeout_test.sh SKELGEN WORK
set -euo pipefail
skelgen=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v mpicc.mpich > /dev/null || { echo "mpicc.mpich not installed: skipped"; exit 77; }
tag=$$   # unique names: comm is cut at 15 characters
cat > "$work/sleeper.c" <<'C'
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#ifndef NP
#define NP 2
#endif
#ifndef BUILT
#define BUILT "mpich"
#endif
#define STR2(x) #x
#define STR(x) STR2(x)
__attribute__((used)) static const char meta[] = "SKELGEN_META ranks=" STR(NP)
    " scale=1 traced_mpi=" BUILT " traced_s=1 comm_s=0 comp_s=1 kernel_flops_per_s=1e9 built_with=" BUILT " ;";
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  signal(SIGTERM, SIG_IGN);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char path[4096];
  snprintf(path, sizeof path, "%s/pid.%d.%d", getenv("SLEEPER_DIR"), (int)getpid(), rank);
  FILE* f = fopen(path, "w");
  if (f) fclose(f);
  for (;;) sleep(1);
}
C

# check NAME EXPECTED_PIDS LAUNCHER_NAME TIMEOUT -- PREDICT ARGS...
check() {
  local name=$1 want=$2 launcher=$3 timeout=$4
  shift 5
  local dir=$work/$name
  mkdir -p "$dir"
  local start=$SECONDS rc=0
  SLEEPER_DIR=$dir "$skelgen" predict "$@" --timeout "$timeout" > "$dir/out" 2> "$dir/err" || rc=$?
  local took=$((SECONDS - start))
  [ $rc = 1 ] || { cat "$dir/err"; fail "$name: exit status $rc, not 1"; }
  grep -q "timed out after $timeout s; killed the launcher ($launcher) and its ranks" "$dir/err" ||
    { cat "$dir/err"; fail "$name: no timeout message"; }
  # the warm-up run's timeout + 3 s grace, + 10 s for a busy machine
  [ $took -le $((timeout + 13)) ] || fail "$name: predict took $took s"
  local pids
  pids=$(ls "$dir" | sed -n 's/^pid\.\([0-9]*\)\..*/\1/p')
  [ "$(echo "$pids" | grep -c .)" = "$want" ] || fail "$name: $want ranks should have started, pid files: $(ls "$dir")"
  for p in $pids; do
    if [ -e "/proc/$p" ] && [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ]; then
      ps -o pid,ppid,stat,args -p "$p" >&2 || true
      fail "$name: rank process $p still runs after predict returned"
    fi
  done
  echo "ok: $name: $(grep -o 'timed out.*' "$dir/err") in $took s; $want rank pids gone"
}

mpicc.mpich -O1 -o "$work/sktm$tag" "$work/sleeper.c"
check mpich 2 mpiexec.mpich 2 -- "$work/sktm$tag"
if pgrep -x "sktm$tag" > /dev/null; then pgrep -a -x "sktm$tag"; fail "mpich: processes named sktm$tag remain"; fi

# a launcher that loses its rank: setsid in the background, then sleeps itself
printf '#!/bin/sh\nsetsid "$@" &\nexec sleep 1000\n' > "$work/escaping-launcher"
chmod +x "$work/escaping-launcher"
check escaping 1 escaping-launcher 1 -- "$work/sktm$tag" -n 2 --launcher "$work/escaping-launcher {exe}"
if pgrep -x "sktm$tag" > /dev/null; then pgrep -a -x "sktm$tag"; fail "escaping: processes named sktm$tag remain"; fi

# a launcher that prints a result and exits but leaves its rank running: predict ends it and says so
printf '#!/bin/sh\nsetsid "$@" &\necho "SKELGEN_RESULT measured_s=0.1 predicted_s=1.0 scale=1"\nsleep 1\n' > "$work/leaving-launcher"
chmod +x "$work/leaving-launcher"
mkdir -p "$work/leaving"
SLEEPER_DIR=$work/leaving "$skelgen" predict "$work/sktm$tag" -n 2 -r 1 --warmup 0 --timeout 60 \
  --launcher "$work/leaving-launcher {exe}" > "$work/leaving/out" 2> "$work/leaving/err" ||
  { cat "$work/leaving/err"; fail "leaving: predict failed"; }
grep -q "run 1: the launcher exited but 1 process(es) of its job still ran; ended them" "$work/leaving/err" ||
  { cat "$work/leaving/err"; fail "leaving: no note of the process left behind"; }
if pgrep -x "sktm$tag" > /dev/null; then pgrep -a -x "sktm$tag"; fail "leaving: processes named sktm$tag remain"; fi
echo "ok: leaving: $(grep -o 'the launcher exited.*' "$work/leaving/err")"

if command -v mpicc.openmpi > /dev/null; then
  mpicc.openmpi -O1 -DNP=3 -DBUILT='"openmpi"' -o "$work/skto$tag" "$work/sleeper.c"
  check openmpi 3 mpirun.openmpi 3 -- "$work/skto$tag"
  if pgrep -x "skto$tag" > /dev/null; then pgrep -a -x "skto$tag"; fail "openmpi: processes named skto$tag remain"; fi
fi
echo "ok: every timed-out job ended whole"
