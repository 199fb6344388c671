#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Check the graph file's `expr` node through `sluice run`: a flat-field
correction of a TCZYX image against YX dark and flat frames, bit-exact with
numpy in float32, and exprs reading exprs (through a cast too); ~30 random
graphs (ranks 1 to 4, many input dtypes and chunk grids per graph,
broadcasting, NaN, inf and -0.0) against numpy and sluice's cast rules,
exact for the arithmetic and within 1 ulp for the transcendental functions;
invalid expressions and inputs refused with exit 2, a JSON pointer (of the
field that is wrong) and a column, creating nothing; `sluice explain` saying
why the broadcast inputs are not fused; a corrupt input chunk failing
exactly the output chunks that read it; and --resume accepted for the same
graph, refused for a changed expression or working type.  Exits 77
(skipped) without numpy and zarr (python3-zarr).

    SL_EXPR_SEED   seed of the random graphs (default 20240611)
    SL_EXPR_CASES  how many random graphs (default 30)
    SL_KEEP_TMP    1: keep the temporary directory and print where it is
"""
import ast
import ctypes
import ctypes.util
import json
import os
import random
import re
import shutil
import sys

from launcher_util import (OUT_CREATE, RUN, expect, expect_refused, finish, leftovers, read_zarr,
                           run, scratch_dir, skip_without, tree, write_graph, write_zarr)

skip_without("numpy", "zarr")
import numpy as np  # noqa: E402

SEED = int(os.environ.get("SL_EXPR_SEED", "20240611"))
N_CASES = int(os.environ.get("SL_EXPR_CASES", "30"))

# ---- numpy's semantics of the expression language ---------------------------------

# numpy's own float64 sin/cos/exp/log (SIMD, SVML on AVX-512) are up to 3 ulp
# from libm here, its float32 exp/log up to 2, so the reference for these is
# libm's double function (correctly rounded in nearly all cases), rounded to
# float32 for a float32 working type; sluice must be within 1 ulp of it.
LIBM = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")


def libm_fn(name, n_args):
    f = getattr(LIBM, name)
    f.restype = ctypes.c_double
    f.argtypes = [ctypes.c_double] * n_args
    u = np.frompyfunc(f, n_args, 1)
    return lambda *xs: u(*[np.asarray(x, np.float64) for x in xs]).astype(np.float64)


LIBM_FNS = {name: libm_fn(name, 1) for name in ("exp", "log", "log1p", "sin", "cos")}
LIBM_FNS["pow"] = libm_fn("pow", 2)


def in_w(w, f):
    """`f` evaluated in double (libm), rounded into working type `w`."""
    return lambda *xs: f(*xs).astype(w)


def truth(x):
    """The language's truth of a working-type value: nonzero, NaN included."""
    return x != 0


def evaluate(text, env, w):
    """`text` (the expression) over `env` (name -> array of working type `w`)
    as numpy computes it in `w`: literals are `w` values, comparisons and
    logical operators give 1 or 0, % and ** are np.mod and np.power."""
    one, zero = w(1), w(0)

    def b2w(c):
        return np.where(c, one, zero)

    binops = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply,
              ast.Div: np.divide, ast.Mod: np.mod,
              ast.Pow: in_w(w, LIBM_FNS["pow"])}
    cmps = {ast.Lt: np.less, ast.LtE: np.less_equal, ast.Gt: np.greater,
            ast.GtE: np.greater_equal, ast.Eq: np.equal, ast.NotEq: np.not_equal}
    funcs = {"abs": np.abs, "sqrt": np.sqrt, "floor": np.floor, "ceil": np.ceil,
             "round": np.rint, "min": np.minimum, "max": np.maximum,
             "clip": lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi),
             "isnan": lambda x: b2w(np.isnan(x)), "isfinite": lambda x: b2w(np.isfinite(x)),
             "where": lambda c, a, b: np.where(truth(c), a, b),
             **{k: in_w(w, f) for k, f in LIBM_FNS.items() if k != "pow"}}

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant):
            return w(node.value)
        if isinstance(node, ast.Name):
            if node.id in ("nan", "inf"):
                return w(float(node.id))
            return env[node.id]
        if isinstance(node, ast.UnaryOp):
            x = ev(node.operand)
            if isinstance(node.op, ast.UAdd):
                return x
            return np.negative(x) if isinstance(node.op, ast.USub) else b2w(~truth(x))
        if isinstance(node, ast.BinOp):
            return np.asarray(binops[type(node.op)](ev(node.left), ev(node.right)), w)
        if isinstance(node, ast.BoolOp):
            vals = [truth(ev(v)) for v in node.values]
            f = np.logical_and if isinstance(node.op, ast.And) else np.logical_or
            out = vals[0]
            for v in vals[1:]:
                out = f(out, v)
            return b2w(out)
        if isinstance(node, ast.Compare):
            assert len(node.ops) == 1, "chained comparisons are not in the language"
            return b2w(cmps[type(node.ops[0])](ev(node.left), ev(node.comparators[0])))
        if isinstance(node, ast.Call):
            return np.asarray(funcs[node.func.id](*[ev(a) for a in node.args]), w)
        raise AssertionError(f"{text}: {ast.dump(node)}")

    with np.errstate(all="ignore"):
        return np.asarray(ev(ast.parse(text, mode="eval")), w)


def sl_cast(x, dtype):
    """sluice's cast rules (ops/README.md) of working-type values into
    `dtype`: integers round half to even then saturate, NaN -> 0; bool is
    nonzero (NaN -> true); floats nearest."""
    dt = np.dtype(dtype)
    with np.errstate(all="ignore"):
        if dt == np.bool_:
            return truth(x)
        if dt.kind in "iu":
            info = np.iinfo(dt)
            y = np.clip(np.rint(x.astype(np.float64)), info.min, info.max)
            return np.where(np.isnan(y), 0, y).astype(dt)
        return x.astype(dt)


def ulp_key(v):
    """A float's position on the line of representable values (+0 == -0)."""
    bits = int(np.asarray(v).view(np.int32 if np.asarray(v).dtype == np.float32 else np.int64))
    mask = (1 << (31 if np.asarray(v).dtype == np.float32 else 63)) - 1
    return -(bits & mask) if bits < 0 else bits


def show(v):
    v = np.asarray(v)
    return float(v).hex() if v.dtype.kind == "f" else repr(v.item())


def mismatches(got, want, approx, zero_sign, inputs):
    """Up to 3 descriptions of elements where `got` is not `want`: bit-exact
    (NaN equal to NaN; with `zero_sign`, -0.0 not equal to +0.0), or within 1
    ulp when `approx`; with the inputs' values there (name -> broadcast array)."""
    if got.dtype.kind == "f":
        bad = ~((got == want) | (np.isnan(got) & np.isnan(want)))
        if zero_sign:
            bad |= (got == 0) & (want == 0) & (np.signbit(got) != np.signbit(want))
    else:
        bad = got != want
    out = []
    for idx in map(tuple, np.argwhere(bad)):
        g, x = got[idx], want[idx]
        if approx and not np.isnan(g) and not np.isnan(x) and \
                abs(ulp_key(g) - ulp_key(x)) <= 1:
            continue
        where = ", ".join(f"{k}={show(a[idx])}" for k, a in inputs.items())
        out.append(f"at {list(idx)}: got {show(g)}, want {show(x)} ({where})")
        if len(out) == 3:
            break
    return out


# ---- 1. the flat-field ----------------------------------------------------------

FF_SHAPE, FF_CHUNKS, YX_CHUNKS = (2, 2, 6, 40, 48), (1, 1, 6, 16, 16), (16, 16)
FF_EXPR = "(raw - dark) / max(flat, 1)"


def flatfield_inputs(seed=7):
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 65536, FF_SHAPE, dtype=np.uint16)
    raw[0, 0, 0, :4, :4] = [0, 1, 65535, 100]
    dark = rng.normal(100, 20, FF_SHAPE[-2:]).astype(np.float32)
    dark[0, :3] = [-0.0, np.inf, 1e-30]
    flat = rng.uniform(0, 2, FF_SHAPE[-2:]).astype(np.float32)
    flat[::7, ::5] = 0          # max(flat, 1) keeps the quotient finite
    flat[3, 3] = np.float32(np.nan)  # and NaN propagates through max
    return raw, dark, flat


def flatfield_doc(expr=FF_EXPR, inputs=None, compute="float32", dtype="float32", **extra):
    ff = {"op": "expr", "inputs": {"raw": "r", "dark": "d", "flat": "f"} if inputs is None
          else inputs, "expr": expr, "dtype": dtype, "compute": compute, **extra}
    for k in [k for k, v in ff.items() if v is None]:
        del ff[k]
    return {"sluice": 1,
            "arrays": {"raw": {"path": "raw.zarr"}, "dark": {"path": "dark.zarr"},
                       "flat": {"path": "flat.zarr"},
                       "out": {"path": "out.zarr", "create": dict(OUT_CREATE)}},
            "nodes": {"r": {"op": "get", "array": "raw"}, "d": {"op": "get", "array": "dark"},
                      "f": {"op": "get", "array": "flat"}, "ff": ff,
                      "w": {"op": "put", "input": "ff", "array": "out"}}}


def flatfield_dir(tmp, name, data, doc=None, dark_shape=None):
    """A folder with raw.zarr, dark.zarr, flat.zarr and graph.json; dark of
    shape `dark_shape` when given, or flat in float16 for "float16"."""
    d = os.path.join(tmp, name)
    os.makedirs(d)
    raw, dark, flat = data
    if dark_shape == "float16":
        flat = flat.astype(np.float16)
    elif dark_shape is not None:
        dark = np.resize(dark, dark_shape)
    write_zarr(os.path.join(d, "raw.zarr"), raw, FF_CHUNKS)
    write_zarr(os.path.join(d, "dark.zarr"), dark, YX_CHUNKS)
    write_zarr(os.path.join(d, "flat.zarr"), flat, YX_CHUNKS)
    return d, write_graph(d, doc if doc is not None else flatfield_doc())


def flatfield_want(data):
    raw, dark, flat = data
    with np.errstate(all="ignore"):
        return (raw.astype(np.float32) - dark) / np.maximum(flat, np.float32(1))


def check_flatfield(tmp, data):
    d, graph = flatfield_dir(tmp, "flatfield", data)
    rc, out, err = run(*RUN, graph)
    expect(rc == 0, f"flat-field: sluice run exits {rc}: {out}{err}")
    if rc != 0:
        return
    got, dtype, _ = read_zarr(os.path.join(d, "out.zarr"))
    want = flatfield_want(data)
    expect(dtype == np.float32 and got.shape == FF_SHAPE,
           f"flat-field: out.zarr is float32 {FF_SHAPE}: {dtype} {got.shape}")
    expect(got.shape == want.shape and np.array_equal(got, want, equal_nan=True),
           "flat-field: (raw - dark) / max(flat, 1) differs from numpy's float32: " +
           "; ".join(mismatches(got, want, False, True, dict(zip(
               ("raw", "dark", "flat"), np.broadcast_arrays(*data))))
                     if got.shape == want.shape else ["shapes differ"]))
    # The default working type is float64, and so the default dtype.
    d64, graph64 = flatfield_dir(tmp, "flatfield64", data,
                                 flatfield_doc(compute=None, dtype=None))
    rc, out, err = run(*RUN, graph64)
    expect(rc == 0, f"flat-field in float64: sluice run exits {rc}: {out}{err}")
    if rc == 0:
        got, dtype, _ = read_zarr(os.path.join(d64, "out.zarr"))
        raw, dark, flat = data
        with np.errstate(all="ignore"):
            want = (raw.astype(np.float64) - dark.astype(np.float64)) / \
                np.maximum(flat.astype(np.float64), 1.0)
        expect(dtype == np.float64 and np.array_equal(got, want, equal_nan=True),
               f"flat-field with the defaults: float64 as numpy computes it ({dtype})")


def check_chain(tmp, data):
    """Exprs reading exprs, directly and through a cast (which sluice may
    fuse into one program): each stage's values as stored, then read."""
    doc = flatfield_doc()
    nodes, arrays = doc["nodes"], doc["arrays"]
    del nodes["w"], arrays["out"]
    nodes.update({
        "c": {"op": "cast", "input": "ff", "dtype": "uint8"},
        "g": {"op": "expr", "inputs": {"x": "c", "y": "d"}, "expr": "x * 3 - y",
              "dtype": "int16"},
        "h": {"op": "expr", "inputs": {"x": "ff"}, "expr": "round(x / 7)", "dtype": "uint8",
              "compute": "float32"},
        "k": {"op": "expr", "inputs": {"x": "h"}, "expr": "x + 0.5", "compute": "float32"},
        "wg": {"op": "put", "input": "g", "array": "out_g"},
        "wk": {"op": "put", "input": "k", "array": "out_k"}})
    for a in ("out_g", "out_k"):
        arrays[a] = {"path": f"{a}.zarr", "create": dict(OUT_CREATE)}
    d, graph = flatfield_dir(tmp, "chain", data, doc)
    rc, out, err = run(*RUN, graph)
    expect(rc == 0, f"chain: sluice run exits {rc}: {out}{err}")
    if rc != 0:
        return
    ff = flatfield_want(data)
    with np.errstate(all="ignore"):
        c = sl_cast(ff, "uint8")
        g = sl_cast(c.astype(np.float64) * 3 - data[1].astype(np.float64), "int16")
        h = sl_cast(np.rint(ff / np.float32(7)), "uint8")
        k = sl_cast(h.astype(np.float32) + np.float32(0.5), "float32")
    for name, want in (("g", g), ("k", k)):
        got, dtype, _ = read_zarr(os.path.join(d, f"out_{name}.zarr"))
        bad = mismatches(got, want, False, True, {}) if got.shape == want.shape else ["shape"]
        expect(dtype == want.dtype and not bad,
               f"chain: {name} ({nodes[name]['expr']}) read back {dtype}, want {want.dtype}: "
               + "; ".join(bad))


# ---- 2. random graphs -----------------------------------------------------------

# (expression over a, b, c; how it is compared): "exact" bit for bit, -0.0
# told from +0.0; "nosign" bit for bit but either zero (min, max and clip
# of -0.0 and +0.0 may return either); "approx" within 1 ulp.
TEMPLATES = [
    ("-a", "exact"), ("abs(a) + 1", "exact"), ("a * 0.1 - 3", "exact"),
    ("floor(a * 0.5)", "exact"), ("ceil(a / 3)", "exact"), ("round(a / 4)", "exact"),
    ("round(a) + 0.5", "exact"), ("isnan(a) + 2 * isfinite(a)", "exact"), ("not a", "exact"),
    ("not (a > 10)", "exact"), ("clip(a, -100, 100.5)", "nosign"), ("max(a, nan)", "nosign"),
    ("max(a, 3) - min(a, 3)", "nosign"), ("where(a > 0, a, 0.25)", "exact"),
    ("a % 7", "exact"), ("(-a) % 3", "exact"), ("a % -2.5", "exact"), ("-inf < a", "exact"),
    ("a == 0", "exact"), ("a ** 2", "approx"), ("abs(a) ** 0.5", "approx"),
    ("sqrt(abs(a))", "approx"), ("sqrt(a)", "approx"), ("exp(a / 64)", "approx"),
    ("log(abs(a))", "approx"), ("log(a)", "approx"), ("log1p(a)", "approx"),
    ("sin(a)", "approx"), ("cos(a) * 4", "approx"),
    ("a + b", "exact"), ("a - b", "exact"), ("a * b", "exact"), ("a / b", "exact"),
    ("a % b", "exact"), ("min(a, b)", "nosign"), ("max(a, b)", "nosign"), ("a < b", "exact"),
    ("a <= b", "exact"), ("a > b", "exact"), ("a >= b", "exact"), ("a == b", "exact"),
    ("a != b", "exact"), ("a and b", "exact"), ("a or b", "exact"), ("(not a) or b", "exact"),
    ("where(a, b, -b)", "exact"), ("where(a < b, a * 2, b / 2)", "exact"),
    ("clip(a - b, -50, 50)", "nosign"), ("(a - b) / max(b, 1)", "exact"),
    ("a * b + a", "exact"), ("round(a) - floor(b)", "exact"),
    ("isnan(a) * 2 - isfinite(b)", "exact"), ("-(a - b) * 2", "exact"),
    ("abs(a - b) ** 0.5", "approx"), ("a ** b", "approx"), ("sqrt(a * a + b * b)", "approx"),
    ("exp(-abs(a - b) / 8)", "approx"),
    ("(a - b) / max(c, 1)", "exact"), ("where(a > b, c, a - b)", "exact"),
    ("clip(a, b, c)", "nosign"), ("a * b - c", "exact"), ("a * b + c", "exact"),
    ("where(isnan(a), b, c)", "exact"), ("(a and b) or (not c)", "exact"),
    ("min(a, b) + max(b, c)", "nosign"), ("(a + b + c) / 3", "exact"),
    ("(a < b) + (b < c) + (a == c)", "exact"), ("where(a >= 0, sqrt(a), b + c)", "approx"),
    # Precedence and associativity, as Python's (ops/expr_parse.c).
    ("-a ** 2", "approx"), ("not a == b", "exact"), ("+a - -b", "exact"),
    ("a - b - c", "exact"), ("a / b / c", "exact"), ("a + b * c", "exact"),
    ("a < b or b < c and not c", "exact"), ("2 ** -a", "approx"),
]
IN_DTYPES = ["uint8", "uint16", "int16", "int32", "float32", "float64", "bool",
             "uint8", "uint16", "int16", "int32", "float32", "float64", "bool",
             "int8", "uint32", "int64", "uint64"]
OUT_EXACT = ["uint8", "int16", "int32", "uint16", "bool", "float32", "float64", None]
OUT_APPROX = ["float32", "float64", None]


def arity(text):
    return len({n.id for n in ast.walk(ast.parse(text, mode="eval"))
                if isinstance(n, ast.Name) and n.id in "abc"})


def random_values(rng, dtype, shape):
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        v = rng.integers(info.min, info.max, n, endpoint=True, dtype=dt)
        small = rng.random(n) < 0.5  # small values too: comparisons, % and ties
        v[small] = rng.integers(max(info.min, -20), min(info.max, 20), small.sum(),
                                endpoint=True, dtype=dt)
        if dt.itemsize == 8:
            # Rounded once into float32 (2^60 + 2^36 + 1 -> 2^60 + 2^37), not
            # through float64 first; 2^53 + 1 and the ends of the range.
            edge = [info.max, info.min, (1 << 60) + (1 << 36) + 1, (1 << 53) + 1,
                    (1 << 24) + 1, info.max - 1]
            pick = rng.random(n) < 0.2
            v[pick] = rng.choice(np.array(edge, dtype=object), pick.sum()).astype(dt)
        return v.reshape(shape)
    v = rng.normal(0, 50, n)
    kind = rng.integers(0, 8, n)
    v[kind == 1] = np.round(v[kind == 1]) + 0.5                       # ties
    v[kind == 2] = np.round(v[kind == 2])                             # integers
    v[kind == 3] = rng.choice([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e30, -1e300, 5e-324,
                               1.0, -1.0, 2.5, 300.0], (kind == 3).sum())
    with np.errstate(all="ignore"):
        return v.astype(dt).reshape(shape)


def random_shapes(rng, n_inputs):
    """The full shape, and each input's: trailing axes of it (a lower rank)
    with some extents 1."""
    rank = int(rng.integers(1, 5))
    # Long rows too: a row longer than a tile register (2 KiB) of the
    # evaluator (ops/expr_internal.h).
    limits = {1: [3000], 2: [30, 700], 3: [16, 16, 16], 4: [9, 9, 9, 9]}[rank]
    full = [int(rng.integers(2, limit + 1)) for limit in limits]
    shapes = []
    for i in range(n_inputs):
        r = rank if i == 0 else int(rng.integers(1, rank + 1))
        s = full[rank - r:]
        s = [1 if (i > 0 and rng.random() < 0.3) else e for e in s]
        shapes.append(tuple(s))
    return shapes


def random_chunks(rng, shape):
    """Chunks of a few per dimension (at most 8, or 4 from rank 3 on)."""
    most = 8 if len(shape) <= 2 else 4
    return tuple(int(rng.integers(-(-e // most), e + 1)) for e in shape)


class Cases:
    """The random graphs: each 1 to 3 inputs and 3 expr nodes."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.pyrng = random.Random(SEED)
        self.rng = np.random.default_rng(SEED)
        self.used = {t: 0 for t, _ in TEMPLATES}
        self.n_checked = 0

    def pick(self, max_arity, exact_arity=None):
        ok = [t for t in TEMPLATES if (arity(t[0]) == exact_arity if exact_arity
                                       else arity(t[0]) <= max_arity)]
        low = min(self.used[t] for t, _ in ok)
        t = self.pyrng.choice([t for t in ok if self.used[t[0]] == low])
        self.used[t[0]] += 1
        return t

    def case(self, k):
        d = os.path.join(self.tmp, f"case{k:02d}")
        os.makedirs(d)
        n_inputs = 1 + k % 3
        shapes = random_shapes(self.rng, n_inputs)
        names = "abc"[:n_inputs]
        data, arrays, nodes = {}, {}, {}
        for name, shape in zip(names, shapes):
            dtype = self.pyrng.choice(IN_DTYPES)
            data[name] = random_values(self.rng, dtype, shape)
            write_zarr(os.path.join(d, f"{name}.zarr"), data[name],
                       random_chunks(self.rng, shape))
            arrays[f"in_{name}"] = {"path": f"{name}.zarr"}
            nodes[f"g{name}"] = {"op": "get", "array": f"in_{name}"}
        exprs = []
        for e in range(3):
            text, how = self.pick(n_inputs, n_inputs if e == 0 else None)
            # The template's names a, b, c read distinct inputs of the graph.
            reads = self.pyrng.sample(names, arity(text))
            compute = self.pyrng.choice(["float32", "float64", None])
            dtype = self.pyrng.choice(OUT_APPROX if how == "approx" else OUT_EXACT)
            node = {"op": "expr", "inputs": {t: f"g{n}" for t, n in zip("abc", reads)},
                    "expr": text}
            if dtype:
                node["dtype"] = dtype
            if compute:
                node["compute"] = compute
            shape = np.broadcast_shapes(*[data[n].shape for n in reads])
            if self.pyrng.random() < 0.3:
                node["chunks"] = list(random_chunks(self.rng, shape))
            nodes[f"e{e}"] = node
            nodes[f"w{e}"] = {"op": "put", "input": f"e{e}", "array": f"out{e}"}
            arrays[f"out{e}"] = {"path": f"out{e}.zarr", "create": dict(OUT_CREATE)}
            exprs.append((text, how, reads, compute or "float64", dtype, shape,
                          node.get("chunks")))
        graph = write_graph(d, {"sluice": 1, "arrays": arrays, "nodes": nodes})
        rc, out, err = run(*RUN, graph)
        desc = f"random case {k} ({graph})"
        expect(rc == 0, f"{desc}: sluice run exits {rc}: {out}{err}")
        if rc != 0:
            return
        for e, x in enumerate(exprs):
            self.check(d, desc, e, *x, data)

    def check(self, d, desc, e, text, how, reads, compute, dtype, shape, chunks, data):
        w = np.dtype(compute).type
        with np.errstate(all="ignore"):
            env = {t: data[n].astype(w) for t, n in zip("abc", reads)}
        want = sl_cast(np.broadcast_to(evaluate(text, env, w), shape), dtype or compute)
        got, got_dtype, stored = read_zarr(os.path.join(d, f"out{e}.zarr"))
        if chunks is not None:
            expect(list(stored) == chunks, f"{desc}: e{e}'s \"chunks\" {chunks}: stored {stored}")
        what = (f"{desc}: e{e} = {text!r} over {dict(zip('abc', reads))} "
                f"({', '.join(str(data[n].dtype) + str(list(data[n].shape)) for n in reads)}), "
                f"compute {compute}, dtype {dtype}")
        self.n_checked += 1
        expect(got_dtype == want.dtype and got.shape == want.shape,
               f"{what}: read back {got_dtype} {got.shape}, want {want.dtype} {want.shape}")
        if got.shape != want.shape:
            return
        inputs = {f"{t}({n})": np.broadcast_to(data[n], shape) for t, n in zip("abc", reads)}
        if how == "approx" and got.dtype == np.float64 and w == np.float32:
            # 1 ulp of the working type: float32 values stored as float64.
            got, want = got.astype(np.float32), want.astype(np.float32)
        bad = mismatches(got, want, how == "approx", how == "exact", inputs)
        expect(not bad, f"{what}: differs from numpy: " + "; ".join(bad))


def check_random(tmp):
    c = Cases(tmp)
    for k in range(N_CASES):
        c.case(k)
    unused = [t for t, n in c.used.items() if n == 0]
    print(f"random graphs: {N_CASES} runs, {c.n_checked} expr nodes checked "
          f"(seed {SEED}); templates not drawn: {unused or 'none'}", flush=True)


# ---- 3. errors ------------------------------------------------------------------


def check_errors(tmp, data):
    three = {"raw": "r", "dark": "d", "flat": "f"}
    nine = {f"i{k}": "r" for k in range(9)}
    cases = [
        ("unknown name", flatfield_doc("(raw - drak) / max(flat, 1)"), None,
         ["EPARSE", "at /nodes/ff/expr", 'column 8: unknown name "drak"']),
        ("syntax error", flatfield_doc("(raw - dark) / * flat"), None,
         ["EPARSE", "at /nodes/ff/expr", "column 16"]),
        ("unclosed parenthesis", flatfield_doc("(raw - dark) / max(flat, 1"), None,
         ["EPARSE", "at /nodes/ff/expr", "column"]),
        ("unknown node id", flatfield_doc(inputs={"raw": "r", "dark": "dd", "flat": "f"}), None,
         ["EINVAL", "at /nodes/ff/inputs/dark", 'unknown node "dd"']),
        ("shapes that do not broadcast", flatfield_doc(), (40, 47),
         ["EINVAL", "at /nodes/ff/inputs", "do not broadcast", "48", "47"]),
        ("unknown compute", flatfield_doc(compute="float16"), None,
         ["EINVAL", "at /nodes/ff/compute", '"float16"']),
        ("inputs missing", flatfield_doc(inputs=None), None,
         ["EINVAL", "at /nodes/ff/inputs", 'missing "inputs"']),
        ("inputs empty", flatfield_doc(inputs={}), None,
         ["EINVAL", "at /nodes/ff/inputs", "1 to 8 names"]),
        ("nine inputs", flatfield_doc(" + ".join(nine), inputs=nine), None,
         ["EINVAL", "at /nodes/ff/inputs", "1 to 8 names"]),
        ("an input not used", flatfield_doc("(raw - dark) / 2", inputs=three), None,
         ["EINVAL", "at /nodes/ff/inputs", 'input "flat" is not used']),
        ("unknown function", flatfield_doc("(raw - dark) / maxx(flat, 1)"), None,
         ["EPARSE", "at /nodes/ff/expr", "column 16", "maxx"]),
        ("chained comparison", flatfield_doc("dark < raw < flat"), None,
         ["EPARSE", "at /nodes/ff/expr", "column 12", "do not chain"]),
        ("chunks of another rank", flatfield_doc(chunks=[16, 16]), None,
         ["EINVAL", "at /nodes/ff/chunks", "expected 5 entries"]),
        # The pointer names the field that is wrong (FORMAT.md, "Errors").
        ("a complex output", flatfield_doc(dtype="complex64"), None,
         ["EUNSUPPORTED", "at /nodes/ff/dtype", "complex64"]),
        ("an input not used, with chunks",
         flatfield_doc("(raw - dark) / 2", inputs=three, chunks=[1, 1, 6, 8, 8]), None,
         ["EINVAL", "at /nodes/ff/inputs", 'input "flat" is not used']),
        ("a float16 input", flatfield_doc(), "float16",
         ["EUNSUPPORTED", "at /nodes/ff/inputs", "float16"]),
    ]
    # flatfield_doc drops a None "inputs": write the missing one by hand.
    del cases[6][1]["nodes"]["ff"]["inputs"]
    for k, (name, doc, dark_shape, words) in enumerate(cases):
        d, graph = flatfield_dir(tmp, f"error{k}", data, doc, dark_shape)
        expect_refused(name, graph, d, ["out.zarr"], words)


# ---- 4. explain -----------------------------------------------------------------


def check_explain(tmp, data):
    d, graph = flatfield_dir(tmp, "explain", data)
    rc, out, err = run("explain", graph)
    expect(rc == 0, f"explain exits {rc}: {out}{err}")
    edge = {m.group(1): m.group(2) for m in
            re.finditer(r"^\s+([rdf]) -> ff: (.*)$", out, re.MULTILINE)}
    expect(edge.get("r") == "fused", f"explain: raw's edge r -> ff is fused: {out}")
    for p in "df":
        expect(edge.get(p, "").startswith("not fused") and "broadcast" in edge.get(p, ""),
               f"explain: {p} -> ff is not fused, for the broadcast: {edge.get(p)!r} in {out}")
    expect(not leftovers(d, ["out.zarr"]), "explain creates nothing")


# ---- 5. a failed input chunk ----------------------------------------------------


def check_corrupt(tmp, data, array, key, failed, what):
    """Corrupt stored chunk `key` of `array`: exactly `failed` (output chunk
    coordinates) fail, naming the chunk; the others hold numpy's values."""
    d, graph = flatfield_dir(tmp, f"corrupt_{array}", data)
    with open(os.path.join(d, f"{array}.zarr", key), "wb") as f:
        f.write(b"not a zstd frame" * 4)
    report = os.path.join(d, "report.json")
    rc, out, err = run(*RUN, "--report", report, graph)
    expect(rc == 1, f"{what}: sluice run exits {rc}, not 1: {out}{err}")
    if not os.path.exists(report):
        expect(False, f"{what}: no report written: {err}")
        return
    with open(report) as f:
        rep = json.load(f)
    put = rep["puts"][0] if rep.get("puts") else {}
    fails = put.get("failures", [])
    chunk_text = "chunk (" + ", ".join(key.split(".")) + ")"
    node = {"raw": "r", "dark": "d", "flat": "f"}[array]
    expect(sorted(f["chunk"] for f in fails) == sorted(failed),
           f"{what}: the report lists output chunks {[f['chunk'] for f in fails]}, "
           f"want exactly {sorted(failed)}")
    expect(all(f["code"] in ("ECORRUPT", "EUPSTREAM") and f["message"] is not None and
               f'get "{node}" {chunk_text}' in f["message"] for f in fails),
           f"{what}: each failure names get \"{node}\" {chunk_text}: {fails}")
    expect(put.get("ok") == put.get("chunks", 0) - len(failed),
           f"{what}: the other chunks are ok: {put}")
    if not os.path.exists(os.path.join(d, "out.zarr")):
        expect(False, f"{what}: no out.zarr after a run with failed chunks")
        return
    got, _, _ = read_zarr(os.path.join(d, "out.zarr"))
    want = flatfield_want(data)
    good = np.ones(FF_SHAPE, bool)
    for c in failed:
        good[tuple(slice(i * n, (i + 1) * n) for i, n in zip(c, FF_CHUNKS))] = False
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    expect(bool(same[good].all()), f"{what}: the chunks that did not fail hold numpy's values")


def check_failed_chunks(tmp, data):
    check_corrupt(tmp, data, "raw", "1.0.0.1.2", [[1, 0, 0, 1, 2]], "a corrupt raw chunk")
    check_corrupt(tmp, data, "dark", "1.2",
                  [[t, c, 0, 1, 2] for t in range(2) for c in range(2)],
                  "a corrupt dark chunk (read by every t and c)")


# ---- 6. resume ------------------------------------------------------------------


def check_resume(tmp, data):
    """A journaled run that failed in one unit (a corrupt raw chunk, then
    repaired) resumes to numpy's output, writing only that unit; a
    completed one resumes to the same bytes; a changed expression is refused."""
    d, graph = flatfield_dir(tmp, "resume", data)
    chunk = os.path.join(d, "raw.zarr", "0.1.0.2.1")
    with open(chunk, "rb") as f:
        good = f.read()
    journal, report = os.path.join(d, "j.journal"), os.path.join(d, "report.json")
    with open(chunk, "wb") as f:
        f.write(b"not a zstd frame" * 4)
    rc, out, err = run(*RUN, "--journal", journal, graph)
    expect(rc == 1, f"resume: the run reading a corrupt chunk exits {rc}, not 1: {err}")
    with open(chunk, "wb") as f:
        f.write(good)
    rc, out, err = run(*RUN, "--journal", journal, "--resume", "--report", report, graph)
    expect(rc == 0, f"resume: --resume after the repair exits {rc}: {out}{err}")
    if rc == 0:
        with open(report) as f:
            s = json.load(f)["summary"]
        expect(s["objects_written"] == 1 and s["resumed"] == s["chunks"] - 1,
               f"resume: only the failed unit is written again: {s}")
        got, _, _ = read_zarr(os.path.join(d, "out.zarr"))
        expect(np.array_equal(got, flatfield_want(data), equal_nan=True),
               "resume: the resumed output is numpy's")
    # An uninterrupted journaled run, then --resume of the same graph.
    d2, graph2 = flatfield_dir(tmp, "resume_done", data)
    journal2 = os.path.join(d2, "j.journal")
    rc, out, err = run(*RUN, "--journal", journal2, graph2)
    expect(rc == 0, f"resume: a journaled run exits {rc}: {err}")
    before = tree(os.path.join(d2, "out.zarr")) if rc == 0 else None
    rc, out, err = run(*RUN, "--journal", journal2, "--resume", graph2)
    expect(rc == 0, f"resume: --resume of a completed run is accepted: {rc} {out}{err}")
    expect(before is not None and tree(os.path.join(d2, "out.zarr")) == before,
           "resume: --resume of a completed run leaves the output byte-identical")
    # The same failed state, and the expression changed: refused, kept.
    shutil.rmtree(os.path.join(d, "out.zarr"), ignore_errors=True)
    with open(chunk, "wb") as f:
        f.write(b"not a zstd frame" * 4)
    rc, out, err = run(*RUN, "--journal", journal, graph)
    with open(chunk, "wb") as f:
        f.write(good)
    expect(rc == 1, f"resume: the second failed run exits {rc}, not 1: {err}")
    kept = tree(os.path.join(d, "out.zarr")) if os.path.exists(os.path.join(d, "out.zarr")) \
        else None
    # The output's metadata is the same each time: only the graph's
    # fingerprint tells these apart.
    for what, doc in (("a changed expression", flatfield_doc("(raw - dark) / max(flat, 2)")),
                      ("a changed working type", flatfield_doc(compute="float64"))):
        write_graph(d, doc)
        rc, out, err = run(*RUN, "--journal", journal, "--resume", graph)
        said = [ln for ln in err.splitlines() if "refused" in ln]
        expect(rc == 2 and said and "graph changed" in said[0],
               f"resume: {what} is refused (exit 2, 'graph changed'): {rc} {err}")
        expect(kept is None or tree(os.path.join(d, "out.zarr")) == kept,
               f"resume: the refused resume ({what}) keeps the earlier output")


def main():
    with scratch_dir("sluice-expr-") as tmp:
        data = flatfield_inputs()
        check_flatfield(tmp, data)
        check_chain(tmp, data)
        check_random(tmp)
        check_errors(tmp, data)
        check_explain(tmp, data)
        check_failed_chunks(tmp, data)
        check_resume(tmp, data)
    return finish("check_expr")


if __name__ == "__main__":
    sys.exit(main())
