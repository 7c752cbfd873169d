#!/usr/bin/env python3
"""A dynamic master-worker farm's skeleton hands out the tasks as the application does.

usage: check_farm.py [--time] [--spin] [--workers-poll] SKELGEN FLAVOR NP WORK TASKS APP [APP ARGS...]

The farm test programs (tests/apps/farm.c, farm2.c, farm3.c) take TASKS as their first
argument; rank 0 is the master, every other rank a worker. Checked against
what the program does, not against our own outputs:
  1. skelgen generate finds the farm: master 0, NP - 1 workers, TASKS tasks;
     all of them kept at K = 1, every 10th (at least 4 per worker) at K = 10;
  2. both skeletons complete, and the K = 1 one traced again answers
     TASKS + NP - 1 requests on rank 0 (each worker its tasks and a stop),
     each worker receiving as many answers as it sent requests (plus a seed
     where the program sends one unasked); sends are MPI_Send or MPI_Isend,
     receives MPI_Recv or MPI_Irecv, as the application made them: the
     skeleton makes the application's kind (the program's own log names
     them), and completes every request it makes; with --spin (a master
     that spins on MPI_Test, computing nothing between its tests) it
     waits instead of polling (merge leaves spinning polls out,
     docs/merge.md "Spinning polls"): MPI_Wait, and no MPI_Test; with
     --workers-poll (workers that poll for their task with MPI_Iprobe and
     on their result's MPI_Issend with MPI_Test, sleeping between polls,
     as mpi4py.futures' do) the skeleton's workers poll for their task
     with MPI_Iprobe and wait for their result's send: MPI_Wait, no MPI_Test;
  3. with one worker (rank 1) stopped 80 % of the time (tests/throttle.py),
     the application gives it fewer tasks than the others (the premise),
     and so must the skeleton (its
     SKELGEN_FARM_REPORT line): a skeleton that replayed one run's shares
     would not. Open MPI with 4 ranks or more only (MPICH runs 2 ranks here).
  4. with --time (a farm whose workers sleep in their tasks: its gaps hold
     little CPU time, and on ranks sharing cores the tracer measures CPU
     time): the K = 1 skeleton's own time and the K = 10 one's prediction
     are within 0.7-1.5 times the application's untraced time (median of 3
     each). A skeleton that computed the CPU time and did not sleep ran
     0.004 s for a 0.36 s application.
"""
import math
import os
import re
import subprocess
import sys
from collections import Counter


def launcher(flavor, np):
    if flavor == "mpich":
        return ["mpiexec.mpich", "-n", str(np)]
    return ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-n", str(np)]


THROTTLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "throttle.py")


def mpmd_slow_rank1(flavor, np, argv):
    """rank 0, rank 1 at a fifth of the time (tests/throttle.py), the others: one MPMD launch."""
    if flavor == "mpich":
        head = ["mpiexec.mpich"]
    else:
        head = ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe"]
    cmd = head + ["-n", "1"] + argv + [":", "-n", "1", sys.executable, THROTTLE, "0.2"] + argv
    if np > 2:
        cmd += [":", "-n", str(np - 2)] + argv
    return cmd


def run(cmd, timeout=300, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if p.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(cmd)} exited {p.returncode}:\n{p.stderr[-2000:]}")
    return p.stdout


def farm_line(text):
    m = re.search(r"farm:\s+master rank (\d+), (\d+) workers: (\d+) of (\d+) tasks", text)
    if not m:
        raise SystemExit("FAIL: skelgen generate found no farm:\n" + text)
    return tuple(int(x) for x in m.groups())


SENDS = ("MPI_Send", "MPI_Isend", "MPI_Issend")
RECVS = ("MPI_Recv", "MPI_Irecv", "MPI_Mrecv")


def traced_calls(skelgen, trace):
    """Per rank: Counter of its functions, with "made" (requests created) and "completed" (requests completed)."""
    import json
    out = run([skelgen, "dump", trace, "--format", "jsonl"])
    calls = {}
    for line in out.splitlines():
        ev = json.loads(line)
        if ev.get("type") == "rank_info":
            continue
        c = calls.setdefault(ev["rank"], Counter())
        c[ev["func"]] += 1
        c["made"] += ev.get("request") is not None
        c["completed"] += len(ev.get("completed") or [])
    return calls


NONBLOCKING = ("MPI_Isend", "MPI_Irecv", "MPI_Waitany", "MPI_Iprobe", "MPI_Test")


def check_kinds(app, skel, np, spin=False, workers_poll=False):
    """The skeleton's ranks make the non-blocking calls (and polls) the application's did, and complete every request.

    An MPI_Issend counts as the MPI_Isend the skeleton makes. spin: the application's polls were spinning
    ones, which the skeleton makes as one MPI_Wait each. workers_poll: the workers' MPI_Test polls on their
    result's send are an MPI_Wait in the skeleton (it polls for the task with MPI_Iprobe, as they did)."""
    for r in range(np):
        kinds = NONBLOCKING + ("MPI_Wait",) if spin or (workers_poll and r > 0) else NONBLOCKING
        want = {f for f in kinds if app[r][f] or (f == "MPI_Isend" and app[r]["MPI_Issend"])}
        if (spin or (workers_poll and r > 0)) and "MPI_Test" in want:
            want = (want - {"MPI_Test"}) | {"MPI_Wait"}
        got = {f for f in kinds if skel[r][f]}
        if want != got:
            raise SystemExit(f"FAIL: rank {r}: the application calls {sorted(want)}, the skeleton {sorted(got)}")
        if skel[r]["made"] != skel[r]["completed"]:
            raise SystemExit(f"FAIL: rank {r} of the skeleton made {skel[r]['made']} requests and completed "
                             f"{skel[r]['completed']}")


def app_tasks(log_dir, np):
    """Per worker: the tasks the application gave it (its requests, less the first, seeds aside:
    a worker asks once more than it gets tasks, or as often where it was sent its first unasked)."""
    tasks = {}
    for r in range(1, np):
        with open(os.path.join(log_dir, f"rank-{r}.log")) as f:
            lines = f.read().splitlines()
        sends = sum(1 for line in lines if line.startswith(tuple(f + " " for f in SENDS)))
        first = next(line for line in lines if line.startswith(tuple(f + " " for f in SENDS + RECVS)))
        tasks[r] = sends - 1 if first.startswith(tuple(f + " " for f in SENDS)) else sends
    return tasks


def check_times(skelgen, flavor, np, app, skels):
    """Check 4: the skeletons take as long as the application, sleeps included."""
    out = run([skelgen, "time", "-r", "3", "--"] + launcher(flavor, np) + app)
    m = re.search(r"SKELGEN_APP runs=\d+ min_s=\S+ median_s=(\S+)", out)
    if not m:
        raise SystemExit("FAIL: no SKELGEN_APP line:\n" + out)
    app_s = float(m.group(1))
    for K, key in ((1, "measured_s"), (10, "predicted_s")):
        got = []
        for _ in range(3):
            res = run(launcher(flavor, np) + [skels[K]], timeout=120)
            r = re.search(key + r"=(\S+)", res)
            if not r:
                raise SystemExit(f"FAIL: K = {K}: no {key} in:\n{res}")
            got.append(float(r.group(1)))
        s = sorted(got)[1]
        print(f"K = {K}: skeleton {key} {s:.4f} s (runs {got}), application {app_s:.4f} s: {s / app_s:.2f}x")
        if not 0.7 <= s / app_s <= 1.5:
            raise SystemExit(f"FAIL: K = {K}: the skeleton's {key} is {s / app_s:.2f} times the application's time")


def main():
    flags = []
    while len(sys.argv) > 1 + len(flags) and sys.argv[1 + len(flags)] in ("--time", "--spin", "--workers-poll"):
        flags.append(sys.argv[1 + len(flags)])
    timed, spin, workers_poll = "--time" in flags, "--spin" in flags, "--workers-poll" in flags
    argv = [sys.argv[0]] + sys.argv[1 + len(flags):]
    if len(argv) < 7:
        print(__doc__)
        return 2
    skelgen, flavor, np, work, tasks = argv[1], argv[2], int(argv[3]), argv[4], int(argv[5])
    app = argv[6:]
    os.makedirs(work, exist_ok=True)
    trace = os.path.join(work, "trace")
    run([skelgen, "trace", "-q", "--force", "-o", trace, "--"] + launcher(flavor, np) + app)
    workers = np - 1
    skels = {}
    for K in (1, 10):
        src = os.path.join(work, f"skel{K}.c")
        text = run([skelgen, "generate", trace, "-K", str(K), "-o", src])
        master, nw, kept, total = farm_line(text)
        want_kept = total if K == 1 else min(total, max(math.ceil(total / K), 4 * workers))
        if (master, nw, total, kept) != (0, workers, tasks, want_kept):
            raise SystemExit(f"FAIL: K = {K}: found master {master}, {nw} workers, {kept} of {total} tasks; "
                             f"want master 0, {workers} workers, {want_kept} of {tasks}")
        exe = os.path.join(work, f"skel{K}")
        run([skelgen, "build", src, "--mpi", flavor, "--cflags", "-Werror", "-o", exe])
        out = run(launcher(flavor, np) + [exe], timeout=120)
        if "SKELGEN_RESULT" not in out:
            raise SystemExit(f"FAIL: K = {K}: no result line:\n{out}")
        skels[K] = exe
        print(f"K = {K}: farm found, {kept} of {total} tasks kept; the skeleton completes")

    # 2. the K = 1 skeleton, traced: every task and every stop answered, each worker answered as often as it asked
    strace = os.path.join(work, "skel_trace")
    run([skelgen, "trace", "-q", "--force", "-o", strace, "--"] + launcher(flavor, np) + [skels[1]])
    calls = traced_calls(skelgen, strace)
    check_kinds(traced_calls(skelgen, trace), calls, np, spin, workers_poll)
    answers = sum(calls[0][f] for f in SENDS)
    if answers != tasks + workers:
        raise SystemExit(f"FAIL: the skeleton's master answered {answers} times, want {tasks + workers}")
    got = 0
    for r in range(1, np):  # the skeleton sends an answer in one message, whatever the application's
        asked, answered = sum(calls[r][f] for f in SENDS), sum(calls[r][f] for f in RECVS)
        if answered - asked not in (0, 1) or answered < 1:
            raise SystemExit(f"FAIL: worker {r} sent {asked} requests and received {answered} answers")
        got += answered
    if got != answers:
        raise SystemExit(f"FAIL: the workers received {got} answers, the master sent {answers}")
    print(f"K = 1 traced: {answers} answers = {tasks} tasks + {workers} stops, every worker answered per request")
    if timed:
        check_times(skelgen, flavor, np, app, skels)

    # 3. work follows the messages
    if flavor != "openmpi" or np < 4:
        print("slow-worker check: not run (needs Open MPI and 4 ranks or more)")
        return 0
    # median of three runs each
    def slow_share(shares):
        return shares[1] / (sum(shares[r] for r in range(2, np)) / (np - 2))

    app_runs = []
    for k in range(3):
        logs = os.path.join(work, f"applog{k}")
        os.makedirs(logs, exist_ok=True)
        run(mpmd_slow_rank1(flavor, np, app), env=dict(os.environ, APPLOG_DIR=logs))
        app_runs.append(app_tasks(logs, np))
    print(f"application, rank 1 at a fifth of the time: tasks per worker {app_runs}")
    app_share = sorted(slow_share(s) for s in app_runs)[1]
    if not app_share < 0.75:
        raise SystemExit(f"FAIL: in the application itself the slowed worker got {app_share:.2f} of the others' tasks "
                         "(median of 3): the premise of this check does not hold here")
    skel_runs = []
    for k in range(3):
        out = run(mpmd_slow_rank1(flavor, np, [skels[1]]), env=dict(os.environ, SKELGEN_FARM_REPORT="1"), timeout=120)
        m = re.search(r"SKELGEN_FARM farm=0 .* done=(\S+)", out)
        if not m:
            raise SystemExit("FAIL: no SKELGEN_FARM line:\n" + out)
        done = {int(a): int(b) for a, b in (x.split(":") for x in m.group(1).split(","))}
        if sum(done.values()) != tasks:
            raise SystemExit(f"FAIL: the skeleton's workers did {sum(done.values())} tasks, want {tasks}")
        skel_runs.append(done)
    print(f"skeleton K = 1, rank 1 at a fifth of the time: tasks per worker {skel_runs}")
    skel_share = sorted(slow_share(s) for s in skel_runs)[1]
    if not skel_share < 0.75:
        raise SystemExit(f"FAIL: the slowed worker got {skel_share:.2f} of the others' tasks (median of 3; the "
                         f"application: {app_share:.2f}): the skeleton does not hand out tasks as they are asked for")
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
