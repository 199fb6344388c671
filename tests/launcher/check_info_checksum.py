#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Check `sluice info` and `sluice checksum` on the zarr-python fixtures.

Every fixture array whose manifest says "ok" must checksum to the
manifest's sha256 (which zarr-python and zarrita.js agree on); every other
array must fail with EUNSUPPORTED naming what is missing.  `info` must
describe arrays and groups, and usage errors exit 2; `info --json` of
every fixture store and array must validate against docs/info.schema.json
and agree with the manifest (shape, chunks, shards, groups).  Exits 77
(skipped) when the fixtures are absent.
"""
import json
import math
import os
import sys
import tempfile

import jsonschema

from launcher_util import expect, failures, finish, run

SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                      "info.schema.json")
FIXTURES = os.environ.get("SL_FIXTURES_DIR", "")
VALIDATOR = jsonschema.Draft202012Validator(json.load(open(SCHEMA)))


def check_usage():
    rc, out, _ = run("--help")
    expect(rc == 0 and "info" in out and "checksum" in out, "sluice --help lists the commands")
    for cmd in ("info", "checksum"):
        rc, out, _ = run(cmd, "--help")
        expect(rc == 0 and out.startswith(("describe", "SHA-256")) and "usage: sluice " + cmd in out,
               f"sluice {cmd} --help")
        rc, _, err = run(cmd)
        expect(rc == 2 and "PATH is missing" in err, f"sluice {cmd} without PATH exits 2")
        rc, _, err = run(cmd, "--bogus", "x")
        expect(rc == 2 and "unknown option" in err, f"sluice {cmd} --bogus exits 2")
    rc, _, err = run("bogus")
    expect(rc == 2 and "unknown command" in err, "an unknown command exits 2")
    rc, _, err = run("checksum", "/nonexistent/sluice/path")
    expect(rc == 1 and "ENOTFOUND" in err, "checksum of a missing path fails with ENOTFOUND")


def check_fixtures(root):
    manifest = json.load(open(os.path.join(root, "MANIFEST.json")))
    n_ok = n_refused = 0
    for store in manifest["stores"]:
        for arr in store["arrays"]:
            path = os.path.join(root, store["root"], arr["path"])
            rc, out, err = run("checksum", path)
            if arr["expect"] == "ok":
                got = out.split()[0] if rc == 0 and out else err.strip()
                expect(rc == 0 and got == arr["sha256"], f"checksum {path}: {got}")
                n_ok += 1
            else:
                expect(rc == 1 and "EUNSUPPORTED" in err, f"{path} must be refused: {err}")
                n_refused += 1
    expect(n_ok == 56 and n_refused == 21, f"{n_ok} ok and {n_refused} refused arrays")

    rc, out, _ = run("info", os.path.join(root, "v3/data.zarr/3d.chunked.compressed.sharded.i2"))
    for line in ("format:      Zarr v3 array", "shape:       [4, 4, 4]", "dtype:       int16",
                 "chunks:      [1, 1, 1]  (grid [4, 4, 4], 64 chunks)",
                 "shards:      [2, 2, 2]  (grid [2, 2, 2], 8 shards)", "fill value:  0",
                 "stored:      8 shards, 2442 bytes"):
        expect(rc == 0 and line in out, f"info of a sharded array shows {line!r}:\n{out}")
    rc, out, _ = run("info", os.path.join(root, "v2/data.zarr/3d.chunked.mixed.i2.F"))
    expect(rc == 0 and "transpose(order=[2,1,0]) > bytes(little) > blosc" in out,
           f"info shows v2 order F as a transpose:\n{out}")
    rc, out, _ = run("info", os.path.join(root, "v3/data.zarr"))
    expect(rc == 0 and "Zarr v3 group" in out and "consolidated/nested/1d.i2" in out
           and "vlen-utf8" in out, f"info lists a group's members:\n{out}")


def info_json(path, *opts):
    """`sluice info --json PATH`, validated against the schema; None on failure."""
    rc, out, err = run("info", "--json", *opts, path)
    if rc != 0:
        failures.append(f"info --json {path}: exit {rc}: {err}")
        return None
    try:
        doc = json.loads(out)
    except ValueError as e:
        failures.append(f"info --json {path} is not JSON ({e}): {out[:200]}")
        return None
    errors = sorted(VALIDATOR.iter_errors(doc), key=lambda e: list(e.path))
    for e in errors[:3]:
        failures.append(f"info --json {path}: at {list(e.path)}: {e.message}")
    return None if errors else doc


def check_info_json(root):
    """Every store and every array of the manifest, against the schema and the manifest."""
    manifest = json.load(open(os.path.join(root, "MANIFEST.json")))
    n = 0
    for store in manifest["stores"]:
        doc = info_json(os.path.join(root, store["root"]))
        if doc is not None:
            expect(doc["node"]["node_type"] == "group" and
                   doc["node"]["zarr_format"] == store["zarr_format"],
                   f"info --json {store['root']}: the root group, v{store['zarr_format']}")
            got = {m["path"] for m in doc["members"] if m["node_type"] == "group"}
            want = {g for g in store["groups"] if g}
            expect(want <= got, f"info --json {store['root']}: groups {sorted(want - got)} missing")
            got = {m["path"] for m in doc["members"] if m["node_type"] == "array"}
            want = {a["path"] for a in store["arrays"] if a["expect"] == "ok"}
            expect(want <= got, f"info --json {store['root']}: arrays {sorted(want - got)} missing")
        for arr in store["arrays"]:
            path = os.path.join(root, store["root"], arr["path"])
            doc = info_json(path, "--no-stored") if arr["expect"] == "ok" else None
            if doc is None:
                continue
            n += 1
            node = doc["node"]
            chunks = arr.get("chunk_shape") or arr.get("chunks")
            expect(node["shape"] == arr["shape"] and node["chunks"] == chunks and
                   node["zarr_format"] == arr["zarr_format"] and node["stored"] is None and
                   doc["members"] is None,
                   f"info --json {path}: shape {node['shape']}, chunks {node['chunks']} vs the "
                   f"manifest's {arr['shape']}, {chunks}")
            if arr.get("shard_shape"):
                expect(node["shards"] == arr["shard_shape"] and
                       node["n_shards"] == math.prod(-(-s // c) for s, c in
                                                     zip(arr["shape"], arr["shard_shape"])),
                       f"info --json {path}: shards {node['shards']}, {node['n_shards']}")
            else:
                expect(node["shards"] is None, f"info --json {path}: shards {node['shards']}")
    expect(n == 56, f"info --json checked {n} arrays (56 expected)")
    # A group's own attributes, in text and JSON, and the tree.
    rc, out, _ = run("info", "--tree", os.path.join(root, "v3/data.zarr"))
    expect(rc == 0 and "\n    nested/ " in out.replace("  v3 group", " v3 group"),
           f"info --tree indents nested groups:\n{out}")
    rc, _, err = run("info", "--tree", "--json", os.path.join(root, "v3/data.zarr"))
    expect(rc == 2 and "exclude" in err, "--tree with --json exits 2")


def check_group_attributes(tmp):
    """A group's attributes are shown (text and JSON), for v2 and v3."""
    for fmt in (2, 3):
        path = os.path.join(tmp, f"g{fmt}.zarr")
        os.makedirs(path)
        attrs = {"title": "a \"quoted\" name", "n": [1, 2]}
        if fmt == 2:
            json.dump({"zarr_format": 2}, open(os.path.join(path, ".zgroup"), "w"))
            json.dump(attrs, open(os.path.join(path, ".zattrs"), "w"))
        else:
            json.dump({"zarr_format": 3, "node_type": "group", "attributes": attrs},
                      open(os.path.join(path, "zarr.json"), "w"))
        rc, out, _ = run("info", path)
        expect(rc == 0 and 'attributes:  {"title":"a \\"quoted\\" name","n":[1,2]}' in out,
               f"info shows v{fmt} group attributes:\n{out}")
        doc = info_json(path)
        expect(doc is not None and doc["node"]["attributes"] == attrs and doc["members"] == [],
               f"info --json shows v{fmt} group attributes: {doc}")
    bad = os.path.join(tmp, "bad.zarr")
    os.makedirs(bad)
    json.dump({"zarr_format": 2}, open(os.path.join(bad, ".zgroup"), "w"))
    open(os.path.join(bad, ".zattrs"), "w").write("[1, 2]")
    rc, _, err = run("info", "--json", bad)
    expect(rc == 2 and "EPARSE" in err and ".zattrs" in err,
           f"a group's .zattrs that is not an object is an error naming it: {err}")


def check_ome(tmp):
    """A pyramid's OME-Zarr metadata is shown readably, v2 (0.4) and v3 (0.5)."""
    src = os.path.join(tmp, "src.zarr")
    rc, _, err = run("generate", src, "--shape", "4,64,64", "--chunks", "2,32,32")
    expect(rc == 0, f"generate: {err}")
    for fmt, version in (("2", "0.4"), ("3", "0.5")):
        dst = os.path.join(tmp, f"pyr{fmt}.zarr")
        rc, _, err = run("pyramid", src, dst, "--levels", "3", "--factors", "1,2,2",
                         "--format", fmt)
        expect(rc == 0, f"pyramid v{fmt}: {err}")
        rc, out, err = run("info", dst)
        for line in ("multiscales: 1 image",
                     f'"pyr{fmt}": OME-Zarr {version}, method mean, 3 levels; axes z (space), '
                     "y (space), x (space)",
                     "    1          scale [1, 2, 2]  uint16 [4, 32, 32]",
                     "    2          scale [1, 4, 4]  uint16 [4, 16, 16]"):
            expect(rc == 0 and line in out, f"info of a v{fmt} pyramid shows {line!r}:\n{out}{err}")
    bad = os.path.join(tmp, "badome.zarr")
    os.makedirs(bad)
    json.dump({"zarr_format": 3, "node_type": "group",
               "attributes": {"ome": {"multiscales": [{"axes": ["x"], "datasets": [{}]}]}}},
              open(os.path.join(bad, "zarr.json"), "w"))
    rc, out, _ = run("info", bad)
    expect(rc == 0 and "(unreadable: " in out and "/ome/multiscales/0/datasets/0/path" in out,
           f"info names a malformed multiscales entry:\n{out}")


def main():
    check_usage()
    with tempfile.TemporaryDirectory() as tmp:
        check_group_attributes(tmp)
        check_ome(tmp)
    root = os.path.join(FIXTURES, "zarr-python")
    if not os.path.isfile(os.path.join(root, "MANIFEST.json")):
        print(f"skipped: no fixtures at {root}")
        return 77
    check_fixtures(root)
    check_info_json(root)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
