#!/bin/bash
# cmake --install gives bin/skelgen and lib/libskeltrace-<mpi>.so, and the
# installed skelgen finds its tracer and traces a program.
#   install_tree.sh BUILD_DIR WORKDIR MPICH_APP
set -eu
build=$1 work=$2 app=$3
rm -rf "$work" && mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
for f in bin/skelgen lib/libskeltrace-mpich.so share/skelgen/templates/skel_kernel.h; do
  [ -e "$work/prefix/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
if grep -q openmpi "$build/CMakeCache.txt" && [ -e "$build/lib/libskeltrace-openmpi.so" ]; then
  [ -e "$work/prefix/lib/libskeltrace-openmpi.so" ] || { echo "FAIL: Open MPI tracer not installed"; exit 1; }
fi
"$work/prefix/bin/skelgen" trace -q -o "$work/trace" -- mpiexec.mpich -n 2 "$app" > /dev/null
n=$("$work/prefix/bin/skelgen" dump "$work/trace" --format jsonl | grep -c MPI_)
[ "$n" -gt 10 ] || { echo "FAIL: installed skelgen traced only $n events"; exit 1; }
echo "install tree: ok ($n events traced by the installed skelgen)"
