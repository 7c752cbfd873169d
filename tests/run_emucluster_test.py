#!/usr/bin/env python3
"""Tests of tools/emucluster (docs/emucluster.md).

  run_emucluster_test.py config EMUCLUSTER WORKDIR
      malformed cluster files, unknown placements and rank-count mismatches
      are refused with one line (FILE:LINE: reason where a line is at fault);
      the plan (CPU and quota per rank) against hand-computed values.
  run_emucluster_test.py run EMUCLUSTER WORKDIR [MPICH_LAUNCHER]
      real runs (needs a writable cgroup v1 cpu controller, i.e. root; exits
      77 = skipped otherwise): 4 Open MPI ranks of a probe that reads, from
      inside each rank, its cpu cgroup and CPU affinity and measures its CPU
      share while it spins; each rank must be in its node's cgroup, pinned as
      planned, and a 40 % rank must get clearly less CPU than a 100 % one; the
      cgroups are gone afterwards, also after a SIGTERM in the middle of a run.
      With MPICH (2 ranks, PMI_RANK) the same placement check.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time

PROBE = r'''
import json, os, sys, time
rank = next(os.environ[v] for v in ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK") if v in os.environ)
cg = [l.rstrip("\n").split(":", 2)[2] for l in open("/proc/self/cgroup") if "cpu" in l.split(":")[1].split(",")]
mount = next(l.split()[1] for l in open("/proc/self/mounts") if l.split()[2] == "cgroup" and "cpu" in l.split()[3].split(","))
knobs = {k: int(open(os.path.join(mount, cg[0].lstrip("/"), "cpu." + k)).read()) for k in ("cfs_quota_us", "cfs_period_us", "shares")}
spin = float(sys.argv[2])
t0, c0 = time.monotonic(), time.process_time()
while time.monotonic() - t0 < spin:
    pass
share = (time.process_time() - c0) / (time.monotonic() - t0)
with open(os.path.join(sys.argv[1], "rank-%s.json" % rank), "w") as f:
    json.dump({"rank": int(rank), "cgroup": cg[0], "cpus": sorted(os.sched_getaffinity(0)), "share": share, "knobs": knobs}, f)
'''

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


GOOD = """# a small emulated cluster
[cluster]
cpus = 0-1
period_us = 10000
weight = 16384
[node fast]
speed = 100
[node mid]
speed = 70 %
[node slow]
speed = 40
[placement mixed]
ranks = fast, fast, slow, slow
[placement two]
ranks = fast slow
[placement tilted]
ranks = slow mid fast fast
"""


def test_config(emu, work):
    good = write(os.path.join(work, "good.ini"), GOOD)
    r = run([emu, "show", good, "--placement", "mixed"])
    check(r.returncode == 0, f"show a good file (exit {r.returncode}: {r.stderr.strip()})")
    rows = [l.split() for l in r.stdout.splitlines() if re.match(r"^\d", l)]
    # 4 ranks on 2 CPUs: a 100 % rank gets 0.5 CPU = 5000 us of a 10000 us period; 40 %: 2000 us;
    # each rank on the least loaded CPU so far (0, 1, 0, 1)
    want = [["0", "fast", "100%", "0", "5000"], ["1", "fast", "100%", "1", "5000"],
            ["2", "slow", "40%", "0", "2000"], ["3", "slow", "40%", "1", "2000"]]
    check([row[:5] for row in rows] == want, f"plan of 'mixed' is {want} (got {[row[:5] for row in rows]})")
    r = run([emu, "show", good, "--placement", "tilted"])
    rows = [l.split() for l in r.stdout.splitlines() if re.match(r"^\d", l)]
    # slow 0.2 -> cpu0; mid 0.35 -> cpu1; fast 0.5 -> cpu0 (0.2 < 0.35); fast 0.5 -> cpu1 (0.35 < 0.7)
    check([(row[3], row[4]) for row in rows] == [("0", "2000"), ("1", "3500"), ("0", "5000"), ("1", "5000")],
          f"plan of 'tilted' balances the quotas over the CPUs (got {[(row[3], row[4]) for row in rows]})")
    r = run([emu, "show", good, "--placement", "two"])
    rows = [l.split() for l in r.stdout.splitlines() if re.match(r"^\d", l)]
    check([row[4] for row in rows] == ["10000", "4000"], "2 ranks on 2 CPUs: a 100 % rank gets a whole CPU")
    auto = write(os.path.join(work, "auto.ini"), GOOD.replace("period_us = 10000", "period_us = auto"))
    r = run([emu, "show", auto, "--placement", "tilted"])
    rows = [l.split() for l in r.stdout.splitlines() if re.match(r"^\d", l)]
    # period auto: each rank's quota at the kernel's 1000 us minimum, period = 1000 / share
    check([(row[4], row[5]) for row in rows] == [("1000", "5000"), ("1000", "2858"), ("1000", "2000"),
                                                 ("1000", "2000")],
          f"period auto: quota 1000 us, period 1000 us / share (got {[(row[4], row[5]) for row in rows]})")

    bad = {
        "unknown key": ("[node a]\nspeed = 50\nfast = 1\n[placement p]\nranks = a\n", 3, "unknown key 'fast'"),
        "speed out of range": ("[node a]\nspeed = 150\n[placement p]\nranks = a\n", 2, "speed must be"),
        "speed not a number": ("[node a]\nspeed = fast\n[placement p]\nranks = a\n", 2, "speed must be"),
        "unknown node": ("[node a]\nspeed = 50\n[placement p]\nranks = a b\n", 4, "unknown node 'b'"),
        "key before section": ("speed = 50\n[node a]\nspeed = 50\n", 1, "before any section"),
        "bad section": ("[nodes a]\nspeed = 50\n", 1, "bad section"),
        "node twice": ("[node a]\nspeed = 50\n[node a]\nspeed = 60\n", 3, "node 'a' twice"),
        "key twice": ("[node a]\nspeed = 50\nspeed = 60\n", 3, "'speed' twice"),
        "no speed": ("[node a]\ncpus = 0\n[placement p]\nranks = a\n", 1, "has no speed"),
        "bad cpus": ("[cluster]\ncpus = 0-x\n[node a]\nspeed = 50\n[placement p]\nranks = a\n", 2, "bad CPU list"),
        "bad period": ("[cluster]\nperiod_us = 50\n[node a]\nspeed = 50\n[placement p]\nranks = a\n", 2,
                       "period_us must be"),
        "not key=value": ("[node a]\nspeed 50\n", 2, "expected 'key = value'"),
        "bad weight": ("[cluster]\nweight = 1\n[node a]\nspeed = 50\n[placement p]\nranks = a\n", 2,
                       "weight must be"),
        "empty placement": ("[node a]\nspeed = 50\n[placement p]\n", 3, "has no ranks"),
    }
    for what, (text, line, reason) in bad.items():
        path = write(os.path.join(work, "bad.ini"), text)
        r = run([emu, "check", path])
        lines = r.stderr.strip().splitlines()
        ok = (r.returncode == 2 and len(lines) == 1 and lines[0].startswith(f"emucluster: error: {path}:{line}: ")
              and reason in lines[0])
        check(ok, f"refuses a cluster file with {what} at line {line} (exit {r.returncode}: {r.stderr.strip()})")

    r = run([emu, "check", os.path.join(work, "missing.ini")])
    check(r.returncode == 2 and "cannot read" in r.stderr, "refuses a missing cluster file")
    # more rank quota than a CPU has
    tiny = write(os.path.join(work, "tiny.ini"),
                 "[cluster]\nperiod_us = 1000\n[node a]\nspeed = 10\n[placement p]\nranks = a a a a\n")
    r = run([emu, "show", tiny])
    check(r.returncode == 1 and "below the kernel's minimum" in r.stderr, "refuses a quota below 1000 us")
    over = write(os.path.join(work, "over.ini"),
                 "[cluster]\ncpus = 0\nrank_share = 1\n[node a]\nspeed = 100\n[placement p]\nranks = a a\n")
    r = run([emu, "show", over])
    check(r.returncode == 1 and "quotas could not all be met" in r.stderr, "refuses quotas a CPU cannot meet")

    launcher = ["mpirun.openmpi", "--oversubscribe", "-n"]
    r = run([emu, "run", good, "--placement", "nosuch"] + launcher + ["4", "--", "true"])
    check(r.returncode == 2 and "unknown placement 'nosuch'" in r.stderr and len(r.stderr.splitlines()) == 1,
          f"refuses an unknown placement ({r.stderr.strip()})")
    r = run([emu, "run", good, "--placement", "mixed"] + launcher + ["2", "--", "true"])
    check(r.returncode == 2 and "has 4 ranks but the launcher starts 2" in r.stderr,
          f"refuses a rank count other than the placement's ({r.stderr.strip()})")
    r = run([emu, "run", good, "--placement", "mixed"] + launcher + ["4", "true"])
    check(r.returncode == 2 and "no '--' before the program" in r.stderr, "refuses a command without '--'")
    r = run([emu, "run", good] + launcher + ["4", "--", "true"])
    check(r.returncode == 2 and "say which with --placement" in r.stderr, "asks for a placement when there are several")
    r = run([emu, "run", good, "-p", "mixed"] + launcher + ["4", "--", "true"],
            env=dict(os.environ, SKELGEN_EMU_CGROUP_ROOT=os.path.join(work, "no-cgroup")))
    check(r.returncode == 1 and "not a cgroup v1 cpu controller" in r.stderr and len(r.stderr.splitlines()) == 1,
          f"refuses where there is no cgroup v1 cpu controller ({r.stderr.strip()})")


def cgroup_base():
    for line in open("/proc/self/mounts"):
        f = line.split()
        if f[2] == "cgroup" and "cpu" in f[3].split(","):
            rel = "/"
            for l in open("/proc/self/cgroup"):
                _, ctrls, p = l.rstrip("\n").split(":", 2)
                if "cpu" in ctrls.split(","):
                    rel = p
            return os.path.join(f[1], rel.lstrip("/"))
    return None


def ours(base):
    return sorted(d for d in os.listdir(base) if d.startswith("skelgen-emu-"))


def test_run(emu, work, mpich):
    base = cgroup_base()
    if base is None or not os.access(base, os.W_OK) or not os.path.isfile(os.path.join(base, "cpu.cfs_quota_us")):
        print(f"SKIP: no writable cgroup v1 cpu controller ({base}); emucluster needs root")
        sys.exit(77)
    if len(os.sched_getaffinity(0)) < 2:
        print("SKIP: needs 2 CPUs")
        sys.exit(77)
    good = write(os.path.join(work, "good.ini"), GOOD)
    probe = write(os.path.join(work, "probe.py"), PROBE)
    before = ours(base)
    out = os.path.join(work, "ompi")
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        os.unlink(os.path.join(out, f))
    ompi = ["mpirun.openmpi", "--oversubscribe", "-n", "4"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    r = run([emu, "run", good, "--placement", "mixed"] + ompi + ["--", sys.executable, probe, out, "2.0"],
            timeout=120)
    check(r.returncode == 0, f"Open MPI run (exit {r.returncode}: {r.stderr.strip()[-300:]})")
    ranks = {}
    for f in os.listdir(out):
        d = json.load(open(os.path.join(out, f)))
        ranks[d["rank"]] = d
    check(sorted(ranks) == [0, 1, 2, 3], f"every rank reported ({sorted(ranks)})")
    nodes = ["fast", "fast", "slow", "slow"]
    cpus = [0, 1, 0, 1]
    for r_, d in sorted(ranks.items()):
        print(f"     rank {r_}: cgroup {d['cgroup']} cpus {d['cpus']} CPU share {d['share']:.3f}")
        check(re.fullmatch(rf"/?(.*/)?skelgen-emu-\d+-{nodes[r_]}/rank-{r_}", d["cgroup"]) is not None,
              f"rank {r_} ran in its node's cgroup ({nodes[r_]}/rank-{r_}; got {d['cgroup']})")
        check(d["cpus"] == [cpus[r_]], f"rank {r_} was pinned to CPU {cpus[r_]} (got {d['cpus']})")
        want = {"cfs_quota_us": [5000, 5000, 2000, 2000][r_], "cfs_period_us": 10000, "shares": 16384}
        check(d["knobs"] == want, f"rank {r_}'s cgroup has quota, period and weight {want} (got {d['knobs']})")
    if len(ranks) == 4:
        fast = min(ranks[0]["share"], ranks[1]["share"])
        slow = max(ranks[2]["share"], ranks[3]["share"])
        # quotas 0.5 and 0.2 CPU. Without them, ranks sharing a CPU get equal shares (ratio 1). Wide margins:
        # the machine may be busy (a fast rank then gets less than its quota; the weight of 16384 keeps the
        # ranks ahead of plain processes: at 1024, under a load of 8, the fast ranks got 0.26), a slow one
        # never gets more.
        check(slow <= 0.2 * 1.15, f"a 40 % rank got at most its quota of 0.2 CPU (+15 %): {slow:.3f}")
        check(fast / max(slow, 1e-9) >= 1.6,
              f"a 100 % rank got >= 1.6 times the CPU of a 40 % rank (quotas: 2.5 times): {fast / max(slow, 1e-9):.2f}")
    after = ours(base)
    check(after == before, f"the cgroups were removed after the run (left: {sorted(set(after) - set(before))})")

    # SIGTERM in the middle: the job ends and the cgroups go
    p = subprocess.Popen([emu, "run", good, "--placement", "mixed"] + ompi +
                         ["--", sys.executable, probe, out, "30"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(ours(base)) < len(before) + 2:
        time.sleep(0.1)
    made = sorted(set(ours(base)) - set(before))
    check(len(made) == 2, f"while running: a cgroup per node of the placement ({made})")
    # wait until the ranks are in their cgroups, then stop emucluster alone
    while time.monotonic() < deadline and sum(
            len(open(os.path.join(base, m, d, "cgroup.procs")).read().split())
            for m in made for d in os.listdir(os.path.join(base, m)) if d.startswith("rank-")) < 4:
        time.sleep(0.1)
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    try:
        _, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        _, err = p.communicate()
    check(p.returncode == 128 + signal.SIGTERM, f"stopped by SIGTERM: exit 143 (got {p.returncode}: {err.strip()[-200:]})")
    check(time.monotonic() - t0 < 20, f"it stopped in {time.monotonic() - t0:.1f} s, not after the 30 s probe")
    check(ours(base) == before, f"the cgroups were removed after SIGTERM (left: {sorted(set(ours(base)) - set(before))})")

    if mpich:
        out = os.path.join(work, "mpich")
        os.makedirs(out, exist_ok=True)
        r = run([emu, "run", good, "--placement", "two", mpich, "-n", "2", "--", sys.executable, probe, out, "0.5"],
                timeout=120)
        check(r.returncode == 0, f"MPICH run (exit {r.returncode}: {r.stderr.strip()[-300:]})")
        for r_, node in enumerate(["fast", "slow"]):
            try:
                d = json.load(open(os.path.join(out, f"rank-{r_}.json")))
            except OSError:
                d = {"cgroup": "none", "cpus": []}
            check(re.fullmatch(rf"/?(.*/)?skelgen-emu-\d+-{node}/rank-{r_}", d["cgroup"]) is not None,
                  f"MPICH rank {r_} ran in {node}/rank-{r_} (got {d['cgroup']})")
            check(d["cpus"] == [r_], f"MPICH rank {r_} was pinned to CPU {r_} (got {d['cpus']})")
        check(ours(base) == before, "the cgroups were removed after the MPICH run")


def main():
    mode, emu, work = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
    os.makedirs(work, exist_ok=True)
    if mode == "config":
        test_config(emu, work)
    else:
        test_run(emu, work, sys.argv[4] if len(sys.argv) > 4 else None)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
