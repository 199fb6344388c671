#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Check the graph file's neighbourhood filters (gaussian, uniform, median,
minimum_filter, maximum_filter, gradient_magnitude, laplace) through `sluice
run` against scipy.ndimage on the whole array: random shapes (ranks 1 to 3)
and chunk grids (chunks smaller than the halo, arrays smaller than it),
every boundary mode and the dtypes the other ops take; bit-exact for the
box filters on integer types, within 1e-5 relative for the float kernels
(an integer result within 1 of scipy's, where a float sum on the other side
of .5 may round it the other way).  Then a cast -> gaussian -> downsample
chain and `sluice explain`'s halo edge; a corrupt input chunk failing
exactly the output chunks whose margin reads it; bad parameters refused
with their JSON pointer; and --resume refusing a changed sigma.  Exits 77
(skipped) without numpy, scipy and zarr.

    SL_FILTER_SEED   seed of the random cases (default 20261207)
    SL_FILTER_CASES  how many random cases (default 60)
    SL_KEEP_TMP      1: keep the temporary directory and print where it is
"""
import json
import os
import random
import sys

from launcher_util import (OUT_CREATE, RUN, Graph, expect, expect_refused, explain, finish,
                           read_zarr, run, scratch_dir, skip_without, write_graph, write_zarr)

skip_without("numpy", "scipy", "zarr", hint="install python3-scipy and python3-zarr")
import numpy as np  # noqa: E402
from scipy import ndimage  # noqa: E402

SEED = int(os.environ.get("SL_FILTER_SEED", "20261207"))
N_CASES = int(os.environ.get("SL_FILTER_CASES", "60"))

MODES = ["reflect", "nearest", "mirror", "constant", "wrap"]
INT_DTYPES = ["uint8", "int8", "uint16", "int16", "int32", "uint32", "int64"]
FLOAT_DTYPES = ["float32", "float64"]
BOX = ["uniform", "median", "minimum_filter", "maximum_filter"]
SMOOTH = ["gaussian", "gradient_magnitude", "laplace"]


def scipy_filter(op, x, params):
    """scipy.ndimage's result for graph node parameters `params`."""
    kw = {"mode": params.get("mode", "reflect"), "cval": params.get("cval", 0.0)}
    if op in ("gaussian", "gradient_magnitude"):
        kw["truncate"] = params.get("truncate", 4.0)
        f = ndimage.gaussian_filter if op == "gaussian" else ndimage.gaussian_gradient_magnitude
        return f(x, params["sigma"], **kw)
    if op == "laplace":
        return ndimage.laplace(x, **kw)
    f = {"uniform": ndimage.uniform_filter, "median": ndimage.median_filter,
         "minimum_filter": ndimage.minimum_filter, "maximum_filter": ndimage.maximum_filter}[op]
    return f(x, size=params["size"], **kw)


def exact(op, dtype):
    """Whether sluice must equal scipy bit for bit."""
    return op in BOX and (dtype in INT_DTYPES or dtype == "bool") or \
        op in ("median", "minimum_filter", "maximum_filter")


def compare(op, dtype, got, want):
    """'' when `got` is close enough to scipy's `want`, else what differs."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"shape/dtype {got.shape} {got.dtype}, scipy {want.shape} {want.dtype}"
    if exact(op, dtype):
        same = (got == want) | (np.isnan(got) & np.isnan(want)) if got.dtype.kind == "f" \
            else got == want
    elif got.dtype.kind in "iub":
        same = np.abs(got.astype(np.float64) - want.astype(np.float64)) <= \
            np.maximum(1.0, 1e-5 * np.abs(want.astype(np.float64)))
    else:
        g, w = got.astype(np.float64), want.astype(np.float64)
        scale = max(1.0, float(np.nanmax(np.abs(w)))) if w.size and np.isfinite(w).any() else 1.0
        same = (np.abs(g - w) <= 1e-5 * np.maximum(np.abs(w), 1e-3 * scale)) | \
            (np.isnan(g) & np.isnan(w)) | (g == w)
    if bool(np.all(same)):
        return ""
    bad = np.argwhere(~same)
    i = tuple(bad[0])
    return f"{len(bad)} of {got.size} differ; first at {i}: {got[i]!r}, scipy {want[i]!r}"


def random_values(rng, dtype, shape):
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype in FLOAT_DTYPES:
        return rng.normal(0, 100, shape).astype(dtype)
    info = np.iinfo(dtype)
    lo, hi = max(info.min, -(1 << 40)), min(info.max, 1 << 40)
    return rng.integers(lo, hi, shape, endpoint=True).astype(dtype)


def random_params(rng, op, rank):
    p = {"mode": rng.choice(MODES)}
    if p["mode"] == "constant":
        p["cval"] = float(rng.choice([0, 3, -7.5]))
    if op in ("gaussian", "gradient_magnitude"):
        sig = [float(rng.choice([0, 0.5, 1, 1.7, 3])) for _ in range(rank)]
        if op == "gradient_magnitude" or rng.random() < 0.5:
            sig = [s if s > 0 else 1.0 for s in sig]
        p["sigma"] = sig if rng.random() < 0.7 else sig[0]
        if rng.random() < 0.3:
            p["truncate"] = float(rng.choice([1.5, 2.5, 4.0]))
    elif op in BOX:
        size = [int(rng.integers(1, 6)) for _ in range(rank)]
        p["size"] = size if rng.random() < 0.7 else size[0]
    return p


def run_case(tmp, k, op, dtype, shape, chunks, params, data):
    """Filter `data` (`chunks`) with node `op` `params`: '' or what went wrong."""
    g = Graph(os.path.join(tmp, f"case{k}"))
    src = g.get("x", data, chunks)
    g.add("f", {"op": op, "input": src, **params})
    out = g.put("f")
    graph = g.write()
    rc, so, se = run(*RUN, graph)
    if rc != 0:
        return f"sluice run exits {rc}: {so}{se}"
    got, _, _ = read_zarr(out)
    with np.errstate(all="ignore"):
        want = scipy_filter(op, data, params)
    return compare(op, dtype, got, want)


def check_random(tmp):
    rng = np.random.default_rng(SEED)
    py = random.Random(SEED)
    ops = BOX + SMOOTH
    for k in range(N_CASES):
        op = ops[k % len(ops)]
        dtypes = (INT_DTYPES + FLOAT_DTYPES + ["bool"]) if op in BOX else \
            (["uint16", "int16", "int32"] + FLOAT_DTYPES)
        dtype = py.choice(dtypes)
        rank = py.choice([1, 2, 2, 3])
        shape = tuple(py.choice([1, 2, 3, 5, 8, 13, 20]) for _ in range(rank))
        chunks = tuple(py.choice([1, 2, 3, 4, 7, n]) if n > 0 else 1 for n in shape)
        chunks = tuple(max(1, min(c, n)) for c, n in zip(chunks, shape))
        params = random_params(rng, op, rank)
        data = random_values(rng, dtype, shape)
        if dtype in FLOAT_DTYPES and op in ("median", "minimum_filter", "maximum_filter"):
            data.flat[::11] = np.nan  # NaN as scipy orders it
        what = run_case(tmp, k, op, dtype, shape, chunks, params, data)
        expect(not what, f"case {k}: {op} {json.dumps(params)} on {dtype} {shape} chunks "
               f"{chunks}: {what}")


def check_every_mode(tmp):
    """Each filter in each mode on one 2-D uint16 and float32 array whose
    chunks (3) are smaller than the halos of size 7 and sigma 2."""
    rng = np.random.default_rng(SEED + 1)
    k = 1000
    for dtype in ("uint16", "float32"):
        data = random_values(rng, dtype, (11, 17))
        for op in BOX + SMOOTH:
            for mode in MODES:
                params = {"mode": mode}
                if mode == "constant":
                    params["cval"] = 5.0
                if op in BOX:
                    params["size"] = [7, 4]
                elif op != "laplace":
                    params["sigma"] = [2.0, 1.0]
                what = run_case(tmp, k, op, dtype, data.shape, (3, 3), params, data)
                k += 1
                expect(not what, f"{op} mode {mode} on {dtype} (11, 17) chunks (3, 3): {what}")


def check_chain(tmp):
    """cast -> gaussian -> downsample, and explain's halo edge."""
    rng = np.random.default_rng(SEED + 2)
    data = rng.integers(0, 4096, (4, 64, 64), dtype=np.uint16)
    g = Graph(os.path.join(tmp, "chain"))
    src = g.get("x", data, (4, 16, 16))
    g.add("c", {"op": "cast", "input": src, "dtype": "float32"})
    g.add("s", {"op": "gaussian", "input": "c", "sigma": [0, 2, 2]})
    g.add("d", {"op": "downsample", "input": "s", "factors": [1, 2, 2], "method": "stride"})
    out = g.put("d")
    graph = g.write()
    # Explained before the run: afterwards the output exists.
    _, edges, _ = explain(graph, "chain")
    rc, so, se = run(*RUN, graph)
    expect(rc == 0, f"chain: sluice run exits {rc}: {so}{se}")
    if rc == 0:
        got, _, _ = read_zarr(out)
        want = ndimage.gaussian_filter(data.astype(np.float32), [0, 2, 2])[:, ::2, ::2]
        what = compare("gaussian", "float32", got, want)
        expect(not what, f"chain: cast -> gaussian -> downsample differs from scipy: {what}")
    expect("halo" in edges.get("c -> s", "") and "halo 8 before, 8 after" in edges.get("c -> s", ""),
           f"chain: explain says the gaussian's input edge is a halo of 8: {edges}")
    expect(edges.get("gx -> c") == "fused",
           f"chain: the cast stays fused with its get before the halo: {edges}")


def check_failed_chunk(tmp):
    """A corrupt input chunk fails exactly the output chunks whose margin
    reads it (size 3: itself and its 8 neighbours), each naming it."""
    rng = np.random.default_rng(SEED + 3)
    data = rng.integers(0, 1000, (32, 32), dtype=np.int32)
    g = Graph(os.path.join(tmp, "corrupt"))
    src = g.get("x", data, (8, 8))
    g.add("m", {"op": "maximum_filter", "input": src, "size": 3})
    out = g.put("m")
    graph = g.write()
    with open(os.path.join(g.d, "x.zarr", "1.2"), "wb") as f:
        f.write(b"not a zstd frame" * 4)
    report = os.path.join(g.d, "report.json")
    rc, so, se = run(*RUN, "--report", report, graph)
    expect(rc == 1, f"corrupt: sluice run exits {rc}, not 1: {so}{se}")
    if not os.path.exists(report):
        expect(False, f"corrupt: no report: {se}")
        return
    with open(report) as f:
        put = json.load(f)["puts"][0]
    failed = sorted(f["chunk"] for f in put.get("failures", []))
    want = sorted([i, j] for i in (0, 1, 2) for j in (1, 2, 3))
    expect(failed == want, f"corrupt: failed output chunks {failed}, want {want}")
    expect(all("chunk (1, 2)" in (f["message"] or "") for f in put.get("failures", [])),
           f"corrupt: each failure names input chunk (1, 2): {put.get('failures')}")
    got, _, _ = read_zarr(out)
    ref = ndimage.maximum_filter(data, size=3)
    good = np.ones(data.shape, bool)
    for i, j in want:
        good[i * 8:(i + 1) * 8, j * 8:(j + 1) * 8] = False
    expect(bool((got[good] == ref[good]).all()), "corrupt: the other chunks hold scipy's values")


def check_errors(tmp):
    rng = np.random.default_rng(SEED + 4)
    data = rng.integers(0, 100, (8, 8), dtype=np.uint8)
    d = os.path.join(tmp, "errors")
    os.makedirs(d)
    write_zarr(os.path.join(d, "x.zarr"), data, (4, 4))
    cases = [
        ({"op": "gaussian", "sigma": -1}, "/nodes/f", ["sigma", "-1"]),
        ({"op": "gaussian", "sigma": [1, 2, 3]}, "/nodes/f/sigma", ["3", "rank 2"]),
        ({"op": "gaussian", "sigma": "big"}, "/nodes/f/sigma", ["number"]),
        ({"op": "gaussian"}, "/nodes/f/sigma", ["missing", "sigma"]),
        ({"op": "median", "size": 0}, "/nodes/f/size", ["size"]),
        ({"op": "uniform", "size": 3, "mode": "reflct"}, "/nodes/f/mode",
         ["reflct", "reflect, nearest, mirror, constant, wrap"]),
        ({"op": "laplace", "sigma": 2}, "/nodes/f/sigma", ["sigma"]),
    ]
    for k, (node, ptr, words) in enumerate(cases):
        doc = {"sluice": 1,
               "arrays": {"x": {"path": "x.zarr"},
                          "out": {"path": "out.zarr", "create": dict(OUT_CREATE)}},
               "nodes": {"g": {"op": "get", "array": "x"}, "f": {**node, "input": "g"},
                         "w": {"op": "put", "input": "f", "array": "out"}}}
        graph = write_graph(d, doc, f"bad{k}.json")
        expect_refused(f"bad filter {node}", graph, d, ["out.zarr"], [ptr] + words,
                       line_with=ptr)


def check_resume(tmp):
    """A journaled filter run resumes to the same bytes; a changed sigma is refused."""
    rng = np.random.default_rng(SEED + 5)
    data = rng.normal(0, 1, (16, 16)).astype(np.float32)
    d = os.path.join(tmp, "resume")
    os.makedirs(d)
    write_zarr(os.path.join(d, "x.zarr"), data, (8, 8))

    def doc(sigma):
        return {"sluice": 1,
                "arrays": {"x": {"path": "x.zarr"},
                           "out": {"path": "out.zarr", "create": dict(OUT_CREATE)}},
                "nodes": {"g": {"op": "get", "array": "x"},
                          "f": {"op": "gaussian", "input": "g", "sigma": sigma},
                          "w": {"op": "put", "input": "f", "array": "out"}}}
    graph = write_graph(d, doc(1.5))
    journal = os.path.join(d, "j.journal")
    rc, so, se = run(*RUN, "--journal", journal, graph)
    expect(rc == 0, f"resume: a journaled gaussian run exits {rc}: {se}")
    rc, so, se = run(*RUN, "--journal", journal, "--resume", graph)
    expect(rc == 0, f"resume: --resume of the completed run exits {rc}: {so}{se}")
    write_graph(d, doc(2.0))
    rc, so, se = run(*RUN, "--journal", journal, "--resume", graph)
    expect(rc == 2 and "graph changed" in se,
           f"resume: a changed sigma is refused (exit 2, 'graph changed'): {rc} {se}")


def check_smooth_pyramid(tmp):
    """`sluice pyramid --smooth gaussian` and a graph file's pyramid with
    "smooth": each level is scipy's Gaussian of the level before (sigma
    sqrt((f^2 - 1) / (8 ln 2)), mode nearest) sampled every f-th element."""
    rng = np.random.default_rng(SEED + 6)
    data = rng.integers(0, 60000, (2, 3, 40, 52), dtype=np.uint16)
    d = os.path.join(tmp, "smooth")
    os.makedirs(d)
    src = os.path.join(d, "src.zarr")
    write_zarr(src, data, (1, 3, 16, 16))
    factors = (1, 1, 2, 3)
    sigma = [np.sqrt((f * f - 1) / (8 * np.log(2))) for f in factors]
    want = [data]
    for _ in range(3):
        prev = want[-1]
        want.append(ndimage.gaussian_filter(prev, sigma, mode="nearest")
                    [tuple(slice(None, None, f) for f in factors)])
    dst = os.path.join(d, "cli.zarr")
    rc, so, se = run("pyramid", src, dst, "--levels", "4", "--factors",
                     ",".join(map(str, factors)), "--smooth", "gaussian", "--format", "2",
                     "--axes", "c,z,y,x", "--no-progress")
    expect(rc == 0, f"smooth pyramid: sluice pyramid exits {rc}: {so}{se}")
    graph = write_graph(d, {"sluice": 1, "arrays": {"src": {"path": "src.zarr"}},
                            "nodes": {"g": {"op": "get", "array": "src"},
                                      "p": {"op": "pyramid", "input": "g",
                                            "group": "graph.zarr", "levels": 4,
                                            "factors": list(factors), "smooth": "gaussian",
                                            "create": {"format": 2}}}})
    _, edges, _ = explain(graph, "smooth pyramid")
    # Factors that divide the chunks: each Gaussian chunk reduces on its own.
    even = write_graph(d, {"sluice": 1, "arrays": {"src": {"path": "src.zarr"}},
                           "nodes": {"g": {"op": "get", "array": "src"},
                                     "p": {"op": "pyramid", "input": "g",
                                           "group": "even.zarr", "levels": 2,
                                           "factors": [1, 1, 2, 2], "smooth": "gaussian",
                                           "create": {"format": 2}}}}, "even.json")
    _, even_edges, _ = explain(even, "smooth pyramid, even factors")
    rc2, so, se = run(*RUN, graph)
    expect(rc2 == 0, f"smooth pyramid: the graph file's pyramid exits {rc2}: {so}{se}")
    for name, ok in (("cli.zarr", rc == 0), ("graph.zarr", rc2 == 0)):
        for k in range(4) if ok else []:
            got, _, _ = read_zarr(os.path.join(d, name, str(k)))
            what = compare("gaussian", "uint16", got, want[k])
            expect(not what, f"smooth pyramid {name} level {k}: {what}")
    expect("halo" in edges.get("p.1.get -> p.1.smooth", ""),
           f"smooth pyramid: level 1's Gaussian reads level 0 with a halo: {edges}")
    expect(even_edges.get("p.1.smooth -> p.1.downsample") == "fused",
           f"smooth pyramid: the reduction is fused with the Gaussian: {even_edges}")


def main():
    with scratch_dir("sluice-filter-") as tmp:
        check_every_mode(tmp)
        check_random(tmp)
        check_chain(tmp)
        check_failed_chunk(tmp)
        check_errors(tmp)
        check_resume(tmp)
        check_smooth_pyramid(tmp)
    return finish("check_filter")


if __name__ == "__main__":
    sys.exit(main())
