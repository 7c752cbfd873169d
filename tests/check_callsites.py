#!/usr/bin/env python3
"""Traces tests/apps/callsites.c at stack depth 1 and 3 and checks its call sites.

usage: check_callsites.py SKELGEN LAUNCHER_WORDS... -- APP WORKDIR
Events per rank: Init, Allreduce (from first_caller), Allreduce (from
second_caller), 3 x Allreduce (loop), Finalize.
"""
import json
import os
import shutil
import subprocess
import sys


def trace(skelgen, launcher, app, out, depth):
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([skelgen, "trace", "-q", "--stack-depth", str(depth), "-o", out, "--", *launcher, app],
                   check=True, stdout=subprocess.DEVNULL)
    dump = subprocess.run([skelgen, "dump", out, "--format", "jsonl"], check=True, capture_output=True, text=True)
    ranks = {}
    for line in dump.stdout.splitlines():
        ev = json.loads(line)
        ranks.setdefault(ev["rank"], []).append(ev["callsite"])
    return ranks


def main():
    args = sys.argv[1:]
    sep = args.index("--")
    skelgen, launcher = args[0], args[1:sep]
    app, work = args[sep + 1], args[sep + 2]
    errors = []
    name = os.path.basename(app)
    for depth in (1, 3):
        ranks = trace(skelgen, launcher, app, os.path.join(work, f"depth{depth}"), depth)
        sites = ranks[0]
        if len(sites) != 7:
            errors.append(f"depth {depth}: {len(sites)} events on rank 0, expected 7")
            continue
        for r, s in ranks.items():
            if s != sites:
                errors.append(f"depth {depth}: rank {r} call sites {s} differ from rank 0 {sites}")
        if not all(s.startswith(name + "+0x") for s in sites):
            errors.append(f"depth {depth}: call sites not in {name}: {sites}")
        if not (sites[3] == sites[4] == sites[5]):
            errors.append(f"depth {depth}: one statement in a loop gave several sites: {sites[3:6]}")
        if sites[1] == sites[3]:
            errors.append(f"depth {depth}: two statements share a site: {sites[1]}")
        frames = sites[1].count("<") + 1
        if depth == 1:
            if sites[1] != sites[2]:
                errors.append(f"depth 1: one statement gave two sites: {sites[1]} {sites[2]}")
            if frames != 1:
                errors.append(f"depth 1: {frames} frames in {sites[1]}")
        else:
            if sites[1] == sites[2]:
                errors.append(f"depth 3: calls from two callers share a site: {sites[1]}")
            if frames != 3:
                errors.append(f"depth 3: {frames} frames in {sites[1]}, expected 3")
            if sites[1].split("<")[0] != sites[2].split("<")[0]:
                errors.append(f"depth 3: innermost frames differ: {sites[1]} {sites[2]}")
    for e in errors:
        print(e)
    print(f"call sites: {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
