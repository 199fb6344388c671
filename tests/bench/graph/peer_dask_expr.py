#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""dask's side of bench_graph_expr: the flat-field correction
(raw - dark) / max(flat, 1) of the 5-D demo image, in float32, as dask
writes it: da.from_zarr for the three arrays, (raw.astype(float32) - dark)
/ da.maximum(flat, float32(1)) with dark and flat broadcast over T, C and Z,
da.to_zarr into a Zarr v2 float32 array (Zstd(1), the raw's chunks), on the
threaded scheduler, as the shared peer measurements did it.  Also checks the
raw, creates the dark and flat frames and the kernel's inputs, and compares
two outputs.

usage:
  peer_dask_expr.py setup DATA_DIR    check DATA_DIR/raw.zarr is the demo input
                                      (sluice generate); create dark.zarr,
                                      flat.zarr and kernel/*.bin if missing
  peer_dask_expr.py check             whether dask imports (exit 3 if not, saying why)
  peer_dask_expr.py run DATA_DIR OUT  the pipeline into OUT (which must not exist);
                                      prints dask_flatfield_{wall,cpu,peak_rss}
                                      (imports and set-up excluded; peak RSS is
                                      the process's)
  peer_dask_expr.py compare A B       max |A - B| and the share of equal elements

The raw is uint16 (2, 2, 32, 1024, 1024) in (1, 1, 32, 256, 256) chunks, as
examples/quickstart.sh makes it; dark and flat are float32 (1024, 1024) in
(256, 256) chunks: a dark of about 100 counts plus noise and a fixed-pattern
ramp, a flat from 0.5 to 1.5 (vignetting and noise) with one pixel in 1000
dead (0).
"""
import json
import os
import resource
import sys
import time

import numpy as np
import zarr
from numcodecs import Zstd

RAW_SHAPE = (2, 2, 32, 1024, 1024)
RAW_CHUNKS = (1, 1, 32, 256, 256)
PLANE_CHUNKS = (256, 256)
KERNEL_PLANES = 4


def check_raw(path):
    """Exit unless `path` is the demo input, Zarr v2 uint16 with zstd."""
    meta_path = os.path.join(path, ".zarray")
    with open(meta_path) as f:
        meta = json.load(f)
    want = dict(zarr_format=2, shape=list(RAW_SHAPE), chunks=list(RAW_CHUNKS), dtype="<u2")
    wrong = {k: (meta.get(k), v) for k, v in want.items() if meta.get(k) != v}
    comp = meta.get("compressor") or {}
    if comp.get("id") != "zstd":
        wrong["compressor"] = (comp, "zstd")
    if meta.get("filters"):
        wrong["filters"] = (meta["filters"], None)
    if meta.get("dimension_separator", ".") != ".":
        wrong["dimension_separator"] = (meta["dimension_separator"], ".")
    if wrong:
        sys.exit(f"{meta_path} is not the demo input: " +
                 ", ".join(f"{k} is {got}, expected {exp}" for k, (got, exp) in wrong.items()))
    print(f"# raw: {path}: uint16 {tuple(meta['shape'])} in {tuple(meta['chunks'])} chunks, "
          f"compressor {comp}")


def frames(rng):
    """A dark frame (about 100 counts) and a flat frame (0.5 to 1.5, some 0)."""
    ny, nx = RAW_SHAPE[3:]
    y = np.arange(ny, dtype=np.float32)[:, None]
    x = np.arange(nx, dtype=np.float32)[None, :]
    dark = (100.0 + 0.004 * x + 2.0 * np.sin(y / 97.0)
            + rng.normal(0.0, 3.0, size=(ny, nx))).astype(np.float32)
    r2 = ((x - nx / 2) / (nx / 2)) ** 2 + ((y - ny / 2) / (ny / 2)) ** 2
    flat = (1.5 - 0.5 * r2 + rng.normal(0.0, 0.02, size=(ny, nx))).astype(np.float32)
    flat = np.clip(flat, 0.5, 1.5).astype(np.float32)
    flat[rng.random((ny, nx)) < 0.001] = 0.0
    return dark, flat


def write_plane(path, a):
    tmp = path + ".partial"
    z = zarr.open_array(tmp, mode="w", shape=a.shape, chunks=PLANE_CHUNKS, dtype="f4",
                        compressor=Zstd(level=1))
    z[...] = a
    os.rename(tmp, path)


def setup(data):
    check_raw(os.path.join(data, "raw.zarr"))
    dark_path, flat_path = os.path.join(data, "dark.zarr"), os.path.join(data, "flat.zarr")
    if not (os.path.exists(os.path.join(dark_path, ".zarray"))
            and os.path.exists(os.path.join(flat_path, ".zarray"))):
        dark, flat = frames(np.random.default_rng(7))
        for p, a in ((dark_path, dark), (flat_path, flat)):
            if os.path.exists(p):
                import shutil
                shutil.rmtree(p)
            write_plane(p, a)
    dark = zarr.open_array(dark_path, mode="r")[...]
    flat = zarr.open_array(flat_path, mode="r")[...]
    print(f"# dark: {dark_path}: float32 {dark.shape}, mean {dark.mean():.1f}, "
          f"range [{dark.min():.1f}, {dark.max():.1f}]")
    print(f"# flat: {flat_path}: float32 {flat.shape}, range [{flat.min():.2f}, "
          f"{flat.max():.2f}], {int((flat == 0).sum())} zeros, "
          f"{float((flat > 1).mean()):.2f} of it above 1")
    kdir = os.path.join(data, "kernel")
    os.makedirs(kdir, exist_ok=True)
    if not os.path.exists(os.path.join(kdir, "flat.f32")):
        raw = zarr.open_array(os.path.join(data, "raw.zarr"), mode="r")
        raw[0, 0, :KERNEL_PLANES].astype("<u2").tofile(os.path.join(kdir, "raw.u16"))
        dark.astype("<f4").tofile(os.path.join(kdir, "dark.f32"))
        flat.astype("<f4").tofile(os.path.join(kdir, "flat.f32.partial"))
        os.rename(os.path.join(kdir, "flat.f32.partial"), os.path.join(kdir, "flat.f32"))
    print(f"# kernel inputs: {kdir}/raw.u16 ({KERNEL_PLANES}, 1024, 1024), dark.f32, flat.f32")


def check():
    try:
        import dask  # noqa: F401
        import dask.array  # noqa: F401
    except Exception as e:  # any failure to import means the peer cannot run
        print(f"dask cannot be imported: {e}")
        sys.exit(3)
    print(f"dask {dask.__version__}")


def run(data, out):
    import dask
    import dask.array as da
    zraw = zarr.open_array(os.path.join(data, "raw.zarr"), mode="r")
    zdark = zarr.open_array(os.path.join(data, "dark.zarr"), mode="r")
    zflat = zarr.open_array(os.path.join(data, "flat.zarr"), mode="r")
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    raw, dark, flat = da.from_zarr(zraw), da.from_zarr(zdark), da.from_zarr(zflat)
    y = (raw.astype(np.float32) - dark) / da.maximum(flat, np.float32(1))
    assert y.dtype == np.float32, y.dtype
    zout = zarr.open_array(out, mode="w-", shape=zraw.shape, chunks=zraw.chunks, dtype="f4",
                           compressor=Zstd(level=1))
    with dask.config.set(scheduler="threads"):
        da.to_zarr(y, zout)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    print(f"dask_flatfield_wall: {wall:.4g} s")
    print(f"dask_flatfield_cpu: {cpu:.4g} s")
    print(f"dask_flatfield_peak_rss: {r1.ru_maxrss / 1024:.4g} MiB")


def compare(a, b):
    za, zb = zarr.open_array(a, mode="r"), zarr.open_array(b, mode="r")
    if za.shape != zb.shape or za.dtype != zb.dtype:
        print(f"compare_meta_differ: 1 flag ({za.shape} {za.dtype} vs {zb.shape} {zb.dtype})")
        return
    worst, equal, total = 0.0, 0, 0
    for t in range(za.shape[0]):
        for c in range(za.shape[1]):
            x, y = za[t, c], zb[t, c]
            same = (x == y) | (np.isnan(x) & np.isnan(y))
            d = np.abs(x.astype(np.float64) - y.astype(np.float64))
            worst = max(worst, float(np.nanmax(d)) if d.size else 0.0)
            equal += int(same.sum())
            total += x.size
    print(f"compare_max_abs_diff: {worst:.6g} value")
    print(f"compare_equal_share: {equal / total:.6g} fraction")


def main():
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "setup" and len(sys.argv) == 3:
        setup(sys.argv[2])
    elif cmd == "check":
        check()
    elif cmd == "run" and len(sys.argv) == 4:
        run(sys.argv[2], sys.argv[3])
    elif cmd == "compare" and len(sys.argv) == 4:
        compare(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
