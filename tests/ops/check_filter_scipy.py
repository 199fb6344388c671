#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Neighbourhood filters against scipy.ndimage, block by block.

Every kind (gaussian, uniform, median, minimum, maximum, gradient_magnitude,
laplace) meets every boundary mode (reflect, nearest, mirror, constant,
wrap) and every dtype (bool, int8..int64, uint8..uint64, float32, float64)
once, then random combinations fill up to N_CASES.  Each case draws a shape
of rank 1 to 4 (extents of 1 and 2 often, so arrays smaller than the halo
are common, and now and then one long axis), parameters (sigmas with zeros
among them, truncate, box sizes), a chunk shape (extents down to 1, so
chunks smaller than the halo are common), input views read through
negative strides, a cval (out of the dtype's range and NaN now and then
where that is reproducible), and values with the dtype's extremes and, for
floats, NaN, +-inf and -0.0.  filter_numpy (filter_numpy_main.c), one
process for all cases (--batch), filters each array block by block, each
block from sl_filter_input_region's region; the whole result is compared
with scipy.ndimage on the whole array:

  - median, minimum, maximum, and uniform and laplace of integers and bool:
    bit-exact (bool by truth value: scipy may store other nonzero bytes);
    gaussian and gradient_magnitude of bool: the same, but where the whole
    box is true (there the sum of the weights, 1 within an ulp, decides);
  - minimum, maximum (and a median of two elements, which scipy computes as
    a maximum) of arrays with NaN: against scipy on the array with NaN
    replaced by +-inf, NaN where the whole box is NaN (sluice ignores NaN;
    see ops/README.md);
  - uniform of floats with inf or NaN: against scipy on the finite part,
    with inf, -inf or NaN wherever the box holds them (scipy's running sum
    turns the rest of a line NaN; sluice's depends on the box alone);
  - float results: within 1e-5 relative, or an absolute 1e-6 (float32) or
    1e-12 (float64) of the largest magnitude involved; NaN and infinities
    exactly;
  - gaussian of integers: within one per pass (numpy's exp and glibc's
    differ in the last bit now and then, and scipy truncates each pass: a
    flat region of -7 can become -6.999999999999999 or -7.000000000000001,
    so -6 or -7, and the next pass then -5 or -7); gradient_magnitude of
    integers: within one per pass and one more, on values small enough that
    no square wraps (for unsigned dtypes, one pass only: a negative
    derivative wraps to a huge value).

Run by meson test: check_filter_scipy.py FILTER_NUMPY.  Exits 77 (skipped)
with a message when numpy or scipy is not installed.  Fixed seed; a few
seconds.
"""
import os
import subprocess
import sys
import tempfile
import warnings

# numpy_reference exits 77 (skipped) without numpy.
from numpy_reference import DTYPES, read_raw, shape_arg, write_raw
import numpy as np

try:
    import scipy.ndimage as nd
except ImportError as e:
    print(f"skipped: python3-scipy is not installed ({e}); tests/deps.sh lists it")
    sys.exit(77)

DRIVER = sys.argv[1]
KINDS = ["gaussian", "uniform", "median", "minimum", "maximum", "gradient_magnitude", "laplace"]
MODES = ["reflect", "nearest", "mirror", "constant", "wrap"]
COMBOS = [(k, m, d) for k in KINDS for m in MODES for d in DTYPES]
N_CASES = 500
SIGMAS = [0.0, 0.4, 0.8, 1.0, 1.6, 2.0, 3.0]
TRUNCATES = [0.0, 1.0, 2.5, 4.0]  # 0 means scipy's default, 4.0


def draw_shape(rng, kind):
    rank = int(rng.integers(1, 5))
    shape = [int(rng.choice([1, 2, 3, 4, 5, 7, 9, 12])) for _ in range(rank)]
    if rng.random() < 0.25:
        shape[int(rng.integers(rank))] = int(rng.integers(20, 60))
    limit = 600 if kind == "median" else 2500
    while np.prod(shape) > limit:
        shape[int(np.argmax(shape))] //= 2
    return tuple(shape)


def draw_params(kind, dtype, rank, rng):
    if kind in ("gaussian", "gradient_magnitude"):
        sig = [float(rng.choice(SIGMAS)) for _ in range(rank)]
        if kind == "gradient_magnitude" and np.dtype(dtype).kind == "u":
            # One pass: a negative derivative wraps to a huge one, and a
            # second pass would smear its last-bit differences across it.
            keep = int(rng.integers(rank))
            sig = [s if a == keep else 0.0 for a, s in enumerate(sig)]
        return sig, float(rng.choice(TRUNCATES))
    if kind == "laplace":
        return [0] * rank, 0.0
    top = 6 if kind == "median" else 8
    sizes = [int(rng.integers(1, top)) for _ in range(rank)]
    if kind == "median" and rng.random() < 0.15:  # boxes of one and two elements
        sizes = [1] * rank
        sizes[int(rng.integers(rank))] = int(rng.integers(1, 3))
    return sizes, 0.0


def int_bounds(kind, dt):
    """The values drawn for integer dtype `dt`."""
    info = np.iinfo(dt)
    if kind == "gradient_magnitude":  # no square or sum of squares wraps
        b = {1: 3, 2: 50}.get(dt.itemsize, 1000)
        return max(info.min, -b), b
    if kind in ("uniform", "gaussian") and dt.itemsize == 8:  # sums exact in double
        return max(info.min, -(2 ** 40)), 2 ** 40
    return info.min, info.max


def values(kind, dtype, shape, rng):
    n = int(np.prod(shape, dtype=np.int64))
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return (rng.random(n) < rng.choice([0.2, 0.5, 0.8])).reshape(shape)
    if dt.kind in "iu":
        lo, hi = int_bounds(kind, dt)
        v = rng.integers(max(lo, -60), min(hi, 60), n, endpoint=True).astype(dt)
        big = rng.random(n) < 0.15
        v[big] = rng.integers(lo, hi, int(big.sum()), endpoint=True, dtype=dt)
        ext = rng.random(n) < 0.05
        v[ext] = rng.choice(np.array([lo, hi], dtype=dt), int(ext.sum()))
        if rng.random() < 0.2:  # flat runs, where rounding lands on integers
            v[rng.random(n) < 0.5] = v[0]
        return v.reshape(shape)
    v = rng.normal(0, 40, n)
    special = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e30, -1e-30]
    if kind in ("gaussian", "gradient_magnitude", "laplace", "median", "minimum", "maximum"):
        special += [1e300, 3e38]
    pick = rng.random(n) < rng.choice([0.0, 0.0, 0.05, 0.2])
    v = np.where(pick, rng.choice(special, n), v)
    with np.errstate(all="ignore"):
        return v.astype(dt).reshape(shape)


def draw_cval(kind, dtype, rng):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return float(rng.choice([0.0, 1.0, 0.5]))
    if dt.kind == "f":
        return float(rng.choice([0.0, 1.5, -20.25, np.nan, np.inf]))
    lo, hi = int_bounds(kind, dt)
    r = rng.random()
    if kind in ("gaussian", "gradient_magnitude") or r < 0.6:
        return float(rng.integers(max(lo, -100), min(hi, 100), endpoint=True))
    if r < 0.75:
        return float(rng.integers(max(lo, -100), min(hi, 100))) + 0.5
    if r < 0.9 and (dt.itemsize < 8 or kind not in ("uniform",)):
        # Out of the dtype's range: scipy's C casts wrap (x86-64), emulated.
        return float(hi) * 3 + 0.5 if rng.random() < 0.5 else -float(hi) * 3 - 0.5
    if kind in ("median", "minimum", "maximum", "laplace"):
        return float("nan")
    return 0.0


def scipy_filter(kind, x, mode, params, cval, truncate):
    t = truncate if truncate > 0 else 4.0
    sizes = [int(v) for v in params]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if kind == "gaussian":
            return nd.gaussian_filter(x, params, mode=mode, cval=cval, truncate=t)
        if kind == "gradient_magnitude":
            return nd.gaussian_gradient_magnitude(x, params, mode=mode, cval=cval, truncate=t)
        if kind == "laplace":
            return nd.laplace(x, mode=mode, cval=cval)
        if kind == "uniform":
            return nd.uniform_filter(x, sizes, mode=mode, cval=cval)
        if kind == "median":
            return nd.median_filter(x, sizes, mode=mode, cval=cval)
        if kind == "minimum":
            return nd.minimum_filter(x, sizes, mode=mode, cval=cval)
        return nd.maximum_filter(x, sizes, mode=mode, cval=cval)


def box_holds(mask, cmask, sizes, mode):
    """Where the box around each element holds a True of `mask` (cval: cmask)."""
    return nd.maximum_filter(mask.astype(np.uint8), sizes, mode=mode, cval=float(cmask)) == 1


def reference(kind, x, mode, params, cval, truncate):
    """What sluice promises: scipy's result, but for the NaN and inf rules above."""
    sizes = [int(v) for v in params]
    is_float = x.dtype.kind == "f"
    extremum = kind in ("minimum", "maximum") or (kind == "median" and np.prod(sizes) == 2)
    if extremum:
        k = "minimum" if kind == "minimum" else "maximum"
        fill = np.inf if k == "minimum" else -np.inf
        xs = np.where(np.isnan(x), fill, x).astype(x.dtype) if is_float else x
        r = scipy_filter(k, xs, mode, sizes, fill if np.isnan(cval) else cval, 0)
        if is_float:
            all_nan = ~box_holds(~np.isnan(x), not np.isnan(cval), sizes, mode)
            r[all_nan] = np.nan
        return r
    if kind == "uniform" and is_float and not (np.isfinite(x).all() and np.isfinite(cval)):
        xf = np.where(np.isfinite(x), x, 0).astype(x.dtype)
        r = scipy_filter(kind, xf, mode, sizes, cval if np.isfinite(cval) else 0.0, 0)
        nan = box_holds(np.isnan(x), np.isnan(cval), sizes, mode)
        pinf = box_holds(x == np.inf, cval == np.inf, sizes, mode)
        ninf = box_holds(x == -np.inf, cval == -np.inf, sizes, mode)
        r[pinf] = np.inf
        r[ninf] = -np.inf
        r[nan | (pinf & ninf)] = np.nan
        return r
    return scipy_filter(kind, x, mode, params, cval, truncate)


def compare(kind, got, want, x, case):
    """Element-wise agreement, by the rules in the module's comment."""
    mode, params, truncate, cval = case
    dt = got.dtype
    passes = sum(1 for s in params if s > 1e-15)
    if dt == np.bool_:
        ok = got.view(np.uint8).astype(bool) == (want.view(np.uint8) != 0)
        if kind in ("gaussian", "gradient_magnitude"):
            # Only where the whole box is true do the passes land near 1.0.
            t = truncate if truncate > 0 else 4.0
            box = [2 * int(t * s + 0.5) + 1 if s > 1e-15 else 1 for s in params]
            ok |= nd.minimum_filter(x.astype(np.uint8), box, mode=mode, cval=cval) >= 1
        return ok
    if dt.kind in "iu":
        diff = np.abs(got.astype(object) - want.astype(object)).astype(np.float64)
        slack = {"gaussian": passes, "gradient_magnitude": passes + 1}.get(kind, 0)
        return diff <= slack
    g, w = got.astype(np.float64), want.astype(np.float64)
    finite = x[np.isfinite(x)].astype(np.float64)
    scale = max([1.0, float(np.abs(finite).max()) if finite.size else 0.0] +
                ([abs(cval)] if np.isfinite(cval) else []))
    atol = scale * (1e-6 if dt == np.float32 else 1e-12)
    with np.errstate(all="ignore"):
        ok = (g == w) | (np.isnan(g) & np.isnan(w))
        ok |= np.isfinite(g) & np.isfinite(w) & (np.abs(g - w) <= 1e-5 * np.abs(w) + atol)
    return ok


def draw_case(tmp, case, rng):
    """Case `case`: its description, the driver's arguments, and what the
    comparison needs."""
    if case < len(COMBOS):
        kind, mode, dtype = COMBOS[case]
    else:
        kind = KINDS[int(rng.integers(len(KINDS)))]
        mode = MODES[int(rng.integers(len(MODES)))]
        dtype = DTYPES[int(rng.integers(len(DTYPES)))]
    shape = draw_shape(rng, kind)
    rank = len(shape)
    params, truncate = draw_params(kind, dtype, rank, rng)
    chunks = tuple(int(rng.integers(1, n + 1)) if rng.random() < 0.8 else n for n in shape)
    flips = int(rng.integers(0, 1 << rank)) if rng.random() < 0.3 else 0
    cval = draw_cval(kind, dtype, rng)
    x = values(kind, dtype, shape, rng)
    fin, fout = os.path.join(tmp, f"in{case}"), os.path.join(tmp, f"out{case}")
    write_raw(fin, x, dtype)
    args = [kind, dtype, shape_arg(shape), mode, repr(cval), repr(truncate),
            ",".join(str(v) for v in params), shape_arg(chunks), str(flips), fin, fout]
    what = (f"case {case}: {kind} {mode} {dtype} {shape} params {params} truncate {truncate} "
            f"cval {cval} chunks {chunks} flips {flips}")
    return what, args, (kind, mode, params, truncate, cval, x, fout)


def check_case(what, status, info):
    kind, mode, params, truncate, cval, x, fout = info
    if status != "ok":
        return f"{what}: filter_numpy said {status}"
    got = read_raw(fout, x.dtype, x.shape)
    want = reference(kind, x, mode, params, cval, truncate)
    ok = compare(kind, got, want, x, (mode, params, truncate, cval))
    if not ok.all():
        idx = tuple(int(i) for i in np.argwhere(~ok)[0])
        return (f"{what}: {int((~ok).sum())} of {ok.size} elements differ, first at {idx}: "
                f"got {got[idx]!r}, want {want[idx]!r}")
    return None


def main():
    rng = np.random.default_rng(20261207)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        cases = [draw_case(tmp, c, rng) for c in range(N_CASES)]
        # One driver process for every case (see filter_numpy_main.c).
        p = subprocess.run([DRIVER, "--batch"], input="".join(" ".join(a) + "\n" for _, a, _ in cases),
                           capture_output=True, text=True)
        statuses = p.stdout.splitlines()
        if p.returncode != 0 or len(statuses) != len(cases):
            print(f"FAILED: filter_numpy --batch exited {p.returncode} after {len(statuses)} of "
                  f"{len(cases)} cases: {p.stderr}")
            return 1
        for (what, _, info), status in zip(cases, statuses):
            msg = check_case(what, status, info)
            if msg:
                failures.append(msg)
                print("FAILED:", msg, flush=True)
    print(f"{N_CASES - len(failures)} of {N_CASES} cases agree with scipy.ndimage")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
