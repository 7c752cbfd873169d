#!/bin/bash
# skelgen predict through a real Slurm: this script configures and starts
# munged, slurmctld and slurmd on localhost (state in a temporary directory,
# free ports, one node "$(hostname -s)" with 16 CPUs declared so that
# oversubscribed Open MPI jobs fit), and stops them at the end. Checks:
#   - predict --target slurm (srun --mpi=pmi2 for MPICH) gives a prediction
#     within 10 % of the local launcher's for the same skeleton (medians of 5,
#     alternating local and Slurm runs so that machine noise hits both);
#   - with an Open MPI app: predict through srun --mpi=pmix works too;
#   - after Slurm is stopped, predict --target slurm fails with "Slurm is not
#     reachable" (exit 1), not a hang or a crash.
# Skips (exit 77) when not root: slurmd must start job steps as their user.
#   run_slurm_test.sh SKELGEN MPICH_APP WORK [OPENMPI_APP]
#   (apps: tests/apps halo2d; traced here with more iterations for stable times)
set -euo pipefail
skelgen=$1 app=$2 work=$3 ompi_app=${4:-}
[ "$(id -u)" = 0 ] || { echo "SKIP: slurmd needs root here"; exit 77; }
for p in munged slurmctld slurmd srun scontrol sinfo; do
  command -v "$p" > /dev/null || { echo "FAIL: $p not found (tools/setup.sh installs slurm-wlm and munge)" >&2; exit 1; }
done
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }

# Daemon state under /tmp: munge's socket path must stay short (108 bytes).
state=$(mktemp -d /tmp/skelslurm.XXXXXX)
chmod 700 "$state"
stop_slurm() {
  for pidfile in "$state/slurmd.pid" "$state/slurmctld.pid" "$state/munged.pid"; do
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2> /dev/null || true
  done
  sleep 1
  for pidfile in "$state/slurmd.pid" "$state/slurmctld.pid" "$state/munged.pid"; do
    [ -f "$pidfile" ] && kill -9 "$(cat "$pidfile")" 2> /dev/null || true
  done
}
cleanup() {
  stop_slurm
  cp "$state"/*.log "$work/" 2> /dev/null || true
  rm -rf "$state"
}
trap cleanup EXIT

read -r port1 port2 < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
host=$(hostname -s)
mkdir -m 700 "$state/spool" "$state/ctld"
dd if=/dev/urandom of="$state/munge.key" bs=1024 count=1 status=none
chmod 400 "$state/munge.key"
munged -f --key-file="$state/munge.key" --socket="$state/munge.sock" --pid-file="$state/munged.pid" \
  --log-file="$state/munged.log" --seed-file="$state/munge.seed"
cat > "$state/slurm.conf" <<EOF
ClusterName=skeltest
SlurmctldHost=$host
SlurmUser=root
SlurmctldPort=$port1
SlurmdPort=$port2
AuthType=auth/munge
AuthInfo=socket=$state/munge.sock
CredType=cred/munge
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/spool
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/slurmctld.log
SlurmdLogFile=$state/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$host CPUs=16 State=UNKNOWN
PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
export SLURM_CONF=$state/slurm.conf
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
for _ in $(seq 60); do
  [ "$(sinfo -h -o %T 2> /dev/null)" = idle ] && break
  sleep 0.5
done
[ "$(sinfo -h -o %T)" = idle ] || fail "the local Slurm did not come up (logs in $work)"
echo "Slurm up: $(sinfo -h -o '%P %D %T %N')"

# The application, traced with 300 iterations (default 6); skeleton at K = 1 so
# that both predictions are whole runs (~0.7 s), not extrapolations.
"$skelgen" trace -q -o "$work/trace" -- mpiexec.mpich -n 2 "$app" 300 > /dev/null
"$skelgen" generate "$work/trace" -K 1 -o "$work/skel.c" -q > /dev/null
"$skelgen" build "$work/skel.c" --mpi mpich -o "$work/skel.mpich" -q
local_s=() slurm_s=()
for i in 1 2 3 4 5; do
  local_s+=("$("$skelgen" predict "$work/skel.mpich" -r 1 --json -q | python3 -c 'import json,sys; print(json.load(sys.stdin)["predicted_s"])')")
  slurm_s+=("$("$skelgen" predict "$work/skel.mpich" --target slurm -r 1 --json -q | python3 -c 'import json,sys; print(json.load(sys.stdin)["predicted_s"])')")
done
echo "local: ${local_s[*]}"
echo "slurm: ${slurm_s[*]}"
python3 - "${local_s[*]}" "${slurm_s[*]}" <<'PY' || fail "Slurm's prediction is more than 10 % from the local one"
import statistics, sys
l = statistics.median(map(float, sys.argv[1].split()))
s = statistics.median(map(float, sys.argv[2].split()))
print(f"median local {l:.6f} s, Slurm {s:.6f} s: {100 * (s - l) / l:+.1f} %")
sys.exit(0 if abs(s - l) <= 0.10 * l else 1)
PY
"$skelgen" predict "$work/skel.c" --target slurm --partition local -r 1 | tee "$work/predict.txt"
grep -q '^target:    slurm partition local' "$work/predict.txt" || fail "no target line"

if [ -n "$ompi_app" ]; then
  "$skelgen" trace -q -o "$work/trace-ompi" -- mpirun.openmpi --allow-run-as-root --oversubscribe -n 4 "$ompi_app" > /dev/null
  "$skelgen" generate "$work/trace-ompi" -K 10 -o "$work/skel-ompi.c" -q > /dev/null
  "$skelgen" predict "$work/skel-ompi.c" --target slurm -r 1 | tee "$work/predict-ompi.txt"
  grep -q 'built with openmpi' "$work/predict-ompi.txt" || fail "Open MPI skeleton not run through srun"
fi

stop_slurm
set +e
"$skelgen" predict "$work/skel.mpich" --target slurm -r 1 > "$work/down.out" 2> "$work/down.err"
rc=$?
set -e
[ $rc = 1 ] || fail "predict with Slurm down exited $rc (expected 1)"
grep -q 'Slurm is not reachable' "$work/down.err" || { cat "$work/down.err" >&2; fail "no clear error with Slurm down"; }
[ "$(wc -l < "$work/down.err")" = 1 ] || { cat "$work/down.err" >&2; fail "more than one line of error"; }
echo "ok"
