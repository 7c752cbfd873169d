#!/bin/bash
# skelgen predict on a .c builds SKEL.<mpi> only when no up-to-date build
# is there: one whose build record (SKEL.<mpi>.skelgen-build) holds the
# source's SHA-256, the MPI, the compiler and the executable's own SHA-256.
# The compilers are wrappers in PATH that count their calls and run the
# real ones; the launcher is a stand-in that prints a result line.
#   - first predict builds (1 call), the second reuses (still 1; the same
#     inode and mtime), and says which on stderr;
#   - touching the source (same bytes, newer) reuses; other bytes with an
#     old mtime (older than the executable) rebuild;
#   - another MPI builds SKEL.openmpi beside it, and SKEL.mpich is still
#     reused after;
#   - an executable changed after its build, an executable or a record that
#     is a symlink, another MPICH_CC: rebuilt, and nothing written through
#     the symlinks;
#   - -q: nothing on stderr;
#   - skelgen build's output (SKEL, with its record): predict reuses it.
#   run_predict_reuse_test.sh SKELGEN TRACE_DIR WORK
set -euo pipefail
skelgen=$1 trace=$2 work=$3
rm -rf "$work" && mkdir -p "$work/bin"
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v mpicc.mpich > /dev/null || { echo "mpicc.mpich not installed: skipped"; exit 77; }
for cc in mpicc.mpich mpicc.openmpi; do
  real=$(command -v "$cc") || continue
  printf '#!/bin/sh\necho "$0 $*" >> "%s/cc.log"\nexec %s "$@"\n' "$work" "$real" > "$work/bin/$cc"
  chmod +x "$work/bin/$cc"
done
export PATH=$work/bin:$PATH
printf '#!/bin/sh\necho "SKELGEN_RESULT measured_s=0.1 predicted_s=1.0 scale=10"\n' > "$work/launch.sh"
chmod +x "$work/launch.sh"
"$skelgen" generate "$trace" -K 10 -o "$work/skel.c" -q > /dev/null
exe=$work/skel.mpich rec=$work/skel.mpich.skelgen-build
calls() { [ -f "$work/cc.log" ] && grep -c . "$work/cc.log" || echo 0; }
id_of() { stat -c '%i %Y.%y' "$1"; }
predict() {  # predict NAME ARGS...: stderr in $work/NAME.err
  local name=$1
  shift
  "$skelgen" predict "$work/skel.c" --launcher "$work/launch.sh {exe}" -r 1 --warmup 0 "$@" > "$work/$name.out" 2> "$work/$name.err" ||
    { cat "$work/$name.err"; fail "$name: predict failed"; }
}
expect() {  # expect NAME CALLS LINE
  [ "$(calls)" = "$2" ] || { cat "$work/cc.log"; fail "$1: $2 compiler calls expected, $(calls) made"; }
  grep -qF "$3" "$work/$1.err" || { cat "$work/$1.err"; fail "$1: no '$3' on stderr"; }
  echo "ok: $1: $(calls) compiler call(s) in all; $(head -1 "$work/$1.err")"
}

predict first --mpi mpich
expect first 1 "skelgen: building $exe for mpich (no executable yet)"
[ -f "$rec" ] && grep -q "^source_sha256 $(sha256sum < "$work/skel.c" | cut -c1-64)$" "$rec" || fail "no build record with the source's SHA-256"
grep -q "^executable_sha256 $(sha256sum < "$exe" | cut -c1-64)$" "$rec" || fail "the record does not hold the executable's SHA-256"
before=$(id_of "$exe")
sleep 1.1  # a rebuild would show in the mtime
predict second --mpi mpich
expect second 1 "skelgen: reusing $exe (built for mpich from this source)"
[ "$(id_of "$exe")" = "$before" ] || fail "the executable was replaced: $before -> $(id_of "$exe")"

touch "$work/skel.c"  # newer, same bytes
predict touched --mpi mpich
expect touched 1 "skelgen: reusing $exe"
echo "/* another byte */" >> "$work/skel.c"
touch -d '2000-01-01' "$work/skel.c"  # other bytes, older than the executable
predict changed --mpi mpich
expect changed 2 "skelgen: building $exe for mpich (the source changed)"

if [ -x "$work/bin/mpicc.openmpi" ]; then
  predict openmpi --mpi openmpi
  expect openmpi 3 "skelgen: building $work/skel.openmpi for openmpi (no executable yet)"
  predict back --mpi mpich
  expect back 3 "skelgen: reusing $exe"
  predict openmpi2 --mpi openmpi
  expect openmpi2 3 "skelgen: reusing $work/skel.openmpi"
fi
n=$(calls)

printf 'x' >> "$exe"
predict tampered --mpi mpich
expect tampered $((n + 1)) "(the executable changed since it was built)"

cp "$exe" "$work/victim" && cp "$rec" "$work/victim-record"
ln -sf "$work/victim" "$exe"  # a symlink to bytes that are up to date: still not run, not written through
predict symlink --mpi mpich
expect symlink $((n + 2)) "(the executable is a symlink)"
[ ! -L "$exe" ] && [ -f "$exe" ] || fail "the symlink was not replaced by the new executable"
cmp -s "$work/victim" "$exe" || fail "the symlink's target was written through"
printf 'precious\n' > "$work/victim-record"
rm "$rec" && ln -s "$work/victim-record" "$rec"
predict record-symlink --mpi mpich
expect record-symlink $((n + 3)) "(the build record is a symlink)"
[ "$(cat "$work/victim-record")" = precious ] || fail "the record was written through a symlink"
[ ! -L "$rec" ] || fail "the record is still a symlink"

MPICH_CC=gcc predict mpich-cc --mpi mpich
expect mpich-cc $((n + 4)) "(MPICH_CC changed)"
MPICH_CC=gcc predict mpich-cc2 --mpi mpich
expect mpich-cc2 $((n + 4)) "skelgen: reusing $exe"

MPICH_CC=gcc "$skelgen" predict "$work/skel.c" --launcher "$work/launch.sh {exe}" -r 2 -q --mpi mpich > /dev/null 2> "$work/quiet.err"
[ ! -s "$work/quiet.err" ] || { cat "$work/quiet.err"; fail "-q: something on stderr"; }
[ "$(calls)" = $((n + 4)) ] || fail "-q: rebuilt"
# skelgen build's own output (the source without .c) with its record: predict runs it, builds nothing
m=$(calls)
MPICH_CC=gcc "$skelgen" build "$work/skel.c" --mpi mpich -q
[ "$(calls)" = $((m + 1)) ] && [ -f "$work/skel.skelgen-build" ] || fail "skelgen build made no build record"
rm -f "$exe" "$rec"
MPICH_CC=gcc predict after-build --mpi mpich
expect after-build $((m + 1)) "skelgen: reusing $work/skel (built for mpich from this source)"
[ ! -e "$exe" ] || fail "predict built $exe although skelgen build's output was up to date"
ls -a "$work" | grep -q '^\.skelgen-' && fail "temporary files left: $(ls -a "$work")"
echo "ok: $(calls) compiler calls for $(ls "$work"/*.err | wc -l) predicts; nothing written through symlinks"
