# SPDX-License-Identifier: MIT
"""What the checks against numpy share: sluice's cast rules, numpy's
reductions (dtypes, references, rounding error bounds, comparisons), and
the raw little-endian files the ops drivers (expr_numpy, reduce_numpy,
stats_numpy) read and write.  Imported by check_*_numpy.py beside it and by
tests/launcher/check_reduce_stats.py, which puts this folder on sys.path.
Importing it without numpy exits 77 (skipped), saying so.
"""
import math
import sys
import tempfile
import warnings

try:
    import numpy as np
except ImportError as e:
    print(f"skipped: python3-numpy is not installed ({e}); tests/deps.sh lists it")
    sys.exit(77)

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64"]
METHODS = ["sum", "prod", "mean", "min", "max", "std", "var", "any", "all", "count_nonzero",
           "nansum", "nanmean", "nanmin", "nanmax"]
# Methods whose float results carry rounding error.
INEXACT = {"sum", "prod", "mean", "std", "var", "nansum", "nanmean"}
EPS = np.finfo(np.float64).eps

# ---- sluice's cast rules ------------------------------------------------------------


def cast_rules(x, dtype):
    """sluice's cast rules: bool is nonzero (NaN true); integers from floats
    round half to even, NaN gives 0; integers saturate; floats round."""
    od = np.dtype(dtype)
    if od == np.bool_:
        return x != 0
    if od.kind == "f":
        with np.errstate(all="ignore"):
            return x.astype(od)
    info = np.iinfo(od)
    if x.dtype.kind in "biu":
        vals = [min(max(int(v), info.min), info.max) for v in x.ravel()]
        return np.array(vals, dtype=od).reshape(x.shape)
    bits = od.itemsize * 8
    r = np.rint(x.astype(np.float64))
    r = np.where(np.isnan(r), 0.0, r)
    lo, hi = (-(2.0 ** (bits - 1)), 2.0 ** (bits - 1)) if od.kind == "i" else (0.0, 2.0 ** bits)
    below, above = r < lo, r >= hi
    with np.errstate(all="ignore"):
        out = np.where(below | above, 0.0, r).astype(od)
    out[below] = info.min
    out[above] = info.max
    return out


def same(a, b):
    """Equal values, NaN equal to NaN (-0.0 equal to 0.0)."""
    if a.dtype.kind == "f" and b.dtype.kind == "f":
        return (a == b) | (np.isnan(a) & np.isnan(b))
    return a == b


# ---- numpy's reductions -------------------------------------------------------------


def default_dtype(method, dt):
    """numpy's result dtype (reduce.h, sl_reduce_default_dtype)."""
    dt = np.dtype(dt)
    if method in ("sum", "prod", "nansum"):
        if dt.kind == "f":
            return dt
        return np.dtype(np.uint64) if dt.kind == "u" else np.dtype(np.int64)
    if method in ("mean", "std", "var", "nanmean"):
        return dt if dt.kind == "f" else np.dtype(np.float64)
    if method in ("any", "all"):
        return np.dtype(bool)
    if method == "count_nonzero":
        return np.dtype(np.int64)
    return dt


def natural_dtype(method, dt):
    """The dtype the reference is computed in: float64 for float results."""
    d = default_dtype(method, dt)
    return np.dtype(np.float64) if d.kind == "f" else d


def reference(method, x, axes, ddof):
    """numpy's result for `method` along `axes` (keepdims), in the natural
    dtype; float sums and moments of x.astype(float64), as sluice computes
    them in double whatever the input (ops/README.md)."""
    f = x.astype(np.float64) if x.dtype.kind == "f" else x
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if method in ("std", "var"):
            r = getattr(np, method)(f, axis=axes, ddof=ddof, keepdims=True)
        elif method == "count_nonzero":
            r = np.count_nonzero(x, axis=axes, keepdims=True)
        elif method in ("sum", "prod", "nansum", "mean", "nanmean"):
            r = getattr(np, method)(f, axis=axes, keepdims=True)
        else:
            r = getattr(np, method)(x, axis=axes, keepdims=True)
    return np.asarray(r).astype(natural_dtype(method, x.dtype))


def error_bound(method, x, axes, ref):
    """What rounding may make numpy's float64 result differ from the exact
    one: pairwise summation grows about log2(n) eps sum|x| (as a multiple
    of which sluice's compensated sum is never worse); for var and std, a
    bound on the variance."""
    f = x.astype(np.float64)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        n = max(int(np.prod([x.shape[a] for a in axes], dtype=np.int64)), 1)
        grow = 4 * (math.ceil(math.log2(n + 1)) + 2) * EPS
        if method in ("sum", "nansum"):
            return grow * np.nansum(np.abs(f), axis=axes, keepdims=True)
        if method in ("mean", "nanmean"):
            return grow * np.nanmean(np.abs(f), axis=axes, keepdims=True)
        if method in ("var", "std"):
            # Deviations from a mean with error grow * mean|x| make squares
            # with error about 2 grow mean|x| |x - mean|; bounded by mean(x^2).
            return 4 * grow * np.mean(f * f, axis=axes, keepdims=True)
        return n * 4 * EPS * np.abs(ref)  # prod: n roundings


def close(got, want, bound, method, rel=1e-12):
    """Floats within `rel` relative, 1e-300 absolute or `bound` (of the
    variance, for std: compared squared); NaN and infinities exact."""
    got, want = got.astype(np.float64), want.astype(np.float64)
    if method == "std":  # sqrt magnifies errors near 0: compare variances
        got, want = got * got, want * want
        rel = 2 * rel
    with np.errstate(all="ignore"):
        diff = np.abs(got - want)
        tol = rel * np.abs(want) + 1e-300 + np.where(np.isfinite(bound), bound, 0)
        ok = (got == want) | (np.isfinite(want) & np.isfinite(got) & (diff <= tol))
    return ok | (np.isnan(got) & np.isnan(want))


# ---- the drivers' raw files ---------------------------------------------------------


def shape_arg(shape):
    """A shape as the drivers take it: "4x5x6", "-" for 0-d."""
    return "x".join(str(d) for d in shape) if shape else "-"


def write_raw(path, x, dtype):
    """`x` as `dtype`, little-endian and C-ordered, into file `path`."""
    np.ascontiguousarray(x).astype(np.dtype(dtype).newbyteorder("<")).tofile(path)


def read_raw(path, dtype, shape):
    """The little-endian `dtype` values of file `path`, in `shape`."""
    a = np.fromfile(path, dtype=np.dtype(dtype).newbyteorder("<"))
    return a.astype(dtype).reshape(shape)


def run_cases(n_cases, seed, run_case):
    """run_case(tmp, case, rng) for each of `n_cases` cases, in one
    temporary directory, printing each failure it returns; the exit status."""
    rng = np.random.default_rng(seed)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in range(n_cases):
            msg = run_case(tmp, case, rng)
            if msg:
                failures.append(msg)
                print("FAILED:", msg, flush=True)
    print(f"{n_cases - len(failures)} of {n_cases} cases agree with numpy")
    return 1 if failures else 0
