#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""zarr-python's and dask's side of bench_io_batch: 8 disjoint chunk-sized
slices (every other chunk) of a zarr v2 array of 100,000,000 float64
standard normals in chunks of 1,000,000, numcodecs Zstd(level=1) -- the
case of zarr-python issue #3175, measured as the peers' b3 anchor does.

  peer_zarr_read.py create ROOT   make the store when ROOT/.zarray is absent
                                  (numpy default_rng(0), chunk by chunk)
  peer_zarr_read.py ROOT REPS     time the reads, warm page cache: one
                                  warm-up call, then the median of REPS

Methods, each checked against the slices read one by one:
  zarr_slices_loop   np.concatenate([z[a:b] for a, b in slices])
  zarr_oindex        z.oindex[idx], idx the 8e6 positions as int64
  dask_concat        da.concatenate([da.from_zarr(z)[a:b] ...]).compute()
  dask_compute       np.concatenate(dask.compute(*[d[a:b] ...]))
(dask's threaded scheduler).  Prints `name: value unit` lines.
"""
import os
import statistics
import sys
import time

import numpy as np
import zarr
from numcodecs import Zstd

N, CH = 100_000_000, 1_000_000
SLICES = [(k * CH, (k + 1) * CH) for k in range(0, 16, 2)]


def create(root):
    if os.path.exists(os.path.join(root, ".zarray")):
        return
    t0 = time.perf_counter()
    tmp = root + ".partial"
    z = zarr.open_array(tmp, mode="w", shape=(N,), chunks=(CH,), dtype="f8",
                        compressor=Zstd(level=1))
    rng = np.random.default_rng(0)
    for k in range(N // CH):
        z[k * CH:(k + 1) * CH] = rng.standard_normal(CH)
    os.rename(tmp, root)
    print(f"created {root} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)


def read_slices(z, idx):
    return np.concatenate([z[a:b] for a, b in SLICES])


def read_oindex(z, idx):
    return z.oindex[idx]


def read_dask_concat(z, idx):
    import dask.array as da
    d = da.from_zarr(z)
    return da.concatenate([d[a:b] for a, b in SLICES]).compute()


def read_dask_compute(z, idx):
    import dask
    import dask.array as da
    d = da.from_zarr(z)
    return np.concatenate(dask.compute(*[d[a:b] for a, b in SLICES]))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "create":
        create(sys.argv[2])
        return
    root, reps = sys.argv[1], int(sys.argv[2])
    z = zarr.open_array(root, mode="r")
    idx = np.concatenate([np.arange(a, b) for a, b in SLICES])
    expect = np.concatenate([z[a:b] for a, b in SLICES])
    methods = {"zarr_slices_loop": read_slices, "zarr_oindex": read_oindex,
               "dask_concat": read_dask_concat, "dask_compute": read_dask_compute}
    for name, fn in methods.items():
        fn(z, idx)  # warm-up: imports, page cache
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            out = fn(z, idx)
            ts.append(time.perf_counter() - t0)
            assert np.array_equal(out, expect), name
        print(f"{name}: {statistics.median(ts) * 1e3:.4g} ms", flush=True)


if __name__ == "__main__":
    main()
