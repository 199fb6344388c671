#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Consolidated metadata over HTTP: `sluice info URL` of a group lists its
members from the group's consolidated metadata, since HTTP cannot list.

1. v2: a group written by zarr-python 2.13 (an array, a subgroup holding
   another) and `zarr.consolidate_metadata`, served by nginx behind the
   proxy (tests/remote/serve.py): info lists every member with its dtype and
   shape; the proxy log shows .zmetadata fetched once and not one request
   for a member's metadata (the listing is that one request).
2. v3: arrays written by `sluice generate` under a group whose zarr.json
   inlines their zarr.json as "consolidated_metadata": the same, with the
   group's zarr.json the only document read.
3. The same v2 group without .zmetadata: info says the store cannot list
   (exit 0); with a corrupt .zmetadata: info fails naming the key and the
   JSON pointer of the bad entry.

Exit 77 (skipped) without nginx or without numpy/zarr (python3-zarr).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import serve  # noqa: E402

try:
    import numpy as np
    import zarr
except ImportError as e:
    print(f"skipped: {e} (install python3-zarr)")
    sys.exit(77)

SLUICE = os.environ.get("SL_SLUICE_EXE", "sluice")
failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)
    return cond


def run(*args):
    p = subprocess.run([SLUICE, *args], capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


def write_groups(root):
    g = zarr.open_group(os.path.join(root, "cons"), mode="w")
    g.attrs["title"] = "consolidated"
    a = g.create_dataset("a", shape=(20, 30), chunks=(8, 8), dtype="u2")
    a[...] = np.arange(600, dtype="u2").reshape(20, 30)
    a.attrs["units"] = "m"
    g.create_group("g").create_dataset("b", shape=(7,), chunks=(4,), dtype="f4")
    shutil.copytree(os.path.join(root, "cons"), os.path.join(root, "plain"))
    zarr.consolidate_metadata(os.path.join(root, "cons"))
    # a corrupt copy: one member's metadata is not an object
    shutil.copytree(os.path.join(root, "cons"), os.path.join(root, "bad"))
    with open(os.path.join(root, "bad", ".zmetadata")) as f:
        doc = json.load(f)
    doc["metadata"]["a/.zarray"] = 5
    with open(os.path.join(root, "bad", ".zmetadata"), "w") as f:
        json.dump(doc, f)
    # v3: sluice-written arrays, their zarr.json inlined in the group's
    members = {}
    for name in ("x", "h/y"):
        rc, _, err = run("generate", os.path.join(root, "v3g", name), "--format", "v3",
                         "--shape", "16,16", "--chunks", "8,8", "--no-progress")
        expect(rc == 0, f"sluice generate v3g/{name}: rc {rc}: {err.strip()}")
        with open(os.path.join(root, "v3g", name, "zarr.json")) as f:
            members[name] = json.load(f)
    members["h"] = {"zarr_format": 3, "node_type": "group", "attributes": {}}
    with open(os.path.join(root, "v3g", "zarr.json"), "w") as f:
        json.dump({"zarr_format": 3, "node_type": "group", "attributes": {},
                   "consolidated_metadata": {"kind": "inline", "must_understand": False,
                                             "metadata": members}}, f)


def gets(s, pred):
    return [e["path"] for e in s.log() if e["method"] == "GET" and pred(e["path"])]


def check_listing(s, group, doc, want):
    """info of proxy_url+group lists `want` (lines' words) from `doc`, read once."""
    s.clear_log()
    rc, out, err = run("info", s.proxy_url + group)
    print(out, end="")
    expect(rc == 0, f"sluice info {group}: rc {rc}: {err.strip()}")
    for words in want:
        expect(any(all(w in line for w in words) for line in out.splitlines()),
               f"sluice info {group}: no member line with {words}:\n{out}")
    expect("(from consolidated metadata)" in out, f"sluice info {group}: {out}")
    log = [(e["path"], e["status"]) for e in s.log()]
    print(f"  proxy log for {group}: {log}")
    docs = gets(s, lambda p: p == f"/{group}/{doc}")
    members = gets(s, lambda p: p.startswith(f"/{group}/") and p.count("/") > 2)
    if doc == ".zmetadata":
        expect(len(docs) == 1, f"{group}: .zmetadata fetched {len(docs)} times, not once")
    else:  # zarr.json: once to probe the node, once for its members
        expect(len(docs) == 2, f"{group}: zarr.json fetched {len(docs)} times, not twice")
    expect(not members, f"{group}: members' metadata requested: {members}")


def main():
    if serve.find_nginx() is None:
        print("skipped: nginx not found (apt-get install nginx-light)")
        return 77
    tmp = tempfile.mkdtemp(prefix="sl-check-consolidated-")
    try:
        root = os.path.join(tmp, "root")
        os.mkdir(root)
        write_groups(root)
        with serve.serve(root) as s:
            check_listing(s, "cons", ".zmetadata",
                          [("a ", "v2 array", "uint16", "[20, 30]"), ("g ", "v2 group"),
                           ("g/b", "v2 array", "float32", "[7]")])
            check_listing(s, "v3g", "zarr.json",
                          [("x ", "v3 array", "[16, 16]"), ("h ", "v3 group"),
                           ("h/y", "v3 array", "[16, 16]")])
            rc, out, err = run("info", s.proxy_url + "plain")
            expect(rc == 0 and "cannot list" in out,
                   f"info of an unconsolidated remote group: rc {rc}: {out} {err}")
            rc, out, err = run("info", s.proxy_url + "bad")
            print(err, end="")
            expect(rc != 0 and ".zmetadata" in err and "/metadata/a~1.zarray" in err,
                   f"info of a corrupt .zmetadata: rc {rc}: {out} {err}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
