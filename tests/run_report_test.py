#!/usr/bin/env python3
"""Test of tools/skelgen-report: from a results.json with known figures, the
SVGs must hold one point per case and placement at the right place (on the
y = x line where predicted = measured, above it where predicted is higher),
bars whose lengths follow the figures, one pair of bars per cut loop, and
bad input must be refused with one line.

  run_report_test.py REPORT WORKDIR
"""

import json
import math
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def results():
    # case a: predicted = measured exactly on p1, twice it on p2, half on p3; case b: +4 % everywhere
    def pl(name, app, pred):
        return {"name": name, "app_s": app, "predicted_s": pred, "skeleton_s": [x / 10 for x in pred]}
    return {"cases": [
        {"name": "a", "traced_s": 2.0, "kendall_tau": 1.0,
         "loops": [{"loop": "n5", "iterations": 100, "kept": 10, "share": 0.8},
                   {"loop": "n9", "iterations": 20, "kept": 2, "share": 0.1}],
         "place": {"ranking": [{"name": "p1"}, {"name": "p3"}, {"name": "p2"}]},
         "placements": [pl("p1", [1.0, 1.1, 0.9], [1.0, 1.0, 1.0]), pl("p2", [2.0, 2.0, 2.2], [4.0, 3.9, 4.1]),
                        pl("p3", [4.0, 4.0, 4.0], [2.0, 2.0, 2.0])]},
        {"name": "b", "traced_s": 0.5, "kendall_tau": -1.0,
         "loops": [{"loop": "n1", "iterations": 50, "kept": 5, "share": 0.5}],
         "place": {"ranking": [{"name": "p3"}, {"name": "p2"}, {"name": "p1"}]},
         "placements": [pl("p1", [0.1], [0.104]), pl("p2", [0.2], [0.208]), pl("p3", [0.3], [0.312])]},
    ]}


def parse(path):
    return ET.parse(path).getroot()


def by_class(root, cls):
    return [e for e in root.iter() if e.get("class") == cls]


def title(e):
    t = e.find(NS + "title")
    return t.text if t is not None else ""


def main():
    report, work = os.path.abspath(sys.argv[1]), sys.argv[2]
    os.makedirs(work, exist_ok=True)
    src = os.path.join(work, "results.json")
    with open(src, "w") as f:
        json.dump(results(), f)
    out = os.path.join(work, "svg")
    r = subprocess.run([sys.executable, report, src, "-o", out], capture_output=True, text=True)
    check(r.returncode == 0, f"report runs (exit {r.returncode}: {r.stderr.strip()})")
    if r.returncode != 0:
        return 1

    root = parse(os.path.join(out, "predicted-vs-measured.svg"))
    points = by_class(root, "point")
    check(len(points) == 6, f"6 points, one per case and placement (got {len(points)})")
    pos = {}
    for p in points:
        m = re.match(r"(\S+) (\S+): application ([0-9.e+-]+) s, predicted ([0-9.e+-]+) s", title(p))
        t = re.fullmatch(r"translate\(([-0-9.]+) ([-0-9.]+)\)", p.get("transform", ""))
        if m and t:
            pos[(m.group(1), m.group(2))] = (float(m.group(3)), float(m.group(4)), float(t.group(1)), float(t.group(2)))
    check(len(pos) == 6, f"every point names its case, placement and figures ({sorted(pos)})")
    check(pos.get(("a", "p1"), (0, 0))[:2] == (1.0, 1.0) and pos.get(("a", "p2"), (0, 0))[:2] == (2.0, 4.0),
          "the points carry the medians (a/p1: 1 against 1; a/p2: 2 against 4)")
    ref = by_class(root, "ref")[0]  # y = x
    x1, y1, x2, y2 = (float(ref.get(k)) for k in ("x1", "y1", "x2", "y2"))

    def side(x, y):  # > 0 above the line (smaller svg y), 0 on it
        return ((x2 - x1) * (y1 - y) - (y2 - y1) * (x1 - x)) / math.hypot(x2 - x1, y2 - y1)
    if len(pos) == 6:
        check(abs(side(*pos[("a", "p1")][2:])) < 0.5, "predicted = measured lies on the y = x line")
        check(side(*pos[("a", "p2")][2:]) > 20, "predicted = 2x measured lies well above it")
        check(side(*pos[("a", "p3")][2:]) < -20, "predicted = measured / 2 lies well below it")
        # log axes: 2 -> 4 and 1 -> 2 are the same distance apart, horizontally
        d1 = pos[("a", "p2")][2] - pos[("a", "p1")][2]
        d2 = pos[("a", "p3")][2] - pos[("a", "p2")][2]
        check(abs(d1 - d2) < 0.5, f"log scale: equal ratios, equal distances ({d1:.2f}, {d2:.2f})")
        b = [side(*pos[("b", p)][2:]) for p in ("p1", "p2", "p3")]
        check(all(0 < v < 20 for v in b), f"+4 % lies just above the line, inside the 5 % band ({b})")
    legend = [e.text for e in by_class(root, "legend-case")]
    check(legend == ["a", "b"], f"a legend entry per case ({legend})")

    root = parse(os.path.join(out, "placements.svg"))
    apps, preds = by_class(root, "bar-app"), by_class(root, "bar-pred")
    check(len(apps) == 6 and len(preds) == 6, f"a pair of bars per case and placement ({len(apps)}, {len(preds)})")
    w = {title(e): float(e.get("width")) for e in apps + preds}
    wa = w.get("a p2: predicted 4 s", 0)
    wb = w.get("a p2: application 2 s", 0)
    check(wb > 0 and abs(wa / wb - 2) < 0.01, f"bar lengths follow the figures (4 s / 2 s: {wa / max(wb, 1e-9):.3f})")
    texts = " ".join(t.text or "" for t in root.iter(NS + "text"))
    check("Kendall tau 1.00" in texts and "Kendall tau -1.00" in texts, "each case shows its Kendall tau")
    check("p3 (place #2)" in texts, "each placement shows its rank in skelgen place")

    root = parse(os.path.join(out, "loops.svg"))
    la, ls = by_class(root, "bar-loop-app"), by_class(root, "bar-loop-skel")
    check(len(la) == 3 and len(ls) == 3, f"a pair of bars per cut loop (3 loops; got {len(la)}, {len(ls)})")
    titles = [title(e) for e in la + ls]
    check("a loop n5: application 1.6 s in 100 iterations" in titles and "a loop n5: skeleton 0.16 s in 10 iterations"
          in titles, f"loop times: traced time x share, and the kept part ({titles[:2]})")
    texts = " ".join(t.text or "" for t in root.iter(NS + "text"))
    check("16 ms per iteration" in texts, "time per iteration (1.6 s / 100)")

    # refusals
    bad = os.path.join(work, "bad.json")
    for what, text in (("not JSON", "{"), ("no cases", "{}"),
                       ("a placement without times", '{"cases": [{"name": "x", "placements": [{"name": "p"}]}]}')):
        with open(bad, "w") as f:
            f.write(text)
        r = subprocess.run([sys.executable, report, bad, "-o", out], capture_output=True, text=True)
        check(r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and "skelgen-report: error:" in r.stderr,
              f"refuses {what} with one line ({r.stderr.strip()})")
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
