#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Deferred syncs of staged outputs, watched through strace: a command whose
output is staged out of sight and put in place by a rename at commit, with
no journal, writes its objects without an fsync each and syncs their file
system once (syncfs) before that rename; with a journal (--report), in
place over an existing node, or onto a node resumed, every object is
fsynced as it is written and nothing is deferred.  The same holds for
`sluice run` of a graph file: a new array, fresh or "overwrite": true,
without a journal is synced once; with --journal, the file's "run"
journal, or "overwrite": "in-place" of an existing array, every object is
fsynced.  With --no-sync (both commands) a staged output is put in place
with no fsync and no syncfs at all, and --no-sync is refused where a
journal or a resume would record objects as durable.  The outputs are byte
for byte the same every way (`sluice checksum`).

    check_deferred_sync.py       (SL_SLUICE_EXE: the sluice program)

Exits 77 (skipped) without strace, or where strace cannot trace here.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from launcher_util import SLUICE, checksum, expect, finish, run

COMMON = ["--factors", "2,2", "--no-progress", "--threads", "2"]


# LeakSanitizer cannot run under ptrace (an ASan build aborts at exit):
# the traced runs go without it; the other suites check for leaks.
TRACED_ENV = dict(os.environ, ASAN_OPTIONS=(os.environ.get("ASAN_OPTIONS", "") +
                                            ":detect_leaks=0").lstrip(":"))


def traced(args, cwd):
    """Run sluice ARGS under strace: (exit status, the traced calls in order)."""
    log = os.path.join(cwd, "strace.log")
    p = subprocess.run(["strace", "-f", "-qq", "-o", log, "-e",
                        "trace=fsync,fdatasync,syncfs,rename,renameat2", SLUICE, *args],
                       capture_output=True, text=True, cwd=cwd, timeout=120,
                       env=TRACED_ENV)
    with open(log) as f:
        calls = [re.sub(r"^\d+\s+", "", line.strip()) for line in f]
    os.unlink(log)
    return p.returncode, p.stderr, calls


def commit_index(calls, dst):
    """Index of the call that puts the staged node at `dst` in place."""
    node = re.compile(r'(rename|renameat2)\((AT_FDCWD, )?"[^"]*/\.sluice-tmp\.node\.[^"/]*", '
                      r'(AT_FDCWD, )?"[^"]*/' + re.escape(dst) + '"')
    for i, c in enumerate(calls):
        if node.match(c):
            return i
    return -1


def graph_file(tmp, name, dst, overwrite, journal=None):
    """Write graph file `name` in `tmp`: in.zarr halved into `dst`, whose
    "overwrite" is `overwrite`; a "run" journal when `journal` is given."""
    doc = {
        "sluice": 1,
        "arrays": {"in": {"path": "in.zarr"},
                   "out": {"path": dst, "like": "in", "overwrite": overwrite}},
        "nodes": {"read": {"op": "get", "array": "in"},
                  "half": {"op": "downsample", "input": "read", "factors": [2, 2],
                           "method": "mean"},
                  "write": {"op": "put", "input": "half", "array": "out"}},
        "run": {"threads": 2},
    }
    if journal is not None:
        doc["run"]["journal"] = journal
    with open(os.path.join(tmp, name), "w") as f:
        json.dump(doc, f)
    return name


def case(name, tmp, args, dst, deferred):
    """Run ARGS traced; `deferred` True: one syncfs before the commit, no
    fsync; "none" (--no-sync): neither; False: an fsync per object."""
    rc, err, calls = traced(args, tmp)
    expect(rc == 0, f"{name}: exit status {rc}: {err}")
    fsyncs = [c for c in calls if c.startswith("fsync(") or c.startswith("fdatasync(")]
    syncfs = [i for i, c in enumerate(calls) if c.startswith("syncfs(")]
    at = commit_index(calls, dst)
    if deferred == "none":
        expect(not fsyncs, f"{name}: {len(fsyncs)} fsyncs, none expected: {fsyncs[:3]}")
        expect(not syncfs, f"{name}: syncfs called {len(syncfs)} times, none expected")
        expect(at >= 0, f"{name}: no rename of the staged node into {dst}: {calls[-5:]}")
    elif deferred:
        expect(not fsyncs, f"{name}: {len(fsyncs)} fsyncs, none expected: {fsyncs[:3]}")
        expect(len(syncfs) == 1, f"{name}: {len(syncfs)} syncfs calls, one expected")
        expect(at >= 0, f"{name}: no rename of the staged node into {dst}: {calls[-5:]}")
        expect(syncfs and syncfs[0] < at and calls[syncfs[0]].endswith("= 0"),
               f"{name}: the syncfs ({syncfs}) must succeed before the commit's rename ({at})")
    else:
        # Every chunk object (2 x 2 of them) and the metadata.
        expect(len(fsyncs) >= 5, f"{name}: {len(fsyncs)} fsyncs, one per object expected")
        expect(not syncfs, f"{name}: syncfs called {len(syncfs)} times, none expected")
    return checksum(os.path.join(tmp, dst))


def graph_cases(tmp, ref):
    """`sluice run` of graph files: the same rules, the same bytes as
    downsample's (`ref`)."""
    run_args = ["--no-progress"]
    g = graph_file(tmp, "g.json", "g.zarr", False)
    got = case("run, new array, no journal", tmp, ["run", g, *run_args], "g.zarr", True)
    expect(got == ref, f"run: checksum {got} != {ref}")
    g = graph_file(tmp, "g.json", "g.zarr", True)
    got = case("run, \"overwrite\": true, no journal", tmp, ["run", g, *run_args], "g.zarr",
               True)
    expect(got == ref, f"run \"overwrite\": true: checksum {got} != {ref}")
    g = graph_file(tmp, "h.json", "h.zarr", False)
    got = case("run --journal", tmp, ["run", g, "--journal", "h.journal", *run_args], "h.zarr",
               False)
    expect(got == ref, f"run --journal: checksum {got} != {ref}")
    g = graph_file(tmp, "i.json", "i.zarr", False, journal="i.journal")
    got = case("run, the file's \"run\" journal", tmp, ["run", g, *run_args], "i.zarr", False)
    expect(got == ref, f"run with a \"run\" journal: checksum {got} != {ref}")
    g = graph_file(tmp, "g.json", "g.zarr", "in-place")
    got = case("run, \"overwrite\": \"in-place\" of an existing array", tmp,
               ["run", g, *run_args], "g.zarr", False)
    expect(got == ref, f"run \"in-place\": checksum {got} != {ref}")
    g = graph_file(tmp, "n.json", "n.zarr", False)
    got = case("run --no-sync", tmp, ["run", g, "--no-sync", *run_args], "n.zarr", "none")
    expect(got == ref, f"run --no-sync: checksum {got} != {ref}")
    g = graph_file(tmp, "j.json", "j.zarr", False, journal="j.journal")
    refused(tmp, "run --no-sync with the file's \"run\" journal", ["run", g, "--no-sync",
                                                                   *run_args], "j.zarr")


def refused(tmp, name, args, dst):
    """--no-sync where a journal records objects as durable: exit 2, the
    reason said, nothing made at `dst`."""
    rc, out, err = run(*args, cwd=tmp)
    expect(rc == 2, f"{name}: exit status {rc}, 2 expected: {err}")
    expect("--no-sync cannot be used here" in err and "journal" in err,
           f"{name}: the refusal does not say why: {err!r}")
    expect(not os.path.exists(os.path.join(tmp, dst)), f"{name}: {dst} was made")


def main():
    if shutil.which("strace") is None:
        print("skipped: no strace")
        return 77
    tmp = tempfile.mkdtemp(prefix="sl-deferred-sync-")
    try:
        probe = subprocess.run(["strace", "-qq", "-o", os.devnull, "true"], capture_output=True)
        if probe.returncode != 0:
            print(f"skipped: strace cannot trace here: {probe.stderr.decode().strip()}")
            return 77
        rc, _, err = run("generate", "in.zarr", "--shape", "64,64", "--chunks", "16,16",
                         "--format", "v2", cwd=tmp)
        expect(rc == 0, f"generate: {err}")
        ref = case("absent, no journal", tmp, ["downsample", "in.zarr", "a.zarr", *COMMON],
                   "a.zarr", True)
        got = case("--overwrite, no journal", tmp,
                   ["downsample", "in.zarr", "a.zarr", "--overwrite", *COMMON], "a.zarr", True)
        expect(got == ref, f"--overwrite: checksum {got} != {ref}")
        got = case("--report (a journal)", tmp,
                   ["downsample", "in.zarr", "b.zarr", "--report", "b.json", *COMMON], "b.zarr",
                   False)
        expect(got == ref, f"--report: checksum {got} != {ref}")
        got = case("--overwrite-in-place", tmp,
                   ["downsample", "in.zarr", "a.zarr", "--overwrite-in-place", *COMMON], "a.zarr",
                   False)
        expect(got == ref, f"--overwrite-in-place: checksum {got} != {ref}")
        got = case("--no-sync", tmp, ["downsample", "in.zarr", "c.zarr", "--no-sync", *COMMON],
                   "c.zarr", "none")
        expect(got == ref, f"--no-sync: checksum {got} != {ref}")
        refused(tmp, "--no-sync --report", ["downsample", "in.zarr", "d.zarr", "--no-sync",
                                            "--report", "d.json", *COMMON], "d.zarr")
        graph_cases(tmp, ref)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return finish("deferred syncs")


if __name__ == "__main__":
    sys.exit(main())
