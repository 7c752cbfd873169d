#!/usr/bin/env python3
"""The skeleton at K = 1 computes where the application computed, as long.

usage: check_computation.py SKELGEN APP.skm SKEL.skm
       check_computation.py --expect-fail SKELGEN APP.skm SKEL.skm

APP.skm is the application's merged trace, SKEL.skm the merged trace of its
skeleton's own traced run (K = 1: every loop runs as traced). Merging puts
each rank's calls in one canonical order, so the two hold every rank's calls
in the same order (check_roundtrip.py checks the calls; here their number
and functions must agree). Each call's computation gap is read by thread CPU
time where the trace has it (ranks sharing cores), else by the wall clock.

At each of a rank's long gaps in the application (at least LONG_S: real
work, which no call is moved across), the skeleton's gap at the same call
is compared with the application's, as a factor of the rank's median such
factor (the skeleton's kernel may run a little faster or slower than the
calibration said, on the whole run alike). Two checks:
- the phases: where a rank's long gaps fall into heavy ones (at least
  SPREAD times the rank's median long gap) and light ones, the median heavy
  gap over the median light one must be the application's within CONTRAST;
- every gap: at least SHARE of the long gaps within TOLERANCE.
A skeleton that computes each loop position's mean (no phase tables) for
NPB BT's backward stages, heavier than the forward ones by rank
(tests/apps/sweeps.c), evens heavy and light gaps out and fails;
--expect-fail turns the verdict round, for that control.

A program whose long gaps are all alike is not a test of this: where no
rank has heavy gaps, that is an error here.
"""
import json
import statistics
import subprocess
import sys

LONG_S = 100e-6
SPREAD = 1.5
CONTRAST = 0.25
TOLERANCE = 0.35
SHARE = 0.8


def per_rank_gaps(skelgen, merged):
    """Each rank's (function, gap in s) in the merged trace's order."""
    out = subprocess.run([skelgen, "dump", merged, "--format", "jsonl"], check=True, capture_output=True,
                         text=True).stdout
    ranks = {}
    for line in out.splitlines():
        e = json.loads(line)
        if "ranks" not in e:  # the header
            continue
        cpu = e.get("cpu_gap") or []
        by_cpu = any(cpu)
        for i, r in enumerate(e["ranks"]):
            ranks.setdefault(r, []).append((e["func"], cpu[i] if by_cpu else e["gap"][i]))
    return ranks


def main(argv):
    expect_fail = "--expect-fail" in argv
    args = [a for a in argv[1:] if a != "--expect-fail"]
    if len(args) != 3:
        sys.exit(__doc__.split("\n\n")[1])
    skelgen, app_path, skel_path = args
    app, skel = per_rank_gaps(skelgen, app_path), per_rank_gaps(skelgen, skel_path)
    if sorted(app) != sorted(skel):
        sys.exit(f"FAIL: ranks differ: application {sorted(app)}, skeleton {sorted(skel)}")
    off_total, long_total, phased, contrast_ok = 0, 0, 0, True
    for r in sorted(app):
        a, s = app[r], skel[r]
        if [f for f, _ in a] != [f for f, _ in s]:
            sys.exit(f"FAIL: rank {r}: the skeleton's calls are not the application's ({len(s)} against {len(a)})")
        at = [i for i, (_, g) in enumerate(a) if g >= LONG_S]
        if not at:
            continue
        factors = [s[i][1] / a[i][1] for i in at]
        scale = statistics.median(factors)
        off = [i for i, f in zip(at, factors) if abs(f / scale - 1) > TOLERANCE]
        off_total += len(off)
        long_total += len(at)
        line = f"rank {r}: {len(at)} long gaps, skeleton x{scale:.2f}, {len(off)} off by more than {TOLERANCE:.0%}"
        typical = statistics.median(a[i][1] for i in at)
        heavy = [i for i in at if a[i][1] >= SPREAD * typical]
        light = [i for i in at if a[i][1] < SPREAD * typical]
        if heavy:
            phased += 1
            want = statistics.median(a[i][1] for i in heavy) / statistics.median(a[i][1] for i in light)
            got = statistics.median(s[i][1] for i in heavy) / statistics.median(s[i][1] for i in light)
            good = abs(got / want - 1) <= CONTRAST
            contrast_ok &= good
            line += (f"; {len(heavy)} heavy gaps: x{want:.2f} the light ones in the application, "
                     f"x{got:.2f} in the skeleton{'' if good else ' (FAIL)'}")
        print(line)
    if not phased:
        sys.exit(f"ERROR: no rank has long gaps {SPREAD}x its median: not a test of computation that differs by phase")
    share_ok = off_total <= (1 - SHARE) * long_total
    verdict = (f"phases {'kept' if contrast_ok else 'NOT kept'} on {phased} rank(s); "
               f"{long_total - off_total} of {long_total} long gaps within {TOLERANCE:.0%} (need {SHARE:.0%})")
    if (contrast_ok and share_ok) == expect_fail:
        sys.exit(("FAIL: " if not expect_fail else "FAIL: the control passed: ") + verdict)
    print(("ok: " if not expect_fail else "ok, the control fails as it must: ") + verdict)

if __name__ == "__main__":
    main(sys.argv)
