#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Check `sluice downsample` and `sluice pyramid` on a small 5-D TCZYX
uint16 array: values against numpy block reductions with TensorStore's
edge rule (partial blocks at the far edges; integer means rounded half to
even), read back with zarr-python (v2 outputs directly, v3 ones after a
`sluice copy` to v2); the OME-Zarr 0.4 (v2) and 0.5 (v3) metadata; exit
status 1 and the report when an input chunk is corrupt (the levels above
it fail as upstream); usage errors with exit status 2.  Exits 77 (skipped)
without numpy and zarr (python3-zarr).
"""
import json
import os
import shutil
import sys
import tempfile

from launcher_util import expect, finish, run, skip_without

skip_without("numpy", "zarr", "numcodecs")
import numpy as np  # noqa: E402
import zarr  # noqa: E402
from numcodecs import Zstd  # noqa: E402

SHAPE = (2, 2, 9, 70, 50)
CHUNKS = (1, 1, 4, 32, 32)
FACTORS = (1, 1, 2, 2, 2)


def make_input(path):
    rng = np.random.default_rng(8)
    data = rng.integers(0, 65536, size=SHAPE, dtype=np.uint16)
    z = zarr.open_array(path, mode="w", shape=SHAPE, chunks=CHUNKS, dtype="u2",
                        compressor=Zstd(level=1))
    z[...] = data
    return data


def reduce_blocks(a, factors, method):
    """Reduce blocks of `factors` along each axis; the last block of an axis
    may be partial.  mean: exact, rounded half to even."""
    if method == "stride":
        return a[tuple(slice(None, None, f) for f in factors)]
    out = a.astype(np.int64)
    counts = np.ones(a.shape, dtype=np.int64)
    for ax, f in enumerate(factors):
        if f == 1:
            continue
        starts = np.arange(0, out.shape[ax], f)
        if method == "max":
            out = np.maximum.reduceat(out, starts, axis=ax)
        elif method == "min":
            out = np.minimum.reduceat(out, starts, axis=ax)
        else:
            out = np.add.reduceat(out, starts, axis=ax)
            counts = np.add.reduceat(counts, starts, axis=ax)
    if method != "mean":
        return out.astype(a.dtype)
    q, r = np.divmod(out, counts)
    up = (2 * r > counts) | ((2 * r == counts) & (q % 2 == 1))
    return (q + up).astype(a.dtype)


def read_v3(tmp, path):
    """A v3 array, read through a sluice copy to v2 (zarr 2.13 reads no v3)."""
    v2 = path + ".as_v2"
    rc, _, err = run("copy", path, v2, "--format", "v2", "--no-progress", "--overwrite")
    expect(rc == 0, f"copy {path} to v2: {err}")
    return zarr.open_array(v2, mode="r")[...]


def check_downsample(tmp, data):
    src = os.path.join(tmp, "in.zarr")
    for method in ("mean", "max", "min", "stride"):
        dst = os.path.join(tmp, f"ds_{method}.zarr")
        rc, _, err = run("downsample", src, dst, "--factors", "1,1,2,2,2", "--method", method,
                         "--no-progress", "--threads", "2")
        expect(rc == 0, f"downsample {method}: {err}")
        want = reduce_blocks(data, FACTORS, method)
        got = zarr.open_array(dst, mode="r")
        expect(got.shape == (2, 2, 5, 35, 25), f"downsample shape is ceil(n / f): {got.shape}")
        expect(got.chunks == (1, 1, 4, 32, 25), f"chunks clipped to the output: {got.chunks}")
        expect(np.array_equal(got[...], want), f"downsample {method} differs from numpy")
    # Uneven factors, a v3 sharded output with a memory budget.
    dst = os.path.join(tmp, "ds_v3.zarr")
    rc, _, err = run("downsample", src, dst, "--factors", "2,1,3,4,5", "--format", "v3",
                     "--chunks", "1,1,2,8,8", "--shards", "1,2,4,16,8", "--memory", "2M",
                     "--no-progress")
    expect(rc == 0, f"downsample to v3 sharded: {err}")
    expect(np.array_equal(read_v3(tmp, dst), reduce_blocks(data, (2, 1, 3, 4, 5), "mean")),
           "uneven factors into v3 shards differ from numpy")


def check_ome(ms, levels, scale0, method):
    names = [a["name"] for a in ms["axes"]]
    types = [a["type"] for a in ms["axes"]]
    expect(names == ["t", "c", "z", "y", "x"], f"axis names {names}")
    expect(types == ["time", "channel", "space", "space", "space"], f"axis types {types}")
    expect(ms["axes"][4].get("unit") == "micrometer" and "unit" not in ms["axes"][1],
           f"units as given: {ms['axes']}")
    expect(ms["type"] == method, f"multiscales type {ms.get('type')}")
    ds = ms["datasets"]
    expect([d["path"] for d in ds] == [str(k) for k in range(levels)], f"paths {ds}")
    scale = list(scale0)
    shift = [0.0] * 5
    for k, d in enumerate(ds):
        ct = d["coordinateTransformations"]
        expect([t["type"] for t in ct] == ["scale", "translation"], f"level {k}: {ct}")
        expect(np.allclose(ct[0]["scale"], scale), f"level {k} scale {ct[0]['scale']} != {scale}")
        expect(np.allclose(ct[1]["translation"], shift),
               f"level {k} translation {ct[1]['translation']} != {shift}")
        shift = [t + (f - 1) / 2 * s for t, f, s in zip(shift, FACTORS, scale)]
        scale = [s * f for s, f in zip(scale, FACTORS)]


def check_pyramid(tmp, data):
    src = os.path.join(tmp, "in.zarr")
    units = ["--units", ",,micrometer,micrometer,micrometer", "--scale", "1,1,2,0.5,0.5"]
    # Zarr v2: OME-Zarr 0.4, levels read by zarr-python.
    dst = os.path.join(tmp, "pyr_v2.zarr")
    rc, _, err = run("pyramid", src, dst, "--levels", "4", "--factors", "1,1,2,2,2",
                     "--chunks", "1,1,4,16,16", "--no-progress", *units)
    expect(rc == 0, f"pyramid v2: {err}")
    expect("pyr_v2.zarr/3: shape [2, 2, 2, 9, 7]" in err, f"level shapes are printed: {err}")
    group = zarr.open_group(dst, mode="r")
    ms = group.attrs["multiscales"][0]
    expect(ms["version"] == "0.4", f"v2 groups get OME-Zarr 0.4: {ms.get('version')}")
    expect(ms["name"] == "pyr_v2", f"name defaults to DSTGROUP's base name: {ms.get('name')}")
    check_ome(ms, 4, (1, 1, 2, 0.5, 0.5), "mean")
    want = data
    for k in range(4):
        if k > 0:
            want = reduce_blocks(want, FACTORS, "mean")
        got = group[str(k)]
        expect(got.shape == want.shape, f"level {k} shape {got.shape} != {want.shape}")
        expect(np.array_equal(got[...], want), f"level {k} differs from numpy")
    # Zarr v3, sharded: OME-Zarr 0.5 in zarr.json, dimension names.
    dst = os.path.join(tmp, "pyr_v3.zarr")
    rc, _, err = run("pyramid", src, dst, "--levels", "3", "--factors", "1,1,2,2,2", "--format",
                     "v3", "--shards", "1,1,8,64,64", "--name", "fish", "--memory", "4M",
                     "--no-progress", *units)
    expect(rc == 0, f"pyramid v3: {err}")
    meta = json.load(open(os.path.join(dst, "zarr.json")))
    expect(meta["node_type"] == "group", "DSTGROUP is a group")
    ome = meta["attributes"]["ome"]
    expect(ome["version"] == "0.5", f"v3 groups get OME-Zarr 0.5: {ome.get('version')}")
    ms = ome["multiscales"][0]
    expect(ms["name"] == "fish" and "version" not in ms, f"name and no inner version: {ms}")
    check_ome(ms, 3, (1, 1, 2, 0.5, 0.5), "mean")
    for k in range(3):
        arr = json.load(open(os.path.join(dst, str(k), "zarr.json")))
        expect(arr["dimension_names"] == ["t", "c", "z", "y", "x"],
               f"level {k} dimension_names match the axes: {arr.get('dimension_names')}")
    want = reduce_blocks(reduce_blocks(data, FACTORS, "mean"), FACTORS, "mean")
    expect(np.array_equal(read_v3(tmp, os.path.join(dst, "2")), want), "v3 level 2 differs")


def check_failures(tmp, data):
    src = os.path.join(tmp, "bad.zarr")
    shutil.copytree(os.path.join(tmp, "in.zarr"), src)
    with open(os.path.join(src, "1.0.2.1.0"), "wb") as f:
        f.write(b"not a zstd frame")
    rc, _, err = run("downsample", src, os.path.join(tmp, "bad_ds.zarr"), "--factors",
                     "1,1,2,2,2", "--no-progress")
    # The output chunk reads the corrupt chunk through an unfused get, so it
    # fails as upstream of it, and the message names the corrupt key.
    expect(rc == 1 and "1 upstream" in err and "ECORRUPT" in err and "1.0.2.1.0" in err,
           f"a corrupt chunk makes downsample exit 1: {rc} {err}")
    report = os.path.join(tmp, "report.json")
    dst = os.path.join(tmp, "bad_pyr.zarr")
    rc, _, err = run("pyramid", src, dst, "--levels", "3", "--factors", "1,1,2,2,2",
                     "--no-progress", "--report", report)
    expect(rc == 1, f"a corrupt chunk makes pyramid exit 1 (got {rc}): {err}")
    rep = json.load(open(report))
    puts = {p["name"]: p for p in rep["puts"]}
    f0 = puts["level.0"]["failures"]
    expect(len(f0) == 1 and f0[0]["chunk"] == [1, 0, 2, 1, 0] and f0[0]["code"] == "ECORRUPT",
           f"level 0 reports the corrupt chunk: {f0}")
    for k in (1, 2):
        fk = puts[f"level.{k}"]["failures"]
        expect(len(fk) == 1 and fk[0]["code"] == "EUPSTREAM" and fk[0]["chunk"][:2] == [1, 0],
               f"level {k} fails as upstream of it: {fk}")
    expect(rep["summary"]["ok"] == rep["summary"]["chunks"] - 3, "every other chunk is written")
    good = reduce_blocks(data, FACTORS, "mean")
    got = zarr.open_array(os.path.join(dst, "1"), mode="r")[0]
    expect(np.array_equal(got, good[0]), "chunks away from the failure are written")


def check_usage(tmp):
    src = os.path.join(tmp, "in.zarr")
    for cmd in ("downsample", "pyramid"):
        rc, out, _ = run(cmd, "--help")
        expect(rc == 0 and f"usage: sluice {cmd} SRC" in out, f"{cmd} --help")
    x = os.path.join(tmp, "x.zarr")
    cases = (
        (["downsample", src, x], "need --factors"),
        (["downsample", src, x, "--factors", "2,2"], "has 2 entries for input of rank 5"),
        (["downsample", src, x, "--factors", "1,1,2,0,2"], "not a list of positive"),
        (["downsample", src, x, "--factors", "1,1,2,2,2", "--method", "avg"], "avg"),
        (["pyramid", src, x, "--factors", "1,1,2,2,2"], "need --levels"),
        (["pyramid", src, x, "--levels", "0", "--factors", "1,1,2,2,2"], "--levels"),
        (["pyramid", src, x, "--levels", "2"], "need --factors"),
        (["pyramid", src, x, "--levels", "2", "--factors", "1,1,2,2,2", "--axes", "z,y,x"],
         "--axes has 3 entries"),
        (["pyramid", src, x, "--levels", "2", "--factors", "1,1,2,2,2", "--scale", "1,a"],
         "--scale"),
        (["pyramid", src, x, "--levels", "2", "--factors", "1,1,2,2,2", "--shards", "1,1,4,4,4",
          "--format", "v2"], "needs --format v3"),
    )
    for args, msg in cases:
        rc, _, err = run(*args)
        expect(rc == 2 and msg in err, f"{' '.join(args[3:])} exits 2 with '{msg}': {rc} {err}")
    rc, _, err = run("pyramid", src, x, "--levels", "9", "--factors", "1,1,2,2,2")
    expect(rc == 2 and "would equal level 7" in err and "at most 8 levels" in err,
           f"too many levels are refused, not clamped: {err}")
    rc, _, err = run("pyramid", src, x, "--levels", "2", "--factors", "1,1,2,2,2", "--axis-types",
                     "space,time,space,space,space")
    expect(rc == 2 and "break OME-Zarr's order" in err, f"axes against OME are refused: {err}")
    expect(not os.path.exists(x) and not [n for n in os.listdir(tmp) if n.startswith(".sluice")],
           f"refused pyramids leave nothing behind: {sorted(os.listdir(tmp))}")
    dst = os.path.join(tmp, "again.zarr")
    args = ["pyramid", src, dst, "--levels", "2", "--factors", "1,1,2,2,2", "--no-progress"]
    expect(run(*args)[0] == 0, "first pyramid")
    rc, _, err = run(*args)
    expect(rc == 2 and "--overwrite" in err, f"writing over a pyramid is refused: {err}")
    rc, _, err = run(*args[:3], "--levels", "3", *args[5:], "--overwrite")
    expect(rc == 0, f"--overwrite replaces it: {err}")
    rc, _, err = run(*args, "--overwrite")
    expect(rc == 0 and sorted(n for n in os.listdir(dst) if not n.startswith(".z")) == ["0", "1"]
           and "zarr.json" not in os.listdir(dst),
           f"a pyramid of 3 levels replaced by one of 2 keeps 2: {err} {os.listdir(dst)}")


def main():
    with tempfile.TemporaryDirectory(prefix="sluice-pyramid-") as tmp:
        data = make_input(os.path.join(tmp, "in.zarr"))
        check_downsample(tmp, data)
        check_pyramid(tmp, data)
        check_failures(tmp, data)
        check_usage(tmp)
    return finish("downsample and pyramid")


if __name__ == "__main__":
    sys.exit(main())
