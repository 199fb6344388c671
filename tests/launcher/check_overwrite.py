#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Play a careless user of `sluice copy`, `downsample`, `pyramid`, `generate`
and `run` (issue 18): write onto what is already there, with and without
--overwrite and --overwrite-in-place ("overwrite": true or "in-place" in a
graph file); onto plain files and directories that hold no Zarr node; onto
the source itself under other names (.., a symbolic link, a trailing slash,
inside it, around it); with budgets and arguments that must be refused.

Each case runs in its own sandbox directory.  The whole sandbox is
snapshotted before and after (fsnap.py), and the after state must be
exactly one of two: untouched byte for byte (a refusal: exit status 2), or
the before state with DST replaced whole by the node a run onto an absent
DST writes (same listing, same metadata files, same data), nothing else
anywhere (no .sluice-tmp.* staging left).  Every source, and every node at
DST, is then read by zarr-python (v2 data; v3 metadata), `sluice checksum`
and zarrita (tests/tools/zarr_read.mjs, v2 and v3), which must agree with
what the node held before, or with the reference node.

    check_overwrite.py                  every case
    check_overwrite.py PATTERN...       cases whose name matches a glob or
                                        contains the text (also from
                                        SL_OVERWRITE_CASES, comma separated)
    check_overwrite.py --list           the case names
    SL_KEEP_TMP=1                       keep the sandboxes, print where
    SL_REQUIRE_ZARRITA=1                fail instead of skipping zarrita checks

Exits 77 (skipped) without numpy and zarr (python3-zarr).  zarrita checks
are skipped, saying so, without node or `npm ci --prefix tests/tools`.
"""
import fnmatch
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

import fsnap  # beside this file
from launcher_util import SLUICE, skip_without, zarrita_command

skip_without("numpy", "numcodecs", "zarr", "zarr_read")
import numpy as np  # noqa: E402
import numcodecs  # noqa: E402
import zarr  # noqa: E402
from zarr_read import describe  # noqa: E402

COMMON = ["--no-progress", "--threads", "2"]
DST = "out.zarr"
NESTED = "new/deep/out.zarr"


def sluice(args, cwd):
    try:
        p = subprocess.run([SLUICE, *args], capture_output=True, text=True, cwd=cwd, timeout=120)
    except subprocess.TimeoutExpired:
        return 124, "", "timed out after 120 s"
    return p.returncode, p.stdout, p.stderr


def short(text, n=300):
    """One line of at most n characters, without a usage text after it."""
    text = " ".join(text.split("usage:")[0].split())
    return text if len(text) <= n else text[:n] + "..."


# ---------------------------------------------------------------- fixtures


def make_fixtures(root):
    """Sources and old nodes, written once; sandboxes copy what they use."""
    os.makedirs(root)
    j = lambda p: os.path.join(root, p)  # noqa: E731
    data = (np.arange(24 * 40 * 48, dtype=np.uint16).reshape(24, 40, 48) * 7) % 60000
    z = zarr.open_array(j("in2.zarr"), mode="w", shape=data.shape, chunks=(8, 16, 16), dtype="u2",
                        compressor=numcodecs.Zstd(level=1))
    z[...] = data
    must = [
        ["generate", j("in3.zarr"), "--shape", "24,40,48", "--chunks", "4,8,8", "--shards",
         "8,16,16", "--format", "v3", "--seed", "3"],
        ["generate", j("old3.zarr"), "--shape", "80,64,64", "--chunks", "16,16,16", "--format",
         "v3", "--seed", "5"],
        ["pyramid", j("in3.zarr"), j("oldpyr3.zarr"), "--levels", "4", "--factors", "2,2,2"],
        ["pyramid", j("in2.zarr"), j("oldpyr2.zarr"), "--levels", "4", "--factors", "2,2,2"],
    ]
    for args in must:
        rc, _, err = sluice([*args, *COMMON], root)
        if rc != 0:
            sys.exit(f"cannot make the fixtures: sluice {' '.join(args)}: {err}")
    # Chunk keys up to 0.0.63 and c/4/...: no new grid here reaches them.
    old = zarr.open_array(j("old2.zarr"), mode="w", shape=(8, 8, 1024), chunks=(8, 8, 16),
                          dtype="i4", compressor=numcodecs.Zstd(level=1), fill_value=-1)
    old[...] = np.arange(8 * 8 * 1024, dtype=np.int32).reshape(8, 8, 1024) - 5000
    g = zarr.open_group(j("oldgrp2.zarr"), mode="w")
    g.attrs["purpose"] = "a v2 group that a careless user writes over"
    g.create_dataset("a", data=np.arange(100, dtype="f8").reshape(10, 10), chunks=(5, 5))
    g.create_group("b").create_dataset("c", data=np.ones((4, 4), dtype="u1"), chunks=(2, 2))
    grp3 = j("oldgrp3.zarr")
    os.makedirs(grp3)
    with open(os.path.join(grp3, "zarr.json"), "w") as f:
        json.dump({"zarr_format": 3, "node_type": "group", "attributes": {"kept": False}}, f)
    shutil.copytree(j("old3.zarr"), os.path.join(grp3, "m"))
    os.makedirs(os.path.join(grp3, "sub"))
    with open(os.path.join(grp3, "sub", "zarr.json"), "w") as f:
        json.dump({"zarr_format": 3, "node_type": "group", "attributes": {}}, f)
    zarr.open_array(j("one.zarr"), mode="w", shape=(100,), chunks=(10,), dtype="u2")[...] = 7
    zarr.open_array(j("str.zarr"), mode="w", shape=(10,), chunks=(5,), dtype="<U4")[...] = "ab"
    zarr.open_array(j("date.zarr"), mode="w", shape=(10,), chunks=(5,), dtype="M8[s]")
    lz = zarr.open_array(j("lzma.zarr"), mode="w", shape=(10, 10), chunks=(5, 5), dtype="u2",
                         compressor=numcodecs.LZMA())
    lz[...] = 3
    shutil.copytree(j("in2.zarr"), j("bad.zarr"))
    with open(j("bad.zarr/1.1.1"), "wb") as f:
        f.write(b"not a zstd frame")


OLD_NODES = {
    "old-v2-array": "old2.zarr",
    "old-v3-array": "old3.zarr",
    "old-v2-group": "oldgrp2.zarr",
    "old-v3-group": "oldgrp3.zarr",
    "old-pyramid-v2-4-levels": "oldpyr2.zarr",
    "old-pyramid-v3-4-levels": "oldpyr3.zarr",
}


def put_file(sb, rel, text="not a dataset\n"):
    os.makedirs(os.path.dirname(os.path.join(sb, rel)) or sb, exist_ok=True)
    with open(os.path.join(sb, rel), "w") as f:
        f.write(text)


def put_non_zarr_dir(sb, rel):
    put_file(sb, rel + "/notes.txt", "precious notes\n")
    put_file(sb, rel + "/sub/data.bin", "precious data\n")


# ---------------------------------------------------------------- commands

# What each command writes: argv for a given DST and overwrite mode ("" none,
# "staged", "in-place"), and the sources it reads.
CLI = {
    "copy": (["copy", "in2.zarr", "{dst}", "--format", "v3", "--chunks", "8,8,8"], ["in2.zarr"]),
    "copy-to-v2": (["copy", "in3.zarr", "{dst}", "--format", "v2"], ["in3.zarr"]),
    "downsample": (["downsample", "in3.zarr", "{dst}", "--factors", "2,2,2"], ["in3.zarr"]),
    "pyramid-v3": (["pyramid", "in3.zarr", "{dst}", "--levels", "2", "--factors", "2,2,2"],
                   ["in3.zarr"]),
    "pyramid-v2": (["pyramid", "in2.zarr", "{dst}", "--levels", "2", "--factors", "2,2,2"],
                   ["in2.zarr"]),
    "generate": (["generate", "{dst}", "--shape", "16,24,24", "--chunks", "8,8,8", "--format",
                  "v2"], []),
}
FLAG = {"": [], "staged": ["--overwrite"], "in-place": ["--overwrite-in-place"]}
GRAPH_OVERWRITE = {"": None, "staged": True, "in-place": "in-place"}
COMMANDS = [*CLI, "run"]


def graph(dst, mode, src="in2.zarr", extra=None):
    out = {"path": dst, "like": "src", "create": {"format": 3, "chunks": [8, 8, 8]}}
    if GRAPH_OVERWRITE[mode] is not None:
        out["overwrite"] = GRAPH_OVERWRITE[mode]
    g = {"sluice": 1,
         "arrays": {"src": {"path": src}, "out": out},
         "nodes": {"read": {"op": "get", "array": "src"},
                   "down": {"op": "downsample", "input": "read", "factors": [2, 2, 2]},
                   "write": {"op": "put", "input": "down", "array": "out"}}}
    g.update(extra or {})
    return g


def command(cmd, dst, mode, extra=()):
    """(argv, sources, setup(sandbox)) for `cmd` writing `dst`."""
    if cmd == "run":
        g = graph(dst, mode)

        def setup(sb):
            with open(os.path.join(sb, "g.json"), "w") as f:
                json.dump(g, f, indent=1)
        return ["run", "g.json", *COMMON, *extra], ["in2.zarr"], setup
    args, srcs = CLI[cmd]
    argv = [a.replace("{dst}", dst) for a in args] + FLAG[mode] + COMMON + list(extra)
    return argv, srcs, lambda sb: None


# ---------------------------------------------------------------- checking


class Checker:
    def __init__(self, tmp, fixtures, patterns):
        self.tmp = tmp
        self.fixtures = fixtures
        self.patterns = patterns
        self.failures = {}  # case -> [messages]
        self.ran = []
        self.refs = {}  # (cmd, dst) -> (sandbox, subtree snapshot) or None
        self.truth_cache = {}
        self.js_queue = []  # (case, what, abs path, truth): read by zarrita later
        self.js_read = 0
        self.n = 0

    def wanted(self, name):
        if not self.patterns:
            return True
        return any(fnmatch.fnmatch(name, p) or p in name for p in self.patterns)

    def fail(self, case, msg):
        self.failures.setdefault(case, []).append(msg)

    def sandbox(self, name, fixtures):
        self.n += 1
        sb = os.path.join(self.tmp, "cases", f"{self.n:03d}-" + name.replace("/", "_"))
        os.makedirs(sb)
        for dst_rel, fix in fixtures:
            shutil.copytree(os.path.join(self.fixtures, fix), os.path.join(sb, dst_rel),
                            symlinks=True)
        return sb

    # What a node holds, by every reader here (zarrita is queued), cached by
    # the bytes of its tree.
    def truth(self, path):
        key = (os.path.basename(path), json.dumps(sorted(fsnap.snapshot(path).items())))
        if key in self.truth_cache:
            return self.truth_cache[key]
        d = describe(path)
        if d.get("ok") and d.get("kind") == "array":
            rc, out, err = sluice(["checksum", path], None)
            d["sluice_sha256"] = out.split()[0] if rc == 0 and out.strip() else f"error: {err}"
        self.truth_cache[key] = d
        return d

    def compare(self, case, what, got, want):
        keys = ("ok", "kind", "zarr_format", "formats", "shape", "dtype", "chunks")
        bad = [k for k in keys if got.get(k) != want.get(k)]
        for k in ("sha256", "sluice_sha256"):
            if got.get(k) and want.get(k) and got[k] != want[k]:
                bad.append(k)
        gs, ws = got.get("sum"), want.get("sum")
        if isinstance(gs, (int, float)) and isinstance(ws, (int, float)):
            if not math.isclose(gs, ws, rel_tol=1e-9, abs_tol=1e-9):
                bad.append("sum")
        if bad:
            self.fail(case, f"{what}: {', '.join(bad)} differ: got "
                      f"{short(json.dumps({k: got.get(k) for k in bad + ['error']}), 200)}, want "
                      f"{short(json.dumps({k: want.get(k) for k in bad}), 200)}")

    def read_nodes(self, case, sb, rels, wants, role):
        """Read each node now (zarr-python, sluice checksum), queue zarrita,
        compare with `wants` (rel -> truth)."""
        for rel in rels:
            path = os.path.join(sb, rel)
            got = self.truth(path)
            want = wants[rel]
            self.compare(case, f"{role} {rel} (zarr-python, sluice checksum)", got, want)
            if got.get("sha256") and got.get("sluice_sha256") and \
                    got["sha256"] != got["sluice_sha256"]:
                self.fail(case, f"{role} {rel}: zarr-python and sluice checksum disagree")
            self.js_queue.append((case, f"{role} {rel}", path, want))

    def node_rels(self, snap, under):
        return [os.path.join(under, d) if d else under for d, _, _ in fsnap.nodes(snap, under)]

    # --------------------------------------------------------------- a case

    def reference(self, cmd, dst):
        """The node `cmd` writes at an absent `dst`: run once, checked as
        its own case "<cmd>/absent[/nested]"."""
        key = (cmd, dst)
        if key in self.refs:
            return self.refs[key]
        name = f"{cmd}/absent" + ("/nested" if dst != DST else "")
        argv, srcs, setup = command(cmd, dst, "")
        sb = self.sandbox(name, [(s, s) for s in srcs])
        setup(sb)
        before = fsnap.snapshot(sb)
        rc, _, err = sluice(argv, sb)
        after = fsnap.snapshot(sb)
        self.ran.append(name)
        ref = None
        if rc != 0:
            self.fail(name, f"a run onto an absent DST exits {rc}, want 0: {short(err)}")
        elif not fsnap.nodes(after, dst):
            self.fail(name, f"no Zarr node at {dst} after the run")
        else:
            sub = fsnap.subtree(after, dst)
            outside = fsnap.without(after, dst.split("/")[0] if dst != DST else dst)
            if outside != before:
                self.fail(name, "files outside DST changed: " +
                          fsnap.describe_diff(before, outside))
            if fsnap.leftovers(after):
                self.fail(name, f"staging left behind: {fsnap.leftovers(after)}")
            rels = self.node_rels(after, dst)
            truths = {r: self.truth(os.path.join(sb, r)) for r in rels}
            for r, t in truths.items():
                if not t.get("ok"):
                    self.fail(name, f"{r} is unreadable: {t.get('error')}")
                elif t.get("kind") == "array":
                    self.js_queue.append((name, f"new {r}", os.path.join(sb, r), t))
            if cmd.startswith("copy"):
                src_t = self.truth(os.path.join(sb, srcs[0]))
                dst_t = truths[dst]
                if src_t.get("sluice_sha256") != dst_t.get("sluice_sha256"):
                    self.fail(name, "the copy's contents differ from its source's")
            ref = (sb, sub)
        self.refs[key] = ref
        return ref

    def case(self, name, argv, fixtures, expect, dst=None, srcs=(), setup=None, ref=None,
             err_has=(), rerun=None):
        """Run one case.  expect: "refused" (exit 2, sandbox untouched),
        "new" (exit 0, DST replaced by `ref`'s node, nothing else changed)
        or "failed-chunks" (exit 1).  err_has: groups of strings, one of
        each group must appear in stderr.  rerun: argv that must then
        succeed and write `ref`'s node."""
        if not self.wanted(name):
            return
        self.ran.append(name)
        sb = self.sandbox(name, fixtures)
        if setup:
            setup(sb)
        before = fsnap.snapshot(sb)
        src_rels = [r for s in srcs for r in self.node_rels(before, s)] if srcs else []
        src_truth = {r: self.truth(os.path.join(sb, r)) for r in src_rels}
        dst_rels = self.node_rels(before, dst) if dst and fsnap.subtree(before, dst) else []
        dst_truth = {r: self.truth(os.path.join(sb, r)) for r in dst_rels}
        rc, _, err = sluice(argv, sb)
        after = fsnap.snapshot(sb)
        shown = f"`sluice {' '.join(argv)}`"
        if expect == "refused":
            if rc != 2:
                self.fail(name, f"{shown} exits {rc}, want 2: {short(err)}")
            if after != before:
                self.fail(name, "the sandbox changed: " + fsnap.describe_diff(before, after))
            for group in err_has:
                if not any(s in err for s in group):
                    self.fail(name, f"stderr names none of {list(group)}: {short(err)}")
            self.read_nodes(name, sb, src_rels, src_truth, "source")
            self.read_nodes(name, sb, dst_rels, dst_truth, "old DST")
            if rerun and rc == 2 and after == before:
                self.flush_zarrita()
                self.check_new(name, sb, rerun, after, dst, ref, src_rels,
                               src_truth)
        elif expect == "new":
            self.check_new(name, sb, None, before, dst, ref, src_rels, src_truth, rc, err,
                           after, shown)
        elif expect == "failed-chunks":
            if rc != 1:
                self.fail(name, f"{shown} exits {rc}, want 1 (chunks failed): {short(err)}")

    def check_new(self, name, sb, argv, before, dst, ref, src_rels, src_truth, rc=None,
                  err="", after=None, shown=""):
        if argv is not None:
            rc, _, err = sluice(argv, sb)
            after = fsnap.snapshot(sb)
            shown = f"the rerun without the refused option, `sluice {' '.join(argv)}`,"
        if rc != 0:
            self.fail(name, f"{shown} exits {rc}, want 0: {short(err)}")
        if ref is None:
            self.fail(name, "no reference node (its absent-DST run failed)")
            return
        ref_sb, ref_sub = ref
        want = fsnap.graft(before, dst, ref_sub)
        if fsnap.without(after, dst) != fsnap.without(want, dst):
            self.fail(name, "outside DST: " + fsnap.describe_diff(fsnap.without(want, dst),
                                                                  fsnap.without(after, dst)))
        got_l = fsnap.listing(fsnap.subtree(after, dst))
        want_l = fsnap.listing(ref_sub)
        if got_l != want_l:
            self.fail(name, "DST is not exactly the new node: " +
                      fsnap.describe_diff(want_l, got_l))
        if fsnap.leftovers(after):
            self.fail(name, f"staging left behind: {fsnap.leftovers(after)[:4]}")
        self.read_nodes(name, sb, src_rels, src_truth, "source")
        rels = self.node_rels(after, dst)
        want_rels = [os.path.join(dst, d) if d else dst for d, _, _ in fsnap.nodes(ref_sub)]
        wants = {r: self.truth(os.path.join(ref_sb, r)) for r in want_rels}
        for r in rels:
            if r not in wants:
                self.fail(name, f"DST holds a node the new one lacks: {r}")
        self.read_nodes(name, sb, [r for r in rels if r in wants], wants, "new DST")

    # ---------------------------------------------------------- zarrita

    def zarrita(self):
        """The command that runs zarr_read.mjs, or None (said once)."""
        if hasattr(self, "_zarrita"):
            return self._zarrita
        self._zarrita, why = zarrita_command()
        if why:
            print(f"zarrita checks skipped: {why}")
            if os.environ.get("SL_REQUIRE_ZARRITA") == "1":
                self.fail("zarrita", f"SL_REQUIRE_ZARRITA=1 but {why}")
        return self._zarrita

    def flush_zarrita(self):
        """Read every queued node with zarrita (one node process per 200)
        and compare; called before a case changes a sandbox again, and at
        the end."""
        queue, self.js_queue = self.js_queue, []
        cmd = self.zarrita()
        if not cmd or not queue:
            return
        paths = sorted({p for _, _, p, _ in queue})
        got = {}
        for i in range(0, len(paths), 200):
            p = subprocess.run([*cmd, *paths[i:i + 200]], capture_output=True, text=True,
                               timeout=600)
            if p.returncode != 0:
                self.fail("zarrita", f"zarr_read.mjs exits {p.returncode}: {short(p.stderr)}")
                return
            for line in p.stdout.splitlines():
                d = json.loads(line)
                got[d["path"]] = d
        for case, what, path, want in queue:
            g = got.get(path, {"ok": False, "error": "no answer from zarr_read.mjs"})
            w = dict(want)
            if w.get("sha256") is None:  # zarr-python does not read v3 data
                w["sha256"] = w.get("sluice_sha256")
                w["sum"] = None
            self.compare(case, f"{what} (zarrita)", g, w)
        self.js_read += len(paths)


# ---------------------------------------------------------------- the cases


def cases_absent(c):
    """DST absent (and its parents): created, exit 0, nothing else made.
    These runs are also the references the other cases compare with."""
    for cmd in COMMANDS:
        for dst, suffix in ((DST, ""), (NESTED, "/nested")):
            if c.wanted(f"{cmd}/absent{suffix}"):
                c.reference(cmd, dst)


def cases_existing(c):
    """A Zarr node at DST: refused without --overwrite, replaced whole with."""
    for cmd in COMMANDS:
        for kind, fix in OLD_NODES.items():
            for mode in ("", "staged", "in-place"):
                name = f"{cmd}/{kind}/" + (mode or "no-overwrite")
                if not c.wanted(name):
                    continue
                argv, srcs, setup = command(cmd, DST, mode)
                fixtures = [(s, s) for s in srcs] + [(DST, fix)]
                if not mode:
                    c.case(name, argv, fixtures, "refused", DST, srcs, setup,
                           err_has=[("--overwrite", '"overwrite"')])
                else:
                    ref = c.reference(cmd, DST)
                    c.case(name, argv, fixtures, "new", DST, srcs, setup, ref=ref)


def cases_not_zarr(c):
    """A plain file, or a directory holding no Zarr node, at DST: refused in
    every mode.  An empty directory: written like an absent DST."""
    for cmd in COMMANDS:
        for kind, make in (("plain-file", put_file), ("non-zarr-dir", put_non_zarr_dir)):
            for mode in ("", "staged", "in-place"):
                name = f"{cmd}/{kind}/" + (mode or "no-overwrite")
                argv, srcs, setup = command(cmd, DST, mode)

                def both(sb, setup=setup, make=make):
                    setup(sb)
                    make(sb, DST)
                c.case(name, argv, [(s, s) for s in srcs], "refused", DST, srcs, both)
        name = f"{cmd}/empty-dir"
        if c.wanted(name):
            argv, srcs, setup = command(cmd, DST, "")

            def empty(sb, setup=setup):
                setup(sb)
                os.makedirs(os.path.join(sb, DST))
            c.case(name, argv, [(s, s) for s in srcs], "new", DST, srcs, empty,
                   ref=c.reference(cmd, DST))


def both_named(src, dst):
    forms = lambda p: tuple(sorted({p, p.rstrip("/"), os.path.normpath(p)}))  # noqa: E731
    return [forms(src)] if forms(src) == forms(dst) else [forms(src), forms(dst)]


ALIASES = [  # name, SRC, DST, setup
    ("same-path", "in3.zarr", "in3.zarr"),
    ("dotdot-dst", "in3.zarr", "sub/../in3.zarr"),
    ("dotdot-src", "sub/../in3.zarr", "in3.zarr"),
    ("symlink-dst", "in3.zarr", "link.zarr"),
    ("symlink-src", "link.zarr", "in3.zarr"),
    ("trailing-slash", "in3.zarr", "in3.zarr/"),
    ("dst-inside-src", "in3.zarr", "in3.zarr/sub"),
    ("src-inside-dst", "g.zarr/raw", "g.zarr"),
]


def alias_setup(sb):
    os.makedirs(os.path.join(sb, "sub"))
    os.symlink("in3.zarr", os.path.join(sb, "link.zarr"))
    g = os.path.join(sb, "g.zarr")
    os.makedirs(g)
    with open(os.path.join(g, "zarr.json"), "w") as f:
        json.dump({"zarr_format": 3, "node_type": "group", "attributes": {}}, f)
    shutil.copytree(os.path.join(sb, "in3.zarr"), os.path.join(g, "raw"))


def cases_alias(c):
    """SRC and DST the same, or one inside the other: refused before
    anything is touched, naming both."""
    verbs = {"copy": ["copy", "{src}", "{dst}"],
             "downsample": ["downsample", "{src}", "{dst}", "--factors", "2,2,2"],
             "pyramid": ["pyramid", "{src}", "{dst}", "--levels", "2", "--factors", "2,2,2"]}
    for verb, args in verbs.items():
        for alias, src, dst in ALIASES:
            for mode in ("", "staged", "in-place"):
                name = f"{verb}/alias-{alias}/" + (mode or "no-overwrite")
                argv = [a.replace("{src}", src).replace("{dst}", dst) for a in args]
                c.case(name, argv + FLAG[mode] + COMMON, [("in3.zarr", "in3.zarr")], "refused",
                       None, ["in3.zarr", "g.zarr"], alias_setup, err_has=both_named(src, dst))
    for alias, src, dst in [("trailing-slash", "in3.zarr", "in3.zarr/"),
                            ("dot", "in3.zarr", "./in3.zarr"),
                            ("symlink", "in3.zarr", "link.zarr"),
                            ("dst-inside-src", "in3.zarr", "in3.zarr/sub"),
                            ("src-inside-dst", "g.zarr/raw", "g.zarr")]:
        for mode in ("staged", "in-place"):
            name = f"run/alias-{alias}/{mode}"
            g = graph(dst, mode, src=src)

            def setup(sb, g=g):
                alias_setup(sb)
                with open(os.path.join(sb, "g.json"), "w") as f:
                    json.dump(g, f, indent=1)
            c.case(name, ["run", "g.json", *COMMON], [("in3.zarr", "in3.zarr")], "refused", None,
                   ["in3.zarr", "g.zarr"], setup, err_has=both_named(src, dst))


UNREADABLE = ("str.zarr", "date.zarr", "lzma.zarr")


def cases_refused_args(c):
    """Budgets and arguments that are refused create nothing anywhere (no
    parent directories either), and touch no old node even in place."""
    for cmd in COMMANDS:
        for dst, fix, mode in ((NESTED, None, ""), (DST, "old3.zarr", "in-place"),
                               (DST, "old3.zarr", "staged")):
            name = f"{cmd}/memory-1/" + ("nested-absent" if fix is None else f"old-{mode}")
            argv, srcs, setup = command(cmd, dst, mode, extra=["--memory", "1"])
            rerun, _, _ = command(cmd, dst, mode)
            fixtures = [(s, s) for s in srcs] + ([(dst, fix)] if fix else [])
            if not c.wanted(name):
                continue
            c.case(name, argv, fixtures, "refused", dst, srcs, setup, ref=c.reference(cmd, dst),
                   err_has=[("memory", "budget", "EBUDGET")], rerun=rerun)
    bad = [
        ("pyramid/1-d-input", ["pyramid", "one.zarr", "{dst}", "--levels", "2", "--factors", "2"],
         ["one.zarr"]),
        ("pyramid/axes-y,x,c", ["pyramid", "in3.zarr", "{dst}", "--levels", "2", "--factors",
                                "2,2,2", "--axes", "y,x,c"], ["in3.zarr"]),
        ("pyramid/levels-12", ["pyramid", "in3.zarr", "{dst}", "--levels", "12", "--factors",
                               "2,2,2"], ["in3.zarr"]),
        ("pyramid/factors-1,1,1", ["pyramid", "in3.zarr", "{dst}", "--levels", "2", "--factors",
                                   "1,1,1"], ["in3.zarr"]),
        ("pyramid/factors-trailing-comma", ["pyramid", "in3.zarr", "{dst}", "--levels", "2",
                                            "--factors", "2,2,2,"], ["in3.zarr"]),
        ("downsample/factors-trailing-comma", ["downsample", "in3.zarr", "{dst}", "--factors",
                                               "2,2,2,"], ["in3.zarr"]),
        ("copy/dtype-unicode", ["copy", "str.zarr", "{dst}"], ["str.zarr"]),
        ("copy/dtype-datetime", ["copy", "date.zarr", "{dst}"], ["date.zarr"]),
        ("copy/codec-lzma-in-source", ["copy", "lzma.zarr", "{dst}"], ["lzma.zarr"]),
        ("copy/codec-lzma-asked", ["copy", "in3.zarr", "{dst}", "--codec", "lzma:3"],
         ["in3.zarr"]),
        ("generate/dtype-complex64", ["generate", "{dst}", "--shape", "8,8", "--chunks", "4,4",
                                      "--dtype", "complex64"], []),
        ("copy/chunks-zero", ["copy", "in3.zarr", "{dst}", "--chunks", "4,0,4"], ["in3.zarr"]),
    ]
    for base, args, srcs in bad:
        for dst, fix, mode in ((NESTED, None, ""), (DST, "oldpyr3.zarr", "in-place"),
                               (DST, "oldpyr3.zarr", "staged")):
            name = base + ("/nested-absent" if fix is None else f"/old-pyramid-{mode}")
            argv = [a.replace("{dst}", dst) for a in args] + FLAG[mode] + COMMON
            fixtures = [(s, s) for s in srcs] + ([(dst, fix)] if fix else [])
            # Sources no reader here decodes (str, date, lzma) are checked
            # by the sandbox's bytes alone.
            readable = [x for x in srcs if x not in UNREADABLE]
            c.case(name, argv, fixtures, "refused", dst, readable)
    name = "copy/corrupt-chunk-exits-1"
    c.case(name, ["copy", "bad.zarr", NESTED, *COMMON], [("bad.zarr", "bad.zarr")],
           "failed-chunks")


def main(argv):
    patterns = [a for a in argv if not a.startswith("--")]
    patterns += [p for p in os.environ.get("SL_OVERWRITE_CASES", "").split(",") if p]
    tmp = tempfile.mkdtemp(prefix="sluice-overwrite-")
    try:
        fixtures = os.path.join(tmp, "fixtures")
        if "--list" not in argv:
            print(f"sluice: {SLUICE}", flush=True)
            make_fixtures(fixtures)
        c = Checker(tmp, fixtures, patterns)
        if "--list" in argv:
            c.case = lambda name, *a, **k: print(name) if c.wanted(name) else None
            listed = set()

            def list_ref(cmd, dst):
                name = f"{cmd}/absent" + ("/nested" if dst != DST else "")
                if name not in listed and c.wanted(name):
                    listed.add(name)
                    print(name)
            c.reference = list_ref
        cases_absent(c)
        cases_existing(c)
        cases_not_zarr(c)
        cases_alias(c)
        cases_refused_args(c)
        if "--list" in argv:
            return 0
        c.flush_zarrita()
        if c.js_read:
            print(f"zarrita: {c.js_read} nodes read")
        for name in c.ran:
            if name in c.failures:
                print(f"FAIL {name}")
                for msg in c.failures[name][:4]:
                    print(f"     {msg}")
                if len(c.failures[name]) > 4:
                    print(f"     ... and {len(c.failures[name]) - 4} more")
            else:
                print(f"ok   {name}")
        extra = [n for n in c.failures if n not in c.ran]
        for name in extra:
            print(f"FAIL {name}: {'; '.join(c.failures[name])}")
        n_fail = len(c.failures)
        print(f"overwrite: {len(c.ran)} cases, {n_fail} failed"
              + (f" (sandboxes kept in {tmp})" if os.environ.get("SL_KEEP_TMP") else ""))
        return 1 if n_fail else 0
    finally:
        if not os.environ.get("SL_KEEP_TMP"):
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
