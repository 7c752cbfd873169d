#!/bin/bash
# npb-scripts/npb-experiment end to end on stand-in NPB binaries (tests/npb/fake_npb.c; NPB itself is
# never in this repository), 2 MPICH ranks:
#   - cg.S.x (40 iterations) goes through every stage: NPB verification SUCCESSFUL untraced and traced, the
#     iterations it reports taken from its output,
#     the main loop found is the program's own (count 40), the skeleton predicts a runtime, the error
#     column is (predicted - original) / original, of the medians of --reps pairs of runs (the original,
#     then the skeleton) and of their minima, the report and the plot are written;
#   - bt (not a square number of ranks) and sp (not built) are skipped with their reason;
#   - is.S.x prints "Verification = UNSUCCESSFUL": reported as failed by its untraced run (the benchmark's
#     doing, not the tracer's), which stops it before the trace; exit status 3;
#   - bad options: one-line errors, exit status 2.
#   run_npb_scripts_test.sh REPO BUILD_DIR FAKE_NPB_DIR WORK
set -euo pipefail
repo=$1 build=$2 npb=$3 work=$4
exp=$repo/npb-scripts/npb-experiment
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }

rc=0
"$exp" --npb-dir "$npb" --class S --np 2 --mpi mpich --benchmarks cg,bt,sp,is --reps 3 --min-seconds 0 --timeout 120 \
  --skelgen "$build/bin/skelgen" --out "$work/out" 2> "$work/stderr" || rc=$?
cat "$work/stderr"
[ $rc = 3 ] || fail "expected exit status 3 (IS failed its verification), got $rc"
python3 - "$work/out" "$build" <<'PY'
import csv, os, sys, xml.dom.minidom
out = sys.argv[1]
rows = {r["benchmark"]: r for r in csv.DictReader(open(f"{out}/results.csv"))}
def check(cond, msg):
    if not cond:
        sys.exit(f"FAIL: {msg}")
cg = rows["CG"]
check(cg["status"] == "ok", f"CG: {cg['status']} {cg['note']}")
check(cg["verification"] == "SUCCESSFUL" and cg["traced_verification"] == "SUCCESSFUL", "CG verification")
# the program's own structure: 40 iterations of Irecv, Send, Wait, Allreduce; Init and Finalize around
check(cg["main_loop_count"] == "40", f"CG main loop count {cg['main_loop_count']} (the program runs 40)")
# the iterations are the ones the benchmark reported ("Iterations = 40"), not NPB 3.4's 15 for CG class S
check(cg["iterations"] == "40", f"CG iterations {cg['iterations']} (the program reports 40)")
check(cg["calls_per_rank_min"] == cg["calls_per_rank_max"] == str(2 + 40 * 4), f"CG calls per rank {cg['calls_per_rank_min']}")
orig, pred, err = float(cg["original_s"]), float(cg["predicted_s"]), float(cg["error_pct"])
check(orig > 0 and pred > 0 and float(cg["skeleton_s"]) > 0, "CG runtimes must be positive")
check(abs(err - 100 * (pred - orig) / orig) < 0.01, f"CG error {err} is not (predicted - original) / original")
# within a factor of 2.5 either way: a skeleton not scaled back by K would be -90 %, one scaled twice
# +900 %. Closer is not this test's to ask: the stand-in's skeleton runs 3 ms, and beside other tests one
# run of 7 ms made the median +73 % (a clean-clone run; accuracy is measured in docs/results/npb.md)
check(-60 < err < 150, f"CG prediction error {err} % is far off")
# three pairs of runs (--reps 3, --min-seconds 0), each original run followed by a skeleton run; three, so
# that the medians stand one run disturbed by the host (two pairs: the mean of two, and one skeleton run of
# 0.061 s against 0.03 s made the error +65 %)
check(cg["runs"] == "3", f"CG runs {cg['runs']} (--reps 3 --min-seconds 0)")
olog = open(f"{out}/work/cg/original.cmd").read().splitlines()
plog = open(f"{out}/work/cg/predict.cmd").read().splitlines()
check(len(olog) == 3 and len(plog) == 3, f"CG: {len(olog)} original and {len(plog)} skeleton runs logged, not 3 and 3")
omin, pmin, emin = float(cg["original_min_s"]), float(cg["predicted_min_s"]), float(cg["error_min_pct"])
check(omin <= orig and pmin <= pred <= float(cg["predicted_max_s"]), "CG minima above medians")
check(abs(emin - 100 * (pmin - omin) / omin) < 0.01, f"CG error of minima {emin}")
# every run kept: the originals' times are the ones skelgen time printed in the log, and the floor (each
# run as the prediction of the median of the others, |error| %, median over the runs) is, for three runs
# a, b, c, the middle one of |a - m_a| / m_a, |b - m_b| / m_b, |c - m_c| / m_c, m_a = (b + c) / 2 etc.
import re
logged = [float(x) for x in re.findall(r"SKELGEN_APP runs=1 min_s=([\d.e+-]+)", open(f"{out}/work/cg/original.out").read())]
runs = [float(x) for x in cg["original_runs_s"].split()]
check(len(logged) == 3 and all(abs(x - y) < 1e-5 for x, y in zip(runs, logged)), f"CG original runs {runs}, logged {logged}")
check(len(cg["predicted_runs_s"].split()) == 3 and abs(sorted(float(x) for x in cg["predicted_runs_s"].split())[0] - pmin) < 1e-5,
      f"CG predicted runs {cg['predicted_runs_s']} (minimum {pmin})")
a, b, c = logged
m_a, m_b, m_c = (b + c) / 2, (a + c) / 2, (a + b) / 2
floor = 100 * sorted([abs(a - m_a) / m_a, abs(b - m_b) / m_b, abs(c - m_c) / m_c])[1]
check(abs(float(cg["one_run_error_pct"]) - floor) < 1e-3 * max(1, floor), f"CG one-run error {cg['one_run_error_pct']}, expected {floor}")
check(float(cg["fold_s"]) >= 0 and float(cg["merge_s"]) >= 0, "CG times")
# merged with skelgen merge --order auto (the default): the merge_order column is the order merge's JSON
# names, and the report's sentence lists the benchmarks merged by alignment
import json
check("--order auto" in open(f"{out}/work/cg/merge.cmd").read(), "CG: merged without --order auto")
merge_json = json.loads(open(f"{out}/work/cg/merge.out").read().strip().splitlines()[-1])
check(cg["merge_order"] == merge_json["order"] and merge_json["order"] in ("walk", "align", "nth"),
      f"CG merge_order '{cg['merge_order']}', merge said '{merge_json['order']}'")
report_text = open(f"{out}/report.md").read()
names = {"align": "by alignment CG, the others by the walk.", "nth": "by each call's count CG, the others by the walk.",
         "walk": "all by the walk."}
check("whichever folds shorter (`skelgen merge --order auto`): " + names[cg["merge_order"]] in report_text,
      "report: the merge order sentence")
# the joined length is what skelgen compress --join-call-sites makes of the same merged trace
import json, subprocess
j = subprocess.run([f"{sys.argv[2]}/bin/skelgen", "compress", f"{out}/work/cg/merged.skm", "-o", f"{out}/j.skf",
                    "--join-call-sites", "--json"], capture_output=True, text=True, check=True).stdout
j = json.loads(j.strip().splitlines()[-1])
check(cg["joined_folded_length"] == str(j["folded_length"]) and cg["joined_main_loop_count"] == str(j["main_loop_count"]),
      f"CG joined length {cg['joined_folded_length']} / loop {cg['joined_main_loop_count']}, compress says {j}")
meta = open(f"{out}/work/cg/skeleton.c").read()
check(f"traced_s={cg['traced_s']}" in meta or abs(float(cg["traced_s"]) - float(meta.split("traced_s=")[1].split()[0])) < 1e-6,
      f"CG traced_s {cg['traced_s']} is not the skeleton's")
# what generate cut, against the skeleton's own header (" *   cut loop 0 (n5): 40 -> 4 iterations, ..."; its
# notes on loops left whole; "expected skeleton time X s")
cuts = " ".join(f"n{n} {a}->{b}" for n, a, b in re.findall(r"^ \*   cut loop \d+ \(n(\d+)\): (\d+) -> (\d+) iterations", meta, re.M))
check(cg["cut"] == (cuts or "none") and cuts.endswith("40->4"), f"CG cut '{cg['cut']}', the skeleton's header says '{cuts}'")
check(cg["loops_not_cut"] == str(len(re.findall(r"^ \* note: loop n\d+ .* is not cut", meta, re.M))), "CG loops not cut")
exp_s = float(re.search(r"expected skeleton time ([\d.e+-]+) s", meta).group(1))
check(abs(float(cg["expected_skeleton_s"]) - exp_s) <= 1e-3 * exp_s, f"CG expected skeleton {cg['expected_skeleton_s']}, header {exp_s}")
check(rows["BT"]["status"] == "skipped" and "square" in rows["BT"]["note"], "BT must be skipped (2 is not square)")
check(rows["SP"]["status"] == "skipped", "SP must be skipped (2 is not square)")
check(rows["IS"]["status"] == "failed" and rows["IS"]["note"].startswith("original run: NPB verification is not "
      "SUCCESSFUL") and "UNSUCCESSFUL" in rows["IS"]["note"], f"IS: {rows['IS']}")
check(not os.path.exists(f"{out}/work/is/traced.cmd"), "IS: traced although its untraced run failed verification")
report = open(f"{out}/report.md").read()
check("| CG | SUCCESSFUL / SUCCESSFUL |" in report, "report: CG row")
check("Folding beside the published figures" in report and "| CG | 40 / 75 |" in report, "report: published CG")
check(f"| {cg['folded_length']} / {cg['joined_folded_length']} | 26 |" in report, "report: CG's lengths per call site / joined")
check("runtime.svg" in report, "report: plot")
check(f"the skeleton ran CG {orig / float(cg['skeleton_s']):.1f}× shorter" in report, "report: the skeleton's length")
check(f"taken as the prediction of its other runs" in report and f"CG {float(cg['one_run_error_pct']):.1f} %" in report,
      "report: the one-run floor")
svg = xml.dom.minidom.parse(f"{out}/runtime.svg")
check(len(svg.getElementsByTagName("circle")) == 1, "plot: one point (CG)")
print("npb-experiment: CSV, report and plot checked")
PY
# --merge-align: the merge is skelgen merge --align, the report says so, the program folds as its own
"$exp" --npb-dir "$npb" --class S --np 2 --mpi mpich --benchmarks cg --reps 1 --min-seconds 0 --timeout 120 \
  --skelgen "$build/bin/skelgen" --merge-align --out "$work/aligned" 2> "$work/aligned.err" \
  || { cat "$work/aligned.err"; fail "--merge-align: exit status not 0"; }
grep -q -- "--order align" "$work/aligned/work/cg/merge.cmd" || fail "--merge-align: merge.cmd has no --order align"
grep -q "Merged by alignment (\`skelgen merge --order align\`)" "$work/aligned/report.md" || fail "--merge-align: the report does not say so"
python3 - "$work/aligned/results.csv" <<'PY'
import csv, sys
r = next(csv.DictReader(open(sys.argv[1])))
if r["status"] != "ok" or r["main_loop_count"] != "40" or r["merge_order"] != "align":
    sys.exit(f"FAIL: --merge-align: CG {r['status']} {r['note']}, main loop count {r['main_loop_count']} (the program "
             f"runs 40), merge order {r['merge_order']}")
PY
# a skelgen whose generate prints no 'cut:' line (another version): the benchmark fails, saying so
cat > "$work/skelgen-nocut" <<WRAP
#!/bin/bash
if [ "\$1" = generate ]; then "$build/bin/skelgen" "\$@" | grep -v '^cut:'; exit "\${PIPESTATUS[0]}"; fi
exec "$build/bin/skelgen" "\$@"
WRAP
chmod +x "$work/skelgen-nocut"
rc=0
"$exp" --npb-dir "$npb" --class S --np 2 --mpi mpich --benchmarks cg --reps 1 --min-seconds 0 --timeout 120 \
  --skelgen "$work/skelgen-nocut" --out "$work/nocut" 2> "$work/nocut.err" || rc=$?
[ $rc = 3 ] || { cat "$work/nocut.err"; fail "generate without a cut line: exit status $rc, expected 3"; }
grep -q "generate printed no 'cut:' line" "$work/nocut/results.csv" || fail "generate without a cut line: no such note"
# the report is rebuilt from the CSV alone
rm "$work/out/report.md" && "$repo/npb-scripts/npb_report.py" "$work/out" > /dev/null
grep -q "| CG | SUCCESSFUL / SUCCESSFUL |" "$work/out/report.md" || fail "npb_report.py did not rebuild the report"
# a skeleton whose loops were all left whole is named, with why (here the CSV says so of CG)
cp -r "$work/out" "$work/whole"
python3 - "$work/whole/results.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for r in rows:
    if r["benchmark"] == "CG":
        r.update(cut="none", loops_not_cut="2")
w = csv.DictWriter(open(sys.argv[1], "w", newline=""), fieldnames=rows[0].keys())
w.writeheader()
w.writerows(rows)
PY
"$repo/npb-scripts/npb_report.py" "$work/whole" > /dev/null
grep -q "Not cut, every loop run as traced: CG (2 loop(s) holding time left whole: their messages cross iterations" \
  "$work/whole/report.md" || fail "npb_report.py did not name the skeleton left whole"

# bad input: one line on stderr, exit status 2, nothing run
expect_error() {  # expect_error PATTERN ARGS...
  local pat=$1; shift
  local rc=0
  "$exp" "$@" > "$work/err.out" 2> "$work/err.txt" || rc=$?
  [ $rc = 2 ] || { cat "$work/err.txt"; fail "'$*': exit status $rc, expected 2"; }
  [ "$(wc -l < "$work/err.txt")" = 1 ] || { cat "$work/err.txt"; fail "'$*': expected one line"; }
  grep -q -- "$pat" "$work/err.txt" || { cat "$work/err.txt"; fail "'$*': expected '$pat'"; }
}
expect_error "no bin/ directory" --npb-dir "$work/nowhere" --class S --np 2 --mpi mpich
expect_error "unknown benchmark 'xx'" --npb-dir "$npb" --class S --np 2 --mpi mpich --benchmarks cg,xx
expect_error "--min-seconds not negative" --npb-dir "$npb" --class S --np 2 --mpi mpich --min-seconds -1
expect_error "no benchmark given" --npb-dir "$npb" --class S --np 2 --mpi mpich --benchmarks ,
expect_error "skelgen not found" --npb-dir "$npb" --class S --np 2 --mpi mpich --skelgen "$work/none"
expect_error "needs --simgrid-npb-dir" --npb-dir "$npb" --class S --np 2 --mpi mpich \
  --skelgen "$build/bin/skelgen" --simgrid "$repo/predict/platforms/homogeneous16.xml"
expect_error "--launcher must contain {np}" --npb-dir "$npb" --class S --np 2 --mpi mpich \
  --skelgen "$build/bin/skelgen" --launcher "mpiexec.mpich -n 2"
# an unknown merge order: argparse's usage, then its one-line error, exit status 2
rc=0
"$exp" --npb-dir "$npb" --class S --np 2 --mpi mpich --merge-order greedy > /dev/null 2> "$work/err.txt" || rc=$?
[ $rc = 2 ] && tail -1 "$work/err.txt" | grep -q "argument --merge-order: invalid choice: 'greedy'" ||
  { cat "$work/err.txt"; fail "--merge-order greedy: exit status $rc"; }

# stopped (Ctrl-C, or SIGTERM from a batch system): the running benchmark's processes go too (they run in a
# session of their own, which the signal does not reach), one line says so, the CSV keeps the benchmark as
# stopped, exit status 128 + the signal. The launcher stands in for a long run: it records its pid, then
# sleeps, and like mpiexec passes a SIGTERM (or SIGINT, SIGHUP) on to what it runs, so that no sleep outlives
# the test.
printf '#!/bin/sh\nsleep 120 &\ntrap '"'"'kill $!; exit 143'"'"' TERM INT HUP\necho $$ > "%s/launcher.pid"\nwait $!\nexec mpiexec.mpich -n "$@"\n' \
  "$work" > "$work/slow-launcher"
chmod +x "$work/slow-launcher"
set -m  # background jobs as from a terminal: a script's `&` would start them with SIGINT ignored
# stop_while_running SIG ERRFILE CMD...: starts CMD, sends SIG once the slow launcher runs, checks that CMD
# exits with 128 + SIG (no traceback on ERRFILE) and that the launcher does not outlive it (a zombie counts
# as gone: it waits for init, not for us)
stop_while_running() {
  local sig=$1 errfile=$2; shift 2
  rm -f "$work/launcher.pid"
  "$@" > /dev/null 2> "$errfile" &
  local pid=$! rc=0 i
  for i in $(seq 100); do [ -s "$work/launcher.pid" ] && break; sleep 0.1; done
  [ -s "$work/launcher.pid" ] || fail "$1, SIG$sig: the launcher never started"
  kill -"$sig" $pid
  wait $pid || rc=$?
  [ $rc = $((128 + $(kill -l "$sig"))) ] || { cat "$errfile"; fail "$1, SIG$sig: exit status $rc"; }
  ! grep -q Traceback "$errfile" || { cat "$errfile"; fail "$1, SIG$sig: a traceback"; }
  for i in $(seq 50); do
    case "$(ps -o stat= -p "$(cat "$work/launcher.pid")" 2> /dev/null)" in "" | Z*) return 0 ;; esac
    sleep 0.1
  done
  fail "$1, SIG$sig: the running launcher was left behind"
}
for sig in INT TERM; do
  stop_while_running $sig "$work/stopped.err" "$exp" --npb-dir "$npb" --class S --np 2 --mpi mpich \
    --benchmarks cg,bt --skelgen "$build/bin/skelgen" --launcher "$work/slow-launcher {np}" --out "$work/stopped"
  tail -1 "$work/stopped.err" | grep -q "stopped by SIG$sig during CG (its runs killed)" ||
    { cat "$work/stopped.err"; fail "SIG$sig: no line saying the experiment stopped"; }
  grep -q "^CG,.*,failed,.*stopped by SIG$sig during its runs" "$work/stopped/results.csv" ||
    { cat "$work/stopped/results.csv"; fail "SIG$sig: the CSV does not say CG was stopped"; }
done
# skelgen predict runs the skeleton in a process group of its own (so that a timeout kills all of it), trace
# and time in skelgen's: told to stop (the signal sent to skelgen alone), each ends the launcher first, says
# so, and dies of the signal
for sig in INT TERM HUP; do
  for cmd in predict trace time; do
    case $cmd in
      predict) args=(predict "$work/out/work/cg/skeleton.mpich" -r 1 --launcher "$work/slow-launcher {np}") ;;
      trace) args=(trace -q --force -o "$work/stopped.trace" --mpi mpich -- "$work/slow-launcher" 2 "$npb/bin/cg.S.x") ;;
      time) args=(time -r 1 --mpi mpich -- "$work/slow-launcher" 2 "$npb/bin/cg.S.x") ;;
    esac
    stop_while_running $sig "$work/$cmd-stopped.err" "$build/bin/skelgen" "${args[@]}"
    grep -q "^skelgen: stopped by SIG$sig; ended slow-launcher and its processes$" "$work/$cmd-stopped.err" ||
      { cat "$work/$cmd-stopped.err"; fail "$cmd, SIG$sig: no line saying it stopped"; }
  done
done
set +m
echo "PASS"

