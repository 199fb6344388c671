#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Check the graph file's `reduce` and `stats` nodes through `sluice run`.

  1. ~40 random graphs of 3 reduce nodes each (inputs of rank 1 to 5 and
     every dtype, floats with NaN, inf, -0.0 and 1e300; random chunkings,
     many chunks along the reduced axes with split_every 2 or 3 so that the
     tree has several combine levels, or one chunk so that it is direct;
     random axes or "all", keepdims, every method, explicit dtypes, ddof 1,
     "chunks"), against numpy (np.sum ... np.nanmax on the same axes) and
     sluice's cast rules: exact for integer results, min/max (by value:
     the sign of a zero may differ, ops/README.md), any/all and
     count_nonzero; float sums, means and moments within 1e-12 relative or
     numpy's own pairwise-summation error bound.  Dtype, shape (0-d for
     "all") and stored chunks are checked, and `sluice explain` lists the
     direct step, or "<id>.partial" and exactly the "<id>.combine<k>"
     levels the fan-in gives.
  2. stats per channel of uint16 (exact percentiles, the default histogram
     range, 256 bins) and float32 (a range; percentiles within the reported
     rank_error) against np.nanmin ... np.histogram, np.nanpercentile; the
     lines on stdout; the report validating against docs/report.schema.json.
  3. A flat-field -> MIP -> stats chain against numpy; explain fusing the
     MIP with the expr and the read, and a MIP with z in 2 chunks a tree.
  4. A corrupt raw chunk: exactly the MIP chunks reading it fail, naming
     it, the others hold numpy's values; the stats node reports an error
     naming a chunk and no sets; exit 1.
  5. A sum along 64 chunks of z under --memory 16M: numpy's result, and
     the peak RSS (/usr/bin/time) under 16 MiB above a trivial run's.
  6. --resume of a journaled reduce graph accepted (byte-identical), and of
     a failed one repaired (numpy's); a changed method refused.
  7. Invalid reduce and stats nodes refused with exit 2, the JSON pointer
     and the message, creating nothing.

sluice runs with MALLOC_PERTURB_ (as check_layout.py does).  Exits 77
(skipped) without numpy and zarr (python3-zarr).

    SL_REDUCE_SEED   seed of the random graphs (default 20240613)
    SL_REDUCE_CASES  how many random graphs (default 40)
    SL_KEEP_TMP      1: keep the temporary directory and print where it is
    MALLOC_PERTURB_  glibc's fill byte of allocated and freed memory (default 165)
"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import warnings

from launcher_util import (OUT_CREATE, RUN, SLUICE, SOURCE, Graph, expect, expect_refused, explain,
                           finish, leftovers, read_zarr, run, scratch_dir, skip_without, tree,
                           write_graph, write_zarr)

skip_without("numpy", "zarr")
import numpy as np  # noqa: E402

# numpy's reductions and sluice's cast rules, shared with tests/ops/check_reduce_numpy.py.
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ops"))
from numpy_reference import (DTYPES, EPS, INEXACT, METHODS, cast_rules, close,  # noqa: E402
                             default_dtype, error_bound, reference, same)

SEED = int(os.environ.get("SL_REDUCE_SEED", "20240613"))
N_CASES = int(os.environ.get("SL_REDUCE_CASES", "40"))
os.environ.setdefault("MALLOC_PERTURB_", "165")  # read by the sluice processes started
SCHEMA = os.path.join(SOURCE, "docs", "report.schema.json")

# ---- reports -------------------------------------------------------------------


def load_report(path, what):
    """The report at `path`, checked against docs/report.schema.json; None
    (and a failure) when there is none."""
    if not os.path.exists(path):
        expect(False, f"{what}: no report written")
        return None
    with open(path) as f:
        rep = json.load(f)
    try:
        import jsonschema
    except ImportError:
        print("report schema checks skipped: python3-jsonschema is not installed")
        return rep
    with open(SCHEMA) as f:
        schema = json.load(f)
    problems = [f"{list(e.path)}: {e.message}"
                for e in jsonschema.Draft202012Validator(schema).iter_errors(rep)]
    expect(not problems, f"{what}: the report validates against docs/report.schema.json: "
                         f"{problems[:3]}")
    return rep


# ---- numpy's reductions and sluice's cast rules ---------------------------------------


def reduce_ok(got, want, method, x, axes, out_dtype):
    """Which elements of `got` (out_dtype, keepdims shape) agree with
    numpy's `want` (natural dtype)."""
    od = np.dtype(out_dtype)
    if not (method in INEXACT and want.dtype.kind == "f"):
        return same(got, cast_rules(want, od))
    bound = error_bound(method, x, axes, want)
    if od.kind == "f":
        # float32: the double result rounded once more (half an ulp).
        rel = 1e-12 if od == np.float64 else 1e-12 + 2.0 ** -24
        return same(got, cast_rules(want, od)) | close(got, want, bound, method, rel)
    # Integer and bool results: the cast of a value within the tolerance
    # (a tie or a zero may round either way from there).  The cast to an
    # integer is monotone: anything between the casts of the two ends.
    with np.errstate(all="ignore"):
        t = (np.sqrt(bound) if method == "std" else bound) + 1e-12 * np.abs(want) + 1e-300
        t = np.where(np.isfinite(t), t, 0)
        lo, hi = cast_rules(want - t, od), cast_rules(want + t, od)
    if od == np.bool_:
        return same(got, cast_rules(want, od)) | same(got, lo) | same(got, hi)
    return same(got, cast_rules(want, od)) | ((lo <= got) & (got <= hi))


def values(rng, dtype, shape, for_prod):
    """Random values of `dtype` with the awkward ones mixed in (as
    tests/ops/check_reduce_numpy.py draws them); float products kept in
    range with `for_prod`."""
    n = int(np.prod(shape, dtype=np.int64))
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return (rng.random(n) < rng.choice([0.1, 0.5, 0.95])).reshape(shape)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        v = rng.integers(max(info.min, -50), min(info.max, 50), n, endpoint=True).astype(dt)
        special = np.array([x for x in (0, 1, -1, 2, 255, 2 ** 31, 2 ** 53 + 1, info.max,
                                        info.min) if info.min <= x <= info.max], dtype=dt)
        pick = rng.random(n) < 0.2
        v[pick] = rng.choice(special, int(pick.sum()))
        big = rng.random(n) < 0.1
        v[big] = rng.integers(info.min, info.max, int(big.sum()), endpoint=True, dtype=dt)
        if rng.random() < 0.3:
            v[rng.random(n) < 0.5] = 0
        return v.reshape(shape)
    if for_prod:
        v = rng.uniform(0.5, 2.0, n) * rng.choice([-1.0, 1.0], n)
        special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0])
        pick = rng.random(n) < (0.02 if rng.random() < 0.5 else 0.0)
    else:
        v = rng.normal(0, 40, n) + (rng.choice([0.0, 1e6]) if rng.random() < 0.2 else 0.0)
        special = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 0.5, -2.5, 1e30, -1e-30, 3.0e38,
                            1e300, 2.0 ** 60, 1.0])
        pick = rng.random(n) < rng.choice([0.0, 0.02, 0.05, 0.3])
    v = np.where(pick, rng.choice(special, n), v)
    with np.errstate(all="ignore"):
        return v.astype(dt).reshape(shape)


# ---- 1. random reduce graphs ----------------------------------------------------------


def fan_in(n_reduced, split_every):
    """Partials merged per reduced axis (graph_reduce.c, as dask)."""
    s = 8 if split_every is None else split_every
    return max(2, int(math.floor(s ** (1.0 / n_reduced) + 1e-9)))


def combine_levels(n_chunks, axes, split_every):
    """How many "<id>.combine<k>" levels the tree has."""
    s = fan_in(len(axes), split_every)
    extent = [n_chunks[a] for a in axes]
    levels = 0
    while any(e > s for e in extent):
        extent = [-(-e // s) for e in extent]
        levels += 1
    return levels


def draw_shape(rng):
    """Rank 1 to 5, a long axis now and then, at most ~8000 elements."""
    rank = int(rng.integers(1, 6))
    shape = [int(rng.integers(1, 9 if rank <= 3 else 6)) for _ in range(rank)]
    if rng.random() < 0.45:
        shape[int(rng.integers(rank))] = int(rng.integers(40, 400))
    while np.prod(shape) > 8000:
        shape[int(np.argmax(shape))] //= 2
    return tuple(max(e, 1) for e in shape)


def draw_chunks(rng, shape):
    """Per axis: whole, fine (many chunks) or anything in between."""
    out = []
    for e in shape:
        r = rng.random()
        if r < 0.35:
            out.append(e)
        elif r < 0.7:
            out.append(int(rng.integers(1, max(1, e // 8) + 1)))
        else:
            out.append(int(rng.integers(1, e + 1)))
    return tuple(out)


class Cases:
    """The random graphs: one input, 3 reduce nodes each with its put."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.rng = np.random.default_rng(SEED)
        self.methods = []
        self.n_checked = 0
        self.kinds = {"direct": 0, "tree": 0}
        self.most_levels = 0
        self.used = {m: 0 for m in METHODS}
        self.used_dtypes = {d: 0 for d in DTYPES}

    def next_method(self):
        if not self.methods:
            self.methods = list(self.rng.permutation(METHODS))
        return str(self.methods.pop())

    def draw_node(self, method, shape, chunks):
        """(node fields, reduced axes, keepdims, out dtype or None, ddof)."""
        rank, rng = len(shape), self.rng
        node = {"op": "reduce", "input": "gx", "method": method}
        whole = [a for a in range(rank) if chunks[a] >= shape[a]]
        r = rng.random()
        if r < 0.25:
            axes = tuple(range(rank))
            if rng.random() < 0.5:
                node["axes"] = "all"
        else:
            pool = whole if r < 0.45 and whole else list(range(rank))
            k = int(rng.integers(1, len(pool) + 1))
            axes = tuple(sorted(int(a) for a in rng.choice(pool, k, replace=False)))
            node["axes"] = [int(a) for a in rng.permutation(axes)]
        keepdims = bool(rng.random() < 0.4)
        if keepdims or rng.random() < 0.2:
            node["keepdims"] = keepdims
        dtype = str(rng.choice(DTYPES)) if rng.random() < 0.3 else None
        if dtype:
            node["dtype"] = dtype
        ddof = 0
        if method in ("std", "var") and rng.random() < 0.5:
            ddof = 1
            node["ddof"] = 1
        r = rng.random()
        if r < 0.6:
            node["split_every"] = int(rng.choice([2, 2, 3, 3, 4, 5]))
        elif r < 0.7:
            node["split_every"] = 8
        out_shape = [1 if a in axes else shape[a] for a in range(rank)
                     if keepdims or a not in axes]
        if out_shape and rng.random() < 0.25:
            node["chunks"] = [int(rng.integers(1, e + 1)) for e in out_shape]
        return node, axes, keepdims, dtype, ddof

    def case(self, k):
        g = Graph(os.path.join(self.tmp, f"case{k:02d}"))
        dtype = DTYPES[k % len(DTYPES)] if k < 2 * len(DTYPES) else str(self.rng.choice(DTYPES))
        self.used_dtypes[dtype] += 1
        shape = draw_shape(self.rng)
        chunks = draw_chunks(self.rng, shape)
        methods = [self.next_method() for _ in range(3)]
        x = values(self.rng, dtype, shape, "prod" in methods)
        g.get("x", x, chunks)
        n_chunks = [-(-e // c) for e, c in zip(shape, chunks)]
        todo = []
        for j, method in enumerate(methods):
            node, axes, keepdims, out_dtype, ddof = self.draw_node(method, shape, chunks)
            g.add(f"m{j}", node)
            todo.append((f"m{j}", node, axes, keepdims, out_dtype, ddof, g.put(f"m{j}")))
        graph = g.write()
        desc = f"random case {k} ({graph}: {dtype} {list(shape)} chunks {list(chunks)})"
        nodes, _, text = explain(graph, desc)  # before the run: explain refuses outputs that exist
        rc, out, err = run(*RUN, graph)
        expect(rc == 0, f"{desc}: sluice run exits {rc}: {out}{err}")
        for nid, node, axes, keepdims, out_dtype, ddof, path in todo:
            self.check_explain(desc, nid, node, axes, n_chunks, nodes, text)
            if rc == 0:
                self.check(desc, nid, node, x, axes, keepdims, out_dtype, ddof, chunks, path)

    def check_explain(self, desc, nid, node, axes, n_chunks, nodes, text):
        method = node["method"]
        what = f"{desc}: explain of {nid} = {json.dumps(node)}"
        if all(n_chunks[a] <= 1 for a in axes):
            self.kinds["direct"] += 1
            expect(nodes.get(nid, ("", ""))[1] == f"reduce {method}" and
                   f"{nid}.partial" not in nodes,
                   f"{what}: every reduced axis in one chunk, so one direct step: {text}")
            return
        self.kinds["tree"] += 1
        levels = combine_levels(n_chunks, axes, node.get("split_every"))
        self.most_levels = max(self.most_levels, levels)
        want = [f"{nid}.partial"] + [f"{nid}.combine{i}" for i in range(1, levels + 1)]
        have = sorted(n for n in nodes if n.startswith(f"{nid}."))
        expect(sorted(want) == have,
               f"{what}: the tree lists {want} (input grid {n_chunks}), found {have}")
        expect(nodes.get(f"{nid}.partial", ("", ""))[1] == f"partial {method}" and
               nodes.get(nid, ("", ""))[1] == f"finish {method}",
               f"{what}: the steps are partial {method} ... finish {method}: {text}")

    def check(self, desc, nid, node, x, axes, keepdims, out_dtype, ddof, chunks, path):
        method = node["method"]
        od = np.dtype(out_dtype) if out_dtype else default_dtype(method, x.dtype)
        kshape = tuple(1 if a in axes else e for a, e in enumerate(x.shape))
        oshape = kshape if keepdims else tuple(e for a, e in enumerate(x.shape) if a not in axes)
        what = f"{desc}: {nid} = {json.dumps(node)}"
        self.n_checked += 1
        self.used[method] += 1
        if not os.path.exists(path):
            expect(False, f"{what}: no output written")
            return
        got, got_dtype, got_chunks = read_zarr(path)
        expect(got_dtype == od and got.shape == oshape,
               f"{what}: read back {got_dtype} {list(got.shape)}, want {od} {list(oshape)}")
        if "chunks" in node:
            want_chunks = tuple(node["chunks"])
        else:
            want_chunks = tuple(1 if a in axes else chunks[a] for a in range(x.ndim)
                                if keepdims or a not in axes)
        expect(got_chunks == want_chunks,
               f"{what}: stored chunks {list(got_chunks)}, want {list(want_chunks)}")
        if got.shape != oshape or got_dtype != od:
            return
        want = reference(method, x, axes, ddof)
        ok = reduce_ok(got.reshape(kshape), want, method, x, axes, od)
        if not ok.all():
            idx = tuple(int(i) for i in np.argwhere(~ok)[0])
            expect(False, f"{what}: {int((~ok).sum())} of {ok.size} elements differ from numpy, "
                          f"first at {list(idx)} (keepdims): got {got.reshape(kshape)[idx]!r}, "
                          f"want {want[idx]!r} ({want.dtype}) cast to {od}")


def check_random(tmp):
    c = Cases(tmp)
    for k in range(N_CASES):
        c.case(k)
    unused = [m for m, n in c.used.items() if n == 0] + \
        [d for d, n in c.used_dtypes.items() if n == 0]
    print(f"random graphs: {N_CASES} runs, {c.n_checked} reduce nodes checked (seed {SEED}): "
          f"{c.kinds['direct']} direct, {c.kinds['tree']} trees (up to {c.most_levels} combine "
          f"levels); methods or dtypes not drawn: {unused or 'none'}", flush=True)
    if N_CASES >= 20:
        expect(not unused, f"random graphs: every method and dtype drawn: {unused} were not")
        expect(c.kinds["direct"] >= 5 and c.kinds["tree"] >= 5 and c.most_levels >= 3,
               f"random graphs: direct steps and trees of several levels drawn: {c.kinds}, "
               f"{c.most_levels} levels at most")


# ---- 2. stats -------------------------------------------------------------------------

STATS_LINE = re.compile(
    r"^stats (\S+)(?: \[axis ([^\]]*)\])?: count (\d+) \((\d+) NaN\), min (\S+), max (\S+), "
    r"mean (\S+), std (\S+), sum (\S+)((?:, p[^\s,]+ [^\s,]+)*)(?: \(rank error <= (\S+)%\))?"
    r"(?:, histogram of (\d+) bins over \[(\S+), (\S+)\] \((\d+) below, (\d+) above\))?$")


def stats_lines(out):
    """{(name, index tuple): the parsed line} of `sluice run`'s stdout."""
    lines = {}
    for ln in out.splitlines():
        if not ln.startswith("stats "):
            continue
        m = STATS_LINE.match(ln)
        expect(m is not None, f"stats line not in the documented form: {ln!r}")
        if m is None:
            continue
        idx = tuple(int(p.split("=")[1]) for p in m.group(2).split(",")) if m.group(2) else ()
        lines[(m.group(1), idx)] = m
    return lines


def as_float(v):
    """A report number: None (JSON null) is not finite."""
    return math.nan if v is None else float(v)


def num_close(got, want, rel):
    """`got` within `rel` of `want`; non-finite values equal (a report's
    null matching NaN or either infinity)."""
    if got is None or not math.isfinite(got) or not math.isfinite(want):
        if got is None:
            return not math.isfinite(want)
        return (math.isnan(got) and math.isnan(want)) or got == want
    return abs(got - want) <= rel * abs(want) + 1e-300


def stats_want(v, bins, rng_lo_hi, percentiles):
    """numpy's statistics of one set's values `v` (any dtype)."""
    f = v.astype(np.float64).ravel()
    good = f[~np.isnan(f)]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        w = {"count": f.size, "nan_count": int(np.isnan(f).sum()),
             "min": float(np.nanmin(f)) if good.size else math.nan,
             "max": float(np.nanmax(f)) if good.size else math.nan,
             "sum": float(np.nansum(f)), "mean": float(np.nanmean(f)),
             "std": float(np.nanstd(f)),
             "sum_bound": 4 * (math.ceil(math.log2(good.size + 1)) + 2) * EPS *
             float(np.sum(np.abs(good[np.isfinite(good)]))),
             "pct": [float(np.nanpercentile(f, q)) for q in percentiles],
             "sorted": np.sort(good)}
        if v.dtype.kind in "iu":
            w["sum"] = float(int(v.astype(object).sum()))  # exactly, rounded once
    if bins:
        lo, hi = rng_lo_hi
        w["hist"] = np.histogram(good, bins, (lo, hi))[0].tolist()
        w["below"], w["above"] = int((good < lo).sum()), int((good > hi).sum())
    return w


def check_stats_set(what, s, w, percentiles, exact_pct, line):
    """One set of the report (`s`) and its stdout line against numpy (`w`)."""
    expect(s["count"] == w["count"] and s["nan_count"] == w["nan_count"],
           f"{what}: count {s['count']} ({s['nan_count']} NaN), want {w['count']} "
           f"({w['nan_count']} NaN)")
    for k in ("min", "max"):
        expect(num_close(s[k], w[k], 0), f"{what}: {k} {s[k]}, want {w[k]}")
    expect(num_close(s["sum"], w["sum"], 0 if exact_pct else 1e-12) or
           (s["sum"] is not None and abs(s["sum"] - w["sum"]) <= w["sum_bound"]),
           f"{what}: sum {s['sum']!r}, want {w['sum']!r}")
    expect(num_close(s["mean"], w["mean"], 1e-12),
           f"{what}: mean {s['mean']!r}, want {w['mean']!r}")
    expect(num_close(s["std"], w["std"], 1e-12), f"{what}: std {s['std']!r}, want {w['std']!r}")
    got_q = [p["q"] for p in s["percentiles"]]
    expect(got_q == list(percentiles), f"{what}: percentiles asked {percentiles}, listed {got_q}")
    e, srt = as_float(s["rank_error"]), w["sorted"]
    m = srt.size
    if exact_pct:
        expect(s["percentiles_exact"] is True and e == 0,
               f"{what}: percentiles exact, rank_error 0: {s['percentiles_exact']}, {e}")
    for p, want in zip(s["percentiles"], w["pct"]):
        v = p["value"]
        if exact_pct or e == 0:
            # Exact order statistics: numpy's value bit for bit.
            expect(num_close(v, want, 0), f"{what}: p{p['q']} {v!r}, want numpy's {want!r}")
            continue
        r = (m - 1) * p["q"] / 100
        lo = srt[max(int(math.floor(r - e * m)), 0)]
        hi = srt[min(int(math.ceil(r + e * m)), m - 1)]
        expect(v is not None and lo <= v <= hi,
               f"{what}: p{p['q']} {v!r} ranks outside [{lo!r}, {hi!r}] (sorted positions "
               f"{r:.1f} -+ {e * m:.1f} of {m}; numpy's {want!r}, rank_error {e})")
    if "hist" in w:
        h = s.get("histogram", {})
        expect(h.get("counts") == w["hist"], f"{what}: histogram differs from np.histogram: "
                                             f"{h.get('counts')} != {w['hist']}")
        expect(h.get("below") == w["below"] and h.get("above") == w["above"],
               f"{what}: below/above {h.get('below')}/{h.get('above')}, want "
               f"{w['below']}/{w['above']}")
    if line is None:
        expect(False, f"{what}: no line on stdout")
        return
    # The line shows the report's numbers with %.9g (sum %.17g).
    ln = {"count": int(line.group(3)), "nan_count": int(line.group(4))}
    expect(ln["count"] == s["count"] and ln["nan_count"] == s["nan_count"],
           f"{what}: the line's counts {ln}, the report's {s['count']}, {s['nan_count']}")
    for k, g in (("min", 5), ("max", 6), ("mean", 7), ("std", 8), ("sum", 9)):
        expect(num_close(float(line.group(g)), w[k] if s[k] is None else s[k], 1e-8),
               f"{what}: the line's {k} {line.group(g)}, the report's {s[k]} (numpy {w[k]})")
    pcts = re.findall(r", p([^\s,]+) ([^\s,]+)", line.group(10) or "")
    expect([float(q) for q, _ in pcts] == list(percentiles) and
           all(num_close(float(v), as_float(p["value"]), 1e-8)
               for (_, v), p in zip(pcts, s["percentiles"])),
           f"{what}: the line's percentiles {pcts}, the report's {s['percentiles']}")
    # The line gives the bound whenever the dtype's percentiles are not
    # exact by construction, "<= 0%" while nothing was compacted.
    has_pct = bool(s["percentiles"])
    expect((line.group(11) is not None) == (has_pct and not s["percentiles_exact"]) and
           (line.group(11) is None or num_close(float(line.group(11)), 100 * e, 1e-2)),
           f"{what}: the line gives the rank error ({e}) exactly when percentiles are not "
           f"exact: {line.group(0)}")
    if "hist" in w:
        h = s.get("histogram", {})
        expect(line.group(12) is not None and int(line.group(12)) == len(w["hist"]) and
               [float(line.group(13)), float(line.group(14))] == h.get("range") and
               int(line.group(15)) == w["below"] and int(line.group(16)) == w["above"],
               f"{what}: the line's histogram part: {line.group(0)}")


def check_stats_node(what, rep, lines, name, data, per, bins, rng_lo_hi, percentiles, exact):
    """Stats node `name` over `data` (one set per index along `per`)."""
    entry = next((s for s in (rep or {}).get("stats", []) if s["name"] == name), None)
    if entry is None:
        expect(False, f"{what}: the report has no stats \"{name}\": {rep and rep.get('stats')}")
        return
    expect(entry["per"] == list(per) and "error" not in entry,
           f"{what}: stats \"{name}\" per {entry['per']} (want {per}), error "
           f"{entry.get('error')}")
    extents = [data.shape[a] for a in per]
    idxs = list(np.ndindex(*extents)) if per else [()]
    sets = entry.get("sets", [])
    expect([tuple(s["index"]) for s in sets] == idxs,
           f"{what}: sets of \"{name}\" indexed {[s['index'] for s in sets]}, want {idxs}")
    got_lines = sorted(i for (n, i) in lines if n == name)
    expect(got_lines == sorted(idxs), f"{what}: stdout has lines {got_lines} of \"{name}\"")
    for s, idx in zip(sets, idxs):
        sel = [slice(None)] * data.ndim
        for a, i in zip(per, idx):
            sel[a] = i
        w = stats_want(data[tuple(sel)], bins,
                       rng_lo_hi if rng_lo_hi else None, percentiles)
        check_stats_set(f"{what}: stats \"{name}\" {list(idx)}", s, w, percentiles, exact,
                        lines.get((name, tuple(idx))))
    return sets


def check_stats(tmp):
    rng = np.random.default_rng(SEED + 2)
    # uint16: exact percentiles, the default histogram range, 256 bins.
    u = rng.integers(0, 65536, (3, 4, 50, 64), dtype=np.uint16)
    u[1, 2] = rng.integers(1000, 1010, (50, 64))  # heavy ties in one channel
    u[0, 0, 0, :3] = [0, 65535, 65535]
    f = rng.normal(0, 50, (2, 3, 200, 256)).astype(np.float32)
    f[rng.random(f.shape) < 0.01] = np.nan
    f[:, 1][rng.random((2, 200, 256)) < 0.3] = np.float32(7.25)  # ties in a sketch
    f[1, 2, 5, 7] = np.inf  # max, mean and sum inf, std NaN: null in the report
    f[0, 0, 0, 0] = -np.inf
    g = Graph(os.path.join(tmp, "stats"))
    g.get("u", u, (1, 2, 25, 32))
    g.get("f", f, (1, 1, 64, 128))
    pu, pf = [0, 0.5, 25, 50, 99.5, 100], [0.5, 25, 50, 99.5]
    g.add("su", {"op": "stats", "input": "gu", "per": [1], "histogram": {"bins": 256},
                 "percentiles": pu})
    g.add("su2", {"op": "stats", "input": "gu", "per": [0, 1], "percentiles": [50]})
    g.add("su_all", {"op": "stats", "input": "gu"})
    g.add("sf", {"op": "stats", "input": "gf", "per": [1],
                 "histogram": {"bins": 64, "range": [-100, 100]}, "percentiles": pf})
    graph = g.write()
    report = os.path.join(g.d, "report.json")
    rc, out, err = run(*RUN, "--report", report, graph)
    expect(rc == 0, f"stats: sluice run exits {rc}: {out}{err}")
    rep = load_report(report, "stats")
    lines = stats_lines(out)
    check_stats_node("stats", rep, lines, "su", u, [1], 256, (0, 65536), pu, True)
    check_stats_node("stats", rep, lines, "su2", u, [0, 1], 0, None, [50], True)
    check_stats_node("stats", rep, lines, "su_all", u, [], 0, None, [], True)
    sets = check_stats_node("stats", rep, lines, "sf", f, [1], 64, (-100, 100), pf, False)
    for s in [s for s in (rep or {}).get("stats", []) if s["name"] == "su"][:1]:
        expect(all(x["histogram"]["range"] == [0, 65536] for x in s.get("sets", [])),
               "stats: uint16's default histogram range is [0, 65536]")
    errors = [as_float(s["rank_error"]) for s in sets or []]
    expect(errors and all(0 < e <= 1 / 1024 for e in errors),
           f"stats: float32 sets of 102,400 values are summarized, rank_error in (0, 1/1024]: "
           f"{errors}")
    print(f"stats: 4 nodes checked; float32 rank_error up to {max(errors or [0]):.2e}",
          flush=True)


# ---- 3. flat-field -> MIP -> stats ----------------------------------------------------

FF_SHAPE, FF_CHUNKS, YX_CHUNKS = (2, 2, 6, 40, 48), (1, 1, 6, 16, 16), (16, 16)
MIP_CHUNKS = (1, 1, 16, 16)
MIP_STATS = {"op": "stats", "input": "mip", "per": [1],
             "histogram": {"bins": 64, "range": [0, 70000]}, "percentiles": [0.5, 50, 99.5]}


def flatfield_inputs(seed=7):
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 65536, FF_SHAPE, dtype=np.uint16)
    raw[0, 0, :, :4, :4] = 7
    dark = rng.normal(100, 20, FF_SHAPE[-2:]).astype(np.float32)
    dark[0, :3] = [-0.0, np.inf, 1e-30]   # -inf in the MIP at (0, 1): below the histogram
    flat = rng.uniform(0, 2, FF_SHAPE[-2:]).astype(np.float32)
    flat[::7, ::5] = 0
    flat[3, 3] = np.float32(np.nan)       # a NaN column: NaN in the MIP, counted as NaN
    return raw, dark, flat


def mip_want(data):
    raw, dark, flat = data
    with np.errstate(all="ignore"):
        ff = (raw.astype(np.float32) - dark) / np.maximum(flat, np.float32(1))
    return np.max(ff, axis=2)


def chain_dir(tmp, name, data, raw_chunks=FF_CHUNKS):
    d = os.path.join(tmp, name)
    os.makedirs(d)
    raw, dark, flat = data
    write_zarr(os.path.join(d, "raw.zarr"), raw, raw_chunks)
    write_zarr(os.path.join(d, "dark.zarr"), dark, YX_CHUNKS)
    write_zarr(os.path.join(d, "flat.zarr"), flat, YX_CHUNKS)
    doc = {"sluice": 1,
           "arrays": {"raw": {"path": "raw.zarr"}, "dark": {"path": "dark.zarr"},
                      "flat": {"path": "flat.zarr"},
                      "out": {"path": "mip.zarr", "create": dict(OUT_CREATE)}},
           "nodes": {"r": {"op": "get", "array": "raw"}, "d": {"op": "get", "array": "dark"},
                     "f": {"op": "get", "array": "flat"},
                     "ff": {"op": "expr", "inputs": {"raw": "r", "dark": "d", "flat": "f"},
                            "expr": "(raw - dark) / max(flat, 1)", "dtype": "float32",
                            "compute": "float32"},
                     "mip": {"op": "reduce", "input": "ff", "method": "max", "axes": [2]},
                     "w": {"op": "put", "input": "mip", "array": "out"},
                     "st": dict(MIP_STATS)}}
    return d, write_graph(d, doc)


def check_mip_values(what, path, want, good=None):
    if not os.path.exists(path):
        expect(False, f"{what}: no {path}")
        return
    got, dtype, chunks = read_zarr(path)
    expect(dtype == np.float32 and got.shape == want.shape and chunks == MIP_CHUNKS,
           f"{what}: the MIP is float32 {list(want.shape)} in chunks {list(MIP_CHUNKS)}: "
           f"{dtype} {list(got.shape)} {list(chunks)}")
    if got.shape != want.shape:
        return
    ok = same(got, want)
    if good is not None:
        ok |= ~good
    expect(bool(ok.all()), f"{what}: the MIP differs from numpy's np.max(ff, axis=2) at "
                           f"{np.argwhere(~ok)[:3].tolist()}")


def check_chain(tmp, data):
    want = mip_want(data)
    d, graph = chain_dir(tmp, "chain", data)
    nodes, edges, text = explain(graph, "chain")
    expect(nodes.get("mip", ("", ""))[1] == "reduce max" and "mip.partial" not in nodes,
           f"chain: explain shows the MIP as one direct step (chunks hold all of z): {text}")
    for e in ("r -> ff", "ff -> mip"):
        expect(edges.get(e) == "fused", f"chain: explain fuses {e}: {edges.get(e)!r} in {text}")
    report = os.path.join(d, "report.json")
    rc, out, err = run(*RUN, "--report", report, graph)
    expect(rc == 0, f"chain: sluice run exits {rc}: {out}{err}")
    check_mip_values("chain", os.path.join(d, "mip.zarr"), want)
    rep = load_report(report, "chain")
    check_stats_node("chain", rep, stats_lines(out), "st", want, [1], 64, (0, 70000),
                     MIP_STATS["percentiles"], False)
    # z in 2 chunks: a tree, and the same values.
    d2, graph2 = chain_dir(tmp, "chain_z2", data, raw_chunks=(1, 1, 3, 16, 16))
    nodes, _, text = explain(graph2, "chain, z in 2 chunks")
    expect(not leftovers(d2, ["mip.zarr"]), "chain: explain creates nothing")
    expect("mip.partial" in nodes and nodes.get("mip", ("", ""))[1] == "finish max",
           f"chain: with z in 2 chunks explain lists mip.partial and a finishing mip: {text}")
    rc, out, err = run(*RUN, graph2)
    expect(rc == 0, f"chain, z in 2 chunks: sluice run exits {rc}: {out}{err}")
    check_mip_values("chain, z in 2 chunks", os.path.join(d2, "mip.zarr"), want)


# ---- 4. a failed chunk ----------------------------------------------------------------


def check_failed_chunk(tmp, data, raw_chunks, key, what):
    """Corrupt raw chunk `key`: exactly the MIP chunk at its (t, c, y, x)
    fails, naming it; the stats node reports an error and no sets."""
    d, graph = chain_dir(tmp, f"corrupt_{raw_chunks[2]}", data, raw_chunks)
    with open(os.path.join(d, "raw.zarr", key), "wb") as f:
        f.write(b"not a zstd frame" * 4)
    report = os.path.join(d, "report.json")
    rc, out, err = run(*RUN, "--report", report, graph)
    expect(rc == 1, f"{what}: sluice run exits {rc}, not 1: {out}{err}")
    rep = load_report(report, what)
    if rep is None:
        return
    c = [int(v) for v in key.split(".")]
    failed = [c[0], c[1], c[3], c[4]]
    put = next((p for p in rep["puts"] if p["name"] == "w"), {})
    fails = put.get("failures", [])
    chunk_text = f'get "r" chunk ({", ".join(key.split("."))})'
    expect([f["chunk"] for f in fails] == [failed],
           f"{what}: the report lists MIP chunks {[f['chunk'] for f in fails]}, want [{failed}]")
    expect(all(f["code"] == "EUPSTREAM" and chunk_text in (f["message"] or "") for f in fails),
           f"{what}: the failure is EUPSTREAM naming {chunk_text}: {fails}")
    expect(put.get("ok") == put.get("chunks", 0) - 1, f"{what}: the other chunks are ok: {put}")
    st = next((s for s in rep.get("stats", []) if s["name"] == "st"), {})
    at = f"chunk [{', '.join(map(str, failed))}]"
    expect("sets" not in st and at in st.get("error", ""),
           f"{what}: stats \"st\" reports an error naming {at}, and no sets: {st}")
    # stderr lists the failed chunks; the stats node's own error is only in
    # the report (runner.c prints stats, or why not, after a run that worked).
    listed = f"chunk ({', '.join(map(str, failed))}): EUPSTREAM"
    expect(not any(ln.startswith("stats st") for ln in out.splitlines()) and listed in err,
           f"{what}: no stats lines on stdout, stderr listing {listed}: {out}{err}")
    good = np.ones(FF_SHAPE[:2] + FF_SHAPE[3:], bool)
    good[tuple(slice(i * n, (i + 1) * n) for i, n in zip(failed, MIP_CHUNKS))] = False
    check_mip_values(what, os.path.join(d, "mip.zarr"), mip_want(data), good)


def check_failed_chunks(tmp, data):
    check_failed_chunk(tmp, data, FF_CHUNKS, "1.0.0.1.2", "a corrupt raw chunk (direct MIP)")
    check_failed_chunk(tmp, data, (1, 1, 3, 16, 16), "0.1.1.2.0",
                       "a corrupt raw chunk (MIP through partials)")


# ---- 5. memory ------------------------------------------------------------------------


def peak_rss_kib(args, what):
    """(exit status, stderr, peak RSS in KiB) of `sluice ARGS`, measured by
    /usr/bin/time: a fresh child of it, so that this Python's pages do not
    count (a child of a fork of this process inherits its high-water mark)."""
    fd, out = tempfile.mkstemp(prefix="sluice-rss-")
    os.close(fd)
    try:
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", out, SLUICE, *args],
                           capture_output=True, text=True)
        with open(out) as f:
            kib = int(f.read().split()[-1])
    except (OSError, ValueError, IndexError) as e:
        expect(False, f"{what}: /usr/bin/time failed: {e}")
        return 1, "", None
    finally:
        os.remove(out)
    return p.returncode, p.stderr, kib


def check_memory(tmp):
    if not os.access("/usr/bin/time", os.X_OK):
        print("memory check skipped: /usr/bin/time is not installed (apt-get install time)")
        return
    rng = np.random.default_rng(SEED + 5)
    g = Graph(os.path.join(tmp, "memory"))
    x = rng.integers(0, 4096, (512, 256, 256), dtype=np.uint16)
    g.get("x", x, (8, 256, 256))
    out = g.put(g.add("m", {"op": "reduce", "input": "gx", "method": "sum", "axes": [0],
                            "split_every": 4}))
    graph = g.write()
    want = x.sum(axis=0)
    del x
    nodes, _, text = explain(graph, "memory")
    expect("m.combine2" in nodes and "m.combine3" not in nodes,
           f"memory: 64 chunks, 4 at a time: partial, combine1, combine2, finish: {text}")
    t = Graph(os.path.join(tmp, "memory_baseline"))
    t.put(t.get("t", np.arange(16, dtype=np.uint16).reshape(4, 4), (2, 2)))
    base_graph = t.write()
    rc, err, base = peak_rss_kib([*RUN, "--threads", "2", base_graph], "memory baseline")
    expect(rc == 0, f"memory: the trivial run exits {rc}: {err}")
    rc, err, peak = peak_rss_kib([*RUN, "--threads", "2", "--memory", "16M", graph], "memory")
    expect(rc == 0, f"memory: the sum under --memory 16M exits {rc}: {err}")
    if rc == 0:
        got, dtype, _ = read_zarr(out)
        expect(dtype == np.uint64 and np.array_equal(got, want),
               "memory: the sum along z equals numpy's (uint64)")
    if base is not None and peak is not None:
        print(f"memory: peak RSS {peak / 1024:.1f} MiB under --memory 16M, baseline "
              f"{base / 1024:.1f} MiB (64 MiB reduced)", flush=True)
        expect(peak - base < 16 * 1024,
               f"memory: peak RSS {peak} KiB is 16 MiB or more above the baseline's {base} KiB")


# ---- 6. resume ------------------------------------------------------------------------


def resume_graph(d, method):
    g = Graph(d)
    g.arrays["x"] = {"path": "x.zarr"}
    g.nodes["gx"] = {"op": "get", "array": "x"}
    g.put(g.add("m", {"op": "reduce", "input": "gx", "method": method, "axes": [0],
                      "split_every": 3}))
    return g.write()


def check_resume(tmp):
    rng = np.random.default_rng(SEED + 6)
    x = rng.integers(-30000, 30000, (40, 30, 20), dtype=np.int16)
    d = os.path.join(tmp, "resume")
    os.makedirs(d)
    write_zarr(os.path.join(d, "x.zarr"), x, (4, 10, 10))
    graph = resume_graph(d, "min")
    journal, out = os.path.join(d, "j.journal"), os.path.join(d, "o0.zarr")
    rc, _, err = run(*RUN, "--journal", journal, graph)
    expect(rc == 0, f"resume: a journaled run exits {rc}: {err}")
    before = tree(out) if rc == 0 else None
    if rc == 0:
        got, _, _ = read_zarr(out)
        expect(np.array_equal(got, x.min(axis=0)), "resume: the journaled run's min is numpy's")
    rc, o, err = run(*RUN, "--journal", journal, "--resume", graph)
    expect(rc == 0, f"resume: --resume of a completed run is accepted: {rc} {o}{err}")
    expect(before is not None and tree(out) == before,
           "resume: --resume of a completed run leaves the output byte-identical")
    # max keeps the dtype and shape: only the fingerprint tells it from min.
    resume_graph(d, "max")
    rc, o, err = run(*RUN, "--journal", journal, "--resume", graph)
    said = [ln for ln in err.splitlines() if "refused" in ln]
    expect(rc == 2 and said and "graph changed" in said[0],
           f"resume: a changed method is refused (exit 2, 'graph changed'): {rc} {o}{err}")
    expect(before is None or tree(out) == before,
           "resume: the refused resume keeps the earlier output")
    # A run failing in one input chunk, repaired, then resumed.
    d2 = os.path.join(tmp, "resume_failed")
    os.makedirs(d2)
    write_zarr(os.path.join(d2, "x.zarr"), x, (4, 10, 10))
    graph2 = resume_graph(d2, "min")
    chunk = os.path.join(d2, "x.zarr", "5.1.0")
    with open(chunk, "rb") as f:
        good = f.read()
    with open(chunk, "wb") as f:
        f.write(b"not a zstd frame" * 4)
    journal2 = os.path.join(d2, "j.journal")
    rc, _, err = run(*RUN, "--journal", journal2, graph2)
    expect(rc == 1, f"resume: the run reading a corrupt chunk exits {rc}, not 1: {err}")
    with open(chunk, "wb") as f:
        f.write(good)
    rc, o, err = run(*RUN, "--journal", journal2, "--resume", graph2)
    expect(rc == 0, f"resume: --resume after the repair exits {rc}: {o}{err}")
    if rc == 0:
        got, _, _ = read_zarr(os.path.join(d2, "o0.zarr"))
        expect(np.array_equal(got, x.min(axis=0)), "resume: the resumed output is numpy's")


# ---- 7. errors ------------------------------------------------------------------------

KNOWN = ", ".join(METHODS)


def error_cases():
    """(what, nodes besides gx (int16 [4, 6, 10]) and gh (float16) and gf
    (float32), the words the error line holds)."""
    put = {"w": {"op": "put", "input": "m", "array": "o"}}
    return [
        ("unknown method", {"m": {"op": "reduce", "input": "gx", "method": "mx"}, **put},
         ["EINVAL", "at /nodes/m/method:", 'unknown reduce method "mx"', f"known: {KNOWN}"]),
        ("no method", {"m": {"op": "reduce", "input": "gx"}, **put},
         ["EINVAL", "at /nodes/m/method:", 'missing "method"', "count_nonzero"]),
        ("axis out of range",
         {"m": {"op": "reduce", "input": "gx", "method": "sum", "axes": [0, 3]}, **put},
         ["EINVAL", "at /nodes/m/axes:", "axis 3", "out of range", "rank 3"]),
        ("axis given twice",
         {"m": {"op": "reduce", "input": "gx", "method": "sum", "axes": [1, 1]}, **put},
         ["EINVAL", "at /nodes/m/axes:", "axis 1", "given twice"]),
        ("axes empty", {"m": {"op": "reduce", "input": "gx", "method": "sum", "axes": []}, **put},
         ["EINVAL", "at /nodes/m/axes:", "found 0"]),
        ("axes a string",
         {"m": {"op": "reduce", "input": "gx", "method": "sum", "axes": "some"}, **put},
         ["EINVAL", "at /nodes/m/axes:", '"all"', "found a string"]),
        ("float16 input",
         {"m": {"op": "reduce", "input": "gh", "method": "sum", "axes": [1]}, **put},
         ["EUNSUPPORTED", "at /nodes/m/input:", "float16"]),
        ("chunks of another rank",
         {"m": {"op": "reduce", "input": "gx", "method": "sum", "axes": [0], "chunks": [2]},
          **put},
         ["EINVAL", "at /nodes/m/chunks:", "expected 2 entries", "found 1"]),
        ("split_every 1",
         {"m": {"op": "reduce", "input": "gx", "method": "sum", "split_every": 1}, **put},
         ["EINVAL", "at /nodes/m/split_every:", "found 1"]),
        ("negative ddof", {"m": {"op": "reduce", "input": "gx", "method": "std", "ddof": -1},
                           **put},
         ["EINVAL", "at /nodes/m/ddof:", "negative"]),
        ("keepdims not a boolean",
         {"m": {"op": "reduce", "input": "gx", "method": "sum", "keepdims": 1}, **put},
         ["EINVAL", "at /nodes/m/keepdims:", "true or false"]),
        ("stats per out of range", {"s": {"op": "stats", "input": "gx", "per": [3]}},
         ["EINVAL", "at /nodes/s/per:", '"per" axis 3', "out of range", "rank 3"]),
        ("stats per given twice", {"s": {"op": "stats", "input": "gx", "per": [1, 1]}},
         ["EINVAL", "at /nodes/s/per:", "given twice"]),
        ("stats histogram of float32 without range",
         {"s": {"op": "stats", "input": "gf", "histogram": {"bins": 16}}},
         ["EINVAL", "at /nodes/s/histogram:", "give a histogram range for float32"]),
        ("stats histogram range empty",
         {"s": {"op": "stats", "input": "gx", "histogram": {"bins": 4, "range": [5, 5]}}},
         ["EINVAL", "at /nodes/s/histogram/range:", "lo < hi"]),
        ("stats percentile out of range",
         {"s": {"op": "stats", "input": "gx", "percentiles": [5, 101]}},
         ["EINVAL", "at /nodes/s/percentiles/1:", "[0, 100]"]),
        ("stats node as a reduce's input",
         {"s": {"op": "stats", "input": "gx"},
          "m": {"op": "reduce", "input": "s", "method": "sum"}, **put},
         ["EINVAL", "at /nodes/m/input:", '"s" is a stats node', "no chunks"]),
        ("stats node as a put's input",
         {"s": {"op": "stats", "input": "gx"}, "w": {"op": "put", "input": "s", "array": "o"}},
         ["EINVAL", "at /nodes/w/input:", '"s" is a stats node']),
    ]


def check_errors(tmp):
    rng = np.random.default_rng(SEED + 7)
    inputs = {"x": (np.int16, "gx"), "h": (np.float16, "gh"), "f": (np.float32, "gf")}
    for k, (what, nodes, words) in enumerate(error_cases()):
        g = Graph(os.path.join(tmp, f"error{k:02d}"))
        text = json.dumps(nodes)
        for name, (dt, nid) in inputs.items():
            if f'"{nid}"' in text:
                g.get(name, rng.integers(0, 100, (4, 6, 10)).astype(dt), (2, 3, 5))
        g.nodes.update(nodes)
        g.arrays["o"] = {"path": "o.zarr", "create": dict(OUT_CREATE)}
        pointer = words[1].split(":")[0].replace("at ", "")
        expect_refused(what, g.write(), g.d, ["o.zarr"], words, line_with=f"at {pointer}:")


def main():
    with scratch_dir("sluice-reduce-") as tmp:
        check_random(tmp)
        check_stats(tmp)
        data = flatfield_inputs()
        check_chain(tmp, data)
        check_failed_chunks(tmp, data)
        check_memory(tmp)
        check_resume(tmp)
        check_errors(tmp)
    return finish("check_reduce_stats")


if __name__ == "__main__":
    sys.exit(main())
