#!/usr/bin/env python3
"""Compare the calls of each thread of an application's trace with a skeleton's.

usage: check_thread_calls.py SKELGEN APP_TRACE_DIR SKEL_TRACE_DIR

For a K = 1 skeleton of an MPI_THREAD_MULTIPLE program: on every rank, the
thread that initialised MPI (number 0) must make the application's first
thread's calls, and the other threads, taken in the order of their numbers,
the application's other threads' calls, in order: the same functions with the
same peers, tags, counts and roots. The numbers themselves may differ (the
skeleton starts a watchdog thread, the MPI threads of its own), and a number
may stand for several threads one after the other: the tracer gives a
finished thread's number to the next one started, so where one skeleton
thread ended before the next began, its number holds both threads' calls.
Where the thread counts differ, each skeleton number's calls must then be
application threads' calls, whole and in turn, every application thread used
once. Exits 1 with one line per mismatch (at most 10 per rank).
"""
import json
import subprocess
import sys
from collections import defaultdict

KEYS = ("func", "peer", "peer2", "tag", "tag2", "count", "count2", "root")


def streams(skelgen, trace_dir):
    dump = subprocess.run([skelgen, "dump", trace_dir, "--format", "jsonl"], capture_output=True, text=True)
    if dump.returncode != 0:
        sys.exit(f"skelgen dump {trace_dir} failed: {dump.stderr.strip()}")
    out = defaultdict(lambda: defaultdict(list))  # rank -> thread number -> calls
    for line in dump.stdout.splitlines():
        ev = json.loads(line)
        if "func" in ev:
            out[ev["rank"]][ev.get("thread", 0)].append(tuple(ev.get(k) for k in KEYS))
    return {r: [t[n] for n in sorted(t)] for r, t in out.items()}


def threads_in_turn(app_threads, skel_numbers):
    """Whether each skeleton number's calls are application threads' calls,
    whole and one after another, every application thread used once."""
    unused = list(app_threads)
    for calls in skel_numbers:
        at = 0
        while at < len(calls):
            match = next((t for t in unused if t and calls[at:at + len(t)] == t), None)
            if match is None:
                return False
            unused.remove(match)
            at += len(match)
    return not unused


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    skelgen, app_dir, skel_dir = sys.argv[1:]
    app, skel = streams(skelgen, app_dir), streams(skelgen, skel_dir)
    failures = checked = 0
    for rank in sorted(app):
        errs = []
        a, s = app[rank], skel.get(rank, [])
        if len(a) != len(s) and a and s and a[0] == s[0] and threads_in_turn(a[1:], s[1:]):
            checked += sum(len(t) for t in a)
            continue
        if len(a) != len(s):
            errs.append(f"{len(a)} threads made calls in the application, {len(s)} in the skeleton")
        for k, (ta, ts) in enumerate(zip(a, s)):
            checked += len(ta)
            if len(ta) != len(ts):
                errs.append(f"thread {k}: {len(ta)} calls in the application, {len(ts)} in the skeleton")
            for i, (ca, cs) in enumerate(zip(ta, ts)):
                if ca != cs:
                    errs.append(f"thread {k} call {i}: application {ca}, skeleton {cs}")
                    break
        for e in errs[:10]:
            print(f"rank {rank}: {e}")
        failures += len(errs)
    print(f"checked {checked} calls of {len(app)} ranks' threads: {failures} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
