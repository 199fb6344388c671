#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Check the OME "omero" channel windows of `sluice pyramid --omero` and of
a graph file's pyramid node with "omero": a 4-D (c, z, y, x) uint16 array
of 3 channels, exact against numpy (np.min, np.max, np.percentile with
its default linear method); a 5-D (t, c, z, y, x) float32 array of 2
channels with NaNs, against np.nanmin, np.nanmax and np.nanpercentile
within the rank error the report gives for each set (the statistics'
summary); a 3-D array without a channel axis as one channel; the metadata
against the official OME-Zarr schemas (0.4 in Zarr v2, 0.5 in v3, from
/work/shared/fixtures/ngff-schemas or SL_NGFF_SCHEMAS); each input chunk
read once (the bytes read with and without --omero, the chunk files'
sizes, and explain's stages); a corrupt input chunk: exit status 1, no
omero block, and the reason on stderr and in the report; bad options and
graph fields with their messages.  Exits 77 (skipped) without numpy and
zarr (python3-zarr).
"""
import json
import math
import os
import shutil
import sys
import tempfile

from launcher_util import expect, finish, run, skip_without

skip_without("numpy", "zarr", "numcodecs")
import numpy as np  # noqa: E402
import zarr  # noqa: E402

SCHEMAS = os.environ.get("SL_NGFF_SCHEMAS", "/work/shared/fixtures/ngff-schemas")
QUIET = ["--no-progress", "--threads", "2"]


def write(path, data, chunks):
    z = zarr.open_array(path, mode="w", shape=data.shape, chunks=chunks, dtype=data.dtype)
    z[...] = data


def attributes(group):
    """(OME-Zarr version, the attributes object the image schema describes,
    the object holding "omero") of the group at `group`."""
    if os.path.exists(os.path.join(group, "zarr.json")):
        with open(os.path.join(group, "zarr.json")) as f:
            attrs = json.load(f)["attributes"]
        return "0.5", attrs, attrs["ome"]
    with open(os.path.join(group, ".zattrs")) as f:
        attrs = json.load(f)
    return "0.4", attrs, attrs


def validator(version):
    """A jsonschema validator of OME-Zarr `version`'s image schema whose
    $refs resolve to the files beside it; None (and a note) without them."""
    try:
        import jsonschema
    except ImportError:
        print("schema checks skipped: python3-jsonschema is not installed")
        return None
    folder = os.path.join(SCHEMAS, version)
    if not os.path.isdir(folder):
        print(f"schema checks skipped: no {folder}")
        return None
    store = {}
    for name in os.listdir(folder):
        with open(os.path.join(folder, name)) as f:
            s = json.load(f)
        store[s["$id"]] = s
    image = next(s for k, s in store.items() if k.endswith("/image.schema"))
    resolver = jsonschema.RefResolver.from_schema(image, store=store)
    cls = jsonschema.validators.validator_for(image)
    return cls(image, resolver=resolver)


def check_schema(group, what):
    version, attrs, _ = attributes(group)
    v = validator(version)
    if v is None:
        return
    problems = [e.message for e in v.iter_errors(attrs)]
    expect(not problems, f"{what}: the metadata validates against OME-Zarr {version}'s "
           f"image.schema: {problems[:3]}")


def channels_of(data, axis):
    """The values of each channel: along `axis`, or the whole array."""
    if axis is None:
        return [data]
    return [np.take(data, k, axis=axis) for k in range(data.shape[axis])]


def check_exact(group, data, axis, q, what):
    """The windows equal numpy's (integers up to 16 bits)."""
    _, _, holder = attributes(group)
    omero = holder.get("omero")
    expect(omero is not None, f"{what}: an omero block")
    if omero is None:
        return
    chans = channels_of(data, axis)
    expect(len(omero["channels"]) == len(chans),
           f"{what}: {len(chans)} channels, found {len(omero['channels'])}")
    for k, (c, x) in enumerate(zip(omero["channels"], chans)):
        w = c["window"]
        want = {"min": float(x.min()), "max": float(x.max()),
                "start": float(np.percentile(x, q[0])), "end": float(np.percentile(x, q[1]))}
        for key, v in want.items():
            expect(w[key] == v or math.isclose(w[key], v, rel_tol=1e-14, abs_tol=0),
                   f"{what}: channel {k} window {key} {w[key]!r}, numpy {v!r}")
        expect(c["active"] is True and isinstance(c["color"], str), f"{what}: channel {k}: {c}")
    expect(omero["rdefs"]["model"] == ("greyscale" if len(chans) == 1 else "color"),
           f"{what}: rdefs {omero['rdefs']}")


def within_rank(values, p, got, e):
    """`got` lies between the sorted non-NaN `values` at positions
    floor(r - e*m) and ceil(r + e*m), r = (m - 1) * p / 100."""
    s = np.sort(values[~np.isnan(values)]).astype(np.float64)
    m = s.size
    r = (m - 1) * p / 100
    lo = s[max(0, math.floor(r - e * m))]
    hi = s[min(m - 1, math.ceil(r + e * m))]
    return lo <= got <= hi


def check_summary(group, report, data, axis, q, what):
    """Windows of a float array: min and max exact, start and end within
    each set's rank error (from the report)."""
    _, _, holder = attributes(group)
    omero = holder.get("omero")
    expect(omero is not None, f"{what}: an omero block")
    if omero is None:
        return
    sets = report["stats"][0]["sets"]
    chans = channels_of(data, axis)
    expect(len(omero["channels"]) == len(chans) == len(sets),
           f"{what}: {len(chans)} channels and sets, found {len(omero['channels'])}, "
           f"{len(sets)}")
    for k, (c, x, st) in enumerate(zip(omero["channels"], chans, sets)):
        w = c["window"]
        expect(w["min"] == float(np.nanmin(x)) and w["max"] == float(np.nanmax(x)),
               f"{what}: channel {k} min/max {w['min']}, {w['max']}, numpy "
               f"{np.nanmin(x)}, {np.nanmax(x)}")
        e = st["rank_error"]
        expect(e <= 1 / 1024, f"{what}: channel {k} rank error {e} within 1/1024")
        for key, p in (("start", q[0]), ("end", q[1])):
            expect(within_rank(x.astype(np.float64), p, w[key], e),
                   f"{what}: channel {k} {key} {w[key]} is percentile {p} of numpy within rank "
                   f"error {e} (np.nanpercentile {np.nanpercentile(x, p)})")
        print(f"{what}: channel {k}: rank error {e:.3g}, start {w['start']} "
              f"(numpy {np.nanpercentile(x, q[0])}), end {w['end']} "
              f"(numpy {np.nanpercentile(x, q[1])})")


def chunk_bytes(path):
    """Bytes of the chunk files of the v2 array at `path`."""
    return sum(os.path.getsize(os.path.join(path, n)) for n in os.listdir(path)
               if not n.startswith("."))


def report_of(path):
    with open(path) as f:
        return json.load(f)


def check_uint16(tmp):
    rng = np.random.default_rng(34)
    data = rng.integers(0, 65536, size=(3, 5, 40, 36), dtype=np.uint16)
    data[1] = np.minimum(data[1], 900)  # a channel with many ties
    src = os.path.join(tmp, "u16.zarr")
    write(src, data, (1, 2, 16, 16))
    for fmt in ("v2", "v3"):
        out = os.path.join(tmp, f"u16-{fmt}.ome.zarr")
        rep = os.path.join(tmp, f"u16-{fmt}.json")
        rc, stdout, err = run("pyramid", src, out, "--levels", "3", "--factors", "1,1,2,2",
                              "--format", fmt, "--omero", "--report", rep, *QUIET)
        expect(rc == 0, f"pyramid --omero {fmt}: exit status {rc}: {err}")
        if rc != 0:
            continue
        check_exact(out, data, 0, (0.1, 99.9), f"uint16 {fmt}")
        check_schema(out, f"uint16 {fmt}")
        r = report_of(rep)
        expect(r["stats"][0]["omero"] == {"written": True}, f"uint16 {fmt}: report {r['stats']}")
        expect("stats level.omero [axis 0=2]" in stdout, f"uint16 {fmt}: stats lines: {stdout}")
    # The window at other percentiles; level 0 alone reads every chunk once.
    out = os.path.join(tmp, "u16-q.ome.zarr")
    rep = os.path.join(tmp, "u16-q.json")
    rc, _, err = run("pyramid", src, out, "--levels", "1", "--factors", "1,1,2,2",
                     "--omero-percentiles", "2.5,97", "--report", rep, *QUIET)
    expect(rc == 0, f"--omero-percentiles: exit status {rc}: {err}")
    if rc == 0:
        check_exact(out, data, 0, (2.5, 97), "uint16 2.5..97")
        expect(report_of(rep)["summary"]["bytes_read"] == chunk_bytes(src),
               f"one level with --omero reads each input chunk once: "
               f"{report_of(rep)['summary']['bytes_read']} bytes read, the chunks have "
               f"{chunk_bytes(src)}")
    # The same pyramid with and without the windows reads the same bytes.
    read = []
    for extra in ([], ["--omero"]):
        out = os.path.join(tmp, f"u16-read{len(extra)}.ome.zarr")
        rep = os.path.join(tmp, f"u16-read{len(extra)}.json")
        rc, _, err = run("pyramid", src, out, "--levels", "3", "--factors", "1,1,2,2",
                         "--report", rep, *extra, *QUIET)
        expect(rc == 0, f"pyramid {extra}: {err}")
        read.append(report_of(rep)["summary"]["bytes_read"] if rc == 0 else None)
    expect(read[0] == read[1], f"--omero reads no more: {read[0]} bytes without, {read[1]} with")
    return src


def check_float32(tmp):
    rng = np.random.default_rng(35)
    data = rng.normal(100.0, 30.0, size=(2, 2, 8, 128, 128)).astype(np.float32)
    data[0, 1] = rng.lognormal(3.0, 1.0, size=data[0, 1].shape)
    data[1, 0, 3, 5:9, 7] = np.nan
    src = os.path.join(tmp, "f32.zarr")
    write(src, data, (1, 1, 4, 64, 64))
    # The command, Zarr v2 (OME-Zarr 0.4).
    out = os.path.join(tmp, "f32-v2.ome.zarr")
    rep = os.path.join(tmp, "f32-v2.json")
    rc, _, err = run("pyramid", src, out, "--levels", "2", "--factors", "1,1,2,2,2",
                     "--format", "v2", "--omero", "--report", rep, *QUIET)
    expect(rc == 0, f"float32 pyramid --omero: exit status {rc}: {err}")
    if rc == 0:
        check_summary(out, report_of(rep), data, 1, (0.1, 99.9), "float32 v2")
        check_schema(out, "float32 v2")
    # A graph file, Zarr v3 (OME-Zarr 0.5), other percentiles.
    graph = {"sluice": 1, "arrays": {"raw": {"path": "f32.zarr"}},
             "nodes": {"read": {"op": "get", "array": "raw"},
                       "pyr": {"op": "pyramid", "input": "read", "group": "f32-graph.ome.zarr",
                               "levels": 3, "factors": [1, 1, 2, 2, 2],
                               "omero": {"percentiles": [1, 99]}}}}
    path = os.path.join(tmp, "f32.graph.json")
    with open(path, "w") as f:
        json.dump(graph, f)
    rc, text, err = run("explain", path)
    expect(rc == 0, f"explain: {err}")
    # One stage reads the input, chunk by chunk, for both of its consumers.
    n_chunks = 2 * 2 * 2 * 2 * 2
    expect(f"stage 0: read -> {n_chunks} tasks" in text and
           "read -> pyr.0: not fused" in text and "read -> pyr.omero: not fused" in text and
           "pyr.omero        putter  stats" in text,
           f"explain: the input read once ({n_chunks} tasks) for pyr.0 and pyr.omero:\n{text}")
    rep = os.path.join(tmp, "f32-graph.json")
    rc, _, err = run("run", path, "--report", rep, *QUIET)
    expect(rc == 0, f"graph file with omero: exit status {rc}: {err}")
    if rc == 0:
        out = os.path.join(tmp, "f32-graph.ome.zarr")
        check_summary(out, report_of(rep), data, 1, (1, 99), "float32 graph v3")
        check_schema(out, "float32 graph v3")
        _, attrs, _ = attributes(out)
        expect(attrs["ome"]["version"] == "0.5" and "multiscales" in attrs["ome"],
               f"v3: omero beside the multiscales in \"ome\": {list(attrs['ome'])}")
    # Without a channel axis: one channel over the whole array.
    flat = os.path.join(tmp, "zyx.zarr")
    write(flat, data[0, 1], (4, 64, 64))
    out = os.path.join(tmp, "zyx.ome.zarr")
    graph["arrays"]["raw"]["path"] = "zyx.zarr"
    graph["nodes"]["pyr"].update(group="zyx.ome.zarr", factors=[2, 2, 2], omero=True,
                                 create={"format": 2})
    with open(path, "w") as f:
        json.dump(graph, f)
    rep = os.path.join(tmp, "zyx.json")
    rc, _, err = run("run", path, "--report", rep, *QUIET)
    expect(rc == 0, f"graph file without a channel axis: exit status {rc}: {err}")
    if rc == 0:
        check_summary(out, report_of(rep), data[0, 1], None, (0.1, 99.9), "zyx graph v2")
        check_schema(out, "zyx graph v2")
        _, _, holder = attributes(out)
        expect(holder["omero"]["channels"][0]["color"] == "FFFFFF",
               f"one channel is white: {holder['omero']['channels'][0]}")


def check_failure(tmp, src):
    """A corrupt input chunk: no omero block, and why."""
    bad = os.path.join(tmp, "bad.zarr")
    shutil.copytree(src, bad)
    with open(os.path.join(bad, "1.0.1.1"), "wb") as f:
        f.write(b"not a chunk at all")
    out = os.path.join(tmp, "bad.ome.zarr")
    rep = os.path.join(tmp, "bad.json")
    rc, _, err = run("pyramid", bad, out, "--levels", "2", "--factors", "1,1,2,2", "--omero",
                     "--format", "v3", "--report", rep, *QUIET)
    expect(rc == 1, f"corrupt chunk: exit status 1, found {rc}: {err}")
    expect("no omero metadata written" in err and "chunk [1, 0, 1, 1]" in err,
           f"corrupt chunk: stderr says why no omero block, naming the chunk: {err}")
    if os.path.exists(os.path.join(out, "zarr.json")):
        _, _, holder = attributes(out)
        expect("omero" not in holder, f"corrupt chunk: no omero block: {holder.get('omero')}")
        check_schema(out, "corrupt chunk")
    else:
        expect(False, f"corrupt chunk: the group is in place (the failed chunks reported): {err}")
    if os.path.exists(rep):
        om = report_of(rep)["stats"][0].get("omero", {})
        expect(om.get("written") is False and "chunk [1, 0, 1, 1]" in om.get("error", ""),
               f"corrupt chunk: the report says why: {om}")
    # The same through a graph file, whose new group is put in place too.
    graph = {"sluice": 1, "arrays": {"raw": {"path": "bad.zarr"}},
             "nodes": {"read": {"op": "get", "array": "raw"},
                       "pyr": {"op": "pyramid", "input": "read", "group": "bad-graph.ome.zarr",
                               "levels": 2, "factors": [1, 1, 2, 2], "omero": True}}}
    path = os.path.join(tmp, "bad.graph.json")
    with open(path, "w") as f:
        json.dump(graph, f)
    rc, _, err = run("run", path, *QUIET)
    expect(rc == 1 and "no omero metadata written" in err,
           f"graph file, corrupt chunk: exit status 1 and why: {rc}: {err}")
    out = os.path.join(tmp, "bad-graph.ome.zarr")
    if os.path.exists(os.path.join(out, "zarr.json")):
        expect("omero" not in attributes(out)[2], "graph file, corrupt chunk: no omero block")


def check_usage(tmp, src):
    out = os.path.join(tmp, "usage.ome.zarr")
    for value in ("5", "50,10", "-1,50", "1,101", "a,b", "1,2,3"):
        rc, _, err = run("pyramid", src, out, "--levels", "2", "--factors", "1,1,2,2",
                         "--omero-percentiles", value)
        expect(rc == 2 and "--omero-percentiles" in err and value in err,
               f"--omero-percentiles {value}: exit status 2 naming it: {rc}: {err}")
    rc, out_text, _ = run("pyramid", "--help")
    expect("--omero" in out_text and "--omero-percentiles LO,HI" in out_text,
           f"the usage text lists --omero: {out_text}")
    bad = {"sluice": 1, "arrays": {"raw": {"path": "u16.zarr"}},
           "nodes": {"read": {"op": "get", "array": "raw"},
                     "a": {"op": "pyramid", "input": "read", "group": "a.zarr", "levels": 2,
                           "factors": [1, 1, 2, 2], "omero": "yes"},
                     "b": {"op": "pyramid", "input": "read", "group": "b.zarr", "levels": 2,
                           "factors": [1, 1, 2, 2], "omero": {"percentiles": [0.5, 100.5]}},
                     "c": {"op": "pyramid", "input": "read", "group": "c.zarr", "levels": 2,
                           "factors": [1, 1, 2, 2], "omero": {"percentiles": [60, 40]}},
                     "d": {"op": "pyramid", "input": "read", "group": "d.zarr", "levels": 2,
                           "factors": [1, 1, 2, 2], "omero": {"percentiles": [1]}},
                     "e": {"op": "pyramid", "input": "read", "group": "e.zarr", "levels": 2,
                           "factors": [1, 1, 2, 2], "omero": {"window": [1, 2]}}}}
    path = os.path.join(tmp, "bad.graph.json")
    with open(path, "w") as f:
        json.dump(bad, f)
    rc, _, err = run("validate", path)
    expect(rc != 0, f"bad omero fields are refused: {err}")
    for ptr, text in (("/nodes/a/omero", "expected true, false or {\"percentiles\""),
                      ("/nodes/b/omero/percentiles/1", "found 100.5"),
                      ("/nodes/c/omero/percentiles", "start percentile 60 is not below its "
                       "end 40"),
                      ("/nodes/d/omero/percentiles", "expected [start, end]"),
                      ("/nodes/e/omero/window", "unknown field \"window\"")):
        expect(any(f"at {ptr}: " in line and text in line for line in err.splitlines()),
               f"validate names {ptr}: {text}: {err}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        src = check_uint16(tmp)
        check_float32(tmp)
        check_failure(tmp, src)
        check_usage(tmp, src)
    return finish("pyramid --omero")


if __name__ == "__main__":
    sys.exit(main())
