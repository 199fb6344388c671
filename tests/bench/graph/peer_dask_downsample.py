#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""dask's side of bench_graph_downsample: the 2x mean downsample pipeline
from_zarr -> da.coarsen(np.mean) -> astype(uint16) -> to_zarr (Zstd(1), the
input's chunk shape), on the threaded scheduler, as the shared peer
measurements did it.  Also creates the inputs (sums of sines plus gaussian
noise as uint16, Zarr v2, Zstd(1)) and compares two outputs.

usage:
  peer_dask_downsample.py setup KIND DATA_DIR     create DATA_DIR/KIND_in.zarr if missing
  peer_dask_downsample.py run KIND VARIANT DATA_DIR OUT
      VARIANT rechunk: from_zarr with the stored chunks (to_zarr rechunks the
                       half-size coarsened blocks to the output chunks)
              aligned: from_zarr with chunks of factor x the stored chunks
      prints `dask_KIND_VARIANT_{wall,cpu,peak_rss}: value unit` for the
      pipeline (imports and set-up excluded; peak RSS is the process's)
  peer_dask_downsample.py compare A B               max |A - B| and the share equal

KIND is 3d ((512, 512, 512), chunks 64^3, factors 2, 2, 2) or 5d
((4, 2, 32, 1024, 1024), chunks (1, 1, 32, 256, 256), factors Y and X 2).
"""
import os
import resource
import sys
import time

import numpy as np
import zarr
from numcodecs import Zstd

KINDS = {
    "3d": dict(shape=(512, 512, 512), chunks=(64, 64, 64), factors={0: 2, 1: 2, 2: 2}),
    "5d": dict(shape=(4, 2, 32, 1024, 1024), chunks=(1, 1, 32, 256, 256), factors={3: 2, 4: 2}),
}


def planes(nz, ny, nx, z0, rng, phase=0.0):
    """A smooth uint16 block: sines and cosines plus noise of sigma 40."""
    z = (np.arange(z0, z0 + nz, dtype=np.float32) + phase)[:, None, None]
    y = np.arange(ny, dtype=np.float32)[None, :, None]
    x = np.arange(nx, dtype=np.float32)[None, None, :]
    v = (3000.0
         + 1200.0 * np.sin(x / 37.0 + phase) * np.cos(y / 53.0)
         + 800.0 * np.sin(z / 21.0 + x / 90.0)
         + 500.0 * np.cos((x + y) / 17.0 + z / 29.0)
         + rng.normal(0.0, 40.0, size=(nz, ny, nx)).astype(np.float32))
    return np.clip(v, 0, 65535).astype(np.uint16)


def setup(kind, data):
    path = os.path.join(data, f"{kind}_in.zarr")
    if os.path.exists(os.path.join(path, ".zarray")):
        print(path)
        return
    cfg = KINDS[kind]
    tmp = path + ".partial"
    z = zarr.open_array(tmp, mode="w", shape=cfg["shape"], chunks=cfg["chunks"], dtype="u2",
                        compressor=Zstd(level=1))
    rng = np.random.default_rng(1)
    if kind == "3d":
        for z0 in range(0, cfg["shape"][0], 64):
            z[z0:z0 + 64] = planes(64, cfg["shape"][1], cfg["shape"][2], z0, rng)
    else:
        t_n, c_n, z_n, y_n, x_n = cfg["shape"]
        for t in range(t_n):
            for c in range(c_n):
                z[t, c] = planes(z_n, y_n, x_n, 0, rng, phase=1.7 * t + 0.9 * c)
    os.rename(tmp, path)
    print(path)


def run(kind, variant, data, out):
    import dask
    import dask.array as da
    cfg = KINDS[kind]
    zin = zarr.open_array(os.path.join(data, f"{kind}_in.zarr"), mode="r")
    out_shape = tuple(s // cfg["factors"].get(i, 1) for i, s in enumerate(zin.shape))
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    if variant == "rechunk":
        x = da.from_zarr(zin)
    else:
        x = da.from_zarr(zin, chunks=tuple(c * cfg["factors"].get(i, 1)
                                            for i, c in enumerate(zin.chunks)))
    y = da.coarsen(np.mean, x, cfg["factors"]).astype(np.uint16)
    zout = zarr.open_array(out, mode="w", shape=out_shape, chunks=cfg["chunks"], dtype="u2",
                           compressor=Zstd(level=1))
    with dask.config.set(scheduler="threads"):
        da.to_zarr(y, zout)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    name = f"dask_{kind}_{variant}"
    print(f"{name}_wall: {wall:.4g} s")
    print(f"{name}_cpu: {cpu:.4g} s")
    print(f"{name}_peak_rss: {r1.ru_maxrss / 1024:.4g} MiB")


def compare(a, b):
    za, zb = zarr.open_array(a, mode="r"), zarr.open_array(b, mode="r")
    if za.shape != zb.shape:
        print(f"compare_shapes_differ: 1 flag ({za.shape} vs {zb.shape})")
        return
    worst, equal, total = 0, 0, 0
    step = za.chunks[0]
    for i in range(0, za.shape[0], step):
        x = za[i:i + step].astype(np.int32)
        y = zb[i:i + step].astype(np.int32)
        worst = max(worst, int(np.abs(x - y).max()))
        equal += int((x == y).sum())
        total += x.size
    print(f"compare_max_abs_diff: {worst} count")
    print(f"compare_equal_share: {equal / total:.4g} fraction")


def main():
    cmd = sys.argv[1]
    if cmd == "setup":
        setup(sys.argv[2], sys.argv[3])
    elif cmd == "run":
        run(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
    elif cmd == "compare":
        compare(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
