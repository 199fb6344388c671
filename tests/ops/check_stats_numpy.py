#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Statistics against numpy: sl_stats on random arrays of every dtype.

Each case draws an array (integers over small and full ranges, floats with
NaN, +-inf, -0.0 and huge values), a histogram (none, the dtype's default
range for 8- and 16-bit dtypes, or a range with float or integer-width
bins), up to 16 percentiles, and cuts the array into random pieces (some
read through reversed views) added to separate accumulators, which are then
merged in a random tree.  stats_numpy (stats_numpy_main.c) prints the
result; with xf = x.astype(float64) and v = xf[~isnan(xf)] it must match:

- count, nan_count, min, max exactly;
- sum, mean, std within 1e-12 relative of np.nansum, np.nanmean, np.nanstd
  (NaN and infinities matching);
- the histogram exactly np.histogram(v, bins, (lo, hi)), below/above the
  counts of v < lo and v > hi (float32 data is compared in float64:
  ops/README.md says why);
- percentiles of bool and 8/16-bit dtypes exactly np.nanpercentile(xf, p);
  others between the sorted values at floor(r - e) and ceil(r + e), with
  r = (m - 1) p / 100 and e = rank_error * m, and rank_error <= 1/1024.

Then the percentile bound on 10^5 .. 10^6 values of uniform, normal,
heavily tied, sorted, reverse sorted and constant data in random pieces.

Run by meson test: check_stats_numpy.py STATS_NUMPY.  Exits 77 (skipped)
with a message when numpy is not installed.  Fixed seed; a few seconds.
"""
import math
import os
import subprocess
import sys
import tempfile

# numpy_reference exits 77 (skipped) without numpy.
from numpy_reference import write_raw
import numpy as np

DRIVER = sys.argv[1]
DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float32", "float64"]
EXACT = {"bool", "int8", "uint8", "int16", "uint16"}
CASES_PER_DTYPE = 12
MAX_RANK_ERROR = 1 / 1024


def values(dtype, n, rng):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.integers(0, 2, n).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if rng.random() < 0.5:
            v = rng.integers(max(info.min, -100), min(info.max, 100), n, endpoint=True)
            return v.astype(dt)
        return rng.integers(info.min, info.max, n, endpoint=True, dtype=dt)
    v = rng.normal(0, 40, n)
    big = [1e30, -3.0e38, 2.0 ** 60] + ([1e300, -1e300] if dt == np.float64 else [])
    special = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 0.5] + big)
    if rng.random() < 0.7:
        pick = rng.random(n) < 0.05
        v = np.where(pick, rng.choice(special, n), v)
    return v.astype(dt)


def histogram_opts(dtype, rng):
    """(bins, lo, hi) with lo = hi = None for the default range."""
    r = rng.random()
    if r < 0.25:
        return 0, None, None
    bins = int(rng.choice([1, 3, 10, 64, 256, 1000]))
    if dtype in EXACT and r < 0.5:
        return bins, None, None
    if np.dtype(dtype).kind in "iub" and r < 0.75:
        w = int(rng.integers(1, 5))  # integer-width bins
        lo = int(rng.integers(-60, 10))
        return bins, float(lo), float(lo + w * bins)
    lo = float(rng.normal(-30, 20))
    return bins, lo, lo + float(rng.uniform(0.1, 120))


def pieces_and_merges(n, rng):
    n_acc = int(rng.integers(1, 9))
    cuts = np.sort(rng.integers(0, n + 1, int(rng.integers(0, 12))))
    bounds = [0] + [int(c) for c in cuts] + [n]
    pieces = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        acc = int(rng.integers(0, n_acc))
        pieces.append(f"{acc}:{b - a}" + ("r" if rng.random() < 0.3 else ""))
    accs = {int(p.split(":")[0]) for p in pieces}
    if 0 not in accs:
        pieces.append("0:0")
    used = sorted(accs | {0})
    merges, live = [], list(used)
    while len(live) > 1:
        i, j = rng.choice(len(live), 2, replace=False)
        a, b = live[i], live[j]
        if b == 0:
            a, b = b, a
        merges.append(f"{a}<{b}")
        live.remove(b)
    return ",".join(pieces), ",".join(merges) or "-"


def run(tmp, x, dtype, bins, lo, hi, pcts, pieces, merges):
    path = os.path.join(tmp, "x")
    write_raw(path, x, dtype)
    args = [DRIVER, "check", dtype, path, str(bins), "-" if lo is None else repr(lo),
            "-" if hi is None else repr(hi), ",".join(repr(p) for p in pcts) or "-", pieces, merges]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"stats_numpy exited {p.returncode}: {p.stderr}")
    out = {}
    for line in p.stdout.splitlines():
        name, *rest = line.split()
        out[name] = rest
    return out


def close(got, want, rel=1e-12):
    if math.isnan(want) or math.isinf(want):
        return (math.isnan(got) and math.isnan(want)) or got == want
    return abs(got - want) <= rel * abs(want) or got == want


def check_case(tmp, dtype, n, rng, dist=None):
    x = values(dtype, n, rng) if dist is None else dist
    bins, lo, hi = histogram_opts(dtype, rng) if dist is None else (0, None, None)
    n_p = int(rng.integers(0, 17)) if dist is None else 11
    pcts = [float(rng.choice([0, 100, 50, 25.5, 99.9, 0.1])) if rng.random() < 0.4 else
            float(np.round(rng.uniform(0, 100), 3)) for _ in range(n_p)]
    pieces, merges = pieces_and_merges(n, rng)
    out = run(tmp, x, dtype, bins, lo, hi, pcts, pieces, merges)
    xf = x.astype(np.float64)
    nan = np.isnan(xf)
    v = xf[~nan]
    errs = []
    want_int = {"count": n, "nan_count": int(nan.sum())}
    for k, w in want_int.items():
        if int(out[k][0]) != w:
            errs.append(f"{k} {out[k][0]} != {w}")
    with np.errstate(all="ignore"):
        want = {"min": np.min(v) if v.size else np.nan, "max": np.max(v) if v.size else np.nan,
                "sum": np.nansum(xf), "mean": np.nanmean(xf) if v.size else np.nan,
                "std": np.nanstd(xf) if v.size else np.nan}
    scale = np.sum(np.abs(v[np.isfinite(v)])) / max(v.size, 1)
    for k, w in want.items():
        g = float(out[k][0])
        ok = close(g, float(w), 0 if k in ("min", "max") else 1e-12)
        if not ok and k in ("sum", "mean") and math.isfinite(g) and math.isfinite(w):
            # numpy's pairwise sum loses what huge values cancel (1e300 - 1e300):
            # allow 1e-12 of the summands' magnitude there.
            ok = abs(g - w) <= 1e-12 * scale * (v.size if k == "sum" else 1)
        if not ok:
            errs.append(f"{k} {g!r} != numpy {float(w)!r}")
    if bins > 0:
        glo, ghi = float(out["range"][0]), float(out["range"][1])
        if lo is None:
            info = np.iinfo(dtype) if dtype != "bool" else None
            want_lo, want_hi = (0.0, 2.0) if info is None else (float(info.min), info.max + 1.0)
        else:
            want_lo, want_hi = lo, hi
        if (glo, ghi) != (want_lo, want_hi):
            errs.append(f"range {glo}, {ghi} != {want_lo}, {want_hi}")
        h, _ = np.histogram(v, bins, (want_lo, want_hi))
        got = np.array([int(c) for c in out["hist"]])
        if got.shape != h.shape or (got != h).any():
            bad = np.flatnonzero(got != h)[:3] if got.shape == h.shape else []
            errs.append(f"histogram differs in bins {list(bad)}: {got[bad]} vs {h[bad]}")
        for k, w in (("below", (v < want_lo).sum()), ("above", (v > want_hi).sum())):
            if int(out[k][0]) != int(w):
                errs.append(f"{k} {out[k][0]} != {int(w)}")
    got_p = [float(s) for s in out["pct"]]
    e = float(out["rank_error"][0])
    if v.size and pcts:
        if dtype in EXACT:
            want_p = np.nanpercentile(xf, pcts)
            for p, g, w in zip(pcts, got_p, want_p):
                if g != w:
                    errs.append(f"p{p}: {g!r} != numpy {w!r}")
        else:
            if e > MAX_RANK_ERROR:
                errs.append(f"rank_error {e} above 1/1024")
            s = np.sort(v)
            m = v.size
            for p, g in zip(pcts, got_p):
                r = (m - 1) * (p / 100)
                a = s[max(0, math.floor(r - e * m))]
                b = s[min(m - 1, math.ceil(r + e * m))]
                if not (a <= g <= b):
                    errs.append(f"p{p}: {g!r} outside [{a!r}, {b!r}] (rank {r}, e*m {e * m})")
    return errs, e


def main():
    rng = np.random.default_rng(20240612)
    failures, cases, max_e = [], 0, 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for dtype in DTYPES:
            for case in range(CASES_PER_DTYPE):
                n = int(rng.choice([0, 1, 2, 7, 1000, 30000, 100000, 300000])) \
                    if case > 1 else int(rng.integers(0, 50))
                errs, _ = check_case(tmp, dtype, n, rng)
                cases += 1
                for msg in errs:
                    failures.append(f"{dtype} n={n} case {case}: {msg}")
                    print("FAILED:", failures[-1], flush=True)
        dists = {
            "uniform": lambda n: rng.uniform(-1, 1, n),
            "normal": lambda n: rng.normal(0, 1, n),
            "ties": lambda n: rng.integers(0, 7, n).astype(np.float64),
            "sorted": lambda n: np.arange(n, dtype=np.float64),
            "reversed": lambda n: np.arange(n, 0, -1).astype(np.float64),
            "constant": lambda n: np.full(n, 3.25),
        }
        for name, make in dists.items():
            for dtype in ("float64", "float32", "int32", "uint64"):
                n = int(rng.choice([100000, 400000, 1000000]))
                x = make(n)
                if np.dtype(dtype).kind in "iu":
                    x = np.round(x * 1000) + (0 if np.dtype(dtype).kind == "i" else 2 ** 40)
                errs, e = check_case(tmp, dtype, n, rng, x.astype(dtype))
                max_e = max(max_e, e)
                cases += 1
                for msg in errs:
                    failures.append(f"{name} {dtype} n={n}: {msg}")
                    print("FAILED:", failures[-1], flush=True)
    print(f"{cases - len({f.split(':')[0] for f in failures})} of {cases} cases agree with numpy; "
          f"largest rank_error {max_e:.3g}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
