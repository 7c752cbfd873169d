#!/bin/bash
# skelgen build stopped by SIGTERM (a job's time limit, `kill`) while the
# compiler runs: the compiler is ended too, skelgen dies of the signal, and
# no half-made build is left (the temporary .skelgen-build-* file a build
# with its record goes through). The compiler is a stand-in first in PATH,
# mpicc.openmpi, that creates its output, notes its pid and sleeps; the
# skeleton is generated from a trace of ours (tests/data/farm_replay_8).
#   build_stop_test.sh SKELGEN TRACE_DIR WORK
set -uo pipefail
skelgen=$1 trace=$2 work=$3
rm -rf "$work" && mkdir -p "$work/bin"
cat > "$work/bin/mpicc.openmpi" <<'SH'
#!/bin/bash
echo $$ > "$(dirname "$0")/../compiler.pid"
while [ $# -gt 0 ]; do [ "$1" = -o ] && { : > "$2"; break; }; shift; done
exec sleep 60
SH
chmod +x "$work/bin/mpicc.openmpi"
"$skelgen" generate "$trace" -K 10 -o "$work/skel.c" -q > /dev/null || { echo "FAIL: generate" >&2; exit 1; }
PATH="$work/bin:$PATH" "$skelgen" build "$work/skel.c" --mpi openmpi -o "$work/skel" 2> "$work/stderr" &
pid=$!
for _ in $(seq 100); do [ -s "$work/compiler.pid" ] && break; sleep 0.1; done
[ -s "$work/compiler.pid" ] || { echo "FAIL: the stand-in compiler did not start" >&2; exit 1; }
kill -TERM "$pid"
wait "$pid"
rc=$?
compiler=$(cat "$work/compiler.pid")
sleep 0.5
fail=0
[ "$rc" = 143 ] || { echo "FAIL: skelgen exited with $rc, not 143 (SIGTERM)" >&2; fail=1; }
if kill -0 "$compiler" 2> /dev/null; then echo "FAIL: the compiler (pid $compiler) still runs" >&2; kill -9 "$compiler"; fail=1; fi
left=$(find "$work" -maxdepth 1 \( -name '.skelgen-build-*' -o -name skel \) | wc -l)
[ "$left" = 0 ] || { ls -la "$work" >&2; echo "FAIL: $left half-made build file(s) left" >&2; fail=1; }
[ $fail = 0 ] || { cat "$work/stderr" >&2; exit 1; }
echo "ok: stopped with 143, the compiler ended, nothing left; skelgen said: $(cat "$work/stderr")"
