#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write an image with sluice from Python, build its OME-Zarr pyramid, and
read it back: slices as numpy, several regions in one batched read, and
statistics from a graph.

    PYTHONPATH=build/python python3 examples/python/pyramid_and_read.py OUT_DIR [SIZE]

OUT_DIR receives image.zarr (a 3-D uint16 image of SIZE^3, default 128)
and pyramid.zarr (its pyramid with omero windows).
"""

import os
import sys

import numpy as np

import sluice


def main(out_dir, size):
    os.makedirs(out_dir, exist_ok=True)
    image_path = os.path.join(out_dir, "image.zarr")
    pyramid_path = os.path.join(out_dir, "pyramid.zarr")

    # A smooth image with noise, written plane by plane: each assignment is
    # one write of the chunks it covers (shards through a transaction).
    image = sluice.create(image_path, shape=(size, size, size), chunks=(32, 32, 32),
                          shards=(64, 64, 64), dtype="uint16", overwrite=True,
                          attrs={"source": "examples/python/pyramid_and_read.py"})
    rng = np.random.default_rng(7)
    y, x = np.mgrid[0:size, 0:size]
    for z in range(0, size, 32):
        zz = np.arange(z, min(z + 32, size))[:, None, None]
        block = 1000 + 500 * np.sin(zz / 9.0) * np.cos(y / 11.0) * np.sin(x / 7.0)
        block = block + rng.normal(0, 20, size=block.shape)
        image[z:z + 32] = block.astype("uint16")
    print("wrote", image)

    # The pyramid: three levels, each half the one before, smoothed so the
    # levels do not alias, with omero windows from the image's percentiles.
    report = sluice.pyramid(image_path, pyramid_path, 3, [2, 2, 2], smooth="gaussian",
                            omero=True, overwrite=True, check=True)
    print("pyramid: %d chunks in %.2f s" % (report.n_chunks, report.elapsed_s))
    group = sluice.open(pyramid_path)
    for name, level in group.items():
        print("  level %s: shape %s, chunks %s" % (name, level.shape, level.chunks))
    window = group.attrs["ome"]["omero"]["channels"][0]["window"]
    print("  omero window: start %.0f end %.0f (min %.0f max %.0f)"
          % (window["start"], window["end"], window["min"], window["max"]))

    # Reads: a plane, a strided view, and several regions in one plan.
    level0 = group["0"]
    plane = level0[size // 2]
    thumb = group["2"][:, ::2, ::2]
    parts = level0.read_many([np.s_[0:8, 0:8, 0:8], np.s_[-8:, -8:, -8:], np.s_[size // 2, :, 3]])
    print("plane %s mean %.1f; thumbnail %s; batched %s"
          % (plane.shape, plane.mean(), thumb.shape, [p.shape for p in parts]))
    assert np.array_equal(parts[2], plane[:, 3])

    # Statistics from a graph built in Python.
    g = sluice.Graph()
    g.stats(g.get(image_path), percentiles=[1, 99], name="image_stats")
    (s,) = sluice.run(g).stats["image_stats"]
    print("stats: min %d max %d mean %.2f p1 %.0f p99 %.0f"
          % (s["min"], s["max"], s["mean"], s["percentiles"][1], s["percentiles"][99]))
    print("checksum of level 0:", level0.checksum())
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 128))
