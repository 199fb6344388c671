#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check that no files of the library call each other in a circle.

Reads the object files of a build (from its compile_commands.json), takes
each file's defined and undefined symbols (nm), draws an edge from a file to
every other file whose function or data it uses, and reports each strongly
connected component of more than one file in core/, runtime/, ops/, io/ and
graph/ with the symbols on its edges.  A file may call down into a file
below it; two files needing each other means the shared part belongs in a
third file below both (docs/ARCHITECTURE.md, "Files").

    tests/check_calls.py BUILD_DIR

Exits 1 when there is a circle, 2 when the build cannot be read.
"""
import json
import os
import subprocess
import sys
from collections import defaultdict

LIBRARY = ("core/", "runtime/", "ops/", "io/", "graph/")


def objects(build):
    with open(os.path.join(build, "compile_commands.json")) as f:
        commands = json.load(f)
    root = os.path.realpath(os.path.join(build, ".."))
    out = {}
    for c in commands:
        src = os.path.relpath(os.path.realpath(os.path.join(c["directory"], c["file"])), root)
        if not src.startswith(LIBRARY) or not src.endswith(".c"):
            continue
        obj = os.path.join(c["directory"], c["output"])
        if os.path.exists(obj):
            out[src] = obj
    return out


def symbols(obj):
    text = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBRC":
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
    return defined, undefined


def components(graph):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(100000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        objs = objects(sys.argv[1])
    except (OSError, ValueError) as e:
        print(f"check_calls: cannot read the build: {e}", file=sys.stderr)
        return 2
    if not objs:
        print("check_calls: no library object files in the build", file=sys.stderr)
        return 2
    owner, uses = {}, {}
    for src, obj in objs.items():
        defined, undefined = symbols(obj)
        for s in defined:
            owner[s] = src
        uses[src] = undefined
    graph, why = defaultdict(set), defaultdict(set)
    for src, undefined in uses.items():
        graph[src]
        for s in undefined:
            dst = owner.get(s)
            if dst is not None and dst != src:
                graph[src].add(dst)
                why[(src, dst)].add(s)
    circles = components(graph)
    for comp in circles:
        print("circle of files calling each other: " + ", ".join(comp))
        for a in comp:
            for b in sorted(graph[a]):
                if b in comp:
                    print(f"    {a} -> {b}: {', '.join(sorted(why[(a, b)]))}")
    if circles:
        return 1
    print(f"calls: {len(objs)} library files, every pair calls in one direction")
    return 0


if __name__ == "__main__":
    sys.exit(main())
