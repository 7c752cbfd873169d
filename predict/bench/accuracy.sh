#!/bin/bash
# The SimGrid accuracy experiment of docs/results/accuracy.md. For each program:
#   truth:      the application itself, built with smpicc/smpicxx/smpiff, run under
#               smpirun on the platform; its computation is timed on this machine
#               and converted to flops with smpi/host-speed = the traced node's
#               kernel speed (so both sides count the same flops per second);
#               its time is SimGrid's simulated time of the whole run. C and C++
#               are built with -DSMPI_NO_OVERRIDE_MALLOC: SMPI's malloc
#               interception (even with smpi/shared-malloc:off) made
#               memory-bound code (jacobi2d) run 2.4x slower than natively,
#               which is not the application's own computation.
#   prediction: the K = 10 skeleton generated from a native trace on this
#               machine (2 MPICH ranks), run with skelgen predict --simgrid on
#               the same platform and hosts.
# Both platforms of predict/platforms/, the ranks on node-0 and node-4: one
# switch apart on the homogeneous platform, two subnets apart (100 Mb/s links)
# on the heterogeneous one. Prints a markdown table; progress on stderr.
#   predict/bench/accuracy.sh BUILD_DIR [WORK_DIR]
set -euo pipefail
source "$(dirname "$0")/../../common/bench/lib.sh"
build=$(cd "$1" && pwd)
work=${2:-$build/accuracy}
root=$(cd "$(dirname "$0")/../.." && pwd)
skelgen=$(bench_built "$build" bin/skelgen)
np=2
bench_mpi_launcher mpich "$np"
rm -rf "$work" && mkdir -p "$work/tmp"
export TMPDIR=$work/tmp  # smpirun -tmpdir is broken in SimGrid 3.32
apps=$root/tests/apps
for i in $(seq 0 $((np - 1))); do echo "node-$(( (i % 4) * 4 + i / 4 ))"; done > "$work/hosts"
# program  source  args
programs=(
  "jacobi2d $root/examples/jacobi2d.c 400 1000"
  "ring $apps/ring.c 10000"
  "halo2d $apps/halo2d.c 200"
  "cxx_vector $apps/cxx_vector.cpp 60000"
  "collectives $apps/collectives.c"
  "misc $apps/misc.c"
  "master_worker $apps/master_worker.c"
  "persistent $apps/persistent.c"
  "callsites $apps/callsites.c"
  "fortran_mix $apps/fortran_mix.f90"
)
native() {  # the natively built program
  case $1 in
    jacobi2d) echo "$build/examples/jacobi2d" ;;
    *) echo "$build/tests/apps-mpich/$1" ;;
  esac
}
cfg=(--cfg=smpi/bw-factor:0:1 --cfg=smpi/lat-factor:0:1 --cfg=network/crosstraffic:0
     --cfg=smpi/coll-selector:mpich --cfg=smpi/display-timing:yes --log=root.thres:critical
     --log=smpi_utils.thres:info)
rows=()
for entry in "${programs[@]}"; do
  read -r name src args <<< "$entry"
  w=$work/$name && mkdir -p "$w"
  # shellcheck disable=SC2086
  "$skelgen" trace -q -o "$w/trace" -- "${launch[@]}" "$(native "$name")" $args > /dev/null
  "$skelgen" generate "$w/trace" -K 10 -o "$w/skel.c" -q > /dev/null
  flops=$(sed -n 's/.*kernel_flops_per_s=\([0-9.e+]*\).*/\1/p' "$w/skel.c" | head -1)
  case $src in
    *.c) smpicc -O2 -w -DSMPI_NO_OVERRIDE_MALLOC -I"$apps" -o "$w/app" "$src" -lm ;;
    *.cpp) smpicxx -O2 -w -DSMPI_NO_OVERRIDE_MALLOC -I"$apps" -o "$w/app" "$src" ;;
    *.f90) smpiff -O2 -w -fallow-argument-mismatch -o "$w/app" "$src" ;;
  esac
  row="| $name $args |"
  for platform in homogeneous16 heterogeneous16; do
    p=$root/predict/platforms/$platform.xml
    # shellcheck disable=SC2086
    smpirun -np $np -platform "$p" -hostfile "$work/hosts" "${cfg[@]}" --cfg=smpi/host-speed:"${flops}f" \
      "$w/app" $args > "$w/app-$platform.out" 2> "$w/app-$platform.err" || {
      why=$(grep -o 'Not yet implemented: [A-Za-z_]*' "$w/app-$platform.err" | head -1 || true)
      echo "$name: the application failed under smpirun on $platform: ${why:-see $w/app-$platform.err}" >&2
      row="$row ${why:-failed} | | |"; continue; }
    truth=$(sed -n 's/.*Simulated time: \([0-9.e+-]*\) seconds.*/\1/p' "$w/app-$platform.out" "$w/app-$platform.err" | head -1)
    pred=$("$skelgen" predict "$w/skel.c" --simgrid "$p" --hostfile "$work/hosts" -r 1 --json -q |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["predicted_s"])')
    err=$(python3 -c "print(f'{100 * ($pred - $truth) / $truth:+.1f} %')")
    echo "$name on $platform: application $truth s, predicted $pred s ($err)" >&2
    row="$row $truth | $pred | $err |"
  done
  rows+=("$row")
done
echo "| program | homogeneous16: application s | predicted s | error | heterogeneous16: application s | predicted s | error |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
