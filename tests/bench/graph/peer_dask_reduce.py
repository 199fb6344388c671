#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""dask's side of bench_graph_reduce, on the 5-D demo image (uint16
(2, 2, 32, 1024, 1024) in (1, 1, 32, 256, 256) chunks, Zarr v2, zstd level
1, made by bench_graph_expr's `sluice generate`), on the threaded scheduler
as the shared peer measurements did it:

- the maximum intensity projection along z: da.from_zarr(raw).max(axis=2)
  .to_zarr(...) into Zarr v2 uint16 (2, 2, 1024, 1024), (1, 1, 256, 256)
  chunks, Zstd(1);
- per channel: min, max, mean, std, a 256-bin histogram over [0, 65536)
  and the 0.5 and 99.5 percentiles, all in one dask.compute, two ways:
  "direct": x.min(), x.max(), x.mean(), x.std(), da.histogram and
    da.percentile over the channel's blocks flattened one by one (dask's
    percentile merges per-block percentiles: approximate);
  "bincount": np.bincount of all 65536 values per block (map_blocks) summed
    per channel, everything else derived from those counts in numpy (exact
    for uint16).

usage:
  peer_dask_reduce.py check                  whether dask imports (exit 3 if not, saying why)
  peer_dask_reduce.py setup DATA_DIR         check DATA_DIR/raw.zarr is the demo input
  peer_dask_reduce.py mip DATA_DIR OUT       the MIP into OUT (which must not exist); prints
                                             dask_mip_{wall,cpu,peak_rss} (imports and set-up
                                             excluded; peak RSS is the process's)
  peer_dask_reduce.py stats DATA_DIR VARIANT OUT.json
                                             VARIANT direct or bincount; the results into
                                             OUT.json; prints dask_stats_VARIANT_{wall,cpu,
                                             peak_rss}
  peer_dask_reduce.py compare-mip A B        whether two MIPs are equal, element for element
  peer_dask_reduce.py compare-stats DATA_DIR REPORT DASK.json...
                                             the stats in sluice's --report REPORT and in
                                             each DASK.json against numpy's over each
                                             channel (np.min, max, mean, std, histogram,
                                             percentile)
"""
import json
import os
import resource
import sys
import time

import numpy as np
import zarr
from numcodecs import Zstd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_dask_expr import check_raw  # noqa: E402  (the one check of the demo input)

MIP_CHUNKS = (1, 1, 256, 256)
BINS, LO, HI = 256, 0, 65536
QS = (0.5, 99.5)
MEAN_RTOL, STD_RTOL = 1e-12, 1e-9


def check():
    try:
        import dask  # noqa: F401
        import dask.array  # noqa: F401
    except Exception as e:  # any failure to import means the peer cannot run
        print(f"dask cannot be imported: {e}")
        sys.exit(3)
    print(f"dask {dask.__version__}")


def timed(prefix, fn):
    """Run fn(), print prefix_{wall,cpu,peak_rss}, return what fn returned."""
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    result = fn()
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    print(f"{prefix}_wall: {wall:.4g} s")
    print(f"{prefix}_cpu: {cpu:.4g} s")
    print(f"{prefix}_peak_rss: {r1.ru_maxrss / 1024:.4g} MiB")
    return result


def mip(data, out):
    import dask
    import dask.array as da
    zraw = zarr.open_array(os.path.join(data, "raw.zarr"), mode="r")

    def go():
        m = da.from_zarr(zraw).max(axis=2)
        zout = zarr.open_array(out, mode="w-", shape=m.shape, chunks=MIP_CHUNKS, dtype=m.dtype,
                               compressor=Zstd(level=1))
        with dask.config.set(scheduler="threads"):
            da.to_zarr(m.rechunk(MIP_CHUNKS), zout)

    timed("dask_mip", go)


def percentile_from_counts(counts, q):
    """numpy.percentile(x, q) (linear) from the counts of each uint16 value
    of x, with numpy's own float64 steps: virtual index n*q + (1 - q) - 1,
    then a + (b - a) * g, or b - (b - a) * (1 - g) when g >= 0.5."""
    n = int(counts.sum())
    cum = np.cumsum(counts)
    quantile = np.true_divide(q, 100)
    vi = n * quantile + (1 + quantile * (1 - 1 - 1)) - 1
    prev = int(np.floor(vi))
    g = vi - prev
    prev = min(max(prev, 0), n - 1)
    nxt = min(prev + 1, n - 1)
    a, b = (float(np.searchsorted(cum, k, side="right")) for k in (prev, nxt))
    diff = b - a
    return b - diff * (1 - g) if g >= 0.5 else a + diff * g


def from_counts(counts):
    """min, max, mean, std, the 256-bin histogram and QS from value counts."""
    values = np.arange(counts.size, dtype=np.float64)
    nz = np.nonzero(counts)[0]
    n = int(counts.sum())
    total = int((counts * np.arange(counts.size, dtype=np.int64)).sum())
    mean = total / n
    std = float(np.sqrt((counts * (values - mean) ** 2).sum() / n))
    return dict(min=float(nz[0]), max=float(nz[-1]), mean=mean, std=std,
                histogram=[int(c) for c in counts.reshape(BINS, -1).sum(axis=1)],
                percentiles=[percentile_from_counts(counts, q) for q in QS])


def bincount_block(b):
    """The counts of the 65536 values in block b, as a (1, ..., 1, 65536) block."""
    return np.bincount(b.ravel(), minlength=HI).reshape((1,) * b.ndim + (HI,))


def stats_direct(raw):
    import dask
    import dask.array as da
    todo = []
    for c in range(raw.shape[1]):
        x = raw[:, c]
        flat = da.concatenate([b.reshape(-1) for b in x.blocks.ravel()])
        hist, _ = da.histogram(x, bins=BINS, range=(LO, HI))
        todo.append((x.min(), x.max(), x.mean(), x.std(), hist, da.percentile(flat, list(QS))))
    with dask.config.set(scheduler="threads"):
        done = dask.compute(*todo)
    return [dict(min=float(mn), max=float(mx), mean=float(me), std=float(sd),
                 histogram=[int(v) for v in h], percentiles=[float(v) for v in p])
            for mn, mx, me, sd, h, p in done]


def stats_bincount(raw):
    import dask
    counts = raw.map_blocks(bincount_block, dtype=np.int64, new_axis=raw.ndim,
                            chunks=(1,) * raw.ndim + (HI,))
    per_channel = counts.sum(axis=(0, 2, 3, 4))
    with dask.config.set(scheduler="threads"):
        (got,) = dask.compute(per_channel)
    return [from_counts(got[c]) for c in range(got.shape[0])]


def stats(data, variant, out):
    import dask.array as da
    zraw = zarr.open_array(os.path.join(data, "raw.zarr"), mode="r")
    fn = {"direct": stats_direct, "bincount": stats_bincount}[variant]
    sets = timed(f"dask_stats_{variant}", lambda: fn(da.from_zarr(zraw)))
    with open(out, "w") as f:
        json.dump({"variant": variant, "sets": sets}, f)


def compare_mip(a, b):
    za, zb = zarr.open_array(a, mode="r"), zarr.open_array(b, mode="r")
    if za.shape != zb.shape or za.dtype != zb.dtype:
        print(f"# MIPs differ in kind: {za.shape} {za.dtype} against {zb.shape} {zb.dtype}")
        print("compare_mip_equal: 0 flag")
        return
    x, y = za[...], zb[...]
    print(f"compare_mip_differing: {int((x != y).sum())} count")
    print(f"compare_mip_equal: {int(np.array_equal(x, y))} flag")


def numpy_stats(x):
    """numpy's own statistics of x (the reference)."""
    hist, _ = np.histogram(x, bins=BINS, range=(LO, HI))
    return dict(min=float(x.min()), max=float(x.max()), mean=float(x.mean()),
                std=float(x.std()), histogram=[int(v) for v in hist],
                percentiles=[float(v) for v in np.percentile(x, QS)])


def mismatches(got, ref):
    """What in `got` differs from `ref` beyond the tolerances, as text."""
    bad = []
    for k in ("min", "max"):
        if got[k] != ref[k]:
            bad.append(f"{k} {got[k]!r} != {ref[k]!r}")
    for k, tol in (("mean", MEAN_RTOL), ("std", STD_RTOL)):
        if not abs(got[k] - ref[k]) <= tol * abs(ref[k]):
            bad.append(f"{k} {got[k]!r} vs {ref[k]!r} (rel {abs(got[k] - ref[k]) / ref[k]:.3g})")
    if got["histogram"] != ref["histogram"]:
        n = sum(g != r for g, r in zip(got["histogram"], ref["histogram"]))
        bad.append(f"histogram: {n} bins differ (or a length)")
    if got["percentiles"] != ref["percentiles"]:
        bad.append(f"percentiles {got['percentiles']} != {ref['percentiles']}")
    return bad


def sluice_sets(report):
    with open(report) as f:
        rep = json.load(f)
    (node,) = rep["stats"]
    if "error" in node:
        sys.exit(f"sluice's report has no stats: {node['error']}")
    return [dict(min=s["min"], max=s["max"], mean=s["mean"], std=s["std"],
                 histogram=s["histogram"]["counts"],
                 percentiles=[p["value"] for p in s["percentiles"]]) for s in node["sets"]]


def compare_stats(data, report, peers):
    z = zarr.open_array(os.path.join(data, "raw.zarr"), mode="r")
    refs = [numpy_stats(z[:, c]) for c in range(z.shape[1])]
    for c, r in enumerate(refs):
        print(f"# numpy channel {c}: min {r['min']:g} max {r['max']:g} mean {r['mean']:.10g} "
              f"std {r['std']:.10g} p{QS[0]:g} {r['percentiles'][0]:g} "
              f"p{QS[1]:g} {r['percentiles'][1]:g}")
    sides = [("sluice", sluice_sets(report))]
    for p in peers:
        with open(p) as f:
            d = json.load(f)
        sides.append((f"dask_{d['variant']}", d["sets"]))
    for name, sets in sides:
        bad = [f"channel {c}: {m}" for c, (g, r) in enumerate(zip(sets, refs))
               for m in mismatches(g, r)]
        if len(sets) != len(refs):
            bad.append(f"{len(sets)} sets for {len(refs)} channels")
        for b in bad:
            print(f"# {name} differs from numpy: {b}")
        print(f"compare_stats_{name}_equal: {int(not bad)} flag")


def main():
    cmd, args = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ("", [])
    if cmd == "check" and not args:
        check()
    elif cmd == "setup" and len(args) == 1:
        check_raw(os.path.join(args[0], "raw.zarr"))
    elif cmd == "mip" and len(args) == 2:
        mip(*args)
    elif cmd == "stats" and len(args) == 3 and args[1] in ("direct", "bincount"):
        stats(*args)
    elif cmd == "compare-mip" and len(args) == 2:
        compare_mip(*args)
    elif cmd == "compare-stats" and len(args) >= 2:
        compare_stats(args[0], args[1], args[2:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
