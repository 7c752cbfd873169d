#!/bin/bash
# One command for a fresh Debian 12 machine: install what is missing, build,
# then either run the main job on the bundled example (demo) or run the whole
# test suite (test). Run as root, or as a user with sudo for the installs.
#   tools/setup.sh demo|test
# Environment: BUILD_DIR (default ./build), JOBS (default: number of cores).
set -euo pipefail
mode=${1:-}
if [ "$mode" != demo ] && [ "$mode" != test ]; then
  echo "usage: tools/setup.sh demo|test" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
jobs=${JOBS:-$(nproc)}

# The tests run in the sanitizer build (tools/setup.sh test): every gtest
# case (Suite.Name), the reader's fuzz replay and the CLI smoke tests.
asan_tests='\.|^fuzz_reader_replay$|^cli_(help|trace_help|dump_help|unknown_flag)$|^compress_symbols$'

packages=(build-essential cmake python3 pkg-config gfortran
          mpich libmpich-dev openmpi-bin libopenmpi-dev
          libunwind-dev libzstd-dev libcli11-dev nlohmann-json3-dev
          libgtest-dev googletest libbenchmark-dev clang libclang-rt-dev libsimgrid-dev
          slurm-wlm munge)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing: ${missing[*]}"
  sudo=()
  if [ "$(id -u)" != 0 ]; then
    command -v sudo > /dev/null || { echo "error: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
  fi
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

echo "== building in $build"
mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$build/configure.log" 2>&1 \
  || { cat "$build/configure.log"; exit 1; }
sed -n '/skelgen .* configuration/,$p' "$build/configure.log"
cmake --build "$build" -j "$jobs"

if [ "$mode" = test ]; then
  echo "== running the test suite"
  status=0
  (cd "$build" && ctest --output-on-failure -j "$jobs") || status=$?
  # A second build under ASan + UBSan (no recovery: the first report fails
  # the test) of the host tools, the unit tests and the reader tests. No
  # tracer (an LD_PRELOADed library cannot bring ASan into an uninstrumented
  # application), so no MPI tests; the subset and its cost: docs/tracer.md, "Safety".
  asan=${ASAN_BUILD_DIR:-$root/build-asan}
  flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
  echo "== sanitizer build in $asan"
  mkdir -p "$asan"
  cmake -S "$root" -B "$asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSKELGEN_MPIS= -DSKELGEN_REQUIRE_MPICH=OFF \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" > "$asan/configure.log" 2>&1 \
    || { cat "$asan/configure.log"; exit 1; }
  cmake --build "$asan" -j "$jobs" --target skel_unit_tests fuzz_reader_replay skelgen
  echo "== unit and reader tests under the sanitizers"
  (cd "$asan" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
     ctest --output-on-failure -j "$jobs" -R "$asan_tests") || status=$?
  exit $status
fi

echo "== tracing the bundled example (examples/jacobi2d.c, 400x400 grid, 1000 iterations) on 2 MPICH ranks, 3 runs"
# three traced runs: merge takes each call's median time, so that one disturbed run does not become the
# prediction (docs/predict.md, "What a prediction rests on")
"$build/bin/skelgen" trace --runs 3 --force -o "$build/example-trace" -- \
  mpiexec.mpich -n 2 "$build/examples/jacobi2d" 400 1000
# show N COMMAND...: run it to the end (its failure fails the demo), print its first N lines
show() { local n=$1; shift; "$@" > "$build/show.txt"; head -n "$n" "$build/show.txt"; }
echo "== first events of rank 0 in the first run (skelgen dump $build/example-trace/run-1 --rank 0)"
show 8 "$build/bin/skelgen" dump "$build/example-trace/run-1" --rank 0
echo "== merging the ranks into one program trace (each call's time: the median of the runs)"
"$build/bin/skelgen" merge "$build/example-trace" -o "$build/example.skm" --verify
echo "== first merged events (skelgen dump $build/example.skm)"
show 6 "$build/bin/skelgen" dump "$build/example.skm"
echo "== folding the loops"
"$build/bin/skelgen" compress "$build/example.skm" -o "$build/example.skf" --verify
echo "== the folded program and its symbols (skelgen dump $build/example.skf)"
show 12 "$build/bin/skelgen" dump "$build/example.skf"
echo "== generating the skeleton (K = 10) and building it with MPICH"
"$build/bin/skelgen" generate "$build/example.skf" -K 10 -o "$build/example.skel.c" --build --mpi mpich \
  | tee "$build/generate.txt"
echo "== running the skeleton on 2 MPICH ranks (skelgen predict: a warm-up run, then the median of 3)"
"$build/bin/skelgen" predict "$build/example.skel" -r 3 | tee "$build/skeleton.txt"
echo "== timing the application untraced, 3 runs (skelgen time): the reference for the prediction"
"$build/bin/skelgen" time -r 3 -- mpiexec.mpich -n 2 "$build/examples/jacobi2d" 400 1000 2> /dev/null \
  | tee "$build/app-time.txt"
traced=$(sed -n 's/^traced: *\([0-9.]*\) s.*/\1/p' "$build/generate.txt")
untraced=$(sed -n 's/^SKELGEN_APP .* median_s=\([0-9.]*\).*/\1/p' "$build/app-time.txt")
predicted=$(sed -n 's/^predicted: *\([0-9.]*\) s.*/\1/p' "$build/skeleton.txt")
measured=$(sed -n 's/^skeleton: *\([0-9.]*\) s.*/\1/p' "$build/skeleton.txt")
python3 -c "
t, a, p, m = $traced, $untraced, $predicted, $measured
print(f'application: {a:.3f} s untraced (median of 3; {t:.3f} s traced)   skeleton: {m:.3f} s   '
      f'predicted: {p:.3f} s   error: {100 * (p - a) / a:+.1f} %')"
echo "== predicting the application on simulated 16-node clusters (skelgen predict --simgrid; docs/predict.md)"
for platform in homogeneous16 heterogeneous16; do
  # two ranks on node-0 and node-4: one switch apart, or two subnets apart on the heterogeneous platform
  printf 'node-0\nnode-4\n' > "$build/example.hosts"
  "$build/bin/skelgen" predict "$build/example.skel.c" --simgrid "$root/predict/platforms/$platform.xml" \
    --hostfile "$build/example.hosts" -r 1 -q | sed -n "s/^predicted: *\([0-9.]*\) s.*/  predicted application runtime on predict\/platforms\/$platform.xml: \1 s/p"
done
