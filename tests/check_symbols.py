#!/usr/bin/env python3
"""skelgen compress --symbols: output follows the grammar, expands back to the
input, and 'length L' counts the symbols written.

usage: check_symbols.py SKELGEN WORKDIR
Grammar: items separated by single spaces; an item is a non-negative integer
or "( items )^N".
"""
import os
import random
import re
import subprocess
import sys

TOKEN = re.compile(r"\(|\)\^[0-9]+|[0-9]+")


def parse(line):
    """Returns (expansion, symbols written); raises ValueError on bad grammar."""
    if line != line.strip() or "  " in line:
        raise ValueError("items must be separated by single spaces")
    tokens = line.split(" ")
    pos = 0

    def items(closing):
        nonlocal pos
        out, written = [], 0
        while pos < len(tokens):
            t = tokens[pos]
            if t == "(":
                pos += 1
                body, w = items(True)
                if pos >= len(tokens) or not re.fullmatch(r"\)\^[0-9]+", tokens[pos]):
                    raise ValueError("unclosed loop")
                n = int(tokens[pos][2:])
                if n < 2:
                    raise ValueError("a loop must repeat at least twice")
                pos += 1
                out += body * n
                written += w
            elif re.fullmatch(r"\)\^[0-9]+", t):
                if not closing:
                    raise ValueError("unexpected )")
                return out, written
            elif re.fullmatch(r"[0-9]+", t):
                out.append(int(t))
                written += 1
                pos += 1
            else:
                raise ValueError(f"bad token {t!r}")
        if closing:
            raise ValueError("unclosed loop")
        return out, written

    result = items(False)
    return result


def run(skelgen, path):
    p = subprocess.run([skelgen, "compress", "--symbols", path, "-q"], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def main():
    skelgen, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    rng = random.Random(7)
    cases = [[1, 2, 3, 1, 2, 3, 1, 2, 3, 1], [5], [4] * 100, list(range(50)) * 2]
    for _ in range(60):
        s = []
        for _ in range(rng.randint(1, 6)):
            body = [rng.randint(0, 9) for _ in range(rng.randint(1, 5))]
            inner = [rng.randint(0, 9) for _ in range(rng.randint(1, 3))] * rng.randint(2, 6)
            s += (body + inner) * rng.randint(1, 30)
        if rng.random() < 0.5 and s:
            s[rng.randrange(len(s))] = 99
        cases.append(s)
    errors = 0
    for k, s in enumerate(cases):
        path = os.path.join(work, f"case{k}.txt")
        with open(path, "w") as f:
            f.write(" ".join(map(str, s)) + "\n")
        rc, out, err = run(skelgen, path)
        lines = out.split("\n")
        try:
            if rc != 0 or len(lines) != 3 or lines[2] != "":
                raise ValueError(f"exit {rc}, output {out!r} {err!r}")
            expansion, written = parse(lines[0])
            m = re.fullmatch(r"length ([0-9]+)", lines[1])
            if not m:
                raise ValueError(f"second line {lines[1]!r}")
            if expansion != s:
                raise ValueError("does not expand to the input")
            if int(m.group(1)) != written:
                raise ValueError(f"length {m.group(1)} but {written} symbols written")
        except ValueError as e:
            print(f"case {k}: {e}")
            errors += 1
    rc, out, _ = run(skelgen, os.path.join(work, "case0.txt"))
    if out != "( 1 2 3 )^3 1\nlength 4\n":
        print(f"the issue's example gives {out!r}")
        errors += 1
    print(f"symbol mode: {len(cases)} inputs, {errors} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
