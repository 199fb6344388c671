#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""dask's side of bench_graph_putter: a no-op putter over every chunk of
da.zeros(N, chunks=1000), built two ways -- map_blocks with block_info, and
a low-level blockwise layer with ArraySliceDep (what katdal's chunk stores
did) -- timing graph construction and compute() (threaded scheduler) apart.
Prints `name: value unit` lines, medians over REPS runs.

usage: peer_dask_putter.py N REPS
"""
import statistics
import sys
import time

import dask
import dask.array as da
import numpy as np
from dask.blockwise import blockwise
from dask.highlevelgraph import HighLevelGraph
from dask.layers import ArraySliceDep

CHUNK = 1000


def putter_info(x, block_info=None):
    # a real putter would write x at block_info[0]["array-location"]
    _ = block_info[0]["array-location"]
    return np.zeros(1, dtype=x.dtype)


def putter_slices(x, slices):
    _ = slices
    return np.zeros(1, dtype=x.dtype)


def build_map_blocks(x):
    return da.map_blocks(putter_info, x, chunks=((1,) * x.numblocks[0],), dtype=x.dtype)


def build_blockwise(x):
    name = "putter-" + dask.base.tokenize(x)
    layer = blockwise(putter_slices, name, "i", x.name, "i", ArraySliceDep(x.chunks), "i",
                      numblocks={x.name: x.numblocks})
    graph = HighLevelGraph.from_collections(name, layer, dependencies=[x])
    return da.Array(graph, name, chunks=((1,) * x.numblocks[0],), dtype=x.dtype)


def measure(build, n, reps):
    builds, runs = [], []
    for _ in range(reps):
        x = da.zeros(n, chunks=CHUNK)
        t0 = time.perf_counter()
        y = build(x)
        t1 = time.perf_counter()
        out = y.compute()
        t2 = time.perf_counter()
        assert out.shape == (x.numblocks[0],)
        builds.append(t1 - t0)
        runs.append(t2 - t1)
    return statistics.median(builds), statistics.median(runs)


def main():
    n = int(sys.argv[1])
    reps = int(sys.argv[2])
    chunks = n // CHUNK
    for label, build in (("map_blocks", build_map_blocks), ("blockwise", build_blockwise)):
        b, r = measure(build, n, reps)
        print(f"dask_{label}_{chunks}_chunks_build: {b * 1e3:.4g} ms")
        print(f"dask_{label}_{chunks}_chunks_run: {r * 1e3:.4g} ms")
        print(f"dask_{label}_{chunks}_chunks_total: {(b + r) * 1e3:.4g} ms")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
