#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The peers of bench_graph_halo: scipy.ndimage.gaussian_filter run by dask
over chunked Zarr arrays, and scipy alone on one thread in memory.

  gauss: da.from_zarr of the 512^3 float32 volume (64^3 chunks), map_overlap
    of scipy.ndimage.gaussian_filter(sigma 2, mode 'reflect', truncate 4)
    with depth 8 (the kernel's radius, int(4 * 2 + 0.5)) and boundary
    'reflect' (numpy's 'symmetric', which is scipy's 'reflect'), to_zarr
    into a Zarr v2 float32 array (Zstd(1), 64^3 chunks) on the threaded
    scheduler.
  pyramid: ngff-zarr's Gaussian method as dask computes it: level 0 is the
    input copied; level k + 1 is level k read back from the written level,
    map_overlap of gaussian_filter with sigma sqrt((f^2 - 1) / (8 ln 2)) per
    factor f, mode 'nearest', truncate 4, depth its radius per axis and
    boundary 'nearest', then every f-th element per axis, rechunked to the
    chunk shape (clipped to the level's shape), to_zarr (v2, Zstd(1)).
  kernel: scipy.ndimage.gaussian_filter(sigma 2, mode 'reflect') on the
    whole 512^3 array in memory, one thread, best and median of REPS.

Timed runs exclude imports and set-up; peak RSS is the process's.

usage:
  peer_dask_halo.py check                     whether dask and scipy import (exit 3 if not)
  peer_dask_halo.py setup DATA_DIR            check DATA_DIR/vol.zarr; write DATA_DIR/vol.f32
                                              (its elements, raw) if missing
  peer_dask_halo.py gauss SRC OUT THREADS     prints dask_gaussian_{wall,cpu,peak_rss}
  peer_dask_halo.py pyramid SRC OUT THREADS   levels OUT/0 .. OUT/3; prints
                                              dask_smooth_pyramid_{wall,cpu,peak_rss}
  peer_dask_halo.py kernel IN REPS OUT        IN raw float32 512^3; scipy's result to OUT;
                                              prints scipy_gaussian_kernel{,_best}
  peer_dask_halo.py compare A B               max |A - B| / max |B|, max |A - B|, equal share
  peer_dask_halo.py compare_pyramid A B       the same for levels 1 .. 3 of two pyramids
"""
import json
import math
import os
import resource
import sys
import time

if len(sys.argv) > 1 and sys.argv[1] == "kernel":
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"

import numpy as np  # noqa: E402
import zarr  # noqa: E402
from numcodecs import Zstd  # noqa: E402

VOL_SHAPE = (512, 512, 512)
VOL_CHUNKS = (64, 64, 64)
SIGMA = 2.0
TRUNCATE = 4.0
LEVELS = 4
FACTORS = (1, 1, 1, 2, 2)


def radius(sigma):
    """scipy's kernel radius for `sigma`."""
    return int(TRUNCATE * sigma + 0.5)


def check_array(path, shape, chunks, dtype):
    """Exit unless `path` is a Zarr v2 array of this geometry with zstd."""
    meta_path = os.path.join(path, ".zarray")
    with open(meta_path) as f:
        meta = json.load(f)
    want = dict(zarr_format=2, shape=list(shape), chunks=list(chunks), dtype=dtype)
    wrong = {k: (meta.get(k), v) for k, v in want.items() if meta.get(k) != v}
    comp = meta.get("compressor") or {}
    if comp.get("id") != "zstd":
        wrong["compressor"] = (comp, "zstd")
    if wrong:
        sys.exit(f"{meta_path} is not the expected input: " +
                 ", ".join(f"{k} is {got}, expected {exp}" for k, (got, exp) in wrong.items()))
    print(f"# input: {path}: {dtype} {tuple(shape)} in {tuple(chunks)} chunks, "
          f"compressor {comp}")


def setup(data):
    vol = os.path.join(data, "vol.zarr")
    check_array(vol, VOL_SHAPE, VOL_CHUNKS, "<f4")
    raw = os.path.join(data, "vol.f32")
    if not os.path.exists(raw):
        a = zarr.open_array(vol, mode="r")[...]
        a.astype("<f4").tofile(raw + ".partial")
        os.rename(raw + ".partial", raw)
    print(f"# kernel input: {raw} (the volume's elements, raw)")


def check():
    try:
        import dask
        import dask.array  # noqa: F401
        import scipy
        import scipy.ndimage  # noqa: F401
    except Exception as e:  # any failure to import means the peer cannot run
        print(f"dask or scipy cannot be imported: {e}")
        sys.exit(3)
    print(f"# dask {dask.__version__}, scipy {scipy.__version__}, numpy {np.__version__}")


class Cost:
    """Wall and CPU time of the block, and the process's peak RSS after it."""

    def __enter__(self):
        self.r0 = resource.getrusage(resource.RUSAGE_SELF)
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.t0
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        self.cpu = (r1.ru_utime - self.r0.ru_utime) + (r1.ru_stime - self.r0.ru_stime)
        self.rss = r1.ru_maxrss / 1024

    def report(self, prefix):
        print(f"{prefix}_wall: {self.wall:.4g} s")
        print(f"{prefix}_cpu: {self.cpu:.4g} s")
        print(f"{prefix}_peak_rss: {self.rss:.4g} MiB")


def gauss(src, out, threads):
    import dask
    import dask.array as da
    from scipy import ndimage
    zsrc = zarr.open_array(src, mode="r")
    depth = radius(SIGMA)
    with Cost() as c:
        x = da.from_zarr(zsrc)
        y = x.map_overlap(ndimage.gaussian_filter, depth=depth, boundary="reflect",
                          dtype=zsrc.dtype, sigma=SIGMA, mode="reflect", truncate=TRUNCATE)
        zout = zarr.open_array(out, mode="w-", shape=zsrc.shape, chunks=zsrc.chunks,
                               dtype=zsrc.dtype, compressor=Zstd(level=1))
        with dask.config.set(scheduler="threads", num_workers=threads):
            da.to_zarr(y, zout)
    c.report("dask_gaussian")


def smooth_sigma(f):
    """ngff-zarr's sigma for factor `f` (after ITK)."""
    return math.sqrt((f * f - 1) / (8 * math.log(2)))


def level_write(y, out, k, chunks):
    """Write dask array `y` as level `k` of the group `out`, in `chunks`
    clipped to its shape."""
    import dask.array as da
    ch = tuple(min(c, n) for c, n in zip(chunks, y.shape))
    y = y.rechunk(ch)
    z = zarr.open_array(os.path.join(out, str(k)), mode="w-", shape=y.shape, chunks=ch,
                        dtype=y.dtype, compressor=Zstd(level=1))
    da.to_zarr(y, z)
    return z


def pyramid(src, out, threads):
    import dask
    import dask.array as da
    from scipy import ndimage
    zsrc = zarr.open_array(src, mode="r")
    sigma = tuple(smooth_sigma(f) for f in FACTORS)
    depth = tuple(radius(s) for s in sigma)
    step = tuple(slice(None, None, f) for f in FACTORS)
    with Cost() as c:
        zarr.open_group(out, mode="w-")
        with dask.config.set(scheduler="threads", num_workers=threads):
            prev = level_write(da.from_zarr(zsrc), out, 0, zsrc.chunks)
            for k in range(1, LEVELS):
                x = da.from_zarr(prev)
                y = x.map_overlap(ndimage.gaussian_filter, depth=depth, boundary="nearest",
                                  dtype=x.dtype, sigma=sigma, mode="nearest", truncate=TRUNCATE)
                prev = level_write(y[step], out, k, zsrc.chunks)
    print(f"# dask pyramid: sigma {tuple(round(s, 4) for s in sigma)}, depth {depth}, "
          f"levels {[zarr.open_array(os.path.join(out, str(k)), mode='r').shape for k in range(LEVELS)]}")
    c.report("dask_smooth_pyramid")


def kernel(path, reps, out):
    from scipy import ndimage
    a = np.fromfile(path, dtype="<f4").reshape(VOL_SHAPE)
    r = np.empty_like(a)
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        ndimage.gaussian_filter(a, SIGMA, mode="reflect", truncate=TRUNCATE, output=r)
        t.append(time.perf_counter() - t0)
    r.tofile(out)
    t.sort()
    print(f"# scipy kernel: gaussian_filter sigma {SIGMA} mode reflect, float32 {VOL_SHAPE}, "
          f"whole array, 1 thread, {reps} runs")
    print(f"scipy_gaussian_kernel: {t[len(t) // 2]:.4g} s")
    print(f"scipy_gaussian_kernel_best: {t[0]:.4g} s")


def diff(x, y):
    """max |x - y|, max |y|, equal elements, elements."""
    d = np.abs(x.astype(np.float64) - y.astype(np.float64))
    return float(d.max()), float(np.abs(y.astype(np.float64)).max()), int((x == y).sum()), x.size


def compare_arrays(za, zb, prefix):
    if za.shape != zb.shape or za.dtype != zb.dtype:
        print(f"# {prefix}: shapes or dtypes differ: {za.shape} {za.dtype} vs "
              f"{zb.shape} {zb.dtype}")
        print(f"{prefix}_meta_differ: 1 flag")
        return
    worst, top, equal, total = 0.0, 0.0, 0, 0
    for i in range(za.shape[0]):
        w, m, e, n = diff(za[i], zb[i])
        worst, top, equal, total = max(worst, w), max(top, m), equal + e, total + n
    print(f"{prefix}_max_rel_diff: {worst / top if top > 0 else worst:.6g} value")
    print(f"{prefix}_max_abs_diff: {worst:.6g} value")
    print(f"{prefix}_equal_share: {equal / total:.6g} fraction")


def compare(a, b):
    compare_arrays(zarr.open_array(a, mode="r"), zarr.open_array(b, mode="r"), "compare")


def compare_pyramid(a, b):
    for k in range(1, LEVELS):
        compare_arrays(zarr.open_array(os.path.join(a, str(k)), mode="r"),
                       zarr.open_array(os.path.join(b, str(k)), mode="r"), f"compare_level{k}")


def main():
    cmd, args = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ("", [])
    if cmd == "check" and not args:
        check()
    elif cmd == "setup" and len(args) == 1:
        setup(args[0])
    elif cmd == "gauss" and len(args) == 3:
        gauss(args[0], args[1], int(args[2]))
    elif cmd == "pyramid" and len(args) == 3:
        pyramid(args[0], args[1], int(args[2]))
    elif cmd == "kernel" and len(args) == 3:
        kernel(args[0], int(args[1]), args[2])
    elif cmd == "compare" and len(args) == 2:
        compare(args[0], args[1])
    elif cmd == "compare_pyramid" and len(args) == 2:
        compare_pyramid(args[0], args[1])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
