#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Composed elementwise chains through `sluice run`, against numpy.

Chains of expr, scale, clip, threshold and cast nodes over stored arrays
full of NaN, infinities, signed zeros, halves and values past every range:
`sluice explain` must say which ones became one program (and why the others
did not), and every result must equal numpy's evaluation of the ops'
documented semantics (ops/README.md) byte for byte.  SL_BENCH=N times a
flat-field -> clip -> cast chain on an N x 1024 x 1024 uint16 input instead.
"""
import json
import os
import re
import shutil
import sys
import tempfile
import time

from launcher_util import expect, finish, run, skip_without

skip_without("numpy", "zarr", "numcodecs")
import numpy as np  # noqa: E402
import zarr  # noqa: E402

SHAPE = (3, 37, 53)
CHUNKS = (1, 16, 32)


def write_zarr(path, data, chunks):
    z = zarr.open_array(path, mode="w", shape=data.shape, chunks=chunks, dtype=data.dtype,
                        compressor=None)
    z[...] = data


def tricky(rng, dtype):
    """Values of `dtype` through the cast rules from hard float64 cases."""
    special = np.array([0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 255.5, 256, -129, 127.5, 32767.5,
                        65535.5, 1e10, -1e10, 4294967295.5, -2147483648.5, 1e300, np.nan,
                        np.inf, -np.inf, 0.1, 3.5e38])
    v = np.where(rng.random(SHAPE) < 0.3, rng.choice(special, SHAPE),
                 np.round(rng.uniform(-70000, 70000, SHAPE) * 8) / 8)
    return cast(v, np.dtype(dtype))


def cast(x, dt):
    """sluice's cast rules from float64 `x` (ops/README.md)."""
    x = np.asarray(x, np.float64)
    if dt == np.bool_:
        return x != 0
    if dt.kind in "iu":
        info = np.iinfo(dt)
        with np.errstate(invalid="ignore"):
            r = np.rint(x)
            r = np.where(np.isnan(r), 0, np.clip(r, info.min, info.max))
            return r.astype(dt)
    with np.errstate(over="ignore"):
        return x.astype(dt)


def ref_op(node, x):
    """numpy's form of one node over its input array `x`."""
    dt = np.dtype(node.get("dtype", str(x.dtype)))
    xf = x.astype(np.float64)
    op = node["op"]
    with np.errstate(all="ignore"):
        if op == "expr":
            return cast(eval(node["expr"], {"np": np}, {"x": xf}), dt)
        if op == "scale":
            return cast(xf * node.get("scale", 1.0) + node.get("offset", 0.0), dt)
        if op == "clip":
            lo, hi = node.get("min", -np.inf), node.get("max", np.inf)
            if x.dtype.kind in "biu":
                lo, hi = np.ceil(lo), np.floor(hi)
            return cast(np.where(xf < lo, lo, np.where(xf > hi, hi, xf)), dt)
        if op == "threshold":
            v = cast(np.array([node.get("value", 1.0)]), dt)[0]
            return np.where(xf > node["threshold"], v, np.zeros((), dt)).astype(dt)
        if op == "cast":
            return cast(xf, dt) if x.dtype != dt else x.copy()
    raise ValueError(op)


# Chains: the input dtype, the nodes, and whether they all compose.
CHAINS = [
    ("uint16", [{"op": "expr", "expr": "x * 0.5 - 10", "dtype": "float32"},
                {"op": "scale", "scale": 2, "offset": -0.5, "dtype": "float32"},
                {"op": "clip", "min": 0, "max": 1000, "dtype": "uint16"}], True),
    ("float32", [{"op": "expr", "expr": "x / 7", "dtype": "float64"},
                 {"op": "cast", "dtype": "int16"}], True),
    ("int16", [{"op": "cast", "dtype": "float32"},
               {"op": "scale", "scale": 0.001, "offset": 2.5, "dtype": "float32"},
               {"op": "threshold", "threshold": 2.5, "value": 255, "dtype": "uint8"}], True),
    ("int32", [{"op": "clip", "min": -0.5, "max": 300.5, "dtype": "float32"},
               {"op": "threshold", "threshold": -0.0, "value": -7.5, "dtype": "float64"}], True),
    ("float64", [{"op": "clip", "min": -0.0, "max": 0.0},
                 {"op": "expr", "expr": "x * 1", "dtype": "float32"}], True),
    ("uint8", [{"op": "scale", "scale": -1, "offset": 300, "dtype": "int16"},
               {"op": "clip", "min": 0, "max": 255, "dtype": "uint8"},
               {"op": "cast", "dtype": "bool"}], True),
    ("int64", [{"op": "clip", "min": -5, "max": 5},
               {"op": "cast", "dtype": "float64"}], False),
]


def chain_doc(nodes):
    doc = {"sluice": 1,
           "arrays": {"in": {"path": "in.zarr"},
                      "out": {"path": "out.zarr", "create": {"format": 2}}},
           "nodes": {"r": {"op": "get", "array": "in"}}}
    prev = "r"
    for i, n in enumerate(nodes):
        n = dict(n)
        if n["op"] == "expr":
            n["inputs"] = {"x": prev}
        else:
            n["input"] = prev
        doc["nodes"][f"n{i}"] = n
        prev = f"n{i}"
    doc["nodes"]["w"] = {"op": "put", "input": prev, "array": "out"}
    return doc


def check_chain(tmp, k, in_dtype, nodes, composes):
    d = os.path.join(tmp, f"chain{k}")
    os.makedirs(d)
    x = tricky(np.random.default_rng(k), in_dtype)
    write_zarr(os.path.join(d, "in.zarr"), x, CHUNKS)
    graph = os.path.join(d, "graph.json")
    with open(graph, "w") as f:
        json.dump(chain_doc(nodes), f)
    what = f"chain {k} ({in_dtype} -> {' -> '.join(n['op'] for n in nodes)})"
    rc, out, err = run("explain", graph)
    expect(rc == 0, f"{what}: explain exits {rc}: {err}")
    members = " + ".join(f"n{i}" for i in range(len(nodes)))
    one = re.search(rf"^  {re.escape(members)}: one program: (.+)$", out, re.MULTILINE)
    expect(bool(one) == composes, f"{what}: explain shows one program {composes}: {out}")
    if not composes:
        expect("not composed: clip: int64 input not exact in float64" in out,
               f"{what}: explain says why not: {out}")
    rc, out, err = run("run", "--no-progress", graph)
    expect(rc == 0, f"{what}: run exits {rc}: {out}{err}")
    if rc != 0:
        return
    got = zarr.open_array(os.path.join(d, "out.zarr"), mode="r")[...]
    want = x
    for n in nodes:
        want = ref_op(n, want)
    same = got.dtype == want.dtype and got.tobytes() == want.tobytes()
    if not same and got.dtype == want.dtype:
        bad = [i for i in range(got.size) if got.flat[i].tobytes() != want.flat[i].tobytes()][:3]
        detail = [(x.flat[i], got.flat[i], want.flat[i]) for i in bad]
    else:
        detail = (got.dtype, want.dtype)
    expect(same, f"{what}: differs from numpy (input, got, want): {detail}")


def bench(n):
    """Seconds of `sluice run` for raw -> ff -> clip -> cast on n x 1024 x 1024 uint16."""
    tmp = tempfile.mkdtemp(prefix="sluice-compose-bench-")
    try:
        x = np.random.default_rng(1).integers(0, 65535, (n, 1024, 1024), dtype=np.uint16)
        write_zarr(os.path.join(tmp, "in.zarr"), x, (1, 256, 1024))
        doc = chain_doc([{"op": "expr", "expr": "(x - 100) * 1.25", "dtype": "float32"},
                         {"op": "clip", "min": 0, "max": 4095},
                         {"op": "cast", "dtype": "uint16"}])
        with open(os.path.join(tmp, "graph.json"), "w") as f:
            json.dump(doc, f)
        best = None
        for _ in range(5):
            shutil.rmtree(os.path.join(tmp, "out.zarr"), ignore_errors=True)
            t0 = time.perf_counter()
            rc, out, err = run("run", "--no-progress", os.path.join(tmp, "graph.json"))
            dt = time.perf_counter() - t0
            expect(rc == 0, f"bench: run exits {rc}: {err}")
            best = dt if best is None else min(best, dt)
        print(f"bench: {n} x 1024 x 1024 uint16, ff -> clip -> cast: best of 5 {best:.3f} s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    if os.environ.get("SL_BENCH"):
        bench(int(os.environ["SL_BENCH"]))
        return finish("check_compose bench")
    tmp = tempfile.mkdtemp(prefix="sluice-compose-")
    try:
        for k, (in_dtype, nodes, composes) in enumerate(CHAINS):
            check_chain(tmp, k, in_dtype, nodes, composes)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return finish("check_compose")


if __name__ == "__main__":
    sys.exit(main())
