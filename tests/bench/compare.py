#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Compare two outputs of tests/bench/run.sh (or of single benchmarks):
every `name: value unit` line both print, with after / before.

    tests/bench/compare.py BEFORE.txt[,MORE.txt] AFTER.txt [REGEX]
"""
import re
import sys

LINE = re.compile(r"^([A-Za-z0-9_.-]+): ([-0-9.e+]+) (\S+)")


def load(paths):
    out = {}
    for p in paths.split(","):
        with open(p, errors="replace") as f:
            for line in f:
                m = LINE.match(line)
                if m:
                    out[m.group(1)] = (float(m.group(2)), m.group(3))
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    before, after = load(sys.argv[1]), load(sys.argv[2])
    pattern = re.compile(sys.argv[3]) if len(sys.argv) > 3 else None
    common = [k for k in after if k in before and (pattern is None or pattern.search(k))]
    for k in common:
        (b, unit), (a, _) = before[k], after[k]
        ratio = f"{a / b:6.2f}" if b else "     -"
        print(f"{k:60s} {b:12.4g} {a:12.4g} {unit:10s} {ratio}")
    print(f"{len(common)} lines in both; {len([k for k in after if k not in before])} only after, "
          f"{len([k for k in before if k not in after])} only before")


if __name__ == "__main__":
    main()
