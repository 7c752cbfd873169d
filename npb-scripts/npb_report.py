#!/usr/bin/env python3
"""The tables and the plot of an NPB experiment (npb-experiment writes them after every benchmark).

  OUT/results.csv     one row per benchmark (columns: CSV_COLUMNS, meanings in docs/npb.md)
  OUT/report.md       the results, and the published figures beside ours (those of the method's NPB runs)
  OUT/runtime.svg     predicted against actual runtime, log-log, with the y = x line
  OUT/experiment.json the options and the command, so that the report can be rebuilt

Rebuild the report and plot of an existing experiment:  npb-scripts/npb_report.py OUT
"""
import csv
import datetime
import html
import io
import json
import math
import os
import platform
import subprocess
import sys

CSV_COLUMNS = ["benchmark", "class", "ranks", "mpi", "target", "scale", "status", "verification",
               "traced_verification", "calls_per_rank_min", "calls_per_rank_max", "merged_length", "merge_s",
               "merge_order",
               "symbols", "folded_length", "loops", "main_loop_body", "main_loop_count", "compression_ratio", "fold_s",
               "joined_folded_length", "joined_main_loop_body", "joined_main_loop_count", "joined_fold_s",
               "iterations", "runs", "original_s", "original_min_s", "skeleton_s", "predicted_s", "predicted_min_s",
               "predicted_max_s", "error_pct", "error_min_pct", "traced_s", "traced_run_s", "one_run_error_pct",
               "original_runs_s", "predicted_runs_s", "expected_skeleton_s", "cut", "loops_not_cut", "note"]

# The method's published NPB figures: class C on 16 ranks, events per rank -> folded length, main loop (body) x count.
PUBLISHED_FOLD = {
    "BT": (17111, 44, 15, 200),
    "CG": (41954, 26, 12, 75),
    "LU": (324355, 38, 7, 249),
    "MG": (10043, 302, 134, 20),
    "SP": (26891, 43, 15, 400),
}
PUBLISHED_CLASS = "C"
# The method's published prediction error at K = 10.
PUBLISHED_ERROR_PCT = {"homogeneous": 3.0, "heterogeneous": 10.0}
# Main-loop iterations of NPB 3.4 per class (the benchmarks' own npbparams), where the published figures exist:
# class C's is the published run's; the others stand in only for a CSV without the `iterations` column (the
# count NPB itself printed, written since 2026-11-22).
ITERATIONS = {
    "BT": {"S": 60, "W": 200, "A": 200, "B": 200, "C": 200},
    "CG": {"S": 15, "W": 15, "A": 15, "B": 75, "C": 75},
    "LU": {"S": 50, "W": 300, "A": 250, "B": 250, "C": 250},
    "MG": {"S": 4, "W": 4, "A": 4, "B": 20, "C": 20},
    "SP": {"S": 100, "W": 400, "A": 400, "B": 400, "C": 400},
}
FOLD_TIME_TARGET_S = 0.2
ERROR_TARGET_PCT = 3.0


def _num(v):
    if v in (None, ""):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return v
    return int(f) if f.is_integer() and "." not in str(v) and "e" not in str(v).lower() else f


def read_csv(path):
    with open(path, newline="") as f:
        return [{k: _num(v) if k not in ("benchmark", "class", "mpi", "target", "status", "verification",
                                          "traced_verification", "original_runs_s", "predicted_runs_s", "cut", "note") else v
                 for k, v in r.items()} for r in csv.DictReader(f)]


def write_file(path, text):
    """Writes text to path whole or not at all (a new file renamed over the old one): an experiment
    stopped while it writes keeps the previous version."""
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        f.write(text)
    os.replace(tmp, path)


def write_csv(path, rows):
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if r.get(k) is None else
                        f"{r[k]:.6g}" if isinstance(r.get(k), float) else r.get(k, "")) for k in CSV_COLUMNS})
    write_file(path, buf.getvalue())


def _given(v):
    return v not in (None, "")


def _f(v, fmt):
    return format(v, fmt) if _given(v) else ""


def _pct(v):
    return f"{v:+.1f} %" if _given(v) else ""


def _main_loop(r, prefix=""):
    """'(body)×count' of the folding whose columns start with prefix ('' or 'joined_'); 'none' if it has
    no loop, '—' if the row has no such folding (a CSV from before the joined columns)."""
    if not _given(r.get(prefix + "folded_length")):
        return "—"
    if not _given(r.get(prefix + "main_loop_body")):
        return "none"
    return f"({r[prefix + 'main_loop_body']})×{r[prefix + 'main_loop_count']}"


def machine_line():
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    return f"{platform.node()}, {os.cpu_count()} cores{', ' + cpu if cpu else ''}, {platform.system()} " \
           f"{platform.release()}"


def skelgen_revision(root):
    try:
        return subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def scale_lines(ok, meta):
    """How much shorter each skeleton ran than its benchmark (original s / skeleton s, the medians), and the
    skeletons whose loops were not cut at all, with why (skelgen generate's summary: the cut and loops_not_cut
    columns; none in a CSV from before 2026-11-22)."""
    ratios = [(r["benchmark"], r["original_s"] / r["skeleton_s"]) for r in ok
              if _given(r.get("skeleton_s")) and r["skeleton_s"] > 0 and _given(r.get("original_s"))]
    if not ratios:
        return []
    line = (f"- Skeleton length (K = {meta['scale']}): the skeleton ran "
            + ", ".join(f"{b} {x:.1f}×" for b, x in ratios) + " shorter than the benchmark (original s / skeleton s).")
    whole = [r for r in ok if r.get("cut") == "none"]
    if whole:
        line += " Not cut, every loop run as traced: " + ", ".join(
            f"{r['benchmark']} ({r['loops_not_cut']} loop(s) holding time left whole: their messages cross "
            f"iterations; `work/{r['benchmark'].lower()}/generate.err`)" if _given(r.get("loops_not_cut"))
            and r["loops_not_cut"] > 0 else f"{r['benchmark']} (no loop of more than two iterations holds its time)"
            for r in whole) + "."
    return [line]


def merge_order_sentence(rows, meta):
    """How the benchmarks were merged: skelgen merge's order, and (auto) which it chose where."""
    asked = meta.get("merge_order") or ("align" if meta.get("merge_align") else "walk")  # before 2026-11-22: no auto
    if asked == "align":
        return " Merged by alignment (`skelgen merge --order align`)."
    if asked == "walk":
        return " Merged by the look-ahead walk (`skelgen merge --order walk`)." if "merge_order" in meta else ""
    if asked == "nth":
        return " Merged by each call's count (`skelgen merge --order nth`)."
    by = {how: [r["benchmark"] for r in rows if r.get("status") == "ok" and r.get("merge_order") == how]
          for how in ("align", "nth")}
    chosen = [f"by {name} {', '.join(by[how])}" for how, name in (("align", "alignment"), ("nth", "each call's count"))
              if by[how]]
    return (" Merged by the look-ahead walk, by alignment or by each call's count, whichever folds shorter "
            "(`skelgen merge --order auto`): "
            + (f"{'; '.join(chosen)}, the others by the walk." if chosen else "all by the walk."))


def report_md(rows, meta):
    ok = [r for r in rows if r.get("status") == "ok"]
    simgrid = meta.get("simgrid")
    kind = "heterogeneous" if simgrid and "hetero" in os.path.basename(simgrid) else "homogeneous"
    if simgrid:
        how = (f"Original runtime: the benchmark itself simulated on `{os.path.basename(simgrid)}` (smpirun, SimGrid "
               f"build of NPB). Prediction: the K = {meta['scale']} skeleton, simulated on the same platform and "
               f"hosts, median of {meta['reps']} runs (`skelgen predict`).")
    elif "min_seconds" in meta:
        how = (f"Original runtime: the benchmark run untraced here (`skelgen time`). Prediction: the "
               f"K = {meta['scale']} skeleton run right after each run of the original (`skelgen predict`). Runs: "
               f"such pairs, at least {meta['reps']} and more while the originals add up to less than "
               f"{meta['min_seconds']:g} s; medians (error) and minima (error of the minima) are compared.")
    else:  # an experiment from before the pairs (2026-11-21): the runs one after the other
        how = (f"Original runtime: the benchmark run untraced here, median of {meta['reps']} (`skelgen time`). "
               f"Prediction: the K = {meta['scale']} skeleton, run here, median of {meta['reps']} runs "
               "(`skelgen predict`).")
    out = [f"# {meta.get('title') or 'NPB class %s, %d ranks, %s' % (meta['cls'], meta['np'], meta['mpi'])}", "",
           f"Command: `{meta['command']}`  ",
           f"Date: {meta['date']}; skelgen {meta['revision']}; machine: {meta['machine']}  ",
           how
           + " Times are the slowest rank's MPI_Init to MPI_Finalize."
           + (" Folded with call sites joined (`skelgen compress --join-call-sites`)." if meta.get("join_call_sites")
              else "")
           + merge_order_sentence(rows, meta), "",
           "| benchmark | verification (original / traced) | calls per rank (min–max) | merged length | merge s | "
           "folded length | main loop | compression | fold s | runs | original s | traced s | skeleton s | predicted s | "
           "error | error (minima) |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("status") != "ok":
            out.append(f"| {r['benchmark']} | {r.get('status')}: {r.get('note', '')} |" + " |" * 14)
            continue
        out.append(
            f"| {r['benchmark']} | {r['verification']} / {r['traced_verification']} | "
            f"{r['calls_per_rank_min']:,}–{r['calls_per_rank_max']:,} | {r['merged_length']:,} | "
            f"{_f(r['merge_s'], '.2g')} | {r['folded_length']} | {_main_loop(r)} | "
            f"{_f(r['compression_ratio'], '.1f')} | {_f(r['fold_s'], '.2g')} | {_f(r.get('runs'), 'd')} | "
            f"{_f(r['original_s'], '.3f')} | {_f(r.get('traced_s'), '.3f')} | {_f(r['skeleton_s'], '.3f')} | {_f(r['predicted_s'], '.3f')} | "
            f"{_pct(r['error_pct'])} | {_pct(r.get('error_min_pct'))} |")
    out += ["", "Traced s: the traced run's own runtime (tracer included), the run the skeleton replays. "
            "Compression = merged length / folded length. Main loop = the loop covering the most calls: "
            "(folded length of its body) × iterations.", ""]
    if ok:
        errs = [abs(r["error_pct"]) for r in ok]
        within = sum(e <= ERROR_TARGET_PCT for e in errs)
        mins = [abs(r["error_min_pct"]) for r in ok if _given(r.get("error_min_pct"))]
        folds = [r["fold_s"] for r in ok] + [r["joined_fold_s"] for r in ok if _given(r.get("joined_fold_s"))]
        replays = [(r["benchmark"], 100.0 * (r["predicted_s"] - r["traced_s"]) / r["traced_s"]) for r in ok
                   if _given(r.get("traced_s")) and r["traced_s"] > 0]
        out += ["## Against the targets and the published figures", "",
                f"- Prediction error: mean |error| {sum(errs) / len(errs):.1f} %, largest {max(errs):.1f} %; "
                f"{within} of {len(errs)} within {ERROR_TARGET_PCT:g} %. Published ({kind}, K = 10): within "
                f"{PUBLISHED_ERROR_PCT[kind]:g} %."
                + (f" Of the minima: mean |error| {sum(mins) / len(mins):.1f} %, "
                   f"{sum(e <= ERROR_TARGET_PCT for e in mins)} of {len(mins)} within {ERROR_TARGET_PCT:g} %."
                   if mins and not simgrid else ""),
                f"- Fold time: largest {max(folds):.3f} s (target ≤ {FOLD_TIME_TARGET_S} s per benchmark)."]
        out += scale_lines(ok, meta)
        if replays and not simgrid:
            out.append("- Against the traced run itself (traced s, the run the skeleton replays, tracer included): "
                       + ", ".join(f"{b} {d:+.1f} %" for b, d in replays)
                       + f"; mean |difference| {sum(abs(d) for _, d in replays) / len(replays):.1f} %. Where this "
                       "is small and the error large, the traced run was not a typical run of the benchmark here.")
        floors = [(r["benchmark"], r["one_run_error_pct"], abs(r["error_pct"])) for r in ok
                  if _given(r.get("one_run_error_pct"))]
        if floors and not simgrid:
            mean_floor = sum(f for _, f, _ in floors) / len(floors)
            out.append("- One run of the benchmark itself, taken as the prediction of its other runs here (a "
                       "skeleton is built from one run: this is how far one run falls from the others here), median |error| per benchmark: "
                       + ", ".join(f"{b} {f:.1f} %" for b, f, _ in floors)
                       + f"; mean {mean_floor:.1f} %, {sum(f <= ERROR_TARGET_PCT for _, f, _ in floors)} of "
                       f"{len(floors)} within {ERROR_TARGET_PCT:g} % (the skeleton's mean |error| over the same "
                       f"benchmarks: {sum(e for _, _, e in floors) / len(floors):.1f} %).")
        out.append("")
        pub = [r for r in ok if r["benchmark"] in PUBLISHED_FOLD]
        if pub:
            out += [f"Folding beside the published figures (class {PUBLISHED_CLASS}, 16 ranks, the method's own "
                    "runs). "
                    "The target (folded length no longer than published) applies where the main-loop iteration "
                    "counts match. Ours: one symbol per call site (the skeleton above"
                    + (", folded with call sites joined" if meta.get("join_call_sites") else "")
                    + ") and with call sites joined (`skelgen compress --join-call-sites`: calls of one function "
                    "from different call sites may share a symbol, their peers and tags kept per instance).", "",
                    "| benchmark | iterations ours / published | calls per rank ours | events per rank published | "
                    "folded length ours (per call site / joined) | published | main loop ours (per call site / "
                    "joined) | published | target |",
                    "|---|---|---|---|---|---|---|---|---|"]
            for r in pub:
                ev, fl, body, cnt = PUBLISHED_FOLD[r["benchmark"]]
                it_ours = r["iterations"] if _given(r.get("iterations")) else ITERATIONS[r["benchmark"]].get(r["class"])
                it_pub = ITERATIONS[r["benchmark"]][PUBLISHED_CLASS]
                # with --join-call-sites the experiment's own folding is the joined one: no per-call-site column
                per_site = {} if meta.get("join_call_sites") else r
                joined = r.get("joined_folded_length")
                if it_ours != it_pub:
                    verdict = "n/a (iterations differ)"
                elif _given(per_site.get("folded_length")) and per_site["folded_length"] <= fl:
                    verdict = "met"
                elif _given(joined) and joined <= fl:
                    verdict = "met (joined)"
                else:
                    verdict = "missed"
                lengths = f"{per_site.get('folded_length', '—')} / {joined if _given(joined) else '—'}"
                loops = f"{_main_loop(per_site)} / {_main_loop(r, 'joined_')}"
                out.append(f"| {r['benchmark']} | {it_ours} / {it_pub} | {r['calls_per_rank_max']:,} | {ev:,} | "
                           f"{lengths} | {fl} | {loops} | ({body})×{cnt} | {verdict} |")
            out.append("")
        out += ["![predicted vs actual runtime](runtime.svg)", ""]
    return "\n".join(out)


def runtime_svg(rows, title):
    pts = [(r["original_s"], r["predicted_s"], r["benchmark"]) for r in rows
           if r.get("status") == "ok" and r.get("original_s") and r.get("predicted_s")]
    w, h, m = 520, 480, 70
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" '
           f'font-size="12">', f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w / 2}" y="22" text-anchor="middle" font-size="14">{html.escape(title)}</text>']
    if not pts:
        svg += [f'<text x="{w / 2}" y="{h / 2}" text-anchor="middle">no benchmark finished</text>', "</svg>"]
        return "\n".join(svg)
    vals = [v for p in pts for v in p[:2]]
    lo = 10 ** math.floor(math.log10(min(vals)))
    hi = 10 ** math.ceil(math.log10(max(vals)))
    if hi <= lo * 10:
        hi = lo * 10
    span = math.log10(hi) - math.log10(lo)
    x = lambda v: m + (math.log10(v) - math.log10(lo)) / span * (w - 2 * m)  # noqa: E731
    y = lambda v: h - m - (math.log10(v) - math.log10(lo)) / span * (h - 2 * m)  # noqa: E731
    svg.append(f'<rect x="{m}" y="{m}" width="{w - 2 * m}" height="{h - 2 * m}" fill="none" stroke="black"/>')
    d = lo
    while d <= hi * 1.0001:
        svg += [f'<line x1="{x(d):.1f}" y1="{h - m}" x2="{x(d):.1f}" y2="{m}" stroke="#ddd"/>',
                f'<line x1="{m}" y1="{y(d):.1f}" x2="{w - m}" y2="{y(d):.1f}" stroke="#ddd"/>',
                f'<text x="{x(d):.1f}" y="{h - m + 16}" text-anchor="middle">{d:g}</text>',
                f'<text x="{m - 6}" y="{y(d) + 4:.1f}" text-anchor="end">{d:g}</text>']
        d *= 10
    # y = f x lines, clipped to the plot: exact, and +-10 %
    svg.append(f'<clipPath id="plot"><rect x="{m}" y="{m}" width="{w - 2 * m}" height="{h - 2 * m}"/></clipPath>')
    for f, style in ((1.0, 'stroke="black"'), (1.1, 'stroke="#999" stroke-dasharray="4 3"'),
                     (1 / 1.1, 'stroke="#999" stroke-dasharray="4 3"')):
        x0, x1 = lo / 2, hi * 2
        svg.append(f'<line x1="{x(x0):.1f}" y1="{y(x0 * f):.1f}" x2="{x(x1):.1f}" y2="{y(x1 * f):.1f}" {style} '
                   f'clip-path="url(#plot)"/>')
    for orig, pred, name in pts:
        svg += [f'<circle cx="{x(orig):.1f}" cy="{y(pred):.1f}" r="4" fill="#1f77b4"/>',
                f'<text x="{x(orig) + 6:.1f}" y="{y(pred) - 6:.1f}">{html.escape(name)} '
                f'{100 * (pred - orig) / orig:+.1f}%</text>']
    svg += [f'<text x="{w / 2}" y="{h - 20}" text-anchor="middle">actual runtime (s)</text>',
            f'<text x="18" y="{h / 2}" text-anchor="middle" transform="rotate(-90 18 {h / 2})">predicted runtime (s)'
            f'</text>', f'<text x="{w - m}" y="{m - 8}" text-anchor="end" fill="#666">solid: exact; dashed: ±10 %'
                        f'</text>', "</svg>"]
    return "\n".join(svg)


def experiment_meta(args, command):
    """What report.md says of the experiment: its options, command, machine, skelgen revision, date."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return {"cls": args.cls, "np": args.np, "mpi": args.mpi, "reps": args.reps, "min_seconds": args.min_seconds,
            "scale": args.scale,
            "simgrid": args.simgrid, "hostfile": args.hostfile, "npb_dir": args.npb_dir, "title": args.title,
            "join_call_sites": args.join_call_sites, "merge_order": args.merge_order,
            "command": command, "machine": machine_line(), "revision": skelgen_revision(root),
            "date": datetime.date.today().isoformat()}


def write_all(out_dir, rows, meta=None):
    """Writes the CSV, the report and the plot; meta (experiment_meta) is saved to, or else read from,
    OUT/experiment.json."""
    meta_path = os.path.join(out_dir, "experiment.json")
    if meta is not None:
        write_file(meta_path, json.dumps(meta, indent=1))
    else:
        with open(meta_path) as f:
            meta = json.load(f)
    write_csv(os.path.join(out_dir, "results.csv"), rows)
    write_file(os.path.join(out_dir, "report.md"), report_md(rows, meta))
    title = meta.get("title") or f"NPB class {meta['cls']}, {meta['np']} ranks, {meta['mpi']}"
    if meta.get("simgrid"):
        title += f", {os.path.basename(meta['simgrid'])}"
    write_file(os.path.join(out_dir, "runtime.svg"), runtime_svg(rows, title))


def main(argv):
    if len(argv) != 2 or argv[1].startswith("-"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    out_dir = argv[1]
    for need in ("results.csv", "experiment.json"):
        if not os.path.isfile(os.path.join(out_dir, need)):
            print(f"npb_report: error: {os.path.join(out_dir, need)}: missing (not an npb-experiment output "
                  "directory?)", file=sys.stderr)
            return 2
    write_all(out_dir, read_csv(os.path.join(out_dir, "results.csv")))
    print(f"{out_dir}/report.md, {out_dir}/runtime.svg")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
