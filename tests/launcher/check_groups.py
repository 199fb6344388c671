#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Check groups in `sluice copy` and `sluice pyramid --member` (issue 23).

copy: a Zarr v2 hierarchy made by zarr-python (attributes on the root, on
nested groups and on arrays; an empty group; arrays of ranks 1 to 3) is
copied to v3 (per-array chunks and shards, a crc32c codec chain) and read
back member by member with zarrita, then copied back to v2 and read with
zarr-python; contents, kinds and attributes must match the source's.
Consolidated metadata in the source is written for the output (v3 inline,
v2 .zmetadata read by zarr.open_consolidated), and none when it had none;
a corrupt chunk of one member fails alone and --resume completes it.  One
run writes every array (one report, a put per array); refusals name the
member or the option (a chunk shape of another rank, an unknown
--chunks-for path, --chunks-for on an array), an existing DST is refused
without --overwrite and replaced whole with it.

pyramid --member: a multiscale image is added beside "labels" to an
existing OME group, v2 (made by zarr-python, read back with it) and v3
(written by sluice, read with zarrita): the group's other members and
attributes stay, the source's attributes reach the image group less the
keys OME owns; the image takes the group's format, and consolidated
metadata is rewritten to list it.  Refusals: no group at DSTGROUP, another
format, an existing member without --overwrite, a name with a slash.

Graph files: a copy node copies the hierarchy to v3 (crc32c, one member's
own shards; read with zarrita) and another to v2 (zarr-python) in one run,
a put per array named by its path; a chunk shape of the wrong rank is
refused naming the member.

pyramid --into: the levels written straight into an existing OME container
whose member is SRC, v2 (consolidated; read with zarr-python) and v3 (an
"ome" object with "omero"; read with zarrita): the group's members and
attributes stay, SRC's are added where the group lacks the key, the old
multiscales are replaced; levels already there need --overwrite, which
keeps (and names) an older level the new image does not list; refusals:
SRC where a level goes, --member or --resume beside --into, an array, a
group of another format.

Exits 77 (skipped) without numpy and zarr (python3-zarr); zarrita checks
are skipped, saying so, without node or tests/tools/node_modules.
"""
import json
import os
import shutil
import sys
import tempfile

from launcher_util import checksum, expect, finish, run, skip_without, zarrita_read

skip_without("numpy", "zarr")
import numpy as np  # noqa: E402
import zarr  # noqa: E402


# The source hierarchy: path -> (kind, attributes, data or None).
ARRAYS = {
    "raw": (np.arange(20 * 30 * 7, dtype=np.uint16).reshape(20, 30, 7), (8, 8, 7),
            {"unit": "um", "_note": [1, 2]}),
    "labels/seg": ((np.arange(20 * 30, dtype=np.int32).reshape(20, 30) % 5), (10, 10), {}),
    "a/b/c": (np.linspace(0, 1, 50), (16,), {"deep": True}),
}
GROUPS = {"": {"title": "demo", "n": 3}, "labels": {"labels": ["seg"]}, "a": {},
          "a/b": {"level": {"k": "v"}}, "empty": {"why": "nothing inside"}}


def make_source(path):
    root = zarr.open_group(path, mode="w")
    for g, attrs in GROUPS.items():
        node = root if g == "" else root.require_group(g)
        node.attrs.update(attrs)
    for a, (data, chunks, attrs) in ARRAYS.items():
        z = root.create_dataset(a, data=data, chunks=chunks)
        z.attrs.update(attrs)


def v3_attrs(path):
    with open(os.path.join(path, "zarr.json")) as f:
        return json.load(f).get("attributes", {})


def check_v3_copy(tmp, src):
    dst = os.path.join(tmp, "v3.zarr")
    report = os.path.join(tmp, "v3.json")
    rc, _, err = run("copy", src, dst, "--no-progress", "--format", "v3", "--codec",
                     "zstd:3,crc32c", "--chunks-for", "raw=4,5,7", "--shards-for", "raw=8,10,7",
                     "--chunks-for", "labels/seg=7,7", "--report", report)
    expect(rc == 0, f"copy v2 group -> v3: {err}")
    if rc != 0:
        return None
    with open(report) as f:
        rep = json.load(f)
    names = sorted(p.get("name") for p in rep.get("puts", []))
    expect(names == sorted("output:" + a for a in ARRAYS), f"one report, a put per array: {names}")
    with open(os.path.join(dst, "zarr.json")) as f:
        expect("consolidated_metadata" not in json.load(f), "none consolidated, none written")
    for g, attrs in GROUPS.items():
        p = os.path.join(dst, g)
        meta = json.load(open(os.path.join(p, "zarr.json")))
        expect(meta.get("node_type") == "group", f"v3 {g or '/'} is a group")
        expect(meta.get("attributes", {}) == attrs, f"v3 {g or '/'} attributes: {meta}")
    raw = json.load(open(os.path.join(dst, "raw", "zarr.json")))
    shard = [c for c in raw["codecs"] if c["name"] == "sharding_indexed"]
    expect(raw["chunk_grid"]["configuration"]["chunk_shape"] == [8, 10, 7] and shard and
           shard[0]["configuration"]["chunk_shape"] == [4, 5, 7],
           f"--chunks-for/--shards-for raw: {raw['chunk_grid']}, {shard}")
    for a, (data, chunks, attrs) in ARRAYS.items():
        expect(v3_attrs(os.path.join(dst, a)) == attrs, f"v3 {a} attributes")
        expect(checksum(os.path.join(dst, a)) == checksum(os.path.join(src, a)),
               f"v3 {a}: contents differ (sluice checksum)")
    paths = [os.path.join(dst, p) for p in [*GROUPS, *ARRAYS]]
    got = zarrita_read(paths)
    if got is not None:
        for p in GROUPS:
            d = got.get(os.path.join(dst, p), {})
            expect(d.get("ok") and d.get("kind") == "group" and d.get("zarr_format") == 3 and
                   d.get("attributes") == sorted(GROUPS[p]), f"zarrita reads group {p!r}: {d}")
        for a, (data, _, _) in ARRAYS.items():
            d = got.get(os.path.join(dst, a), {})
            expect(d.get("ok") and d.get("kind") == "array" and
                   d.get("sha256") == checksum(os.path.join(src, a)) and
                   list(d.get("shape", [])) == list(data.shape), f"zarrita reads {a}: {d}")
    return dst


def check_v2_copy(tmp, src, v3):
    dst = os.path.join(tmp, "back.zarr")
    rc, _, err = run("copy", v3, dst, "--no-progress", "--format", "v2", "--chunks-for",
                     "a/b/c=9")
    expect(rc == 0, f"copy v3 group -> v2: {err}")
    if rc != 0:
        return
    root = zarr.open_group(dst, mode="r")
    for g, attrs in GROUPS.items():
        node = root if g == "" else root[g]
        expect(isinstance(node, zarr.hierarchy.Group), f"v2 {g or '/'} is a group")
        expect(dict(node.attrs) == attrs, f"v2 {g or '/'} attributes: {dict(node.attrs)}")
    for a, (data, chunks, attrs) in ARRAYS.items():
        z = root[a]
        expect(np.array_equal(z[...], data), f"zarr-python reads v3 -> v2 {a} differently")
        expect(dict(z.attrs) == attrs, f"v2 {a} attributes: {dict(z.attrs)}")
        # v3's inner chunks (--chunks-for in check_v3_copy) become v2's chunks.
        want = {"a/b/c": (9,), "raw": (4, 5, 7), "labels/seg": (7, 7)}[a]
        expect(z.chunks == want, f"v2 {a} chunks {z.chunks}, expected {want}")
    expect(sorted(root.group_keys()) == ["a", "empty", "labels"], "no more groups than SRC's")


def check_group_refusals(tmp, src):
    dst = os.path.join(tmp, "refused.zarr")
    rc, _, err = run("copy", src, dst, "--chunks", "4,4,4")
    expect(rc == 2 and "a/b/c" in err and "--chunks-for" in err,
           f"--chunks of another rank names the member: {rc} {err}")
    rc, _, err = run("copy", src, dst, "--chunks-for", "nope=1,2")
    expect(rc == 2 and '"nope"' in err, f"an unknown --chunks-for path is named: {rc} {err}")
    rc, _, err = run("copy", src, dst, "--chunks-for", "raw")
    expect(rc == 2 and "PATH=LIST" in err, f"--chunks-for without = is refused: {rc} {err}")
    rc, _, err = run("copy", os.path.join(src, "raw"), dst, "--chunks-for", "raw=1,1,1")
    expect(rc == 2 and "SRC is an array" in err, f"--chunks-for on an array: {rc} {err}")
    rc, _, err = run("copy", src, dst, "--shards", "8,8,8")
    expect(rc == 2, f"--shards into v2 is refused: {rc} {err}")
    expect(not os.path.exists(dst), "nothing is left of refused copies")
    # An existing DST: refused, then replaced whole.
    old = os.path.join(tmp, "old.zarr")
    zarr.open_group(old, mode="w").create_dataset("stale", data=np.zeros(3))
    rc, _, err = run("copy", src, old, "--no-progress")
    expect(rc == 2 and "--overwrite" in err, f"an existing DST needs --overwrite: {err}")
    rc, _, err = run("copy", src, old, "--no-progress", "--overwrite")
    expect(rc == 0, f"copy --overwrite onto a group: {err}")
    expect(not os.path.exists(os.path.join(old, "stale")), "--overwrite replaced DST whole")
    expect(np.array_equal(zarr.open_group(old, mode="r")["raw"][...], ARRAYS["raw"][0]),
           "--overwrite wrote the new hierarchy")
    expect(not [n for n in os.listdir(tmp) if n.startswith(".sluice-tmp")],
           f"no staging directories left: {os.listdir(tmp)}")


def check_consolidated(tmp, src):
    """Consolidated metadata in SRC's group is written for DST (v2 and v3)."""
    work = os.path.join(tmp, "cons_src.zarr")
    shutil.copytree(src, work)
    zarr.consolidate_metadata(work)
    members = sorted(p for p in [*GROUPS, *ARRAYS] if p)
    v3 = os.path.join(tmp, "cons3.zarr")
    rc, _, err = run("copy", work, v3, "--no-progress", "--format", "v3")
    expect(rc == 0, f"copy of a consolidated group to v3: {err}")
    with open(os.path.join(v3, "zarr.json")) as f:
        cm = json.load(f).get("consolidated_metadata") or {}
    expect(cm.get("kind") == "inline" and sorted(cm.get("metadata", {})) == members,
           f"v3 consolidated metadata names every member: {sorted(cm.get('metadata', {}))}")
    expect(cm.get("metadata", {}).get("a/b", {}).get("attributes") == GROUPS["a/b"],
           "v3 consolidated entries hold the attributes")
    rc, out, err = run("info", v3)
    expect(rc == 0 and "from consolidated metadata" in out, f"sluice info reads it: {out}{err}")
    v2 = os.path.join(tmp, "cons2.zarr")
    rc, _, err = run("copy", v3, v2, "--no-progress", "--format", "v2")
    expect(rc == 0, f"copy of a consolidated v3 group to v2: {err}")
    # Only .zmetadata is read: remove a member's own metadata to prove it.
    os.remove(os.path.join(v2, "a", "b", ".zattrs"))
    g = zarr.open_consolidated(v2, mode="r")
    expect(dict(g["a/b"].attrs) == GROUPS["a/b"] and dict(g.attrs) == GROUPS[""],
           "zarr-python reads the v2 .zmetadata's attributes")
    expect(np.array_equal(g["raw"][...], ARRAYS["raw"][0]), "zarr-python reads raw through it")


def check_group_resume(tmp, src):
    """A corrupt chunk in one member fails alone; repaired, --resume copies it."""
    work = os.path.join(tmp, "resume_src.zarr")
    shutil.copytree(src, work)
    chunk = os.path.join(work, "labels", "seg", "1.1")
    with open(chunk, "rb") as f:
        good = f.read()
    with open(chunk, "wb") as f:
        f.write(b"not a chunk")
    dst = os.path.join(tmp, "resumed.zarr")
    journal = os.path.join(tmp, "resume.journal")
    report = os.path.join(tmp, "resume.json")
    rc, _, err = run("copy", work, dst, "--no-progress", "--format", "v3", "--journal", journal,
                     "--report", report)
    expect(rc == 1, f"a corrupt member chunk fails the group copy with 1: {rc} {err}")
    with open(report) as f:
        rep = json.load(f)
    failed = [(p.get("name"), [f.get("chunk") for f in p.get("failures", [])])
              for p in rep.get("puts", []) if p.get("failed")]
    expect(failed == [("output:labels/seg", [[1, 1]])],
           f"the report blames chunk (1, 1) of labels/seg alone: {failed}")
    with open(chunk, "wb") as f:
        f.write(good)
    rc, _, err = run("copy", work, dst, "--no-progress", "--format", "v3", "--journal", journal,
                     "--resume")
    expect(rc == 0, f"--resume of a group copy: {rc} {err}")
    for a in ARRAYS:
        expect(checksum(os.path.join(dst, a)) == checksum(os.path.join(src, a)),
               f"resumed {a}: contents differ")


def make_image(path, fmt):
    data = (np.arange(40 * 50, dtype=np.uint16).reshape(40, 50) * 3) % 1000
    z = zarr.open_array(path, mode="w", shape=data.shape, chunks=(16, 16), dtype="u2")
    z[...] = data
    z.attrs.update({"channel": "DAPI", "multiscales": ["stale"], "_ARRAY_DIMENSIONS": ["y", "x"]})
    if fmt == 3:
        v3 = path + ".v3"
        rc, _, err = run("copy", path, v3, "--format", "v3", "--no-progress")
        expect(rc == 0, f"a v3 source image: {err}")
        return v3, data
    return path, data


def check_pyramid_v2(tmp):
    src, data = make_image(os.path.join(tmp, "img2.zarr"), 2)
    grp = os.path.join(tmp, "ome2.zarr")
    g = zarr.open_group(grp, mode="w")
    g.attrs["owner"] = "lab"
    lab = g.create_group("labels")
    lab.attrs["labels"] = ["cells"]
    lab.create_dataset("cells", data=np.ones((4, 4), dtype="u1"))
    rc, _, err = run("pyramid", src, grp, "--member", "image", "--levels", "3", "--factors",
                     "2,2", "--no-progress")
    expect(rc == 0, f"pyramid --member into a v2 group: {err}")
    g = zarr.open_group(grp, mode="r")
    expect(dict(g.attrs) == {"owner": "lab"}, f"v2 group attributes kept: {dict(g.attrs)}")
    expect(dict(g["labels"].attrs) == {"labels": ["cells"]} and
           np.array_equal(g["labels/cells"][...], np.ones((4, 4))), "v2 labels kept")
    img = g["image"]
    expect(np.array_equal(img["0"][...], data), "v2 image level 0 equals SRC")
    expect(img["2"].shape == (10, 13), f"v2 image level 2 shape {img['2'].shape}")
    attrs = dict(img.attrs)
    expect(attrs.get("channel") == "DAPI" and "_ARRAY_DIMENSIONS" not in attrs,
           f"SRC's own attributes reach the image group, OME's keys not: {attrs}")
    ms = attrs.get("multiscales", [{}])[0]
    expect(ms.get("version") == "0.4" and ms.get("name") == "image" and
           [d["path"] for d in ms.get("datasets", [])] == ["0", "1", "2"],
           f"the image's multiscales are OME's, not SRC's stale ones: {ms}")
    # A v3 source into the (now consolidated) v2 group: the image is v2, and
    # the group's .zmetadata is rewritten to list it.
    zarr.consolidate_metadata(grp)
    src3, _ = make_image(os.path.join(tmp, "img2b.zarr"), 3)
    rc, _, err = run("pyramid", src3, grp, "--member", "fromv3", "--levels", "2", "--factors",
                     "2,2", "--no-progress")
    expect(rc == 0, f"pyramid --member of a v3 source into a v2 group: {err}")
    g = zarr.open_consolidated(grp, mode="r")
    expect(sorted(g.group_keys()) == ["fromv3", "image", "labels"],
           f".zmetadata lists the new member: {sorted(g.group_keys())}")
    expect(np.array_equal(g["fromv3/0"][...], data) and
           not os.path.exists(os.path.join(grp, "fromv3", "zarr.json")),
           "a v3 source's image in a v2 group is v2, read by zarr-python")
    # Refusals.
    rc, _, err = run("pyramid", src, grp, "--member", "image", "--levels", "2", "--factors", "2,2")
    expect(rc == 2 and "--overwrite" in err, f"an existing member needs --overwrite: {err}")
    rc, _, err = run("pyramid", src, grp, "--member", "image", "--levels", "2", "--factors",
                     "2,2", "--no-progress", "--overwrite")
    expect(rc == 0 and not os.path.exists(os.path.join(grp, "image", "2")),
           f"--overwrite replaces the member whole: {err}")
    expect(os.path.exists(os.path.join(grp, "labels", "cells", ".zarray")),
           "--overwrite of a member keeps the others")
    rc, _, err = run("pyramid", src, grp, "--member", "v3", "--levels", "2", "--factors", "2,2",
                     "--format", "v3")
    expect(rc == 2 and "Zarr v2 group" in err, f"another format is refused: {err}")
    rc, _, err = run("pyramid", src, os.path.join(tmp, "src.zarr", "raw"), "--member", "x",
                     "--levels", "2", "--factors", "2,2")
    expect(rc == 2 and "holds a Zarr array" in err, f"--member into an array: {err}")
    rc, _, err = run("pyramid", src, os.path.join(tmp, "none"), "--member", "x", "--levels", "2",
                     "--factors", "2,2")
    expect(rc == 2 and "no Zarr node" in err, f"--member into nothing: {err}")
    rc, _, err = run("pyramid", src, grp, "--member", "a/b", "--levels", "2", "--factors", "2,2")
    expect(rc == 2 and "member name" in err, f"--member with a slash: {err}")


def check_pyramid_v3(tmp):
    src, data = make_image(os.path.join(tmp, "img3.zarr"), 3)
    grp = os.path.join(tmp, "ome3.zarr")
    os.makedirs(os.path.join(grp, "labels"))
    for p, attrs in (("", {"owner": "lab"}), ("labels", {"labels": ["cells"]})):
        with open(os.path.join(grp, p, "zarr.json"), "w") as f:
            json.dump({"zarr_format": 3, "node_type": "group", "attributes": attrs}, f)
    rc, _, err = run("pyramid", src, os.path.join(grp, "labels"), "--member", "cells",
                     "--levels", "2", "--factors", "2,2", "--method", "stride", "--no-progress")
    expect(rc == 0, f"pyramid --member into a v3 labels group: {err}")
    rc, _, err = run("pyramid", src, grp, "--member", "image", "--levels", "3", "--factors",
                     "2,2", "--no-progress")
    expect(rc == 0, f"pyramid --member into a v3 group: {err}")
    expect(v3_attrs(grp) == {"owner": "lab"}, f"v3 group attributes kept: {v3_attrs(grp)}")
    expect(v3_attrs(os.path.join(grp, "labels")) == {"labels": ["cells"]}, "v3 labels kept")
    attrs = v3_attrs(os.path.join(grp, "image"))
    expect(attrs.get("channel") == "DAPI" and "multiscales" not in attrs and
           "_ARRAY_DIMENSIONS" not in attrs and attrs.get("ome", {}).get("version") == "0.5",
           f"v3 image attributes: {attrs}")
    paths = [grp, os.path.join(grp, "labels"), os.path.join(grp, "labels", "cells", "0"),
             os.path.join(grp, "image"), os.path.join(grp, "image", "0"),
             os.path.join(grp, "image", "2")]
    got = zarrita_read(paths)
    if got is None:
        return
    want0 = checksum(src)
    d = got.get(grp, {})
    expect(d.get("ok") and d.get("attributes") == ["owner"], f"zarrita: group {d}")
    d = got.get(os.path.join(grp, "image"), {})
    expect(d.get("ok") and d.get("attributes") == ["channel", "ome"], f"zarrita: image {d}")
    for p in (os.path.join(grp, "image", "0"), os.path.join(grp, "labels", "cells", "0")):
        d = got.get(p, {})
        expect(d.get("ok") and d.get("sha256") == want0, f"zarrita: {p} equals SRC: {d}")
    d = got.get(os.path.join(grp, "image", "2"), {})
    expect(d.get("ok") and d.get("shape") == [10, 13], f"zarrita: image level 2 {d}")


def check_graph_copy(tmp, src):
    """A graph file's copy node: the v2 group into v3 with crc32c and one
    member's own shards (read by zarrita), then back into v2 (zarr-python)."""
    graph = os.path.join(tmp, "copy_graph.json")
    with open(graph, "w") as f:
        json.dump({"sluice": 1, "arrays": {}, "nodes": {
            "tree": {"op": "copy", "source": "src.zarr", "group": "graph_v3.zarr",
                     "create": {"format": 3, "codec": "zstd:3,crc32c"},
                     "members": {"raw": {"chunks": [4, 5, 7], "shards": [8, 10, 7]}}},
            "back": {"op": "copy", "source": "src.zarr", "group": "graph_v2.zarr",
                     "members": {"a/b/c": {"chunks": [9]}}}}}, f)
    report = os.path.join(tmp, "copy_graph_report.json")
    rc, _, err = run("run", graph, "--no-progress", "--report", report)
    expect(rc == 0, f"a graph file copies two groups: {err}")
    if rc != 0:
        return
    with open(report) as f:
        names = sorted(p.get("name") for p in json.load(f).get("puts", []))
    expect(names == sorted([f"tree:{a}" for a in ARRAYS] + [f"back:{a}" for a in ARRAYS]),
           f"a put per member array, named by its path: {names}")
    dst = os.path.join(tmp, "graph_v3.zarr")
    for g, attrs in GROUPS.items():
        expect(v3_attrs(os.path.join(dst, g)) == attrs, f"graph copy: v3 {g or '/'} attributes")
    raw = json.load(open(os.path.join(dst, "raw", "zarr.json")))
    codecs = json.dumps(raw["codecs"])
    expect(raw["chunk_grid"]["configuration"]["chunk_shape"] == [8, 10, 7] and
           "crc32c" in codecs and '"chunk_shape": [4, 5, 7]' in codecs,
           f"graph copy: raw's own shards, crc32c from create: {codecs}")
    got = zarrita_read([os.path.join(dst, a) for a in ARRAYS])
    for a, (data, _, attrs) in ARRAYS.items():
        want = checksum(os.path.join(src, a))
        expect(checksum(os.path.join(dst, a)) == want, f"graph copy: v3 {a} contents")
        expect(v3_attrs(os.path.join(dst, a)) == attrs, f"graph copy: v3 {a} attributes")
        if got is not None:
            d = got.get(os.path.join(dst, a), {})
            expect(d.get("ok") and d.get("sha256") == want, f"graph copy: zarrita reads {a}: {d}")
    root = zarr.open_group(os.path.join(tmp, "graph_v2.zarr"), mode="r")
    for g, attrs in GROUPS.items():
        node = root if g == "" else root[g]
        expect(dict(node.attrs) == attrs, f"graph copy: v2 {g or '/'} attributes")
    for a, (data, chunks, attrs) in ARRAYS.items():
        z = root[a]
        expect(np.array_equal(z[...], data) and dict(z.attrs) == attrs,
               f"graph copy: zarr-python reads v2 {a}")
        expect(z.chunks == ((9,) if a == "a/b/c" else chunks), f"graph copy: v2 {a} chunks")
    # Validation names what is wrong before anything runs.
    with open(graph, "w") as f:
        json.dump({"sluice": 1, "arrays": {}, "nodes": {
            "tree": {"op": "copy", "source": "src.zarr", "group": "bad.zarr",
                     "create": {"chunks": [4, 4]}}}}, f)
    rc, _, err = run("validate", graph)
    expect(rc == 2 and "/nodes/tree/create/chunks" in err and "member array" in err and
           not os.path.exists(os.path.join(tmp, "bad.zarr")),
           f"a chunk shape of the wrong rank is refused naming the member: {err}")


def make_container(path, fmt, data):
    """An OME container holding the image as member "raw", a labels group and
    attributes of its own (v3: an "ome" object with "omero" beside)."""
    if fmt == 2:
        g = zarr.open_group(path, mode="w")
        g.attrs.update({"owner": "lab", "multiscales": [{"stale": True}]})
        raw = g.create_dataset("raw", data=data, chunks=(16, 16))
        raw.attrs.update({"channel": "DAPI", "owner": "not this"})
        g.create_group("labels").attrs["labels"] = ["cells"]
        g["labels"].create_dataset("cells", data=np.ones((4, 4), dtype="u1"))
        zarr.consolidate_metadata(path)
        return os.path.join(path, "raw")
    os.makedirs(os.path.join(path, "labels"))
    attrs = {"owner": "lab", "ome": {"version": "0.5", "omero": {"channels": [{"label": "DAPI"}]},
                                     "multiscales": [{"stale": True}]}}
    for p, a in (("", attrs), ("labels", {"labels": ["cells"]})):
        with open(os.path.join(path, p, "zarr.json"), "w") as f:
            json.dump({"zarr_format": 3, "node_type": "group", "attributes": a}, f)
    src, _ = make_image(os.path.join(path + ".src"), 3)
    return src


def check_pyramid_into(tmp):
    """`pyramid --into`: the levels straight into an existing OME container,
    its members and attributes kept; read by zarr-python (v2) and zarrita (v3)."""
    data = (np.arange(40 * 50, dtype=np.uint16).reshape(40, 50) * 3) % 1000
    grp = os.path.join(tmp, "into2.zarr")
    src = make_container(grp, 2, data)
    rc, _, err = run("pyramid", src, grp, "--into", "--levels", "3", "--factors", "2,2",
                     "--no-progress")
    expect(rc == 0, f"pyramid --into a v2 container, SRC one of its members: {err}")
    g = zarr.open_consolidated(grp, mode="r")
    attrs = dict(g.attrs)
    ms = attrs.get("multiscales", [{}])[0]
    expect(attrs.get("owner") == "lab" and attrs.get("channel") == "DAPI" and
           [d["path"] for d in ms.get("datasets", [])] == ["0", "1", "2"] and
           ms.get("version") == "0.4",
           f"v2 --into: the group's attributes kept, SRC's added, multiscales replaced: {attrs}")
    expect(sorted(g.group_keys()) == ["labels"] and sorted(g.array_keys()) == ["0", "1", "2", "raw"],
           f".zmetadata lists the levels beside raw and labels: {sorted(g.array_keys())}")
    expect(np.array_equal(g["0"][...], data) and np.array_equal(g["raw"][...], data) and
           g["2"].shape == (10, 13) and np.array_equal(g["labels/cells"][...], np.ones((4, 4))),
           "v2 --into: level 0 is SRC, level 2 is smaller, SRC and labels kept")
    rc, _, err = run("pyramid", src, grp, "--into", "--levels", "2", "--factors", "2,2")
    expect(rc == 2 and '"0" where level 0 goes' in err and "--overwrite" in err,
           f"levels already there need --overwrite: {err}")
    rc, _, err = run("pyramid", src, grp, "--into", "--levels", "2", "--factors", "2,2",
                     "--overwrite", "--no-progress")
    expect(rc == 0 and 'level "2"' in err and os.path.exists(os.path.join(grp, "2", ".zarray")),
           f"--overwrite replaces levels 0 and 1, keeps 2 and names it: {err}")
    ms = zarr.open_consolidated(grp, mode="r").attrs["multiscales"][0]
    expect([d["path"] for d in ms["datasets"]] == ["0", "1"], f"two levels listed now: {ms}")
    for args, why, words in (
            ((os.path.join(grp, "0"), grp, "--into"), "SRC where a level goes", "same directory"),
            ((src, grp, "--into", "--member", "x"), "--into with --member", "give one"),
            ((src, grp, "--into", "--resume", "--journal", os.path.join(tmp, "j")),
             "--into with --resume", "cannot be resumed"),
            ((src, os.path.join(grp, "labels", "cells"), "--into"), "--into an array",
             "holds a Zarr array"),
            ((src, grp, "--into", "--format", "v3"), "--into another format", "Zarr v2 group")):
        rc, _, err = run("pyramid", *args, "--levels", "2", "--factors", "2,2")
        expect(rc == 2 and words in err, f"{why} is refused: {err}")

    grp = os.path.join(tmp, "into3.zarr")
    src = make_container(grp, 3, data)
    rc, _, err = run("pyramid", src, grp, "--into", "--levels", "3", "--factors", "2,2",
                     "--no-progress")
    expect(rc == 0, f"pyramid --into a v3 container: {err}")
    attrs = v3_attrs(grp)
    ome = attrs.get("ome", {})
    expect(attrs.get("owner") == "lab" and attrs.get("channel") == "DAPI" and
           ome.get("omero") == {"channels": [{"label": "DAPI"}]} and ome.get("version") == "0.5"
           and [d["path"] for d in ome.get("multiscales", [{}])[0].get("datasets", [])] ==
           ["0", "1", "2"], f"v3 --into: omero and the group's keys kept: {attrs}")
    expect(v3_attrs(os.path.join(grp, "labels")) == {"labels": ["cells"]}, "v3 labels kept")
    got = zarrita_read([grp, os.path.join(grp, "0"), os.path.join(grp, "2")])
    if got is not None:
        d = got.get(grp, {})
        expect(d.get("ok") and d.get("attributes") == ["channel", "ome", "owner"],
               f"zarrita: the container {d}")
        d = got.get(os.path.join(grp, "0"), {})
        expect(d.get("ok") and d.get("sha256") == checksum(src), f"zarrita: level 0 is SRC {d}")
        d = got.get(os.path.join(grp, "2"), {})
        expect(d.get("ok") and d.get("shape") == [10, 13], f"zarrita: level 2 {d}")


def main():
    with tempfile.TemporaryDirectory(prefix="sluice-groups-") as tmp:
        src = os.path.join(tmp, "src.zarr")
        make_source(src)
        v3 = check_v3_copy(tmp, src)
        if v3 is not None:
            check_v2_copy(tmp, src, v3)
        check_group_refusals(tmp, src)
        check_group_resume(tmp, src)
        check_consolidated(tmp, src)
        check_pyramid_v2(tmp)
        check_pyramid_v3(tmp)
        check_graph_copy(tmp, src)
        check_pyramid_into(tmp)
    return finish("groups")


if __name__ == "__main__":
    sys.exit(main())
