#!/usr/bin/env python3
"""Round trip of a skeleton through our own tracer.

usage: check_roundtrip.py SKELGEN APP.skm APP.skf SKELETON.c SKEL.skm SKEL.skf [--means]

APP.* are the application's merged trace and folded program, SKEL.* those of
the skeleton's own traced run, SKELETON.c its source (whose header lists the
loops it cut).

Every rank of the skeleton must make the application's calls in the
application's order: function, communicator, root, datatype and every
parameter value of that rank (peer, tag, count, bytes, colour, key, lists).
MPI_Win_start and MPI_Win_complete are compared as the MPI_Win_lock and
MPI_Win_unlock the skeleton makes for them, MPI_Win_post and MPI_Win_wait
left out (REPLAYED_AS). Left out: call sites (the skeleton's calls live in its own lines), which
created communicator a call uses (symbol numbers follow the merge's order;
members are checked where the call reports them), the source
a wildcard receive matched (timing decides it) and the order inside a
communication step (consecutive point-to-point calls, which merging orders
by its own rule and the skeleton may reorder against deadlock), and with it
the `forwards` flag of the step's sends (it follows that order). With K = 1
every loop of at least 4 iterations of the application's folded program must
be found (by iteration count) in the skeleton's (the merge may interleave
calls of disjoint ranks differently, which folds short loops differently);
with loops
cut, every rank's sequence of functions must be the application's with each
cut loop run its reduced number of times.
--means (K = 1, a program whose message counts the skeleton sends as their
mean, docs/compress.md): point-to-point counts and bytes are left out of the
comparison call by call; instead each rank's bytes sent, summed over the
run, must be the application's within 5 % (a node's mean over its instances
keeps their sum, but for its rounding; a node may send to several peers and
tags, so the sum per peer and tag is not kept).
"""
import json
import re
import subprocess
import sys

P2P = {"MPI_Send", "MPI_Ssend", "MPI_Bsend", "MPI_Rsend", "MPI_Isend", "MPI_Issend", "MPI_Ibsend", "MPI_Irsend",
       "MPI_Recv", "MPI_Irecv", "MPI_Sendrecv", "MPI_Sendrecv_replace", "MPI_Wait", "MPI_Waitall", "MPI_Waitany",
       "MPI_Waitsome", "MPI_Test", "MPI_Testall", "MPI_Testany", "MPI_Testsome", "MPI_Probe", "MPI_Iprobe"}


# General active target synchronisation as the skeleton replays it (its groups
# are not traced, docs/generate.md): each access epoch a lock of the rank's own
# window, the exposure epochs left out (None).
REPLAYED_AS = {"MPI_Win_start": "MPI_Win_lock", "MPI_Win_complete": "MPI_Win_unlock", "MPI_Win_post": None,
               "MPI_Win_wait": None}


def replayed(func):
    return REPLAYED_AS.get(func, func)


def dump(skelgen, path):
    out = subprocess.run([skelgen, "dump", path, "--format", "jsonl"], check=True, capture_output=True,
                         text=True).stdout
    return [json.loads(l) for l in out.splitlines()]


def without_forwards(c):
    """A call without its forwards parameter: whether a send follows the
    receive that filled its buffer depends on the order inside the step,
    which is left out (the merge's rule orders a ring's sends before its
    receives, and the skeleton may reorder them)."""
    if len(c) < 5:  # functions only
        return c
    func, comm, root, dtype, params = c
    return (func, comm, root, dtype, tuple(p for p in params if p[0] != "forwards"))


def steps(calls):
    """Consecutive point-to-point calls compared as a multiset."""
    out, step = [], []
    for c in calls:
        if c[0] in P2P:
            step.append(without_forwards(c))
            continue
        if step:
            out.append(("step", tuple(sorted(step, key=repr))))
            step = []
        out.append(c)
    if step:
        out.append(("step", tuple(sorted(step, key=repr))))
    return out


SENDS = {"MPI_Send", "MPI_Ssend", "MPI_Bsend", "MPI_Rsend", "MPI_Isend", "MPI_Issend", "MPI_Ibsend", "MPI_Irsend"}


def sent_bytes(events):
    """Per rank: the bytes of its point-to-point sends over the run."""
    out = {}
    for e in events:
        if e.get("func") not in SENDS or "ranks" not in e:
            continue
        sizes = e.get("params", {}).get("bytes", [])
        for i, r in enumerate(e["ranks"]):
            b = sizes[i] if i < len(sizes) else 0
            out[r] = out.get(r, 0) + (b if isinstance(b, (int, float)) else 0)
    return out


def per_rank_calls(events, means=False):
    ranks = {}
    for e in events:
        if "func" not in e or "ranks" not in e or replayed(e["func"]) is None:
            continue
        for i, r in enumerate(e["ranks"]):
            params = []
            for k, v in sorted(e.get("params", {}).items()):
                if k in ("req_sources", "reqrefs", "new_comm") or (k == "peer" and e.get("any_source")):
                    continue
                if means and e["func"] in P2P and k in ("count", "bytes"):
                    continue
                params.append((k, json.dumps(v[i])))
            comm = e.get("comm")
            comm = comm if comm in (None, 0, 1) else "created"  # symbol numbers follow the merge's order
            call = (replayed(e["func"]), comm, e.get("root"), e.get("dtype"), tuple(params))
            ranks.setdefault(r, []).append(call)
    return ranks


def folded(records):
    prog = next(o for o in records if o["type"] == "program")
    symbols = {o["symbol"]: o for o in records if o["type"] == "symbol"}
    nodes = {o["node"]: o for o in records if o["type"] == "node"}
    return prog, symbols, nodes


def functions_per_rank(prog, symbols, nodes, counts):
    seq = {}

    def walk(ids):
        for i in ids:
            n = nodes[i]
            if "body" in n:
                for _ in range(counts.get(i, n["count"])):
                    walk(n["body"])
            else:
                s = symbols[n["symbol"]]
                if replayed(s["func"]) is None:
                    continue
                for r in s["ranks"]:
                    seq.setdefault(r, []).append((replayed(s["func"]),))

    walk(prog["top"])
    return seq


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    skelgen, app_skm, app_skf, skel_c, skel_skm, skel_skf = sys.argv[1:7]
    means = "--means" in sys.argv[7:]
    cut = {}
    with open(skel_c) as f:
        for line in f:
            m = re.match(r"\s*\*\s+cut loop \d+ \(n(\d+)\): (\d+) -> (\d+) iterations", line)
            if m:
                cut[int(m.group(1))] = int(m.group(3))
    app_f, skel_f = folded(dump(skelgen, app_skf)), folded(dump(skelgen, skel_skf))
    for n in cut:
        if n not in app_f[2] or "body" not in app_f[2][n]:
            fail(f"cut loop n{n} is not a loop of {app_skf}")
    if cut:
        want, got = functions_per_rank(*app_f, cut), functions_per_rank(*skel_f, {})
        what = "functions"
    else:
        app_events, skel_events = dump(skelgen, app_skm), dump(skelgen, skel_skm)
        want, got = per_rank_calls(app_events, means), per_rank_calls(skel_events, means)
        if means:
            a, b = sent_bytes(app_events), sent_bytes(skel_events)
            for r in sorted(a):
                n, m = a[r], b.get(r, 0)
                if abs(m - n) > 0.05 * max(n, 1):
                    fail(f"rank {r} sent {m} bytes, the application {n}")
        what = "calls with their parameters"
        if means:
            what += " (counts as means: each rank's bytes sent within 5 %)"
        loops = lambda f: sorted(n["count"] for n in f[2].values() if "body" in n)
        big = [c for c in loops(app_f) if c >= 4]  # its main loops, each found in the skeleton's program
        rest = loops(skel_f)
        for c in big:
            # c, or c - 1: where ranks run a loop's calls in another interleaving, the merge
            # (by time) can rotate the loop, so one iteration shows as calls before and after it
            if c not in rest and c - 1 not in rest:
                fail(f"the application's loop of {c} iterations is missing: application {loops(app_f)}, "
                     f"skeleton {loops(skel_f)}")
            rest.remove(c if c in rest else c - 1)
    total = compare_ranks(want, got, "the application", "the skeleton")
    print(f"ok: {total} calls over {len(want)} ranks: the application's {what}; {len(cut)} loop(s) cut")


def compare_ranks(want, got, first, second):
    """Every rank's calls (per_rank_calls) the same, step by step; returns
    how many calls were compared."""
    if sorted(want) != sorted(got):
        fail(f"ranks differ: {first} {sorted(want)}, {second} {sorted(got)}")
    total = 0
    for r in sorted(want):
        a, b = steps(want[r]), steps(got[r])
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                fail(f"rank {r}, call/step {i}: {first} makes\n  {x}\n{second} makes\n  {y}")
        if len(a) != len(b):
            fail(f"rank {r}: {len(a)} calls/steps expected, {second} made {len(b)}")
        total += len(want[r])
    return total


if __name__ == "__main__":
    main()
