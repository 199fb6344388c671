#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Check the graph file's layout views through `sluice run`: squeeze,
expand_dims, transpose, stack and concat on small arrays of many dtypes,
bit-exact with numpy, with the stored chunk shapes of their outputs; ~40
random chains of views, expr, select, rechunk, cast, clip, threshold and
downsample over inputs of ranks 1 to 5 with per-input chunk grids, every
output against numpy (values, shape, dtype and chunk shape); `sluice
explain` fusing the edges of a stack or concat whose inputs' chunks match
the result's, and saying why it does not otherwise; invalid views refused
with exit 2, the message and the JSON pointer of the field at fault,
creating nothing; a corrupt input chunk under a stack failing exactly the
output chunks that read it; and each view built just as the graph's node
array grows.  sluice runs with MALLOC_PERTURB_ (as under meson test), so
that memory read after it is freed is garbage.  Exits 77 (skipped) without
numpy and zarr (python3-zarr).

Chunk shapes, as observed and checked: an axis a view keeps keeps its
input's chunk boundaries; the new axes of expand_dims and of stack have
chunks of 1 (one chunk per stacked input); stack takes its other
boundaries from its first input, concat from its first input outside the
axis and each input's own along it (shifted, so cut where the inputs
meet).  An array created from a node's grid gets the largest chunk extent
of each dimension when the extents vary (FORMAT.md, "create").

    SL_LAYOUT_SEED   seed of the random chains (default 20240612)
    SL_LAYOUT_CASES  how many random chains (default 40)
    SL_KEEP_TMP      1: keep the temporary directory and print where it is
    MALLOC_PERTURB_  glibc's fill byte of allocated and freed memory (default 165)
"""
import json
import os
import random
import re
import sys

from launcher_util import (RUN, Graph, expect, expect_refused, explain, finish, leftovers,
                           read_zarr, run, scratch_dir, skip_without)

skip_without("numpy", "zarr")
import numpy as np  # noqa: E402

SEED = int(os.environ.get("SL_LAYOUT_SEED", "20240612"))
N_CASES = int(os.environ.get("SL_LAYOUT_CASES", "40"))
os.environ.setdefault("MALLOC_PERTURB_", "165")  # read by the sluice processes started

# ---- values and how they compare ------------------------------------------------


def random_values(rng, dtype, shape, specials=True):
    """Values of `dtype`: distinct enough that a misplaced element shows;
    floats with ties, -0.0 and infinities (NaN too with `specials`)."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    if dt == np.bool_:
        return (rng.random(n) < 0.5).reshape(shape)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = max(info.min, -1000), min(info.max, 1000)
        return rng.integers(lo, hi, n, endpoint=True, dtype=dt).reshape(shape)
    v = np.round(rng.normal(0, 100, n), 1)
    kind = rng.integers(0, 8, n)
    v[kind == 1] = np.round(v[kind == 1]) + 0.5  # ties for the casts
    extra = [-0.0, np.inf, -np.inf, 300.5, -129.5, 65535.5] + ([np.nan] if specials else [])
    v[kind == 2] = rng.choice(extra, (kind == 2).sum())
    with np.errstate(over="ignore"):  # 65535.5 is inf in float16
        return v.astype(dt).reshape(shape)


def same_bits(got, want):
    return got.dtype == want.dtype and got.shape == want.shape and \
        np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes()


def first_difference(got, want):
    """Where `got` and `want` (one shape) first differ as values (NaN equal
    to NaN, -0.0 to 0.0), or None."""
    if want.dtype.kind == "f":
        bad = ~((got == want) | (np.isnan(got) & np.isnan(want)))
    else:
        bad = got != want
    idx = np.argwhere(bad)
    if len(idx) == 0:
        return None
    i = tuple(idx[0])
    return f"{len(idx)} elements differ, first at {list(i)}: got {got[i]!r}, want {want[i]!r}"


# ---- the grid model: chunk boundaries per dimension -----------------------------


def grid_regular(shape, chunks):
    return [list(range(0, n, c)) + [n] for n, c in zip(shape, chunks)]


def grid_chunks(grid):
    """The chunk shape an array created from this grid gets: the largest
    extent per dimension."""
    return tuple(max(b[i + 1] - b[i] for i in range(len(b) - 1)) for b in grid)


def grid_select(grid, region):
    out = []
    for b, (lo, hi) in zip(grid, region):
        out.append([0] + [x - lo for x in b if lo < x < hi] + [hi - lo])
    return out


def sl_cast(x, dtype):
    """sluice's cast rules (ops/README.md) of float64 values into `dtype`:
    integers round half to even then saturate, NaN -> 0; floats nearest."""
    dt = np.dtype(dtype)
    with np.errstate(all="ignore"):
        if dt.kind in "iu":
            info = np.iinfo(dt)
            y = np.rint(x.astype(np.float64))
            # float(info.max) of a 64-bit type is 2^63 or 2^64: past the range.
            top = y >= float(info.max)
            y = np.where(np.isnan(y) | top, 0, np.maximum(y, info.min)).astype(dt)
            y[top] = info.max
            return y
        return x.astype(dt)


# ---- 1. each view on small arrays of many dtypes --------------------------------

BASIC_DTYPES = ["bool", "uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64",
                "float16", "float32", "float64"]
A_SHAPE, A_CHUNKS = (3, 1, 4, 5), (2, 1, 3, 2)
C_SHAPE, C_CHUNKS = (3, 1, 4, 7), (2, 1, 3, 3)


def basic_cases(a, b, c):
    """(node, numpy's value, the stored chunk shape expected, what)."""
    return [
        ({"op": "squeeze", "input": "ga", "axes": [1]}, np.squeeze(a, 1), (2, 3, 2),
         "squeeze [1]: the other axes keep their chunks"),
        ({"op": "squeeze", "input": "ga"}, np.squeeze(a), (2, 3, 2),
         "squeeze without axes drops every extent-1 axis"),
        ({"op": "expand_dims", "input": "ga", "axes": [0, 3]}, np.expand_dims(a, (0, 3)),
         (1, 2, 1, 1, 3, 2), "expand_dims [0, 3]: new axes of chunk 1"),
        ({"op": "expand_dims", "input": "ga", "axes": [4]}, np.expand_dims(a, 4),
         (2, 1, 3, 2, 1), "expand_dims [4]: a new last axis"),
        ({"op": "transpose", "input": "ga", "axes": [3, 0, 2, 1]}, np.transpose(a, (3, 0, 2, 1)),
         (2, 2, 3, 1), "transpose [3, 0, 2, 1]: chunks permuted with the axes"),
        ({"op": "stack", "inputs": ["ga", "gb"], "axis": 2}, np.stack([a, b], 2),
         (2, 1, 1, 3, 2), "stack axis 2: the new axis has one chunk per input"),
        ({"op": "stack", "inputs": ["ga", "gb", "ga"], "axis": 4}, np.stack([a, b, a], 4),
         (2, 1, 3, 2, 1), "stack of three (one twice) along a new last axis"),
        ({"op": "stack", "inputs": ["gb"], "axis": 0}, np.stack([b], 0),
         (1, 2, 1, 3, 2), "stack of one input"),
        # a's boundaries along 3 are 0 2 4 5, c's (shifted by 5) 5 8 11 12.
        ({"op": "concat", "inputs": ["ga", "gc"], "axis": 3}, np.concatenate([a, c], 3),
         (2, 1, 3, 3), "concat axis 3 of extents 5 and 7: each input's chunks, the largest 3"),
        ({"op": "concat", "inputs": ["gb", "ga", "gb"], "axis": 0}, np.concatenate([b, a, b], 0),
         (2, 1, 3, 2), "concat axis 0 of three: boundaries 0 2 3 5 6 8 9"),
    ]


def check_basic(tmp):
    rng = np.random.default_rng(SEED)
    n_checked = 0
    for dtype in BASIC_DTYPES:
        g = Graph(os.path.join(tmp, f"basic_{dtype}"))
        a = random_values(rng, dtype, A_SHAPE)
        b = random_values(rng, dtype, A_SHAPE)
        c = random_values(rng, dtype, C_SHAPE)
        g.get("a", a, A_CHUNKS)
        g.get("b", b, A_CHUNKS)
        g.get("c", c, C_CHUNKS)
        cases = basic_cases(a, b, c)
        paths = [g.put(g.add(f"v{k}", node)) for k, (node, _, _, _) in enumerate(cases)]
        graph = g.write()
        rc, out, err = run(*RUN, graph)
        expect(rc == 0, f"basic {dtype}: sluice run exits {rc}: {out}{err}")
        if rc != 0:
            continue
        for path, (node, want, chunks, what) in zip(paths, cases):
            got, got_dtype, got_chunks = read_zarr(path)
            n_checked += 1
            desc = f"basic {dtype}: {what} ({json.dumps(node)})"
            expect(got_dtype == want.dtype and got.shape == want.shape,
                   f"{desc}: read back {got_dtype} {got.shape}, want {want.dtype} {want.shape}")
            expect(got.shape != want.shape or same_bits(got, want),
                   f"{desc}: not numpy's bits: {first_difference(got, want)}")
            expect(got_chunks == chunks, f"{desc}: stored chunks {got_chunks}, want {chunks}")
    print(f"each view: {len(BASIC_DTYPES)} dtypes, {n_checked} outputs checked", flush=True)


# ---- 2. random chains -----------------------------------------------------------

CAST_DTYPES = ["uint8", "int16", "uint16", "int32", "int64", "float32", "float64"]
IN_DTYPES = ["uint8", "int16", "uint16", "int32", "int64", "float32", "float64"]
OPS = ["squeeze", "expand_dims", "transpose", "stack", "concat", "expr", "select", "rechunk",
       "cast", "clip", "threshold", "downsample"]
TEMPLATES = ["stack_grids", "concat_extents", "transpose_put", "downsample_squeeze",
             "stack_expr"]
MAX_RANK_OUT = 6


class Val:
    """A node of a random chain: its id, numpy's value and the grid model."""

    def __init__(self, nid, ref, grid, how):
        self.nid, self.ref, self.grid, self.how = nid, ref, grid, how


class Chain:
    """The random chains: inputs of ranks 1 to 5, each with its own chunk
    grid, and 3 to 7 random steps over them."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.py = random.Random(SEED)
        self.rng = np.random.default_rng(SEED)
        self.used = {op: 0 for op in OPS}
        self.n_outputs = 0

    # -- inputs --

    def random_shape(self):
        rank = self.py.randint(1, 5)
        limit = {1: 40, 2: 12, 3: 7, 4: 5, 5: 4}[rank]
        return tuple(1 if self.py.random() < 0.2 else self.py.randint(2, limit)
                     for _ in range(rank))

    def random_chunks(self, shape):
        """At most 3 chunks per dimension, often not dividing the extent."""
        return tuple(self.py.randint(-(-e // 3), e) for e in shape)

    def fresh(self, shape, dtype):
        """A new stored input of `shape` and `dtype`, with its own grid."""
        name = f"i{self.n_inputs}"
        self.n_inputs += 1
        data = random_values(self.rng, dtype, shape, specials=False)
        chunks = self.random_chunks(shape)
        nid = self.g.get(name, data, chunks)
        return Val(nid, data, grid_regular(shape, chunks), f"{name}{list(shape)}/{list(chunks)}")

    def partner(self, v, shape=None):
        """Another operand for `v` of `shape` (default `v`'s): mostly a fresh
        input with another grid, sometimes `v` itself."""
        shape = v.ref.shape if shape is None else shape
        if shape == v.ref.shape and self.py.random() < 0.25:
            return v
        return self.fresh(shape, v.ref.dtype)

    def node(self, op, v, node, ref, grid):
        nid = self.g.add(f"n{len(self.g.nodes)}", node)
        self.used[op] += 1
        return Val(nid, ref, grid, f"{op}({v.how})")

    # -- the steps: each returns a new Val, or None when it does not apply --

    def step_squeeze(self, v, axes=None):
        ones = [d for d, e in enumerate(v.ref.shape) if e == 1]
        if not ones or len(ones) == v.ref.ndim:
            return None
        node = {"op": "squeeze", "input": v.nid}
        if axes is None and self.py.random() < 0.7:
            axes = self.py.sample(ones, self.py.randint(1, len(ones)))
        if axes is not None:
            node["axes"] = axes
        drop = axes if axes is not None else ones
        ref = np.squeeze(v.ref, tuple(drop))
        grid = [b for d, b in enumerate(v.grid) if d not in drop]
        return self.node("squeeze", v, node, ref, grid)

    def step_expand_dims(self, v):
        if v.ref.ndim >= MAX_RANK_OUT:
            return None
        k = self.py.randint(1, min(2, MAX_RANK_OUT - v.ref.ndim))
        rank = v.ref.ndim + k
        axes = self.py.sample(range(rank), k)  # any order, as numpy's
        ref = np.expand_dims(v.ref, tuple(axes))
        rest = iter(v.grid)
        grid = [[0, 1] if o in axes else next(rest) for o in range(rank)]
        return self.node("expand_dims", v, {"op": "expand_dims", "input": v.nid, "axes": axes},
                         ref, grid)

    def step_transpose(self, v):
        perm = list(range(v.ref.ndim))
        while perm == sorted(perm) and v.ref.ndim > 1:  # not the identity
            self.py.shuffle(perm)
        return self.node("transpose", v, {"op": "transpose", "input": v.nid, "axes": perm},
                         np.transpose(v.ref, perm), [v.grid[p] for p in perm])

    def step_stack(self, v, others=None):
        if v.ref.ndim >= MAX_RANK_OUT:
            return None
        others = others or [self.partner(v) for _ in range(self.py.randint(1, 2))]
        ins = [v] + others
        axis = self.py.randint(0, v.ref.ndim)
        grid = v.grid[:axis] + [list(range(len(ins) + 1))] + v.grid[axis:]
        val = self.node("stack", v, {"op": "stack", "inputs": [x.nid for x in ins],
                                     "axis": axis}, np.stack([x.ref for x in ins], axis), grid)
        val.how = f"stack[{axis}]({', '.join(x.how for x in ins)})"
        return val

    def step_concat(self, v):
        axis = self.py.randint(0, v.ref.ndim - 1)
        ins = [v]
        for _ in range(self.py.randint(1, 2)):
            shape = list(v.ref.shape)
            shape[axis] = self.py.randint(1, 6)
            ins.append(self.partner(v, tuple(shape)))
        bounds, base = [], 0
        for x in ins:
            bounds += [base + b for b in x.grid[axis][:-1]]
            base += x.ref.shape[axis]
        grid = v.grid[:axis] + [bounds + [base]] + v.grid[axis + 1:]
        val = self.node("concat", v, {"op": "concat", "inputs": [x.nid for x in ins],
                                      "axis": axis},
                        np.concatenate([x.ref for x in ins], axis), grid)
        val.how = f"concat[{axis}]({', '.join(x.how for x in ins)})"
        return val

    def step_expr(self, v, b=None):
        dtype = self.py.choice(CAST_DTYPES)
        if b is None and self.py.random() < 0.3:
            ref = sl_cast(v.ref.astype(np.float64) - 3, dtype)
            return self.node("expr", v, {"op": "expr", "inputs": {"a": v.nid}, "expr": "a - 3",
                                         "dtype": dtype}, ref, v.grid)
        if b is None:
            # b of v's shape, or broadcast: trailing axes with some extents 1.
            shape = v.ref.shape[self.py.randint(0, v.ref.ndim - 1):]
            shape = tuple(1 if self.py.random() < 0.3 else e for e in shape)
            b = self.partner(v, shape)
        with np.errstate(all="ignore"):
            ref = sl_cast(v.ref.astype(np.float64) * 2 + b.ref.astype(np.float64), dtype)
        val = self.node("expr", v, {"op": "expr", "inputs": {"a": v.nid, "b": b.nid},
                                    "expr": "a * 2 + b", "dtype": dtype}, ref, v.grid)
        val.how = f"expr({v.how}, {b.how})"
        return val

    def step_select(self, v):
        region, json_region = [], []
        for e in v.ref.shape:
            if self.py.random() < 0.3:
                region.append((0, e))
                json_region.append(None)
                continue
            lo = self.py.randint(0, e - 1)
            hi = self.py.randint(lo + 1, e)
            region.append((lo, hi))
            json_region.append([lo, hi if self.py.random() < 0.8 or hi < e else None])
        ref = v.ref[tuple(slice(lo, hi) for lo, hi in region)]
        return self.node("select", v, {"op": "select", "input": v.nid, "region": json_region},
                         ref, grid_select(v.grid, region))

    def step_rechunk(self, v):
        chunks = self.random_chunks(v.ref.shape)
        return self.node("rechunk", v, {"op": "rechunk", "input": v.nid, "chunks": list(chunks)},
                         v.ref, grid_regular(v.ref.shape, chunks))

    def step_cast(self, v):
        dtype = self.py.choice(CAST_DTYPES)
        return self.node("cast", v, {"op": "cast", "input": v.nid, "dtype": dtype},
                         sl_cast(v.ref, dtype), v.grid)

    def step_clip(self, v):
        lo = self.py.randint(0 if v.ref.dtype.kind == "u" else -50, 20)
        hi = lo + self.py.randint(0, 100)
        ref = np.clip(v.ref, v.ref.dtype.type(lo), v.ref.dtype.type(hi))
        return self.node("clip", v, {"op": "clip", "input": v.nid, "min": lo, "max": hi},
                         ref.astype(v.ref.dtype), v.grid)

    def step_threshold(self, v):
        t = self.py.randint(-20, 60)
        ref = np.where(v.ref > t, v.ref.dtype.type(7), v.ref.dtype.type(0))
        return self.node("threshold", v, {"op": "threshold", "input": v.nid, "threshold": t,
                                          "value": 7}, ref, v.grid)

    def step_downsample(self, v, factors=None):
        if factors is None:
            factors = [self.py.randint(1, 3) for _ in v.ref.shape]
        method = self.py.choice(["stride", "max", "min"])
        out = [-(-e // f) for e, f in zip(v.ref.shape, factors)]
        chunks = [self.py.randint(-(-e // 3), e) for e in out]
        ref = v.ref
        for d, f in enumerate(factors):
            if method == "stride":
                ref = ref[(slice(None),) * d + (slice(None, None, f),)]
            else:
                ufunc = np.maximum if method == "max" else np.minimum
                ref = ufunc.reduceat(ref, np.arange(0, ref.shape[d], f), axis=d)
        node = {"op": "downsample", "input": v.nid, "factors": factors, "method": method,
                "chunks": chunks}
        return self.node("downsample", v, node, ref, grid_regular(out, chunks))

    # -- the templates: the cases that must be there --

    def template(self, name, v):
        """The named start of a chain over `v`; the Vals to put."""
        if name == "stack_grids":
            # Inputs of one shape, each its own grid (v's is the first).
            others = [self.fresh(v.ref.shape, v.ref.dtype) for _ in range(self.py.randint(1, 3))]
            return [self.step_stack(v, others)]
        if name == "concat_extents":
            return [self.step_concat(v)]
        if name == "transpose_put":
            if v.ref.ndim == 1:
                v = self.step_expand_dims(v)
            return [self.step_transpose(v)]
        if name == "downsample_squeeze":
            big = [d for d, e in enumerate(v.ref.shape) if e > 1]
            if not big:
                return [self.step_downsample(v)]
            flat = self.py.sample(big, self.py.randint(1, min(len(big), v.ref.ndim - 1) or 1))
            factors = [e + self.py.randint(0, 2) if d in flat else self.py.randint(1, 2)
                       for d, e in enumerate(v.ref.shape)]
            down = self.step_downsample(v, factors)
            ones = [d for d, e in enumerate(down.ref.shape) if e == 1]
            sq = self.step_squeeze(down, self.py.sample(ones, len(ones)) if ones else None)
            return [sq or down]
        assert name == "stack_expr"
        s = self.step_stack(v, [self.fresh(v.ref.shape, v.ref.dtype)])
        if s is None:
            return [self.step_expr(v)]
        axis = self.g.nodes[s.nid]["axis"]
        # b: an input of v's shape with extent 1 on the new axis (or
        # without it, broadcast from the left when the new axis is 0).
        c = self.fresh(v.ref.shape, v.ref.dtype)
        b = c if axis == 0 and self.py.random() < 0.5 else self.step_expand_dims_at(c, axis)
        return [s, self.step_expr(s, b)]

    def step_expand_dims_at(self, v, axis):
        grid = v.grid[:axis] + [[0, 1]] + v.grid[axis:]
        return self.node("expand_dims", v, {"op": "expand_dims", "input": v.nid, "axes": [axis]},
                         np.expand_dims(v.ref, axis), grid)

    # -- one chain --

    def case(self, k):
        self.g = Graph(os.path.join(self.tmp, f"chain{k:02d}"))
        self.n_inputs = 0
        pool = [self.fresh(self.random_shape(), self.py.choice(IN_DTYPES))
                for _ in range(self.py.randint(1, 2))]
        to_put = []
        if k < 3 * len(TEMPLATES):
            made = self.template(TEMPLATES[k % len(TEMPLATES)], pool[0])
            pool += made
            to_put += made
        for _ in range(self.py.randint(3, 7) - len(to_put)):
            v = self.py.choice(pool[-3:])
            ops = OPS[:]
            self.py.shuffle(ops)
            for op in ops:
                got = getattr(self, f"step_{op}")(v)
                if got is not None:
                    pool.append(got)
                    break
        consumed = set()
        for node in self.g.nodes.values():
            ins = node.get("inputs", [node.get("input")])
            consumed |= set(ins.values() if isinstance(ins, dict) else ins)
        for v in pool:
            # Every node nobody reads, and some intermediate ones.
            if v.nid not in consumed or (v.nid.startswith("n") and self.py.random() < 0.3):
                to_put.append(v)
        seen, outs = set(), []
        for v in to_put:
            if v.nid not in seen:
                seen.add(v.nid)
                outs.append((self.g.put(v.nid), v))
        graph = self.g.write()
        rc, out, err = run(*RUN, graph)
        desc = f"chain {k} ({graph})"
        expect(rc == 0, f"{desc}: sluice run exits {rc}: {out}{err}")
        if rc != 0:
            return
        for path, v in outs:
            self.check(desc, path, v)

    def check(self, desc, path, v):
        got, got_dtype, got_chunks = read_zarr(path)
        want = v.ref
        what = f"{desc}: {os.path.basename(path)} = {v.how}"
        self.n_outputs += 1
        expect(got_dtype == want.dtype and got.shape == want.shape,
               f"{what}: read back {got_dtype} {got.shape}, want {want.dtype} {want.shape}")
        if got.shape == want.shape:
            bad = first_difference(got, want)
            expect(bad is None, f"{what}: differs from numpy: {bad}")
        want_chunks = grid_chunks(v.grid)
        expect(got_chunks == want_chunks,
               f"{what}: stored chunks {got_chunks}, want {want_chunks}")


def check_random(tmp):
    c = Chain(tmp)
    for k in range(N_CASES):
        c.case(k)
    unused = [op for op, n in c.used.items() if n == 0]
    print(f"random chains: {N_CASES} runs, {c.n_outputs} outputs checked (seed {SEED}); "
          f"steps {c.used}; not drawn: {unused or 'none'}", flush=True)


# ---- 3. explain -----------------------------------------------------------------


def check_explain(tmp):
    rng = np.random.default_rng(SEED + 3)
    # Equal grids under a stack, and concatenated inputs whose extents along
    # the axis are whole chunks: the result's chunks are the inputs'.
    g = Graph(os.path.join(tmp, "explain_fused"))
    g.get("a", random_values(rng, "int16", (6, 8, 5)), (2, 4, 5))
    g.get("b", random_values(rng, "int16", (6, 8, 5)), (2, 4, 5))
    g.get("c", random_values(rng, "float32", (6, 8, 5)), (3, 4, 5))
    g.get("d", random_values(rng, "float32", (6, 8, 5)), (3, 4, 5))
    g.get("e", random_values(rng, "float32", (9, 8, 5)), (3, 4, 5))
    g.put(g.add("s", {"op": "stack", "inputs": ["ga", "gb"], "axis": 1}))
    g.put(g.add("cc", {"op": "concat", "inputs": ["gc", "gd", "ge"], "axis": 0}))
    graph = g.write()
    _, edges, out = explain(graph, "explain fused")
    want = ["ga -> s", "gb -> s", "s -> w0", "gc -> cc", "gd -> cc", "ge -> cc", "cc -> w1"]
    expect(sorted(edges) == sorted(want), f"explain lists the edges {want}: {out}")
    not_fused = {e: r for e, r in edges.items() if r != "fused"}
    expect(not not_fused, f"explain: a stack of equal grids and a concat of equal chunks fuse "
                          f"every edge: {not_fused}")
    expect(not leftovers(g.d, ["o0.zarr", "o1.zarr"]), "explain creates nothing")

    # A stack whose second input is chunked otherwise along a kept axis, and
    # a concat of extents that are not whole chunks (the put's rechunk
    # then reads several of its chunks).
    g = Graph(os.path.join(tmp, "explain_not_fused"))
    g.get("a", random_values(rng, "int16", (6, 8, 5)), (2, 4, 5))
    g.get("b", random_values(rng, "int16", (6, 8, 5)), (3, 4, 5))
    g.get("c", random_values(rng, "uint8", (5, 4)), (2, 4))
    g.get("d", random_values(rng, "uint8", (5, 4)), (2, 4))
    g.put(g.add("s", {"op": "stack", "inputs": ["ga", "gb"], "axis": 0}))
    g.put(g.add("cc", {"op": "concat", "inputs": ["gc", "gd"], "axis": 0}))
    graph = g.write()
    _, edges, out = explain(graph, "explain not fused")
    several = "not fused (an output chunk needs several producer chunks"
    expect(edges.get("ga -> s") == "fused", f"explain: the first input's edge fuses: {out}")
    reason = edges.get("gb -> s", "")
    expect(reason.startswith(several) and '"gb"' in reason and "dimension 0" in reason,
           f"explain: gb -> s is not fused, b's chunks straddling the stack's, in dimension "
           f"0: {reason!r}")
    reason = edges.get("cc -> w1.rechunk", "")
    expect(reason.startswith(several) and '"cc"' in reason,
           f"explain: the concat cut at 2 4 5 7 9 10 is rechunked for the put, reading "
           f"several of its chunks: {reason!r} in {out}")
    expect(re.search(r"^\s+cc\s+view\s+concat .* chunks \[irregular, 4\]", out, re.MULTILINE),
           f"explain: the concat's chunks along the axis are irregular: {out}")
    expect(not leftovers(g.d, ["o0.zarr", "o1.zarr"]), "explain creates nothing")


# ---- 4. errors ------------------------------------------------------------------

ERR_SHAPES = {"a": ((4, 1, 5), "int16"), "b": ((4, 1, 5), "int16"), "c": ((3, 1, 5), "int16"),
              "f": ((4, 1, 5), "float32"), "e": ((4, 2, 5), "int16")}


def error_cases():
    """(what, the view node, the words its error must hold)."""
    return [
        ("squeeze of an extent 4", {"op": "squeeze", "input": "ga", "axes": [0]},
         ["EINVAL", "at /nodes/v/axes:", "cannot squeeze axis 0", "extent is 4, not 1"]),
        ("squeeze of an axis past the rank", {"op": "squeeze", "input": "ga", "axes": [3]},
         ["EINVAL", "at /nodes/v/axes:", "axis 3", "out of range", "rank 3"]),
        ("expand_dims with a repeated axis",
         {"op": "expand_dims", "input": "ga", "axes": [1, 1]},
         ["EINVAL", "at /nodes/v/axes:", "new axis 1 is given twice"]),
        ("expand_dims with an axis out of range",
         {"op": "expand_dims", "input": "ga", "axes": [0, 5]},
         ["EINVAL", "at /nodes/v/axes:", "new axis 5 is out of range", "rank 5"]),
        ("expand_dims past the largest rank",
         {"op": "expand_dims", "input": "ga", "axes": [40]},
         ["EINVAL", "at /nodes/v/axes/0:", "40"]),
        ("transpose with a repeat", {"op": "transpose", "input": "ga", "axes": [0, 2, 0]},
         ["EINVAL", "at /nodes/v/axes:", "no permutation of 0..2", "entry 2 is a repeat"]),
        ("transpose with an axis out of range",
         {"op": "transpose", "input": "ga", "axes": [0, 3, 1]},
         ["EINVAL", "at /nodes/v/axes:", "no permutation of 0..2", "out of range"]),
        ("transpose of the wrong length", {"op": "transpose", "input": "ga", "axes": [1, 0]},
         ["EINVAL", "at /nodes/v/axes:", "expected 3 axes", "rank 3", "found 2"]),
        ("transpose without axes", {"op": "transpose", "input": "ga"},
         ["EINVAL", "at /nodes/v/axes:", 'missing "axes"']),
        ("stack of different shapes", {"op": "stack", "inputs": ["ga", "gc"], "axis": 0},
         ["EINVAL", "at /nodes/v/inputs:", '"ga" (shape [4, 1, 5])', '"gc" (shape [3, 1, 5])']),
        ("stack of different dtypes", {"op": "stack", "inputs": ["ga", "gb", "gf"], "axis": 1},
         ["EINVAL", "at /nodes/v/inputs:", '"ga" (int16)', '"gf" (float32)', "dtype"]),
        ("stack with an axis out of range", {"op": "stack", "inputs": ["ga", "gb"], "axis": 4},
         ["EINVAL", "at /nodes/v/axis:", "stack axis 4 is out of range", "rank 3"]),
        ("concat with an axis out of range",
         {"op": "concat", "inputs": ["ga", "gb"], "axis": 3},
         ["EINVAL", "at /nodes/v/axis:", "concat axis 3 is out of range", "rank 3"]),
        # The shapes are at fault, as for a stack: the pointer names "inputs".
        ("concat of shapes that differ outside the axis",
         {"op": "concat", "inputs": ["ga", "ge"], "axis": 0},
         ["EINVAL", "at /nodes/v/inputs:", '"ga" (shape [4, 1, 5])', '"ge" (shape [4, 2, 5])',
          "outside the axis"]),
        ("concat of different dtypes", {"op": "concat", "inputs": ["ga", "gf"], "axis": 0},
         ["EINVAL", "at /nodes/v/inputs:", '"ga" (int16)', '"gf" (float32)']),
        ('"inputs" a string', {"op": "concat", "inputs": "ga", "axis": 0},
         ["EINVAL", "at /nodes/v/inputs:", "a list of 1 to 8 node ids", "found a string"]),
        ('"inputs" an object', {"op": "stack", "inputs": {"x": "ga"}, "axis": 0},
         ["EINVAL", "at /nodes/v/inputs:", "a list of 1 to 8 node ids", "found an object"]),
        ('"inputs" empty', {"op": "stack", "inputs": [], "axis": 0},
         ["EINVAL", "at /nodes/v/inputs:", "a list of 1 to 8 node ids"]),
        ('"inputs" naming no node', {"op": "stack", "inputs": ["ga", "gz"], "axis": 0},
         ["EINVAL", "at /nodes/v/inputs/1:", 'unknown node "gz"']),
        ('stack without "axis"', {"op": "stack", "inputs": ["ga", "gb"]},
         ["EINVAL", "at /nodes/v/axis:", 'missing "axis"']),
        ('concat without "axis"', {"op": "concat", "inputs": ["ga", "gb"]},
         ["EINVAL", "at /nodes/v/axis:", 'missing "axis"']),
    ]


def check_errors(tmp):
    rng = np.random.default_rng(SEED + 4)
    for k, (what, node, words) in enumerate(error_cases()):
        g = Graph(os.path.join(tmp, f"error{k:02d}"))
        text = json.dumps(node)
        for name, (shape, dtype) in ERR_SHAPES.items():
            if f'"g{name}"' in text:
                g.get(name, random_values(rng, dtype, shape), shape)
        g.put(g.add("v", node))
        expect_refused(what, g.write(), g.d, ["o0.zarr"], words, line_with="/nodes/v/")


# ---- 5. a corrupt chunk under a stack -------------------------------------------


def overlaps(b, c, lo, hi):
    """Whether chunk `c` of boundaries `b` meets [lo, hi)."""
    return b[c] < hi and lo < b[c + 1]


def check_corrupt(tmp, b_chunks, key, what):
    """stack([a, b], axis 1) of a (6, 8, 5) grid (2, 4, 5) and b of
    `b_chunks`; b's stored chunk `key` garbage: exactly the output chunks
    whose region reads it fail, naming it, the others hold numpy's values."""
    rng = np.random.default_rng(SEED + 5)
    g = Graph(os.path.join(tmp, f"corrupt_{'_'.join(map(str, b_chunks))}"))
    shape, a_chunks = (6, 8, 5), (2, 4, 5)
    a = random_values(rng, "float32", shape)
    b = random_values(rng, "float32", shape)
    g.get("a", a, a_chunks)
    g.get("b", b, b_chunks)
    out = g.put(g.add("s", {"op": "stack", "inputs": ["ga", "gb"], "axis": 1}))
    graph = g.write()
    with open(os.path.join(g.d, "b.zarr", key), "wb") as f:
        f.write(b"not a zstd frame" * 4)
    report = os.path.join(g.d, "report.json")
    rc, so, se = run(*RUN, "--report", report, graph)
    expect(rc == 1, f"{what}: sluice run exits {rc}, not 1: {so}{se}")
    # The stack's grid: a's boundaries, the new axis 1 chunk per input.
    grid = grid_regular(shape, a_chunks)
    grid = grid[:1] + [[0, 1, 2]] + grid[1:]
    bad_key = [int(x) for x in key.split(".")]
    bad_lo = [c * n for c, n in zip(bad_key, b_chunks)]
    bad_hi = [min((c + 1) * n, e) for c, n, e in zip(bad_key, b_chunks, shape)]
    n_chunks = [len(bd) - 1 for bd in grid]
    failed = [list(c) for c in np.ndindex(*n_chunks)
              if c[1] == 1 and all(overlaps(grid[o], c[o], bad_lo[d], bad_hi[d])
                                   for d, o in enumerate((0, 2, 3)))]
    if not os.path.exists(report):
        expect(False, f"{what}: no report written: {se}")
        return
    with open(report) as f:
        rep = json.load(f)
    put = rep["puts"][0] if rep.get("puts") else {}
    fails = put.get("failures", [])
    expect(sorted(f["chunk"] for f in fails) == sorted(failed),
           f"{what}: the report lists output chunks {sorted(f['chunk'] for f in fails)}, "
           f"want exactly {sorted(failed)}")
    chunk_text = 'get "gb" chunk (' + ", ".join(map(str, bad_key)) + ")"
    expect(all(f["code"] in ("ECORRUPT", "EUPSTREAM") and chunk_text in (f["message"] or "")
               for f in fails), f"{what}: each failure names {chunk_text}: {fails}")
    expect(put.get("ok") == int(np.prod(n_chunks)) - len(failed) and
           put.get("chunks") == int(np.prod(n_chunks)),
           f"{what}: the other {int(np.prod(n_chunks)) - len(failed)} chunks are ok: {put}")
    if not os.path.exists(out):
        expect(False, f"{what}: no output after a run with failed chunks")
        return
    got, _, _ = read_zarr(out)
    want = np.stack([a, b], 1)
    good = np.ones(want.shape, bool)
    for c in failed:
        good[tuple(slice(grid[o][i], grid[o][i + 1]) for o, i in enumerate(c))] = False
    expect(same_bits(got[good], want[good]),
           f"{what}: the chunks that did not fail hold numpy's values")


def check_failed_chunks(tmp):
    check_corrupt(tmp, (2, 4, 5), "1.1.0", "a corrupt chunk of b, grids equal")
    check_corrupt(tmp, (3, 3, 2), "1.1.2",
                  "a corrupt chunk of b, chunked across the stack's boundaries")


# ---- 6. a view added as the graph's node array grows ------------------------------


def check_growth(tmp):
    """Each view built as the 9th, 17th ... node of its graph (when the
    graph's node array moves to a larger one), after 4 to 11 casts: numpy's
    values, under MALLOC_PERTURB_ (so that a pointer into the array freed
    reads garbage)."""
    rng = np.random.default_rng(SEED + 6)
    x = random_values(rng, "int16", (3, 1, 4), specials=False)
    views = {
        "squeeze": ({"op": "squeeze", "input": "c", "axes": [1]}, np.squeeze(x, 1)),
        "expand_dims": ({"op": "expand_dims", "input": "c", "axes": [0]}, x[None]),
        "transpose": ({"op": "transpose", "input": "c", "axes": [2, 0, 1]},
                      np.transpose(x, (2, 0, 1))),
        "stack": ({"op": "stack", "inputs": ["c", "gx"], "axis": 1}, np.stack([x, x], 1)),
        "concat": ({"op": "concat", "inputs": ["gx", "c"], "axis": 2},
                   np.concatenate([x, x], 2)),
    }
    bad = []
    for op, (node, want) in views.items():
        for n_casts in range(4, 12):
            g = Graph(os.path.join(tmp, f"growth_{op}_{n_casts}"))
            prev = g.get("x", x, (2, 1, 3))
            for k in range(n_casts):
                prev = g.add(f"c{k}", {"op": "cast", "input": prev,
                                       "dtype": "int16" if (n_casts - k) % 2 else "int32"})
            text = json.dumps(node).replace('"c"', f'"{prev}"')
            out = g.put(g.add("v", json.loads(text)))
            graph = g.write()
            rc, so, se = run(*RUN, graph, env=dict(os.environ, MALLOC_PERTURB_="165"))
            if rc != 0:
                said = (so + se).strip().splitlines()
                bad.append(f"{op} after {n_casts} casts: sluice run exits {rc}"
                           f"{': ' + said[0] if said else ''}")
                continue
            got, _, _ = read_zarr(out)
            if not same_bits(got, want.astype(got.dtype)) or got.shape != want.shape:
                bad.append(f"{op} after {n_casts} casts: {got.shape}, not numpy's {want.shape} "
                           f"values ({graph})")
    expect(not bad, f"views built as the graph's node array grows: {len(bad)} of "
                    f"{len(views) * 8} runs wrong:\n  " + "\n  ".join(bad))


def main():
    with scratch_dir("sluice-layout-") as tmp:
        check_basic(tmp)
        check_random(tmp)
        check_explain(tmp)
        check_errors(tmp)
        check_failed_chunks(tmp)
        check_growth(tmp)
    return finish("check_layout")


if __name__ == "__main__":
    sys.exit(main())
