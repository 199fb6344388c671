#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""py_read: the zarr-python #3175 case read into numpy from Python.

b3.zarr (10^8 float64 normals, chunks of 10^6, numcodecs Zstd(level=1),
Zarr v2, written by zarr-python: peer_zarr_read.py create), 8 disjoint
chunk-sized slices (every other chunk), read by

  sluice             sluice.open(url).read_many(slices): one batched plan
  zarr               zarr-python 2.13: the better of a loop of z[a:b] and
                     one z.oindex[...] (locally a DirectoryStore, over HTTP
                     fsspec's HTTP filesystem, which fetches one
                     selection's chunks concurrently)
  dask               da.concatenate([da.from_zarr(z)[a:b] ...]).compute()
                     on dask's threads

locally (warm page cache: one warm-up, then the median of REPS, as the
peers' b3 anchor), and over HTTP through nginx and the latency proxy of
tests/remote/serve.py at 0 and 20 ms per request (one warm-up, then the
best of REPS, as bench_io_remote).  Every result is checked against the
slices read one by one with zarr-python.  Also the cost of one call that
reads one element: of a chunk the Array keeps decoded (``cache=``,
py_call_overhead_us), and of a small chunk (4096 float64, uncompressed,
page cache) read afresh, beside zarr-python's.

  tests/bench/run.sh py_read            (SL_BENCH_BUILD_ROOT says which
                                         build's package is imported)
  bench_py_read.py [REPS]

Prints `name: value unit` lines and the speedups named by issue 36; a
peer that cannot run prints no figure.
"""
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import peer_remote  # noqa: E402
import peer_zarr_read  # noqa: E402


def import_sluice():
    build = os.environ.get("SL_BENCH_BUILD_ROOT")
    if build:
        sys.path.insert(0, os.path.join(build, "python"))
    try:
        import sluice
    except ImportError as e:
        print("bench_py_read: the sluice package is not importable (%s); build with "
              "python3-dev and python3-numpy installed and set SL_BENCH_BUILD_ROOT" % e,
              file=sys.stderr)
        return None
    return sluice


def report(name, value, unit):
    print("%s: %.6g %s" % (name, value, unit), flush=True)


def times(fn, expect, reps):
    """One checked warm-up call, then the times of `reps` checked calls."""
    out = fn()
    assert np.array_equal(out, expect)
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
        assert np.array_equal(out, expect)
    return ts


def readers(sluice, zarr_array, sluice_array):
    import dask
    import dask.array as da

    dask.config.set(scheduler="threads")
    sl = peer_zarr_read.SLICES
    idx = np.concatenate([np.arange(a, b) for a, b in sl])
    sels = [np.s_[a:b] for a, b in sl]
    return {
        "sluice": lambda: np.concatenate(sluice_array.read_many(sels)),
        "zarr_loop": lambda: np.concatenate([zarr_array[a:b] for a, b in sl]),
        "zarr_oindex": lambda: zarr_array.oindex[idx],
        "dask": lambda: da.concatenate([da.from_zarr(zarr_array)[a:b] for a, b in sl]).compute(),
    }


def local_case(sluice, path, reps):
    import zarr

    z = zarr.open_array(path, mode="r")
    expect = np.concatenate([z[a:b] for a, b in peer_zarr_read.SLICES])
    t = {name: statistics.median(times(fn, expect, reps))
         for name, fn in readers(sluice, z, sluice.open(path)).items()}
    for name, v in t.items():
        report("py_local_%s" % name, v, "s")
    zarr_best = min(t["zarr_loop"], t["zarr_oindex"])
    report("py_local_read_many_speedup_vs_zarr", zarr_best / t["sluice"], "x")
    report("py_local_read_many_speedup_vs_dask", t["dask"] / t["sluice"], "x")


def remote_case(sluice, url, ctl, delay_ms, reps):
    import fsspec
    import zarr

    peer_remote.control(ctl, "POST", "rules", {"rules": [], "delay_ms": float(delay_ms)})
    z = zarr.open_array(fsspec.get_mapper(url), mode="r")
    expect = np.concatenate([z[a:b] for a, b in peer_zarr_read.SLICES])
    tag = "py_remote_%dms" % delay_ms
    t = {}
    for name, fn in readers(sluice, z, sluice.open(url)).items():
        fn()  # a warm-up outside the proxy's count
        peer_remote.control(ctl, "DELETE", "log")
        t[name] = min(times(fn, expect, reps))
        requests = peer_remote.log_totals(ctl)[0] / (reps + 1)
        report("%s_%s" % (tag, name), t[name], "s")
        report("%s_%s_requests" % (tag, name), requests, "requests")
    zarr_best = min(t["zarr_loop"], t["zarr_oindex"])
    report("%s_read_many_speedup_vs_zarr_fsspec" % tag, zarr_best / t["sluice"], "x")
    report("%s_read_many_speedup_vs_dask" % tag, t["dask"] / t["sluice"], "x")


def per_call_us(arr, calls):
    assert arr[5000] == 5000.0
    t0 = time.perf_counter()
    for _ in range(calls):
        arr[5000]
    return (time.perf_counter() - t0) / calls * 1e6


def call_overhead(sluice, root, calls=20000):
    import zarr

    path = os.path.join(root, "py_small.zarr")
    a = sluice.create(path, shape=(4096 * 16,), chunks=(4096,), dtype="float64",
                      codec="none", zarr_format=2, overwrite=True)
    a[...] = np.arange(4096 * 16, dtype="float64")
    # One element of a chunk kept decoded (sluice.open(..., cache=...)).
    report("py_call_overhead_us", per_call_us(sluice.open(path, cache="16M"), calls), "us")
    # One element read afresh each call: the chunk read and decoded too.
    report("py_read_one_element_small_chunk_sluice_us", per_call_us(sluice.open(path), calls),
           "us")
    report("py_read_one_element_small_chunk_zarr_us",
           per_call_us(zarr.open_array(path, mode="r"), calls), "us")


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    sluice = import_sluice()
    if sluice is None:
        return 0
    root = os.environ.get("SL_BENCH_DATA", "/tmp/sluice-bench-data")
    os.makedirs(root, exist_ok=True)
    path = os.path.join(root, "b3.zarr")
    peer_zarr_read.create(path)
    report("workers", os.cpu_count(), "threads")
    local_case(sluice, path, reps)
    call_overhead(sluice, root)
    server = subprocess.Popen([sys.executable, os.path.join(HERE, "peer_remote.py"), "serve",
                               root], stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline().split()
        if len(line) != 4:
            print("bench_py_read: the HTTP servers did not start (nginx-light installed?)",
                  file=sys.stderr)
            return 0
        _, _, proxy, ctl = line
        url = proxy.rstrip("/") + "/b3.zarr"
        for delay in (0, 20):
            remote_case(sluice, url, ctl, delay, reps)
    finally:
        server.terminate()
        server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
