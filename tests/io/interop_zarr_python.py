#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Interop with Debian's python3-zarr 2.13 (numcodecs 0.11), both ways.

sluice writes v2 -> zarr-python reads: interop_write (a sluice program)
writes arrays of every dtype, both byte orders, orders C and F, both
dimension separators, every compressor, fill values 0, 7 and NaN, with
chunk 0 left unstored; zarr-python must read exactly the values the
formula in interop_write.c defines.

zarr-python writes -> sluice reads: zarr-python writes the same range of
arrays with some chunks never written; `sluice checksum` must print the
SHA-256 of what zarr-python reads back, canonicalized as sluice defines it.

Run by meson test: interop_zarr_python.py INTEROP_WRITE SLUICE.  Exits 77
(skipped) with a message when zarr-python is not installed.
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import numcodecs
    import zarr
except ImportError as e:
    print(f"skipped: python3-zarr is not installed ({e}); tests/deps.sh lists it")
    sys.exit(77)

SHAPE, CHUNKS = (13, 7, 5), (4, 3, 2)
DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]
CODECS = ["none", "zstd:1", "gzip:5", "blosc:lz4:5:shuffle", "blosc:zstd:3:bitshuffle",
          "blosc:blosclz:1:noshuffle"]
failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAILED:", what, flush=True)


def formula(dtype):
    """The values interop_write.c writes, in C order."""
    n = int(np.prod(SHAPE))
    i = np.arange(n, dtype=np.int64)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        v = (i % 3 == 0)
    elif dt.kind in "iu":
        v = (7 * i + 3) % 251 - (100 if dt.kind == "i" else 0)
    else:
        re = ((7 * i + 3) % 251) / 2 - 20
        re = np.where(i % 13 == 5, np.nan, re)
        v = re + (-(i % 17)) * 1j if dt.kind == "c" else re
    return np.asarray(v).astype(dt).reshape(SHAPE)


def fill_of(dtype, text):
    if text == "nan":
        return np.dtype(dtype).type(np.nan)
    return np.dtype(dtype).type(int(text))


def equal(a, b):
    if a.dtype.kind in "fc":
        return a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
    return a.shape == b.shape and np.array_equal(a, b)


def sluice_to_zarr(helper, tmp):
    cases = 0
    for k, dtype in enumerate(DTYPES):
        for j in range(3):
            codec = CODECS[(k + j) % len(CODECS)]
            endian = "big" if (k + j) % 2 else "little"
            order = "F" if j == 1 else "C"
            sep = "/" if j == 2 else "."
            kind = np.dtype(dtype).kind
            fill = "nan" if kind in "fc" and j == 0 else ("1" if kind == "b" else "7")
            path = os.path.join(tmp, f"s2z-{dtype}-{j}")
            args = [helper, path, "2", dtype, endian, order, codec, sep,
                    ",".join(map(str, SHAPE)), ",".join(map(str, CHUNKS)), fill]
            p = subprocess.run(args, capture_output=True, text=True)
            what = f"sluice writes v2 {dtype} {endian} {order} {codec} sep {sep!r} fill {fill}"
            if p.returncode != 0:
                expect(False, f"{what}: interop_write failed: {p.stderr}")
                continue
            try:
                store = zarr.DirectoryStore(path, dimension_separator=sep)
                arr = zarr.open_array(store, mode="r")
                got = arr[...]
            except Exception as e:  # zarr-python refusing the metadata is a failure
                expect(False, f"{what}: zarr-python cannot read it: {e!r}")
                continue
            want = formula(dtype)
            want[:CHUNKS[0], :CHUNKS[1], :CHUNKS[2]] = fill_of(dtype, fill)
            stored = np.dtype(dtype).newbyteorder(">" if endian == "big" else "<")
            expect(arr.dtype == stored, f"{what}: dtype {arr.dtype}, not {stored}")
            expect(equal(got, want), f"{what}: values differ")
            expect(arr.order == order, f"{what}: order {arr.order}")
            first = "0/0/0" if sep == "/" else "0.0.0"
            expect(not os.path.exists(os.path.join(path, first)),
                   f"{what}: the all-fill chunk was stored")
            cases += 1
    return cases


def canonical_sha256(a):
    """SHA-256 as sluice checksum defines it: C order, little-endian, NaNs canonical."""
    a = np.ascontiguousarray(a)
    if a.dtype.kind == "c":
        part = np.dtype("<f%d" % (a.dtype.itemsize // 2))
        a = np.stack([a.real, a.imag], axis=-1).astype(part)
    if a.dtype.kind in "fc":
        a = np.where(np.isnan(a), np.nan, a).astype(a.dtype.newbyteorder("<"))
    return hashlib.sha256(a.astype(a.dtype.newbyteorder("<")).tobytes()).hexdigest()


def compressors():
    return [None, numcodecs.Zstd(level=1), numcodecs.Zlib(level=3), numcodecs.GZip(level=5),
            numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE),
            numcodecs.Blosc(cname="zstd", clevel=3, shuffle=numcodecs.Blosc.BITSHUFFLE)]


def zarr_to_sluice(sluice, tmp):
    cases = 0
    comps = compressors()
    for k, dtype in enumerate(DTYPES):
        for j in range(3):
            comp = comps[(k + j) % len(comps)]
            order = "F" if j == 1 else "C"
            sep = "/" if j == 2 else "."
            byteorder = ">" if (k + j) % 2 and np.dtype(dtype).itemsize > 1 else "<"
            dt = np.dtype(dtype).newbyteorder(byteorder)
            kind = dt.kind
            fill = np.nan if kind in "fc" and j != 1 else (True if kind == "b" else 7)
            path = os.path.join(tmp, f"z2s-{dtype}-{j}")
            store = zarr.DirectoryStore(path, dimension_separator=sep)
            arr = zarr.open_array(store, mode="w", shape=SHAPE, chunks=CHUNKS, dtype=dt,
                                  compressor=comp, order=order, fill_value=fill)
            data = formula(dtype)
            # Leave the first chunk row unwritten: those chunks read as fill.
            arr[CHUNKS[0]:, :, :] = data[CHUNKS[0]:, :, :]
            want = arr[...]
            what = f"zarr-python writes {dt.str} {order} {comp} sep {sep!r} fill {fill}"
            p = subprocess.run([sluice, "checksum", path], capture_output=True, text=True)
            got = p.stdout.split()[0] if p.returncode == 0 and p.stdout else p.stderr.strip()
            expect(got == canonical_sha256(want), f"{what}: sluice checksum {got}")
            cases += 1
    # Attributes, dimension names and a null fill value.
    path = os.path.join(tmp, "z2s-attrs")
    arr = zarr.open_array(path, mode="w", shape=(3, 4), chunks=(2, 2), dtype="<i4",
                          fill_value=None)
    arr.attrs["_ARRAY_DIMENSIONS"] = ["y", "x"]
    arr.attrs["units"] = "m"
    arr[:] = np.arange(12).reshape(3, 4)
    p = subprocess.run([sluice, "info", path], capture_output=True, text=True)
    expect(p.returncode == 0 and "dimensions:  y, x" in p.stdout and '"units":"m"' in p.stdout
           and "fill value:  null" in p.stdout, f"sluice info of attributes:\n{p.stdout}{p.stderr}")
    return cases + 1


def main():
    if len(sys.argv) != 3:
        print("usage: interop_zarr_python.py INTEROP_WRITE SLUICE")
        return 2
    helper, sluice = sys.argv[1], sys.argv[2]
    print(f"zarr {zarr.__version__}, numcodecs {numcodecs.__version__}, numpy {np.__version__}")
    tmp = tempfile.mkdtemp(prefix="sluice-interop-")
    try:
        n1 = sluice_to_zarr(helper, tmp)
        n2 = zarr_to_sluice(sluice, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{n1} arrays written by sluice, {n2} by zarr-python; {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
