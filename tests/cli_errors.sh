#!/bin/bash
# Bad input to skelgen gives a one-line error and a non-zero exit, never a crash.
#   cli_errors.sh SKELGEN CORPUS_DIR WORKDIR
set -u
skelgen=$1 corpus=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
fail=0
expect_error() {  # expect_error "what must be in the message" command...
  local want=$1; shift
  "$@" > "$work/out" 2> "$work/err"
  local rc=$?
  if [ $rc -eq 0 ] || [ $rc -ge 128 ]; then
    echo "FAIL: '$*' exited $rc"; fail=1; return
  fi
  if ! grep -q -- "$want" "$work/err"; then
    echo "FAIL: '$*': expected '$want' in: $(cat "$work/err")"; fail=1; return
  fi
  if [ "$(grep -c . "$work/err")" -gt 3 ]; then
    echo "FAIL: '$*': error is not short: $(cat "$work/err")"; fail=1
  fi
}
expect_error "no such file or directory" "$skelgen" dump "$work/nothing-here"
mkdir -p "$work/emptydir"
expect_error "no rank-\*.skt trace files" "$skelgen" dump "$work/emptydir"
expect_error "bad magic number" "$skelgen" dump "$corpus/text.skt"
expect_error "version 9.0 is not supported" "$skelgen" dump "$corpus/future-major.skt"
expect_error "corrupt chunk 0" "$skelgen" dump "$corpus/corrupt-payload.skt"
expect_error "trace format version 1.4 is too old" "$skelgen" dump "$corpus/old-version.skt"
expect_error "header checksum mismatch) at offset" "$skelgen" dump "$corpus/flipped-base-time.skt"
# a 32-byte merged trace claiming 1 GiB: refused from its frame header, within a 256 MB address space
printf 'SKELMRG\0\002\000\000\000\000\000\000\000\050\265\057\375\240\000\000\000\100xxxxxxx' > "$work/claim.skm"
expect_error "claims 1073741824 bytes from 16 compressed" bash -c 'ulimit -v 262144; exec "$0" dump "$1"' "$skelgen" "$work/claim.skm"
# a FIFO and a device: refused at once, never waited on
mkfifo "$work/fifo.skt"
expect_error "not a regular file (a FIFO)" timeout 10 "$skelgen" dump "$work/fifo.skt"
expect_error "not a regular file (a device)" timeout 10 "$skelgen" dump /dev/zero
expect_error "format" "$skelgen" dump --format xml "$corpus/text.skt"
expect_error "command not found: no-such-launcher" "$skelgen" trace -o "$work/t" -- no-such-launcher -n 2 ./app
expect_error "cannot tell which MPI" "$skelgen" trace -o "$work/t" -- /bin/true
expect_error "required" "$skelgen" trace -o "$work/t"
expect_error "keep-rank-files requires --merge-in-job" "$skelgen" trace --keep-rank-files -o "$work/t" -- /bin/true
expect_error "merge-in-job merges one run" "$skelgen" trace --merge-in-job --runs 2 --mpi mpich -o "$work/t" -- /bin/true
# a program path holding a quote and a command: never run by a shell
qdir="$work/q';touch pwned;'x" && mkdir -p "$qdir" && cp /bin/true "$qdir/prog"
pushd "$work" > /dev/null
expect_error "no trace was written" "$skelgen" trace -o "$work/tq" --mpi mpich -- "$qdir/prog"
popd > /dev/null
[ -e "$work/pwned" ] && { echo "FAIL: a quote in a program path ran a shell command"; fail=1; }
mkdir -p "$work/full" && cp "$corpus/text.skt" "$work/full/rank-00000.skt"
expect_error "already holds a trace" "$skelgen" trace -o "$work/full" --mpi mpich -- /bin/true
# out of memory (here: 100 kB more address space): one line, no crash, no output (sanitizer builds set no
# cap; the count of calls read against the memory, which stops a merge sooner: unit test
# Merge.MoreCallsThanTheMemoryCanMergeAreRefusedAsTheyAreRead)
if ! ldd "$skelgen" | grep -q libasan; then
  for stage in merge generate; do
    expect_error "out of memory: this needs more than the 0.0001 GB available" env SKELGEN_MEMORY_GB=0.0001 \
      "$skelgen" $stage "$corpus/../data/amr_mpich_2" -o "$work/memory.out"
    [ -e "$work/memory.out" ] && { echo "FAIL: $stage out of memory wrote its output"; fail=1; }
  done
fi
# CLI11's own parse errors: one line with the prefix
expect_error "^skelgen: error: .*no-such-flag" "$skelgen" dump --no-such-flag x
[ "$(grep -c . "$work/err")" = 1 ] || { echo "FAIL: a parse error is not one line: $(cat "$work/err")"; fail=1; }
expect_error "^skelgen: error: .*input is required" "$skelgen" dump
# a launcher that refuses to start: said so, not "did the program call MPI_Init?"
if [ -n "${MPICH_APP:-}" ]; then
  # (the launcher's own status, 255, is skelgen's: not a crash)
  "$skelgen" trace -o "$work/refused" -- mpiexec.mpich --no-such-option -n 2 "$MPICH_APP" > /dev/null 2> "$work/err"
  rc=$?
  if [ $rc = 0 ] || ! grep -q "^skelgen: error: mpiexec.mpich exited with status $rc before any rank started tracing: the launcher refused" "$work/err"; then
    echo "FAIL: a launcher that refused to start (exit $rc): $(cat "$work/err")"; fail=1
  fi
fi
if [ "$(id -u)" = 0 ] && command -v mpirun.openmpi > /dev/null; then
  expect_error "mpirun.openmpi refuses to run as root: add --allow-run-as-root" \
    env -u OMPI_ALLOW_RUN_AS_ROOT "$skelgen" trace -o "$work/root" -- mpirun.openmpi -n 2 /bin/true
fi
# compress: bad symbol files, wrong kinds of file
printf '1 2 x 3' > "$work/bad-symbols.txt"
expect_error "bad-symbols.txt:1: 'x' is not a non-negative integer" "$skelgen" compress --symbols "$work/bad-symbols.txt"
printf '1 -2' > "$work/neg-symbols.txt"
expect_error "'-2' is not a non-negative integer" "$skelgen" compress --symbols "$work/neg-symbols.txt"
printf '1 99999999999' > "$work/big-symbols.txt"
expect_error "too large" "$skelgen" compress --symbols "$work/big-symbols.txt"
: > "$work/empty-symbols.txt"
expect_error "no symbols (empty input)" "$skelgen" compress --symbols "$work/empty-symbols.txt"
expect_error "not a skelgen merged trace" "$skelgen" compress "$corpus/text.skt"
expect_error "this is a per-rank trace file, not a merged trace" "$skelgen" compress "$corpus/future-major.skt"
expect_error "give a merged trace or --symbols" "$skelgen" compress
expect_error "--threads: Value 65 not in range 0 to 64" "$skelgen" compress --threads 65 "$work/x.skm"
expect_error "--threads: Value two not in range 0 to 64" "$skelgen" compress --threads two "$work/x.skm"
# merge / compress / dump of merged files: missing inputs, unwritable outputs, ranks out of range
expect_error "cannot open trace directory" "$skelgen" merge "$work/nothing-here"
# several runs: where their merged trace goes must be said; each must be a trace directory
expect_error "several trace directories: say where their merged trace goes (-o FILE)" "$skelgen" merge "$work/a" "$work/b"
expect_error "cannot open trace directory" "$skelgen" merge "$work/nothing-here" "$work/nothing-either" -o "$work/x.skm"
mkdir -p "$work/mixed-runs"
cp "$corpus/text.skt" "$work/mixed-runs/rank-00000.skt"
expect_error "rank-00000.skt: not a skelgen trace file (bad magic number)" "$skelgen" merge "$work/mixed-runs"
expect_error "File does not exist" "$skelgen" compress --symbols "$work/nothing-here.txt"
if [ -n "${MERGED_TRACE:-}" ]; then
  expect_error "cannot create" "$skelgen" compress "$MERGED_TRACE" -o /proc/no-such-dir/x.skf
  expect_error "no rank 99 (world size" "$skelgen" dump "$MERGED_TRACE" --rank 99
  "$skelgen" compress -q "$MERGED_TRACE" -o "$work/whole.skf"
  expect_error "a folded program is dumped whole" "$skelgen" dump "$work/whole.skf" --rank 0
fi
if [ -n "${TRACE_DIR:-}" ]; then
  expect_error "cannot create" "$skelgen" merge "$TRACE_DIR" -o /proc/no-such-dir/x.skm
  # the merge order: a name it does not know, and --align beside another --order
  expect_error "greedy not in {auto,walk,align,nth}" "$skelgen" merge "$TRACE_DIR" --order greedy -o "$work/x.skm"
  expect_error "excludes" "$skelgen" merge "$TRACE_DIR" --align --order walk -o "$work/x.skm"
  expect_error "greedy not in {auto,walk,align,nth}" "$skelgen" generate "$TRACE_DIR" --merge-order greedy -o "$work/x.c"
fi
# a program built with one MPI, launched with the other's launcher
if [ -n "${MPICH_APP:-}" ] && command -v mpirun.openmpi > /dev/null; then
  expect_error "is linked with mpich but mpirun.openmpi launches openmpi" \
    "$skelgen" trace -o "$work/mixed" -- mpirun.openmpi -n 2 "$MPICH_APP"
  expect_error "is linked with mpich, not openmpi" "$skelgen" trace --mpi openmpi -o "$work/mixed" -- "$MPICH_APP"
fi
# generate / build / time
expect_error "not a trace directory, merged trace (.skm) or folded program (.skf)" "$skelgen" generate "$corpus/text.skt" -o "$work/x.c"
expect_error "File does not exist" "$skelgen" build "$work/nothing-here.c"
printf 'int main(void) { return 0; }\n' > "$work/plain.c"
expect_error "lam not in {mpich,openmpi,simgrid}" "$skelgen" build "$work/plain.c" --mpi lam
expect_error "mpicc.mpich not found in PATH: install" env PATH=/nonexistent "$skelgen" build "$work/plain.c" --mpi mpich
expect_error "command not found: no-such-launcher" "$skelgen" time -- no-such-launcher -n 2 ./app
expect_error "the application exited with status 1" "$skelgen" time --mpi mpich -- /bin/false
expect_error "no time was reported" "$skelgen" time --mpi mpich -- /bin/true
expect_error "repeat" "$skelgen" time -r 0 --mpi mpich -- /bin/true
if [ -n "${PARTIAL_MERGED:-}" ]; then
  expect_error "some ranks' traces end early" "$skelgen" generate "$PARTIAL_MERGED" -o "$work/x.c"
fi
# predict / place: files that are not skeletons, platforms, inventories or candidates
expect_error "not a skelgen skeleton (no SKELGEN_META" "$skelgen" predict "$work/plain.c"
meta='SKELGEN_META ranks=2 scale=10 traced_mpi=mpich traced_s=1 comm_s=0.1 comp_s=0.9 kernel_flops_per_s=1e9'
printf 'static const char m[] = "%s untraced_s=-1 ;";\n' "$meta" > "$work/bad-untraced.c"
expect_error "bad-untraced.c: damaged SKELGEN_META (untraced_s)" "$skelgen" predict "$work/bad-untraced.c"
printf 'static const char m[] = "%s untraced_s=x ;";\n' "$meta" > "$work/bad-untraced2.c"
expect_error "bad-untraced2.c: damaged SKELGEN_META" "$skelgen" predict "$work/bad-untraced2.c"
expect_error "say --candidates FILE (run on each) or --inventory FILE" "$skelgen" place "$work/plain.c"
printf 'name cores ghz group\nn0 4 2.0 g\n' > "$work/bad-inventory.txt"
expect_error "bad-inventory.txt:1: the header has no 'cache_mb' column" "$skelgen" place --inventory "$work/bad-inventory.txt" --np 2 --comm-share 0.5
printf 'name cores ghz cache_mb group\nn0 4 2.0 8 g\n' > "$work/inventory.txt"
expect_error "no network group of .*inventory.txt has 8 free cores (the largest has 4)" "$skelgen" place --inventory "$work/inventory.txt" --np 8 --comm-share 0.5
expect_error "needs the application's communication share" "$skelgen" place --inventory "$work/inventory.txt" --np 2
printf '[a]\nplatform = p.xml\nlauncher = mpiexec.mpich\n' > "$work/bad-candidates.ini"
if [ -n "${MERGED_TRACE:-}" ]; then
  "$skelgen" generate "$MERGED_TRACE" -o "$work/skel.c" -q > /dev/null
  # --join-call-sites asked of a program folded without it: generated as folded, with a note saying so
  "$skelgen" compress "$MERGED_TRACE" -o "$work/apart.skf" -q
  if ! "$skelgen" generate "$work/apart.skf" --join-call-sites -o "$work/apart.c" > /dev/null 2> "$work/err" ||
     ! grep -q "apart.skf was folded without --join-call-sites; fold it again" "$work/err"; then
    echo "FAIL: generate --join-call-sites on a program folded without it: $(cat "$work/err")"; fail=1
  fi
  expect_error "bad-candidates.ini:1: \[a\]: launcher is for kind = local" "$skelgen" place "$work/skel.c" --candidates "$work/bad-candidates.ini"
  expect_error "generated for 2 ranks, not 3" "$skelgen" predict "$work/skel.c" --np 3
  expect_error "launcher not found: no-such-launcher" "$skelgen" predict "$work/skel.c" --launcher "no-such-launcher -n {np}"
  expect_error "uses {hostfile} but no hostfile was given" "$skelgen" predict "$work/skel.c" --launcher "mpiexec.mpich -f {hostfile} -n {np}"
  expect_error "--simgrid/--simgrid-args does not apply to a local target" "$skelgen" predict "$work/skel.c" --target local --simgrid x.xml
  printf '<html></html>\n' > "$work/not-a-platform.xml"
  expect_error "not-a-platform.xml: not a SimGrid platform file" "$skelgen" predict "$work/skel.c" --simgrid "$work/not-a-platform.xml"
  if command -v smpicc > /dev/null; then
    "$skelgen" build "$work/skel.c" --mpi simgrid -o "$work/skel.smpi" -q
    expect_error "is built for SimGrid (smpicc); build it for a real MPI" "$skelgen" predict "$work/skel.smpi"
  fi
  if command -v mpicc.mpich > /dev/null; then
    "$skelgen" build "$work/skel.c" --mpi mpich -o "$work/skel.mpich" -q
    expect_error "is built with mpich, not for SimGrid" "$skelgen" predict "$work/skel.mpich" --simgrid "$work/not-a-platform.xml"
    if command -v mpirun.openmpi > /dev/null; then
      expect_error "is built with mpich but mpirun.openmpi launches openmpi" "$skelgen" predict "$work/skel.mpich" --launcher "mpirun.openmpi -n {np}"
    fi
    # runs that fail, print nothing or hang (stand-in launchers), hostfiles, a candidate that fails among good ones
    printf '#!/bin/sh\nexit 3\n' > "$work/failing-launcher" && chmod +x "$work/failing-launcher"
    printf '#!/bin/sh\necho "no result here"\n' > "$work/silent-launcher" && chmod +x "$work/silent-launcher"
    printf '#!/bin/sh\nsleep 30\n' > "$work/hanging-launcher" && chmod +x "$work/hanging-launcher"
    expect_error "warm-up run on local '.*failing-launcher -n {np}' failed (exit 3): no output" "$skelgen" predict "$work/skel.mpich" --launcher "$work/failing-launcher -n {np}"
    expect_error "printed no result: no result here" "$skelgen" predict "$work/skel.mpich" --launcher "$work/silent-launcher -n {np}"
    expect_error "timed out after 1 s; killed the launcher (hanging-launcher) and its ranks" "$skelgen" predict "$work/skel.mpich" --launcher "$work/hanging-launcher" --timeout 1
    expect_error "has no {hostfile} to put it in" "$skelgen" predict "$work/skel.mpich" --launcher "mpiexec.mpich -n {np}" --hostfile "$work/inventory.txt"
    expect_error "no-such-hosts: hostfile not readable" "$skelgen" predict "$work/skel.mpich" --hostfile "$work/no-such-hosts"
    printf '[good]\nlauncher = mpiexec.mpich -n {np}\n[bad]\nlauncher = %s -n {np}\n' "$work/failing-launcher" > "$work/candidates.ini"
    # (the skeleton named relative to the current directory: launchers get an absolute path)
    expect_error "skelgen place: bad: warm-up run on bad failed (exit 3)" sh -c 'cd "$1" && "$2" place skel.mpich --candidates candidates.ini -r 1' sh "$work" "$(realpath "$skelgen")"
    [ "$(grep -c '^1 *good ' "$work/out")" = 1 ] || { echo "FAIL: the good candidate is not ranked: $(cat "$work/out")"; fail=1; }
    expect_error "--confirm is for --inventory" "$skelgen" place "$work/skel.mpich" --candidates "$work/candidates.ini" --confirm
    expect_error "--confirm runs the skeleton: give SKELETON" "$skelgen" place --inventory "$work/inventory.txt" --np 2 --comm-share 0.5 --confirm
    expect_error "Slurm is not reachable: SLURM_CONF=$work/no-such.conf: No such file or directory" env SLURM_CONF="$work/no-such.conf" "$skelgen" predict "$work/skel.mpich" --target slurm
    # Slurm configured but its controller not running (a port nothing listens on)
    printf 'ClusterName=none\nSlurmctldHost=localhost\nSlurmctldPort=9\nAuthType=auth/none\nNodeName=localhost\nPartitionName=p Nodes=localhost\n' > "$work/slurm.conf"
    if command -v scontrol > /dev/null; then
      expect_error "Slurm is not reachable" env SLURM_CONF="$work/slurm.conf" timeout 120 "$skelgen" predict "$work/skel.mpich" --target slurm
    else
      expect_error "scontrol not found in PATH" "$skelgen" predict "$work/skel.mpich" --target slurm
    fi
  fi
fi
[ $fail = 0 ] && echo "cli errors: all rejected cleanly"
exit $fail
