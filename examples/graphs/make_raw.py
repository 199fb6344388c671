#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Write the inputs the example graphs read: DIR/raw.zarr, a Zarr v2 uint16
array of shape (32, 96, 128) in chunks of (8, 32, 32), holding
1000 + 10 z + y + x; and DIR/image.zarr, a Zarr v2 group (consolidated
metadata, attributes) holding that array as "raw" and a group "labels" with
a uint8 label image "labels/cells" of the same shape; and DIR/dark.zarr and
DIR/flat.zarr, float32 (96, 128) frames in chunks of (32, 32) for the
flat-field example (a dark of 5 + (y + x) mod 7; a flat of 0.5 + (y x mod
100) / 100, zero where y x mod 97 is 0).  Needs numpy and zarr (Debian:
python3-zarr).

    examples/graphs/make_raw.py DIR
"""
import sys

import numpy as np
import zarr
from numcodecs import Zstd


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    z, y, x = np.meshgrid(np.arange(32), np.arange(96), np.arange(128), indexing="ij")
    data = (1000 + 10 * z + y + x).astype(np.uint16)
    out = zarr.open_array(f"{sys.argv[1]}/raw.zarr", mode="w", shape=data.shape,
                          chunks=(8, 32, 32), dtype="u2", compressor=Zstd(level=1), fill_value=0)
    out[...] = data
    out.attrs["_ARRAY_DIMENSIONS"] = ["z", "y", "x"]
    image = zarr.open_group(f"{sys.argv[1]}/image.zarr", mode="w")
    image.attrs["description"] = "the example image with its labels"
    raw = image.create_dataset("raw", data=data, chunks=(8, 32, 32), compressor=Zstd(level=1))
    raw.attrs["_ARRAY_DIMENSIONS"] = ["z", "y", "x"]
    labels = image.create_group("labels")
    labels.attrs["labels"] = ["cells"]
    cells = ((y // 16 + x // 16) % 5).astype(np.uint8)
    labels.create_dataset("cells", data=cells, chunks=(32, 32, 32), compressor=Zstd(level=1))
    zarr.consolidate_metadata(f"{sys.argv[1]}/image.zarr")
    yy, xx = np.meshgrid(np.arange(96), np.arange(128), indexing="ij")
    dark = (5 + (yy + xx) % 7).astype(np.float32)
    flat = (0.5 + (yy * xx % 100) / 100).astype(np.float32)
    flat[yy * xx % 97 == 0] = 0
    for name, frame in (("dark", dark), ("flat", flat)):
        z = zarr.open_array(f"{sys.argv[1]}/{name}.zarr", mode="w", shape=frame.shape,
                            chunks=(32, 32), dtype="f4", compressor=Zstd(level=1))
        z[...] = frame
        z.attrs["_ARRAY_DIMENSIONS"] = ["y", "x"]


if __name__ == "__main__":
    main()
