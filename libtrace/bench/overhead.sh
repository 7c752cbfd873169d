#!/bin/bash
# Tracer overhead benchmark (figures recorded in docs/results/performance.md).
# Alternates untraced and traced runs of pingpong on 2 MPICH ranks, REPS
# times, and prints min and median of:
#   added latency per call = (traced - untraced round trip) / 2
#     (per round trip, two calls' tracer work lies on the critical path:
#      the receiver's bookkeeping after its Recv and before its Send)
#   added cost per MPI_Iprobe (a call that never waits)
#   bytes per event on disk of the traced runs
# usage: overhead.sh BUILD_DIR [REPS] [ROUNDTRIPS]
set -euo pipefail
source "$(dirname "$0")/../../common/bench/lib.sh"
build=$1 reps=${2:-7} n=${3:-200000}
pingpong=$(bench_built "$build" bench/pingpong)
lib=$(bench_built "$build" lib/libskeltrace-mpich.so)
sk=$(bench_built "$build" bin/skelgen)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
declare -a lat iprobe bpe
for ((r = 0; r < reps; ++r)); do
  plain=$(mpiexec.mpich -n 2 "$pingpong" "$n")
  traced=$(mpiexec.mpich -genv LD_PRELOAD "$lib" -genv SKELTRACE_DIR "$work/t$r" -n 2 "$pingpong" "$n")
  read -r p_rt p_ip < <(sed -E 's/.*=([0-9.]+) .*=([0-9.]+)/\1 \2/' <<< "$plain")
  read -r t_rt t_ip < <(sed -E 's/.*=([0-9.]+) .*=([0-9.]+)/\1 \2/' <<< "$traced")
  lat+=("$(awk -v a="$t_rt" -v b="$p_rt" 'BEGIN {print (a - b) / 2}')")
  iprobe+=("$(awk -v a="$t_ip" -v b="$p_ip" 'BEGIN {print a - b}')")
  summary=$("$sk" dump "$work/t$r" --format jsonl | wc -l)
  bytes=$(cat "$work/t$r"/rank-*.skt | wc -c)
  bpe+=("$(awk -v a="$bytes" -v b="$summary" 'BEGIN {print a / b}')")
  printf 'rep %d: round trip %.0f -> %.0f ns, iprobe %.1f -> %.1f ns, %d events, %.2f bytes/event\n' \
    "$r" "$p_rt" "$t_rt" "$p_ip" "$t_ip" "$summary" "${bpe[-1]}"
  rm -rf "$work/t$r"
done
stats() { printf '%s\n' "$@" | bench_min_median_max | awk '{printf "min %.1f median %.1f", $1, $2}'; }
echo "added latency per call (ns):  $(stats "${lat[@]}")"
echo "added cost per MPI_Iprobe (ns): $(stats "${iprobe[@]}")"
echo "bytes per event on disk:        $(stats "${bpe[@]}")"
