#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Run examples/pyramid.c small and check what it wrote: an OME-Zarr 0.5
group with 4 levels of the expected shapes, chunks, shards and metadata,
each level the 2x mean (Z, Y, X; rounded half to even, partial edge
blocks) of the level below, read through `sluice copy` to Zarr v2 and
zarr-python.  Exits 77 (skipped) without numpy and zarr.

usage: check_pyramid.py EXAMPLE_EXE   (SL_SLUICE_EXE names the launcher)
"""
import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import zarr
except ImportError as e:
    print(f"skipped: {e} (install python3-zarr)")
    sys.exit(77)

SLUICE = os.environ.get("SL_SLUICE_EXE", "sluice")
SHAPE = (1, 2, 40, 300, 200)
failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)


def mean2(a):
    """2x mean over the last three axes, TensorStore edge rule, half to even."""
    s = a.astype(np.int64)
    n = np.ones(a.shape, dtype=np.int64)
    for ax in (2, 3, 4):
        starts = np.arange(0, s.shape[ax], 2)
        s = np.add.reduceat(s, starts, axis=ax)
        n = np.add.reduceat(n, starts, axis=ax)
    q, r = np.divmod(s, n)
    return (q + ((2 * r > n) | ((2 * r == n) & (q % 2 == 1)))).astype(np.uint16)


def main():
    exe = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="sluice-example-") as tmp:
        out = os.path.join(tmp, "synthetic.ome.zarr")
        p = subprocess.run([exe, out, *map(str, SHAPE)], capture_output=True, text=True)
        expect(p.returncode == 0, f"the example failed: {p.stdout} {p.stderr}")
        expect("level 3: shape [1, 2, 5, 38, 25]" in p.stdout, f"level shapes: {p.stdout}")
        group = json.load(open(os.path.join(out, "zarr.json")))
        ome = group["attributes"]["ome"]
        ms = ome["multiscales"][0]
        expect(ome["version"] == "0.5" and ms["name"] == "synthetic", f"OME-Zarr 0.5: {ome}")
        expect([a["name"] for a in ms["axes"]] == ["t", "c", "z", "y", "x"], "axes")
        scales = [d["coordinateTransformations"][0]["scale"] for d in ms["datasets"]]
        expect(np.allclose(scales[3], [60, 1, 16, 3.2, 3.2]), f"level 3 scale: {scales[3]}")
        levels = []
        for k in range(4):
            meta = json.load(open(os.path.join(out, str(k), "zarr.json")))
            shard = meta["codecs"][0]["configuration"]
            expect(meta["chunk_grid"]["configuration"]["chunk_shape"][3] <= 1024 and
                   shard["chunk_shape"][3] <= 256, f"level {k} shards and chunks: {meta}")
            v2 = os.path.join(tmp, f"v2_{k}.zarr")
            c = subprocess.run([SLUICE, "copy", os.path.join(out, str(k)), v2, "--format", "v2",
                                "--no-progress"], capture_output=True, text=True)
            expect(c.returncode == 0, f"copy level {k}: {c.stderr}")
            levels.append(zarr.open_array(v2, mode="r")[...])
        expect(levels[0].shape == SHAPE, f"level 0 shape {levels[0].shape}")
        for k in range(1, 4):
            expect(np.array_equal(levels[k], mean2(levels[k - 1])),
                   f"level {k} is not the 2x mean of level {k - 1}")
    for f in failures:
        print("FAIL:", f)
    print(f"example pyramid: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
