#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Write the input the example graphs read: DIR/raw.zarr, a Zarr v2 uint16
array of shape (32, 96, 128) in chunks of (8, 32, 32), holding
1000 + 10 z + y + x.  Needs numpy and zarr (Debian: python3-zarr).

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


if __name__ == "__main__":
    main()
