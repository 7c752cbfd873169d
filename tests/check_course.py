#!/usr/bin/env python3
"""The skeleton's computation follows the application's through the run.

usage: check_course.py SKELGEN APP_TRACE SKEL_TRACE [PARTS]
       check_course.py --drifts SKELGEN APP_TRACE [PARTS]   (exit 0 if some rank drifts, 3 if none)

Both arguments are trace directories (skelgen trace) of the same ranks: the
application's and its skeleton's own traced run. For each rank, its calls
are split into PARTS (default 8) equal parts in order and the computation
gaps summed per part, as a factor of the rank's mean part: the course of its
computation through the run, measured from the two traces alone. Only the
main loop counts: the calls from the first to the last of the rank's most
frequent call site (computation outside a cut loop runs once at any K, so
at K = 10 it weighs ten times more in the skeleton's course: rank 0 of
jacobi2d computes 2 % of its run before MPI_Comm_free, 20 % of the K = 10
skeleton's). A trace
taken with the thread CPU gap clock (SKELTRACE_GAP_CLOCK=cpu) is read by its
CPU gaps: the work done, without the time the host took the core away (run
the skeleton so, and a hiccup of the machine in one part of a 0.1 s run
cannot fail it; the application's own course is what the skeleton was made
from, noise included). Where the
application's course drifts (its parts spread over at least 0.4 of its mean
with the one farthest from the mean left out: one part alone is a hiccup of
the host), the
skeleton's must follow it: correlation at least 0.8 with the application's,
and the parts within 0.2 of it on average. A skeleton that computes its mean
gap all through the run has a flat course, and fails. A program whose
computation does not drift is not a test of this: that is an error here.
"""
import json
import subprocess
import sys


def course(skelgen, trace, parts):
    out = subprocess.run([skelgen, "dump", trace, "--format", "jsonl"], check=True, capture_output=True,
                         text=True).stdout
    gaps, cpu, sites = {}, {}, {}
    for line in out.splitlines():
        e = json.loads(line)
        if "rank" in e and "gap" in e:
            gaps.setdefault(e["rank"], []).append(e["gap"])
            cpu.setdefault(e["rank"], []).append(e.get("cpu_gap"))  # None: not read (format 2.2)
            sites.setdefault(e["rank"], []).append(e.get("callsite"))
    for r, cs in sites.items():  # the main loop: first to last call of the most frequent call site
        top = max(set(cs), key=lambda c: (cs.count(c), -cs.index(c)))
        first, last = cs.index(top), len(cs) - 1 - cs[::-1].index(top)
        gaps[r], cpu[r] = gaps[r][first + 1:last + 1], cpu[r][first + 1:last + 1]
    if any(c is not None for v in cpu.values() for c in v):  # a CPU-clock trace: the work, not the wall time
        # a gap without cpu_gap was short and not interrupted: its CPU time is its wall time
        gaps = {r: [g if c is None else c for g, c in zip(gaps[r], cpu[r])] for r in gaps}
    res = {}
    for r, g in gaps.items():
        s = [0.0] * parts
        for i, x in enumerate(g):
            s[i * parts // len(g)] += x
        total = sum(s)
        res[r] = [x / total * parts for x in s] if total > 0 else [1.0] * parts
    return res


def correlation(a, b):
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    va = sum((x - ma) ** 2 for x in a) ** 0.5
    vb = sum((y - mb) ** 2 for y in b) ** 0.5
    return cov / (va * vb) if va > 0 and vb > 0 else 0.0


def spread(parts):
    """The parts' spread with the one farthest from the mean left out (one part alone is a hiccup)."""
    rest = sorted(parts, key=lambda x: abs(x - 1))[:-1]
    return max(rest) - min(rest)


DRIFT = 0.4  # a rank drifts where its spread is at least this


def main():
    if len(sys.argv) in (4, 5) and sys.argv[1] == "--drifts":
        app = course(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) == 5 else 8)
        sys.exit(0 if any(spread(a) >= DRIFT for a in app.values()) else 3)
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    skelgen, app_trace, skel_trace = sys.argv[1:4]
    parts = int(sys.argv[4]) if len(sys.argv) == 5 else 8
    app, skel = course(skelgen, app_trace, parts), course(skelgen, skel_trace, parts)
    if sorted(app) != sorted(skel):
        sys.exit(f"FAIL: ranks differ: application {sorted(app)}, skeleton {sorted(skel)}")
    failed, drifting = False, 0
    for r in sorted(app):
        a, s = app[r], skel[r]
        # drifting: the parts spread over at least 0.4 with the one farthest from the mean left out. One
        # part alone is a hiccup of the host in the application's traced run (rank 0 of jacobi2d at 1.69 in
        # one part, twice in a row on 2026-11-22), which no skeleton built from loop means follows, and
        # none should. (Two parts 30 % off, the rule before, missed a rank going 0.69 ... 1.30 by a hair.)
        spread_a = spread(a)
        c = correlation(a, s)
        mad = sum(abs(x - y) for x, y in zip(a, s)) / parts
        verdict = "not drifting"
        if spread_a >= DRIFT:
            drifting += 1
            verdict = "ok" if c >= 0.8 and mad <= 0.2 else "FAIL"
            failed |= verdict == "FAIL"
        print(f"rank {r}: application {' '.join(f'{x:.2f}' for x in a)}")
        print(f"rank {r}: skeleton    {' '.join(f'{x:.2f}' for x in s)}  correlation {c:.2f}, "
              f"mean difference {mad:.2f} (spread {spread_a:.2f}): {verdict}")
    if not drifting:
        sys.exit("FAIL: the application's computation does not drift: no test of the course")
    if failed:
        sys.exit("FAIL: the skeleton's computation does not follow the application's through the run")
    print(f"ok: {drifting} drifting rank(s) followed")


if __name__ == "__main__":
    main()
