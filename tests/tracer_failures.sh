#!/bin/bash
# The tracer must never harm the application: with an unwritable trace
# directory, a full disk (the rank files are links to /dev/full) or tracing
# disabled, the program's output and exit status stay as without the
# tracer, and the tracer warns at most once per rank. The same for an
# unwritable time file in timing-only mode (SKELTRACE_TIME_FILE).
#   tracer_failures.sh SKELGEN FLAVOR NP APP TRACER_LIB WORKDIR
set -u
skelgen=$1 flavor=$2 np=$3 app=$4 lib=$5 work=$6
case $flavor in
  mpich) launch=(mpiexec.mpich -n "$np"); envflag() { echo -genv "$1" "$2"; } ;;
  openmpi) launch=(mpirun.openmpi --allow-run-as-root --oversubscribe -n "$np"); envflag() { echo -x "$1=$2"; } ;;
esac
rm -rf "$work" && mkdir -p "$work"
"${launch[@]}" "$app" > "$work/plain.out" 2>&1 || { echo "FAIL: untraced run failed"; exit 1; }
fail=0
check() {  # check NAME DIR expected-warning-or-empty
  local name=$1 dir=$2 warn=$3
  local launcher=("${launch[0]}" $(envflag LD_PRELOAD "$lib") $(envflag SKELTRACE_DIR "$dir") \
                  $(envflag SKELTRACE_DISABLE "${DISABLE:-0}") ${TIME_FILE:+$(envflag SKELTRACE_TIME_FILE "$TIME_FILE")} \
                  ${GAP_CLOCK:+$(envflag SKELTRACE_GAP_CLOCK "$GAP_CLOCK")} \
                  "${launch[@]:1}")
  timeout 120 "${launcher[@]}" "$app" > "$work/$name.out" 2> "$work/$name.err"
  local rc=$?
  if [ $rc != 0 ]; then echo "FAIL $name: exit status $rc"; cat "$work/$name.err"; fail=1; return; fi
  if ! diff -q "$work/plain.out" "$work/$name.out" > /dev/null; then
    echo "FAIL $name: output differs"; diff "$work/plain.out" "$work/$name.out"; fail=1; return
  fi
  local n; n=$(grep -c "skeltrace:" "$work/$name.err")
  if [ -n "$warn" ]; then
    if [ "$n" -lt 1 ] || [ "$n" -gt "$np" ] || ! grep -q "$warn" "$work/$name.err"; then
      echo "FAIL $name: expected one '$warn' warning per rank at most, got:"; cat "$work/$name.err"; fail=1; return
    fi
  elif [ "$n" != 0 ]; then
    echo "FAIL $name: unexpected warning:"; cat "$work/$name.err"; fail=1; return
  fi
  echo "ok $name"
}
check unwritable_dir /proc/no-such-dir/trace "cannot create trace directory"
# a symlink planted at every rank path: never written through, its target untouched
mkdir -p "$work/planted" && echo "precious" > "$work/victim"
for ((r = 0; r < np; ++r)); do ln -s "$work/victim" "$work/planted/$(printf 'rank-%05d.skt' $r)"; done
check planted_symlink "$work/planted" "something already exists at this path"
[ "$(cat "$work/victim")" = precious ] || { echo "FAIL planted_symlink: the symlink's target was written"; fail=1; }
# a full disk: a small tmpfs (root only)
if [ "$(id -u)" = 0 ] && mkdir -p "$work/full" && mount -t tmpfs -o size=4k tmpfs "$work/full" 2> /dev/null; then
  check disk_full "$work/full" "No space left on device"
  umount "$work/full"
  # through skelgen trace, on a 16 KiB tmpfs that fills mid-run: the
  # application's output is untouched, the early small chunks are readable,
  # the summary says why, and the exit status is 3 (the application's was 0)
  mkdir -p "$work/full16" && mount -t tmpfs -o size=16k tmpfs "$work/full16"
  "${launch[@]}" "$app" 2000 > "$work/plain2000.out" 2>&1
  "$skelgen" trace -o "$work/full16" -- "${launch[@]}" "$app" 2000 > "$work/full16.out" 2> "$work/full16.err"
  rc=$?
  events=$(sed -n 's/^events: *\([0-9]*\) in all.*/\1/p' "$work/full16.err")
  umount "$work/full16"
  if [ $rc != 3 ] || ! diff -q "$work/plain2000.out" "$work/full16.out" > /dev/null ||
     ! grep -q "trace incomplete: rank 0 stopped after [1-9][0-9]* events (no space left on device)" "$work/full16.err" ||
     [ "${events:-0}" -lt 100 ]; then
    echo "FAIL disk_full_trace: exit $rc, $events events readable:"; cat "$work/full16.err"; fail=1
  else
    echo "ok disk_full_trace ($events events readable)"
  fi
else
  echo "skip disk_full: needs root to mount a small tmpfs"
fi
DISABLE=1 check disabled "$work/disabled" ""
[ -e "$work/disabled" ] && { echo "FAIL disabled: a trace directory was created"; fail=1; }
# timing-only mode (skelgen time) with an unwritable time file
TIME_FILE=/proc/no-such-dir/time check time_file_unwritable "$work/timed" "cannot write the run time"
[ -e "$work/timed" ] && { echo "FAIL time_file_unwritable: a trace directory was created"; fail=1; }
# an unknown gap clock: one warning, then the default (auto) and a full trace
GAP_CLOCK=sometimes check bad_gap_clock "$work/badclock" "ignoring SKELTRACE_GAP_CLOCK=sometimes (expected auto, wall or cpu)"
[ -e "$work/badclock/rank-00000.skt" ] || { echo "FAIL bad_gap_clock: no trace written"; fail=1; }
# a rank that fork()s a child which calls exit(): the child flushes nothing,
# the rank file reads complete with every call the parent made
cat > "$work/forker.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  for (int i = 0; i < 10; ++i) MPI_Barrier(MPI_COMM_WORLD);
  pid_t pid = fork();
  if (pid == 0) exit(0);  /* runs the atexit handlers, the tracer's among them */
  waitpid(pid, NULL, 0);
  for (int i = 0; i < 10; ++i) MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
EOF
if "mpicc.$flavor" -o "$work/forker" "$work/forker.c" 2> "$work/forker.cc.err"; then
  "${launch[0]}" $(envflag LD_PRELOAD "$lib") $(envflag SKELTRACE_DIR "$work/forked") "${launch[@]:1}" \
    "$work/forker" > "$work/forked.out" 2>&1 || { echo "FAIL fork: the forking program failed"; cat "$work/forked.out"; fail=1; }
  if ! "$skelgen" dump "$work/forked" > "$work/forked.dump" 2> "$work/forked.err"; then
    echo "FAIL fork: the trace does not read: $(cat "$work/forked.err")"; fail=1
  elif [ -s "$work/forked.err" ] || [ "$(grep -c MPI_Barrier "$work/forked.dump")" != $((20 * np)) ]; then
    echo "FAIL fork: expected $((20 * np)) barriers and no warning, got $(grep -c MPI_Barrier "$work/forked.dump"): $(cat "$work/forked.err")"; fail=1
  else
    echo "ok fork"
  fi
else
  echo "FAIL fork: cannot compile: $(cat "$work/forker.cc.err")"; fail=1
fi
# a world started by MPI_Comm_spawn writes its own files (spawned-<run id>/),
# never over its parents'; merge merges the first world and lists the other.
# Open MPI only: MPICH's hydra fails every spawn once -genv is given.
if [ "$flavor" = openmpi ]; then
  cat > "$work/spawner.c" <<'EOF'
#include <mpi.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm parent, child;
  MPI_Comm_get_parent(&parent);
  if (parent == MPI_COMM_NULL) {
    for (int i = 0; i < 3; ++i) MPI_Barrier(MPI_COMM_WORLD);
    MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &child, MPI_ERRCODES_IGNORE);
    MPI_Barrier(child);
    MPI_Comm_disconnect(&child);
  } else {
    for (int i = 0; i < 5; ++i) MPI_Barrier(MPI_COMM_WORLD);
    MPI_Barrier(parent);
    MPI_Comm_disconnect(&parent);
  }
  MPI_Finalize();
  return 0;
}
EOF
  mpicc.openmpi -o "$work/spawner" "$work/spawner.c" &&
    timeout 120 "${launch[0]}" $(envflag LD_PRELOAD "$lib") $(envflag SKELTRACE_DIR "$work/spawned") "${launch[@]:1}" \
      "$work/spawner" > "$work/spawned.out" 2>&1
  kids=$(ls -d "$work/spawned"/spawned-* 2> /dev/null)
  if [ "$(echo "$kids" | grep -c .)" != 1 ]; then
    echo "FAIL spawn: expected one spawned-* directory: $(ls "$work/spawned") $(cat "$work/spawned.out")"; fail=1
  elif [ "$("$skelgen" dump "$kids" | grep -c MPI_Barrier)" != 12 ] ||
       [ "$("$skelgen" dump "$work/spawned" | grep -c MPI_Barrier)" != $((4 * np)) ]; then
    echo "FAIL spawn: the worlds' traces do not hold their own calls"; fail=1
  elif ! "$skelgen" merge "$work/spawned" -o "$work/spawned.skm" 2>&1 | grep -q "also holds 1 world(s) started by MPI_Comm_spawn"; then
    echo "FAIL spawn: merge does not list the spawned world"; fail=1
  else
    echo "ok spawn"
  fi
fi
exit $fail
